#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The kernel's own vsock_test between two user-mode Linux guests, through skiff-vsock.

vsock_test (tools/testing/vsock of the guests' Linux 6.1 source, unmodified, built static by
scripts/build-kernels.sh) runs as server in guest A (CID 3) and as client in guest B (CID 4).
Their vsock traffic goes through one skiff-vsock process serving both guests over vhost-user
(`--guest socket=PATH,cid=N`, guest-to-guest routing); their TCP control channel goes over a
private network:

  this script re-executes itself as PID 1 of new network, PID and mount namespaces
  (`unshare --net --pid --mount --fork --kill-child`; not root: also `--user
  --map-root-user`), so that the network, the guests, the device and the temporary files (a
  tmpfs) all end with it, whatever happens (pass, fail, timeout, kill). Network: a bridge
  with one tap per guest (UML vector transport `transport=tap`), guests at 10.77.0.3 and
  10.77.0.4/24 set by their init script. Where /dev/net/tun cannot be opened (not root and
  the node is 0600), a veth pair with `transport=raw,vec=0` instead (--net forces either).

Guests are booted with scripts/guest-run.sh (initramfs from scripts/build-initramfs.sh with
vsock_test in /bin); the server guest boots first and the client guest only once the server
printed "Control socket listening". Each guest's console goes to <work-dir>/<attempt>-<side>
.console and is printed on failure, with skiff-vsock's log.

vsock_test stops at its first failing test. So that every test gets a result, the pair is run
again (fresh guests and device) with `--skip` for every test that already has one, until all
have one, no progress is made, --attempts is reached or fewer than 40 s of --deadline are
left (guest timeouts shrink to fit the deadline too). A test passes when both sides print
"N - name...ok". Exit 0 only when every test passed (except the NOT_APPLICABLE ones, each with
its reason; none today), the device saw traffic and exited cleanly; 1 otherwise; 77 when
skipped (SKIFF_SKIP_GUESTS=1, all or uml). A guest that dies (guest-run.sh exit 123, 124, 125:
panic, abort, no result) ends its attempt at once: the other guest is killed, the reason is
recorded and the consoles are printed (tests/support/guest_watch.py).

--mode loopback runs server and client in one guest over the kernel's vsock loopback transport
(CID 1, no device): the same test binary and kernel without skiff in the path, for telling a
device defect from a guest or set-up one.

Usage: peer_test.py --skiff-vsock BIN --variant baseline|patched --mrg-rxbuf on|off
                    --work-dir DIR [--mode peer|loopback] [--net auto|tap|raw]
                    [--kernel UML] [--attempts N] [--timeout S] [--deadline S]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
sys.path.insert(0, os.path.join(REPO, "tests/support"))
from guest_watch import GuestRun, exit_if_skipped, wait_any  # noqa: E402
INNER_ENV = "SKIFF_PEER_IN_NAMESPACE"
CONTROL_PORT = 1234
NET = "10.77.0"

# Tests of vsock_test that do not apply to a virtio transport, with the reason. A test listed
# here may fail without failing the run; every other one must pass.
NOT_APPLICABLE = {}

SERVER = {"side": "server", "cid": 3, "ip": f"{NET}.3", "mac": "02:00:0a:4d:00:03"}
CLIENT = {"side": "client", "cid": 4, "ip": f"{NET}.4", "mac": "02:00:0a:4d:00:04"}

TEST_LINE = re.compile(r"^(?:(SERVER|CLIENT)\| )?(\d+) - (.+?)\.\.\.(.*)$")


def log(msg):
    print(f"peer_test: {msg}", flush=True)


def run(argv, check=True):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stdout.strip()}")
    return p


# -- namespaces and network --------------------------------------------------------


