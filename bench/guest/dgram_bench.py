#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Datagram benchmark (issue 18, item 5): vsock SOCK_DGRAM through skiff-vsock against UDP
over the same guest's network device, in one run, with the host's own AF_UNIX datagram
sockets as the limit.

One user-mode Linux guest of the patched kernel (the dgram series) is booted with two paths
to the host:
  vsock  virtio-vsock over vhost-user to skiff-vsock --dgram on --mrg-rxbuf on; host side
         the AF_UNIX SOCK_DGRAM sockets of devices/virtio_vsock/README.md (Datagrams):
         guest -> (2, P) arrives at <uds>_dgram_<P>; the host answers the guest port Q at
         <uds>_dgram_g<Q>, which the device made when Q's first datagram came
  UDP    UML's vector network driver on a host tap device (vec0:transport=tap), a /30 of
         its own, MTU --mtu (1500: what a guest gets by default; a 4 KiB datagram is then
         3 IP fragments); host side a plain UDP socket on the tap's address
Then the baseline kernel (Linux 6.1 without our series) is booted the same way and runs the
UDP steps only: UDP patched vs baseline shows the series leaves UDP alone.

Each step is one control-mode step of the guest (tests/guest-programs/init.sh, skiff.ctl=):
dgram-bench (dgram-bench.c) sends in the guest and receives on the host (g2h), or the other
way round (h2g: the guest's receiver first sends a HELLO to each host sender, which then
answers the address it came from). Senders send as fast as their blocking socket allows for
--seconds; the receiver stops once it heard nothing for --idle-ms. Figures of a step:
  MB/s      bytes received / the longer of the sender's time (first to last send) and
            the receiver's (first to last datagram), 10^6 B/s: goodput
  loss      1 - datagrams received / datagrams sent (both sides count)
  guest CPU the CPU time of the guest's host processes (UML's whole process tree, every
            thread's schedstat) over the step, per KiB the guest moved (sent for g2h,
            received for h2g): the guest's own cost, its kernel included
  dev CPU   skiff-vsock's CPU time over the step per KiB received (vsock only)