def reexec_in_namespaces():
    """Run this script again as PID 1 of new net+pid+mount namespaces; return its status.

    The temporary directory made here becomes a tmpfs inside (vhost-user sockets, initramfs,
    guest-run.sh's UML directories): whatever is killed how, the namespaces take the
    network, the processes and the files with them, and only this process removes the
    (then empty) mount point.
    """
    tmp = tempfile.mkdtemp(prefix="skiff-peer-", dir="/tmp")
    argv = ["unshare"]
    if os.geteuid() != 0:
        argv += ["--user", "--map-root-user"]
    argv += ["--net", "--pid", "--mount", "--fork", "--kill-child", sys.executable, os.path.abspath(__file__)]
    env = dict(os.environ, **{INNER_ENV: tmp})
    try:
        return subprocess.run(argv + sys.argv[1:], env=env).returncode
    except FileNotFoundError:
        log("FAIL: unshare (util-linux) is missing")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def private_mounts():
    """Inside the namespaces: a tmpfs on the directory the outer process made (TMPDIR), and
    /proc of the new PID namespace (for sweep()). Return the tmpfs path."""
    tmp = os.environ[INNER_ENV]
    run(["mount", "-t", "tmpfs", "-o", "mode=0700", "skiff-peer", tmp])
    run(["mount", "-t", "proc", "proc", "/proc"])
    os.environ["TMPDIR"] = tmp
    return tmp


def sweep():
    """SIGKILL every process of this PID namespace but this one (PID 1): what a killed
    guest-run.sh leaves behind (timeout(1) and UML run in their own process group)."""
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                os.kill(int(d), signal.SIGKILL)
            except OSError:
                pass


class Network:
    """Bridge + taps (or a veth pair) in this (private) network namespace."""

    def __init__(self, kind):
        self.links = []
        self.kind = kind
        if kind != "auto":
            return
        try:
            fd = os.open("/dev/net/tun", os.O_RDWR)
            os.close(fd)
            self.kind = "tap"
        except OSError as e:
            log(f"/dev/net/tun: {e.strerror}; using a veth pair and UML's raw transport")
            self.kind = "raw"

    def setup(self):
        run(["ip", "link", "set", "lo", "up"])
        if self.kind == "tap":
            run(["ip", "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"])
            self.links.append("br0")
            for g in (SERVER, CLIENT):
                g["ifname"] = f"tap{g['cid']}"
                run(["ip", "tuntap", "add", "dev", g["ifname"], "mode", "tap"])
                self.links.append(g["ifname"])
                run(["ip", "link", "set", g["ifname"], "master", "br0", "up"])
            run(["ip", "link", "set", "br0", "up"])
        else:
            SERVER["ifname"], CLIENT["ifname"] = "veth3", "veth4"
            run(["ip", "link", "add", "veth3", "type", "veth", "peer", "name", "veth4"])
            self.links.append("veth3")
            run(["ip", "link", "set", "veth3", "up"])
            run(["ip", "link", "set", "veth4", "up"])

    def uml_arg(self, g):
        # vec=0 (raw): no vectored TX, hence no IRQ_WRITE interrupt on the raw socket; with
        # it the UML guest loses virtio interrupts (README, "Findings").
        extra = ",vec=0" if self.kind == "raw" else ""
        return f"vec0:transport={self.kind},ifname={g['ifname']},mac={g['mac']}{extra}"

    def teardown(self):
        for link in reversed(self.links):
            run(["ip", "link", "del", link], check=False)
        self.links = []


# -- one guest ---------------------------------------------------------------------


class Guest(GuestRun):
    """One guest-run.sh process (GuestRun: console lines, reason); @ready is set when a line
    holds @ready_marker, or when the guest ends (a waiter checks which)."""

    def __init__(self, name, argv, console_path, ready_marker=None):
        self.name = name
        self.ready = threading.Event()
        self.marker = ready_marker
        super().__init__(argv, on_line=self._line, console_path=console_path)
        threading.Thread(target=lambda: self.ended.wait() and self.ready.set(), daemon=True).start()

    def _line(self, line):
        if self.marker and self.marker in line:
            self.ready.set()

    def wait(self, timeout):
        """guest-run.sh's exit status; None if it had to be killed after @timeout seconds."""
        if super().wait(timeout) is None:
            self.kill(f"did not end within {timeout:.0f} s")
            super().wait(10)
            return None
        return self.status

    def problem(self, tag):
        """What went wrong with this guest, for self.errors; None if it ended with a result."""
        if self.killed:
            return f"{tag}: {self.name} guest killed: {self.killed}"
        if self.dead:
            return f"{tag}: {self.name} guest: {self.reason()}"
        return None


# -- results -----------------------------------------------------------------------


def parse_side(lines, prefix=None):
    """vsock_test output -> ({index: (name, 'ok'|'skipped'|'FAIL: reason')}, completed)."""
    res = {}
    completed = False
    cur = None
    for line in lines:
        if prefix:
            if not line.startswith(prefix + "| "):
                continue
            body = line[len(prefix) + 2:]
        else:
            body = line
        if body.startswith("All tests have been executed."):
            completed = body.endswith("...ok")
            cur = None
            continue
        m = TEST_LINE.match(body)
        if m:
            idx, name, rest = int(m.group(2)), m.group(3), m.group(4).strip()
            if rest in ("ok", "skipped"):
                res[idx] = (name, rest)
                cur = None
            else:
                res[idx] = (name, "FAIL: " + rest if rest else "FAIL:")
                cur = idx
            continue
        if cur is not None and not body.startswith(("SKIFF-", "reboot:", "guest-run.sh:")):
            name, v = res[cur]
            res[cur] = (name, (v + " " + body.strip()).strip())
        elif cur is not None:
            cur = None
    # A test started but never finished (the side was killed or timed out): a failure.
    for idx, (name, v) in res.items():
        if v == "FAIL:":
            res[idx] = (name, "FAIL: no result (side stopped or timed out)")
    return res, completed


def list_tests(vsock_test):
    # --list prints the table and exits 1 (it ends in usage()).
    out = run([vsock_test, "--list"], check=False).stdout
    tests = {}
    for line in out.splitlines():
        m = re.match(r"^(\d+)\t(.+)$", line)
        if m:
            tests[int(m.group(1))] = m.group(2)
    if not tests:
        raise RuntimeError(f"{vsock_test} --list printed no tests: {out.strip()}")
    return tests


# -- the run -----------------------------------------------------------------------