A receiver that sees a datagram of the wrong length or with a broken header fails the step:
message boundaries are kept or the run fails. Limits (`dgram-bench limit`, host only, before
each repetition): an AF_UNIX SOCK_DGRAM socketpair (1 sender) or N senders to one bound
socket, same payloads. Each figure is the median over --reps repetitions (interleaved: every
step once per repetition). The table ends with the targets of issue 18: vsock >= 1.77x UDP at
4 KiB (the seed's ratio), vsock >= 0.5x the limit.

UDP payloads stop at 65507 bytes (IPv4's maximum): the 64 KiB rows compare 65536-byte
vsock datagrams with 65507-byte UDP ones, and say so.

Needs root (a tap device: CAP_NET_ADMIN and /dev/net/tun), both UML kernels
(scripts/build-kernels.sh --arch um) and this build's programs; normally run through
build/bench/dgram_bench, which passes their paths.
Usage: dgram_bench.py --skiff-vsock BIN --dgram-bench BIN --initrd FILE [--sizes 256,4K,64K]
  [--senders 1,4] [--seconds 1.5] [--reps 3] [--idle-ms 800] [--mtu 1500] [--no-baseline]
  [--quick] [--json FILE] [--verbose] [--keep]
Exit status: 0 every step measured; 1 a boot or step failed (the table prints what was
measured); 2 usage; 77 skipped (SKIFF_SKIP_GUESTS covers uml; no root or no /dev/net/tun).
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "../.."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests/support"))
from guest_ab import fmt_size, kv, task_cpu_ns  # noqa: E402
from guest_watch import GuestRun, control_marker, exit_if_skipped, serve_scripts  # noqa: E402

CTL_PORT = 999
GUEST_CID = 3
FIRST_PORT = 20000
UDP_MAX = 65507
MAX_SENDERS = 8
CLK_TCK = os.sysconf("SC_CLK_TCK")
GUEST_DROPS = "/sys/module/vmw_vsock_virtio_transport/parameters/dgram_rx_drops"


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": 1024, "M": 1 << 20}.get(s[-1:], 1)
    return int(s[:-1] if mult > 1 else s) * mult


def tree_cpu_ns(root):
    """CPU time (ns) of process @root and all its descendants: every live thread's
    schedstat, plus each live process's reaped children (cutime + cstime, clock ticks).
    A UML guest's processes are host processes the UML kernel reaps, so a guest program
    that ran and exited between two samples still counts."""
    kids, reaped = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()  # fields[0] is stat's field 3 (state)
        kids.setdefault(int(fields[1]), []).append(int(d))
        reaped[int(d)] = (int(fields[13]) + int(fields[14])) * 1e9 / CLK_TCK
    tot, todo = 0, [root]
    while todo:
        p = todo.pop()
        tot += (task_cpu_ns(p) or 0) + reaped.get(p, 0)
        todo += kids.get(p, [])
    return tot


class Tap:
    """A tap device with a /30 of its own: host .1, guest .2 (10.213.X.0/30)."""

    def __init__(self, mtu):
        self.name = f"skdg{os.getpid() % 100000}"
        used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
        for x in range(os.getpid() % 200, os.getpid() % 200 + 256):
            net = f"10.213.{x % 256}."
            if net not in used:
                break
        self.host_ip, self.guest_ip = net + "1", net + "2"
        cmds = [["ip", "tuntap", "add", "dev", self.name, "mode", "tap"],
                ["ip", "addr", "add", f"{self.host_ip}/30", "dev", self.name],
                ["ip", "link", "set", self.name, "mtu", str(mtu), "up"]]
        for c in cmds:
            r = subprocess.run(c, capture_output=True, text=True)
            if r.returncode:
                self.close()
                raise RuntimeError(f"{' '.join(c)}: {r.stderr.strip()}")

    def close(self):
        subprocess.run(["ip", "link", "del", self.name], capture_output=True)


class Step:
    """One measurement: proto vsock|udp, dir g2h|h2g, payload size, senders, repetition."""

    def __init__(self, proto, direction, size, senders, rep, port):
        self.proto, self.dir, self.senders, self.rep, self.port = proto, direction, senders, rep, port
        self.size = min(size, UDP_MAX) if proto == "udp" else size
        self.nominal = size
        self.host = self.guest = None  # result lines (dicts)
        self.host_proc = None
        self.early = ""  # a host line read before its result (a failure before binding)
        self.error = None
        self.cpu0 = self.cpu1 = self.dev0 = self.dev1 = None
        self.ctr0 = self.ctr1 = None  # skiff-vsock's dgram counters (vsock steps)
        self.guest_drops = None  # the guest transport's drops during the step, by reason
        self.rc = None

    @property
    def key(self):
        return f"{self.dir}_{self.nominal}_x{self.senders}"

    def commands(self, a, uds, tap):
        """(host argv, guest shell line)."""
        p, n, s = self.port, self.senders, self.size
        common = ["--size", str(s), "--seconds", str(a.seconds)]
        # A receiver that got nothing in this time reports 0 (every datagram lost).
        rx = ["--idle-ms", str(a.idle_ms), "--first-wait-ms", str(int(a.seconds * 1000) + 10000)]
        hb = [a.dgram_bench]
        q = p + MAX_SENDERS  # the guest's receiving port
        if self.proto == "vsock":
            host_addr, guest_to, guest_bind = f"{uds}_dgram_{p}", f"2:{p}", f"any:{q}"
            hproto, gproto = "unix", "vsock"
        else:
            host_addr, guest_to, guest_bind = f"{tap.host_ip}:{p}", f"{tap.host_ip}:{p}", f"0.0.0.0:{q}"
            hproto = gproto = "udp"
        if self.dir == "g2h":
            host = hb + ["recv", "--proto", hproto, "--bind", host_addr] + common + rx
            guest = f"dgram-bench send --proto {gproto} --to {guest_to} --senders {n} " + " ".join(common)
        else:
            host = hb + ["send", "--proto", hproto, "--bind", host_addr, "--await-hello",
                         "--senders", str(n)] + common
            guest = (f"dgram-bench recv --proto {gproto} --bind {guest_bind} --hello {guest_to} "
                     f"--hello-count {n} " + " ".join(common + rx))
        # Where the guest's kernel dropped, by reason (cumulative; the same work for both
        # protocols, inside the measured window).
        guest += f"; echo DGRAM-GUEST-DROPS $(cat {GUEST_DROPS})"
        return host, guest

    def figures(self):
        """The step's figures, or None when it failed."""
        if self.error or not self.host or not self.guest:
            return None
        snd, rcv = (self.guest, self.host) if self.dir == "g2h" else (self.host, self.guest)
        if snd.get("status") != "ok" or rcv.get("status") != "ok":
            return None
        sent, got = int(snd["msgs"]), int(rcv["msgs"])
        # Goodput over the longer of the two windows (each side's own clock): a receiver
        # that got 2 datagrams 1 ms apart did not move them at 2 datagrams per ms.
        rbytes, rns = int(rcv["bytes"]), max(int(rcv["ns"]), int(snd["ns"]))
        moved = int(snd["bytes"]) if self.dir == "g2h" else rbytes
        f = {"mbps": rbytes / rns * 1e3 if rns else 0.0, "offered_mbps":
             int(snd["bytes"]) / int(snd["ns"]) * 1e3 if int(snd["ns"]) else 0.0,
             "sent": sent, "received": got, "loss": 1 - got / sent if sent else 1.0,
             "blocked": int(snd["blocked"]), "bad": int(rcv["bad"]), "reorder": int(rcv["reorder"])}
        if self.cpu0 is not None and self.cpu1 is not None and moved:
            f["guest_cpu_ns_per_kib"] = (self.cpu1 - self.cpu0) / (moved / 1024)
        if self.dev0 is not None and self.dev1 is not None and rbytes:
            f["dev_cpu_ns_per_kib"] = (self.dev1 - self.dev0) / (rbytes / 1024)
        if self.proto == "vsock":
            # Where vsock datagrams were lost: the host socket full (g2h), no RX buffer in
            # the guest's queue (h2g), the guest's socket full (h2g).
            d = {}
            if self.ctr0 and self.ctr1:
                for k in ("dgram_tx_drop_full", "dgram_rx_drop_no_buf", "dgram_tx_drop_err",
                          "dgram_rx_drop_err", "dgram_rx_drop_too_big"):
                    d[k] = self.ctr1.get(k, 0) - self.ctr0.get(k, 0)
            if self.guest_drops:
                d["guest_rcvbuf_full"] = self.guest_drops.get("rcvbuf_full", 0)
            f["drops"] = d
        return f


class Boot:
    """One UML boot: skiff-vsock, the tap, the guest, and the control-mode step server."""

    def __init__(self, a, variant, kernel, steps, work, limits):
        self.a, self.variant, self.kernel, self.steps = a, variant, kernel, steps
        self.work, self.limits = work, limits
        self.uds = os.path.join(work, "h")
        self.vu = os.path.join(work, "vu")
        self.done = threading.Event()
        self.current = None
        self.console = []
        self.errors = []
        self.dev = self.vm = self.tap = None
        self.net_ok = False
        self.guest_drops_seen = {}

    def log(self, msg):
        if self.a.verbose:
            print(f"dgram_bench: {msg}", flush=True)

    def dev_counters(self):
        """skiff-vsock's dgram counters now (SIGUSR1 prints them), or None (2 s)."""
        path = os.path.join(self.work, "skiff-vsock.log")
        pat = re.compile(r"skiff-vsock: cid \d+ (dgram_tx_pkts .*)\n")
        try:
            with open(path) as f:
                n0 = len(pat.findall(f.read()))
            os.kill(self.dev.pid, signal.SIGUSR1)
        except OSError:
            return None
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            with open(path) as f:
                found = pat.findall(f.read())
            if len(found) > n0:
                t = found[-1].split()
                return {t[i]: int(t[i + 1]) for i in range(0, len(t) - 1, 2)}
            time.sleep(0.005)
        return None

    def snapshot(self, st, end):
        cpu = tree_cpu_ns(self.vm.pid) if self.vm and self.vm.pid else None
        dev = task_cpu_ns(self.dev.pid) if self.dev else None
        ctr = self.dev_counters() if st.proto == "vsock" and self.dev else None
        if end:
            st.cpu1, st.dev1, st.ctr1 = cpu, dev, ctr
        else:
            st.cpu0, st.dev0, st.ctr0 = cpu, dev, ctr

    def finish_host(self, st):
        """Wait for the host side of @st and keep its result line."""
        try:
            out, _ = st.host_proc.communicate(timeout=self.a.seconds + 45)
        except subprocess.TimeoutExpired:
            st.host_proc.kill()
            out, _ = st.host_proc.communicate()
            st.error = "host side did not finish"
        for ln in (st.early + out).splitlines():
            if ln.startswith("DGRAM-BENCH "):
                st.host = kv(ln)
        if st.host is None and not st.error:
            st.error = f"host side printed no result: {out.strip()[-300:]}"
        elif st.host and st.host.get("status") != "ok":
            st.error = f"host side: {st.host.get('err')} at {st.host.get('where')}"

    def next_script(self, served):
        """init.sh control mode: fetch 0 sets up the network, then one script per step."""
        if served > 1:
            prev = self.steps[served - 2]
            self.snapshot(prev, True)
            self.finish_host(prev)
        if served == 0:
            t = self.tap
            return (f"ip addr add {t.guest_ip}/30 dev vec0 && ip link set vec0 mtu {self.a.mtu} up && "
                    f"ping -c 1 -W 10 {t.host_ip} >/dev/null && echo DGRAM-BENCH-NET ok\n")
        if served > len(self.steps):
            return ""
        st = self.steps[served - 1]
        if self.limits is not None and (served == 1 or self.steps[served - 2].rep != st.rep):
            self.limits(st.rep)
        host, guest = st.commands(self.a, self.uds, self.tap)
        self.log(f"{self.variant}: rep {st.rep + 1} {st.proto} {st.key}: {' '.join(host[1:])} | {guest}")
        try:
            st.host_proc = subprocess.Popen(host, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as e:
            st.error = f"host side did not start: {e}"
            return "echo 'DGRAM-BENCH status=fail err=EHOSTDOWN where=host-side'\n"
        if st.dir == "g2h":
            # The receiver is bound before the guest sends (or it failed: finish_host says why).
            line = st.host_proc.stdout.readline()
            if not line.startswith("DGRAM-BENCH-BOUND"):
                st.early = line
        # (h2g: the host sender waits for the guest's HELLO, which is sent again until answered.)
        self.snapshot(st, False)
        return guest + "\n"

    def on_line(self, line):
        self.console.append(line)
        if self.a.verbose > 1:
            print(f"  | {line}", flush=True)
        if line.startswith("DGRAM-BENCH-NET ok"):
            self.net_ok = True
        mark = control_marker(line)
        if mark and mark[0] == "step":
            n = mark[1] - 1  # step 1 is the network set-up
            self.current = self.steps[n - 1] if 1 <= n <= len(self.steps) else None
            return
        cur = self.current
        if cur is None:
            return
        if mark:
            cur.rc = mark[1]
        elif line.startswith("DGRAM-BENCH "):
            cur.guest = kv(line)
        elif line.startswith("DGRAM-GUEST-DROPS "):
            now = {k: int(v) for k, v in kv(line).items() if v.isdigit()}
            cur.guest_drops = {k: v - self.guest_drops_seen.get(k, 0) for k, v in now.items()}
            self.guest_drops_seen = now  # cumulative: the next vsock step's base

    def run(self):
        a = self.a
        self.tap = Tap(a.mtu)
        devlog = open(os.path.join(self.work, "skiff-vsock.log"), "w+")
        try:
            self.dev = subprocess.Popen([a.skiff_vsock, "--dgram", "on", "--mrg-rxbuf", "on", "--guest",
                                         f"socket={self.vu},cid={GUEST_CID},uds={self.uds}"],
                                        stdout=devlog, stderr=devlog)
            deadline = time.monotonic() + 10
            while not os.path.exists(self.vu):
                if self.dev.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("skiff-vsock did not come up")
                time.sleep(0.02)
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(f"{self.uds}_{CTL_PORT}")
            srv.listen(4)
            srv.settimeout(0.2)
            server = threading.Thread(target=serve_scripts, args=(srv, self.done, self.next_script), daemon=True)
            server.start()
            limit = int(len(self.steps) * (a.seconds + a.idle_ms / 1000 + 4) + 120)
            argv = [os.path.join(REPO, "scripts/guest-run.sh"), "uml", "--kernel", self.kernel,
                    "--initrd", a.initrd, "--vsock", self.vu, "--timeout", str(limit),
                    "--append", f"skiff.ctl={CTL_PORT}", "--", f"vec0:transport=tap,ifname={self.tap.name}"]
            self.vm = GuestRun(argv, on_line=self.on_line)
            if self.vm.wait(limit + 30) is None:
                self.vm.kill("guest-run.sh did not end")
            self.done.set()
            server.join(5)
            if self.vm.status != 0:
                self.errors.append(f"{self.variant} guest: {self.vm.failure_text()}")
            if not self.net_ok:
                self.errors.append(f"{self.variant} guest: network set-up failed")
            for st in self.steps:
                if st.host_proc and st.host_proc.poll() is None:
                    st.host_proc.kill()
                    st.host_proc.wait()
                    st.error = st.error or "host side still running when the guest ended"
                f = st.figures()
                if f and (f["bad"] or f["reorder"]):
                    st.error = f"{f['bad']} datagrams of a wrong length or header, {f['reorder']} reordered"
                if f is None or st.error:
                    g = st.guest or {}
                    st.error = st.error or (f"guest side: {g.get('err')} at {g.get('where')}" if g else
                                            "guest side printed no result")
                    self.errors.append(f"{self.variant} rep {st.rep + 1} {st.proto} {st.key}: {st.error}")
        finally:
            self.done.set()
            if self.vm and not self.vm.ended.is_set():
                self.vm.kill("dgram_bench: stopped")
            for st in self.steps:
                if st.host_proc and st.host_proc.poll() is None:
                    st.host_proc.kill()
            if self.dev and self.dev.poll() is None:
                self.dev.send_signal(signal.SIGTERM)
                try:
                    self.dev.wait(20)
                except subprocess.TimeoutExpired:
                    self.dev.kill()
            self.tap.close()
            devlog.seek(0)
            self.devlog = devlog.read()
            devlog.close()


def measure_limits(a, rep, store):
    for s in a.sizes:
        for n in a.senders:
            r = subprocess.run([a.dgram_bench, "limit", "--size", str(s), "--senders", str(n),
                                "--seconds", str(a.seconds)], capture_output=True, text=True)
            line = kv(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
            if line.get("status") != "ok" or not int(line.get("ns", 0)):
                store.setdefault("errors", []).append(f"limit {s} x{n}: {r.stdout.strip()} {r.stderr.strip()}")
                continue
            cpu_us = int(line["utime_us"]) + int(line["stime_us"])
            store.setdefault(f"{s}_x{n}", []).append({
                "mbps": int(line["bytes"]) / int(line["ns"]) * 1e3,
                "cpu_ns_per_kib": cpu_us * 1e3 / (int(line["bytes"]) / 1024)})


def make_steps(a, protos):
    steps, port = [], FIRST_PORT
    for rep in range(a.reps):
        for s in a.sizes:
            for n in a.senders:
                for d in ("g2h", "h2g"):
                    for p in protos:
                        steps.append(Step(p, d, s, n, rep, port))
                        port += 2 * MAX_SENDERS
    return steps


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarise(a, boots, limits):
    rows = []
    for s in a.sizes:
        for n in a.senders:
            lim = limits.get(f"{s}_x{n}", [])
            lim_mbps = median([x["mbps"] for x in lim])
            lim_cpu = median([x["cpu_ns_per_kib"] for x in lim])
            for d in ("g2h", "h2g"):
                row = {"dir": d, "size": s, "senders": n, "limit_mbps": lim_mbps, "limit_cpu_ns_per_kib": lim_cpu}
                for name, variant, proto in (("vsock", "patched", "vsock"), ("udp", "patched", "udp"),
                                             ("udp_baseline", "baseline", "udp")):
                    figs = [st.figures() for st in boots.get(variant, [])
                            if st.proto == proto and st.dir == d and st.nominal == s and st.senders == n
                            and not st.error]
                    figs = [f for f in figs if f]
                    row[name] = {k: median([f.get(k) for f in figs]) for k in
                                 ("mbps", "loss", "offered_mbps", "guest_cpu_ns_per_kib", "dev_cpu_ns_per_kib")}
                    row[name]["n"] = len(figs)
                    row[name]["payload"] = min(s, UDP_MAX) if proto == "udp" else s
                vfigs = [st.figures() for st in boots.get("patched", [])
                         if st.proto == "vsock" and st.dir == d and st.nominal == s and st.senders == n
                         and not st.error]
                drops = [f["drops"] for f in vfigs if f and f.get("drops")]
                row["vsock_drops"] = {k: median([x.get(k) for x in drops]) for k in
                                      sorted({k for x in drops for k in x})}
                row["vsock_sent"] = median([f["sent"] for f in vfigs if f])
                v, u = row["vsock"]["mbps"], row["udp"]["mbps"]
                row["vsock_over_udp"] = v / u if v and u else None
                row["vsock_over_limit"] = v / lim_mbps if v and lim_mbps else None
                rows.append(row)
    return rows


def num(v, fmt):
    return "-" if v is None else format(v, fmt)


def mbps(v):
    """MB/s with 3 significant digits or so (small rates are not 0)."""
    return "-" if v is None else format(v, ".2f" if v < 10 else ".1f" if v < 100 else ".0f")


def ratio(r, u):
    """vsock/UDP of row @r, or why there is none (UDP moved nothing: every datagram lost)."""
    if r["vsock_over_udp"] is not None:
        return f"{r['vsock_over_udp']:.2f}x"
    return "UDP 0" if u.get("mbps") == 0 and r["vsock"].get("mbps") else "-"


def print_table(rows, a):
    print("\n| dir | payload | senders | vsock MB/s | vsock loss | UDP MB/s | UDP loss | UDP baseline MB/s "
          "| vsock/UDP | limit MB/s | vsock/limit | guest CPU ns/KiB vsock / UDP | dev CPU ns/KiB | limit CPU ns/KiB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        v, u, b = r["vsock"], r["udp"], r["udp_baseline"]
        size = fmt_size(r["size"]) + (" (UDP 65507 B)" if r["size"] > UDP_MAX else "")
        pct = (lambda x: "-" if x is None else f"{100 * x:.1f} %")
        print(f"| {r['dir']} | {size} | {r['senders']} | {mbps(v['mbps'])} | {pct(v['loss'])} "
              f"| {mbps(u['mbps'])} | {pct(u['loss'])} | {mbps(b['mbps'])} "
              f"| {ratio(r, u)} | {num(r['limit_mbps'], '.0f')} "
              f"| {num(r['vsock_over_limit'], '.2f')}x | {num(v['guest_cpu_ns_per_kib'], '.0f')} / "
              f"{num(u['guest_cpu_ns_per_kib'], '.0f')} | {num(v['dev_cpu_ns_per_kib'], '.0f')} "
              f"| {num(r['limit_cpu_ns_per_kib'], '.0f')} |")
    print("\nWhere vsock datagrams were lost (medians per step, datagrams): the host socket full "
          "(device dgram_tx_drop_full), no RX buffer (dgram_rx_drop_no_buf), the guest's socket "
          "full (guest transport rcvbuf_full)")
    print("\n| dir | payload | senders | sent | host socket full | no RX buffer | guest socket full |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        dr = r.get("vsock_drops", {})
        print(f"| {r['dir']} | {fmt_size(r['size'])} | {r['senders']} | {num(r.get('vsock_sent'), '.0f')} "
              f"| {num(dr.get('dgram_tx_drop_full'), '.0f')} | {num(dr.get('dgram_rx_drop_no_buf'), '.0f')} "
              f"| {num(dr.get('guest_rcvbuf_full'), '.0f')} |")
    print("\nTargets (issue 18): vsock >= 1.77x UDP at 4 KiB; vsock >= 0.5x the AF_UNIX limit.")
    for r in rows:
        if r["size"] != 4096:
            continue
        vu, vl = r["vsock_over_udp"], r["vsock_over_limit"]
        met = (vu is not None and vu >= 1.77) or (vu is None and r["vsock"]["mbps"] and r["udp"]["mbps"] == 0)
        print(f"  {r['dir']} 4 KiB x{r['senders']}: vsock/UDP {ratio(r, r['udp'])} "
              f"({'met' if met else 'MISSED'}), vsock/limit {num(vl, '.2f')}x "
              f"({'met' if vl and vl >= 0.5 else 'MISSED'})")


def kernel_path(variant):
    r = subprocess.run([os.path.join(REPO, "scripts/build-kernels.sh"), "--print-path", variant, "um"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and os.path.exists(r.stdout.strip()) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skiff-vsock", required=True)
    ap.add_argument("--dgram-bench", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--kernel-patched")
    ap.add_argument("--kernel-baseline")
    ap.add_argument("--sizes", default="256,4K,64K")
    ap.add_argument("--senders", default="1,4")
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--idle-ms", type=int, default=800)
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--quick", action="store_true", help="4 KiB, 1 sender, 0.3 s, 1 repetition: a smoke run")
    ap.add_argument("--json")
    ap.add_argument("--verbose", "-v", action="count", default=0)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    exit_if_skipped("uml", "dgram_bench")

    def stop(signum, frame):  # SIGTERM/SIGHUP: unwind, so the tap device and the guest go
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    if a.quick:
        a.sizes, a.senders, a.seconds, a.reps, a.idle_ms = "4K", "1", 0.3, 1, 300
    try:
        a.sizes = [parse_size(x) for x in a.sizes.split(",")]
        a.senders = [int(x) for x in a.senders.split(",")]
    except ValueError:
        ap.error("--sizes and --senders take comma-separated numbers")
    if any(not 16 <= s <= 65536 for s in a.sizes) or any(not 1 <= n <= MAX_SENDERS for n in a.senders) \
            or a.reps < 1 or not 0 < a.seconds <= 60 or not 576 <= a.mtu <= 65521:
        ap.error(f"sizes 16..65536, senders 1..{MAX_SENDERS}, reps >= 1, seconds 0..60, mtu 576..65521")
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        print("dgram_bench: SKIP: the UDP side needs a tap device: run as root, with /dev/net/tun")
        return 77
    for name in ("skiff_vsock", "dgram_bench", "initrd"):
        if not os.path.exists(getattr(a, name)):
            print(f"dgram_bench: {getattr(a, name)} is missing: build the tree (cmake --build build)")
            return 1
    a.kernel_patched = a.kernel_patched or kernel_path("patched")
    a.kernel_baseline = a.kernel_baseline or kernel_path("baseline")
    if not a.kernel_patched or (not a.no_baseline and not a.kernel_baseline):
        print("dgram_bench: the UML kernels are missing: run scripts/build-kernels.sh --arch um")
        return 1
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="dgb-")
    limits, boots, errors = {}, {}, []
    plan = [("patched", a.kernel_patched, ("vsock", "udp"))]
    if not a.no_baseline:
        plan.append(("baseline", a.kernel_baseline, ("udp",)))
    for variant, kernel, protos in plan:
        d = os.path.join(work, variant)
        os.mkdir(d)
        steps = make_steps(a, protos)
        lim = (lambda rep: measure_limits(a, rep, limits)) if variant == "patched" else None
        b = Boot(a, variant, kernel, steps, d, lim)
        try:
            b.run()
        except (OSError, RuntimeError) as e:
            b.errors.append(f"{variant}: {e}")
        boots[variant] = steps
        errors += b.errors
        if b.errors:
            print(f"dgram_bench: {variant} boot: {len(b.errors)} problems; console tail:\n  " +
                  "\n  ".join(b.console[-15:]), flush=True)
    errors += limits.pop("errors", [])
    rows = summarise(a, boots, limits)
    print(f"dgram_bench: {len(a.sizes)} sizes x senders {a.senders} x 2 directions, {a.reps} repetitions, "
          f"{a.seconds} s each, MTU {a.mtu}; medians; {time.monotonic() - t0:.0f} s")
    print_table(rows, a)
    for e in errors:
        print(f"dgram_bench: FAIL: {e}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": {"sizes": a.sizes, "senders": a.senders, "seconds": a.seconds, "reps": a.reps,
                                  "idle_ms": a.idle_ms, "mtu": a.mtu, "kernel_patched": a.kernel_patched,
                                  "kernel_baseline": None if a.no_baseline else a.kernel_baseline,
                                  "wall_seconds": round(time.monotonic() - t0, 1)},
                       "rows": rows, "limits": limits, "errors": errors,
                       "steps": {v: [{"proto": st.proto, "dir": st.dir, "size": st.size, "senders": st.senders,
                                      "rep": st.rep, "host": st.host, "guest": st.guest, "error": st.error,
                                      "figures": st.figures()} for st in sts] for v, sts in boots.items()}},
                      f, indent=1)
    if not a.keep:
        subprocess.run(["rm", "-rf", work])
    else:
        print(f"dgram_bench: work directory kept: {work}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