class PeerTest:
    def __init__(self, a):
        self.a = a
        self.work = os.path.abspath(a.work_dir)
        os.makedirs(self.work, exist_ok=True)
        for f in os.listdir(self.work):
            if f.endswith((".console", ".log")) or f.startswith("results"):
                os.unlink(os.path.join(self.work, f))
        # vhost-user socket paths must fit sun_path (108 bytes): not in the build dir.
        self.sockdir = private_mounts()
        self.net = Network(a.net) if a.mode == "peer" else None
        self.procs = []
        self.vsock_test = subprocess.run([os.path.join(REPO, "scripts/build-kernels.sh"), "--print-path", a.variant,
                                          "tools", "vsock_test"], stdout=subprocess.PIPE, text=True).stdout.strip()
        self.kernel = a.kernel or subprocess.run([os.path.join(REPO, "scripts/build-kernels.sh"), "--print-path",
                                                  a.variant, "um"], stdout=subprocess.PIPE, text=True).stdout.strip()
        self.results = {}  # index -> (name, verdict, attempt)
        self.errors = []  # failures that are not one test's (device, guests, set-up)

    def left(self):
        return max(0.0, self.deadline - time.monotonic())

    def guest_timeout(self):
        """guest-run.sh --timeout: --timeout, cut to what is left of --deadline."""
        return max(10, int(min(self.a.timeout, self.left())))

    def check_inputs(self):
        for what, p in (("vsock_test", self.vsock_test), ("UML kernel", self.kernel),
                        ("skiff-vsock", self.a.skiff_vsock)):
            if not p or not os.path.exists(p):
                raise RuntimeError(f"{what} missing at {p!r} (kernels and tools: scripts/build-kernels.sh)")
        if self.a.mode == "peer":
            h = run([self.a.skiff_vsock, "--help"], check=False).stdout
            if "--guest" not in h:
                raise RuntimeError("this skiff-vsock has no --guest option (guest-to-guest routing, issue 5)")

    def build_initrd(self):
        out = os.path.join(self.sockdir, "initrd.cpio")
        run([os.path.join(REPO, "scripts/build-initramfs.sh"), "-o", out, "--bin", self.vsock_test])
        return out

    def guest_argv(self, g, script, vsock):
        argv = [os.path.join(REPO, "scripts/guest-run.sh"), "uml", "--kernel", self.kernel, "--initrd", self.initrd,
                "--timeout", str(self.guest_timeout()), "--run", script]
        if vsock:
            argv += ["--vsock", vsock]
        if self.net:
            argv += ["--", self.net.uml_arg(g)]
        return argv

    def start_device(self, tag):
        socks = {g["side"]: os.path.join(self.sockdir, f"{g['side']}.sock") for g in (SERVER, CLIENT)}
        argv = [self.a.skiff_vsock]
        for g in (SERVER, CLIENT):
            argv += ["--guest", f"socket={socks[g['side']]},cid={g['cid']}"]
        argv += ["--mrg-rxbuf", self.a.mrg_rxbuf]
        self.dev_log = os.path.join(self.work, f"{tag}-skiff-vsock.log")
        dev = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(self.dev_log, "w"),
                               stderr=subprocess.STDOUT)
        self.procs.append(dev)
        deadline = time.monotonic() + 20
        while not all(os.path.exists(s) for s in socks.values()):
            if dev.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"skiff-vsock did not come up ({' '.join(argv)}):\n{self.tail(self.dev_log)}")
            time.sleep(0.05)
        return dev, socks

    def stop_device(self, dev, tag):
        """SIGTERM the device; it must have survived the guests and exit 0 with counters."""
        alive = dev.poll() is None
        dev.send_signal(signal.SIGTERM)
        try:
            rc = dev.wait(timeout=20)
        except subprocess.TimeoutExpired:
            dev.kill()
            dev.wait()
            rc = "hung on SIGTERM"
        with open(self.dev_log) as f:
            text = f.read()
        # Counters per guest ("cid N counters: tx_pkts A ... rx_pkts B"): each guest must
        # have sent and received through the device.
        per = re.findall(r"cid (\d+) counters: tx_pkts (\d+) .*?rx_pkts (\d+)", text)
        if not per:  # a single-guest style line
            per = [("?",) + x for x in re.findall(r"counters: tx_pkts (\d+) .*?rx_pkts (\d+)", text)]
        shown = ", ".join(f"cid {c} tx_pkts {tx} rx_pkts {rx}" for c, tx, rx in per)
        log(f"{tag}: skiff-vsock alive after the guests={alive}, exit={rc}; {shown or 'no counters'}")
        if not alive or rc != 0:
            self.errors.append(f"{tag}: skiff-vsock alive after the guests={alive}, exit status {rc}")
        elif len(per) < 2 or any(int(tx) == 0 or int(rx) == 0 for _, tx, rx in per):
            self.errors.append(f"{tag}: skiff-vsock did not count traffic both ways for both guests "
                               f"({shown or 'no counters'}): vsock_test's packets did not go through it")

    def vsock_test_argv(self, side, peer_cid, skip):
        argv = ["vsock_test", f"--mode={side}", f"--control-port={CONTROL_PORT}", f"--peer-cid={peer_cid}"]
        if side == "client":
            argv.append(f"--control-host={SERVER['ip'] if self.a.mode == 'peer' else '127.0.0.1'}")
        argv += [f"--skip={i}" for i in sorted(skip)]
        return " ".join(argv)

    def attempt_peer(self, tag, skip):
        dev, socks = self.start_device(tag)
        guests = []
        try:
            net_up = ("ip addr add {ip}/24 dev vec0 && ip link set vec0 up || "
                      "{{ echo 'peer: network set-up failed'; exit 90; }}")
            scripts = {}
            for g, peer in ((SERVER, CLIENT), (CLIENT, SERVER)):
                scripts[g["side"]] = net_up.format(ip=g["ip"]) + "\n" + \
                    self.vsock_test_argv(g["side"], peer["cid"], skip) + "\n"
            srv = Guest("server", self.guest_argv(SERVER, scripts["server"], socks["server"]),
                        os.path.join(self.work, f"{tag}-server.console"), ready_marker="Control socket listening")
            guests.append(srv)
            self.procs.append(srv.proc)
            srv.ready.wait(self.left() + 5)
            if srv.ended.is_set() or not any("Control socket listening" in x for x in srv.lines):
                srv.kill("never listened on its control socket")
                srv.wait(30)
                self.errors.append(srv.problem(tag) or f"{tag}: the server guest never listened on its control "
                                   "socket")
                return {"server": srv.lines, "client": []}
            cli = Guest("client", self.guest_argv(CLIENT, scripts["client"], socks["client"]),
                        os.path.join(self.work, f"{tag}-client.console"))
            guests.append(cli)
            self.procs.append(cli.proc)
            # The server ends at most vsock_test's 10 s control timeout after the client
            # (30 s here); without a client it would wait in accept() until its timeout.
            # A guest that dies (panic, abort, no result) takes the other one with it at once.
            first = wait_any((cli, srv), self.left() + 15)
            if first is not None and first.dead:
                other = srv if first is cli else cli
                other.kill(f"the {first.name} guest died first ({first.reason()})")
            for g, limit in ((cli, self.left() + 15), (srv, 30)):
                rc = g.wait(limit)
                log(f"{tag}: {g.name} guest exit status {rc}")
                err = g.problem(tag)
                if err:
                    self.errors.append(err)
            return {"server": srv.lines, "client": cli.lines}
        finally:
            for g in guests:
                g.kill()
            self.stop_device(dev, tag)
            sweep()  # a killed guest's UML would hold its tap in the next attempt

    def attempt_loopback(self, tag, skip):
        # In one guest: server in the background, client once the server listens (polled in
        # the guest: there is no other event to wait for there), then both outputs.
        script = (f"{self.vsock_test_argv('server', 1, skip)} >/tmp/s.out 2>&1 &\n"
                  "spid=$!\n"
                  "n=0; until grep -q 'Control socket listening' /tmp/s.out; do\n"
                  "  n=$((n + 1)); [ $n -lt 600 ] || break; sleep 0.1; done\n"
                  f"{self.vsock_test_argv('client', 1, skip)} >/tmp/c.out 2>&1; crc=$?\n"
                  "wait $spid; src=$?\n"
                  "sed 's/^/SERVER| /' /tmp/s.out; sed 's/^/CLIENT| /' /tmp/c.out\n"
                  "[ $crc = 0 ] && [ $src = 0 ]\n")
        g = Guest("loopback", self.guest_argv(SERVER, script, None),
                  os.path.join(self.work, f"{tag}-loopback.console"))
        self.procs.append(g.proc)
        rc = g.wait(self.left() + 15)
        log(f"{tag}: loopback guest exit status {rc}")
        err = g.problem(tag)
        if err:
            self.errors.append(err)
        return {"server": g.lines, "client": g.lines}

    def run(self):
        a = self.a
        t0 = time.monotonic()
        self.deadline = t0 + a.deadline
        self.check_inputs()
        tests = list_tests(self.vsock_test)
        self.tests = tests
        self.initrd = self.build_initrd()
        if self.net:
            self.net.setup()
            log(f"network: {self.net.kind} ({', '.join(self.net.links)}), server {SERVER['ip']} "
                f"cid {SERVER['cid']}, client {CLIENT['ip']} cid {CLIENT['cid']}")
        for n in range(1, a.attempts + 1):
            todo = [i for i in tests if i not in self.results]
            if not todo:
                break
            if n > 1 and self.left() < 40:
                log(f"{self.left():.0f} s left of the {a.deadline} s deadline: no attempt {n}")
                break
            skip = set(self.results)
            tag = f"attempt{n}"
            log(f"{tag}: {a.mode}, {a.variant} kernel, mrg-rxbuf {a.mrg_rxbuf}, tests {todo}")
            if a.mode == "peer":
                out = self.attempt_peer(tag, skip)
                prefixes = (None, None)
            else:
                out = self.attempt_loopback(tag, skip)
                prefixes = ("SERVER", "CLIENT")
            srv, srv_done = parse_side(out["server"], prefixes[0])
            cli, cli_done = parse_side(out["client"], prefixes[1])
            # vsock_test stops at the first failing test; the other side then fails in
            # whatever it does next (its control socket reads EOF or times out). Only the
            # first failing test of an attempt is a result; later ones run again.
            fails = [i for side in (srv, cli) for i, (_, v) in side.items() if v.startswith("FAIL")]
            first_fail = min(fails) if fails else None
            new = 0
            for i in todo:
                if first_fail is not None and i > first_fail:
                    break
                s, c = srv.get(i), cli.get(i)
                if s is None and c is None:
                    continue
                sv = s[1] if s else "not run"
                cv = c[1] if c else "not run"
                if sv == "ok" and cv == "ok":
                    verdict = "PASS"
                elif sv.startswith("FAIL") or cv.startswith("FAIL"):
                    verdict = f"FAIL (server: {sv}; client: {cv})"
                else:
                    continue  # skipped or half-run without an error: run it again
                self.results[i] = (tests[i], verdict, n)
                new += 1
            if not (srv_done and cli_done) and not any(v.startswith("FAIL") for _, v, k in self.results.values()
                                                      if k == n):
                self.errors.append(f"{tag}: vsock_test did not complete (server completed={srv_done}, "
                                   f"client completed={cli_done}) and no test failed")
            if new == 0:
                log(f"{tag}: no test got a result; stopping")
                break
        return self.report(time.monotonic() - t0)

    def report(self, secs):
        a = self.a
        rows = []
        failed = []
        for i, name in self.tests.items():
            if i in self.results:
                verdict, n = self.results[i][1], self.results[i][2]
            else:
                verdict, n = "NOT RUN", 0
            ok = verdict == "PASS"
            if not ok and name in NOT_APPLICABLE:
                verdict += f" [not applicable to virtio: {NOT_APPLICABLE[name]}]"
                ok = True
            if not ok:
                failed.append(i)
            rows.append({"index": i, "name": name, "verdict": verdict, "attempt": n})
            print(f"{'PASS' if verdict == 'PASS' else 'FAIL' if not ok else 'N/A '} "
                  f"{a.mode} {a.variant} mrg={a.mrg_rxbuf} {i} - {name}"
                  + ("" if verdict == "PASS" else f": {verdict}"), flush=True)
        for e in self.errors:
            print(f"FAIL {e}", flush=True)
        with open(os.path.join(self.work, "results.json"), "w") as f:
            json.dump({"mode": a.mode, "variant": a.variant, "mrg_rxbuf": a.mrg_rxbuf,
                       "network": self.net.kind if self.net else None, "seconds": round(secs, 1),
                       "tests": rows, "errors": self.errors}, f, indent=1)
        passed = sum(1 for r in rows if r["verdict"] == "PASS")
        log(f"{passed}/{len(rows)} vsock_test tests passed ({a.mode}, {a.variant}, mrg-rxbuf {a.mrg_rxbuf}), "
            f"{len(self.errors)} other failure(s), {secs:.1f} s; consoles and logs in {self.work}")
        if failed or self.errors:
            self.dump_logs()
            return 1
        return 0

    def tail(self, path, n=40):
        try:
            with open(path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def dump_logs(self):
        for f in sorted(os.listdir(self.work)):
            if f.endswith((".console", ".log")):
                print(f"--- {os.path.join(self.work, f)} (last 60 lines) ---")
                print(self.tail(os.path.join(self.work, f), 60), end="", flush=True)

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        sweep()
        if self.net:
            self.net.teardown()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skiff-vsock", required=True)
    ap.add_argument("--variant", choices=["baseline", "patched"], required=True)
    ap.add_argument("--mrg-rxbuf", choices=["on", "off"], required=True)
    ap.add_argument("--work-dir", required=True, help="consoles, logs and results.json go here")
    ap.add_argument("--mode", choices=["peer", "loopback"], default="peer")
    ap.add_argument("--net", choices=["auto", "tap", "raw"], default="auto",
                    help="guest network: tap+bridge, veth+raw; auto: tap if /dev/net/tun opens")
    ap.add_argument("--kernel", help="UML kernel; default: build-kernels.sh --print-path VARIANT um")
    ap.add_argument("--attempts", type=int, default=12, help="runs of the pair at most (see above)")
    ap.add_argument("--timeout", type=int, default=90, help="per guest boot, seconds")
    ap.add_argument("--deadline", type=int, default=220, help="seconds for the whole run (see above)")
    a = ap.parse_args()
    exit_if_skipped("uml", "peer_test")
    if not os.environ.get(INNER_ENV):
        return reexec_in_namespaces()
    # PID 1 of the new PID namespace: SIGTERM and SIGINT must be handled explicitly.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t = PeerTest(a)
    try:
        return t.run()
    except RuntimeError as e:
        log(f"FAIL: {e}")
        t.dump_logs()
        return 1
    finally:
        t.cleanup()


if __name__ == "__main__":
    sys.exit(main())
