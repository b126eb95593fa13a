#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A/B guest benchmark: UML guest <-> skiff-vsock (vhost-user) <-> host Unix sockets.

--vmm qemu: a QEMU TCG microvm instead of UML (same vhost-user device). --vmm skiff: skiff's
own path, the x86-64 kernels booted by skiff (scripts/guest-run.sh skiff, --skiff BIN) with
its in-process virtio-mmio device (mrg-rxbuf as --mrg-rxbuf; no skiff-vsock, so no per-step
device figures; the counters at exit come from SKIFF_STATS). Where the machine's /dev/kvm is
not hardware virtualization, the whole harness re-runs itself inside one emulated host
(scripts/test-host.sh; --json is copied out): its figures are then directional only, the
speed of emulated virtualization, not the machine's, and the table says so.

Boots the baseline (A) and the patched (B) user-mode Linux kernel alternately, A B A B ...,
one boot per (kernel, pair); inside each boot every figure runs once, one control-mode step
each (tests/guest-programs/init.sh, skiff.ctl=): the guest runs guest-bench, the host runs
guest-ab-peer on the hybrid socket <uds>_<port>. Before each pair the host measures the
socketpair limits (AF_UNIX stream, writer + reader thread, same payload size; and a
socketpair ping-pong). Prints one table: mean A, mean B, the B/A change with a 95 %
confidence interval over the pairs (paired t-interval on the per-pair log ratios
log(B/A), i.e. the geometric mean ratio), and each mean as a fraction of the limit. --json FILE writes every value.

Normally run through build/bench/guest_ab, which passes the paths of this build's programs.
Exit status: 0 all figures measured; 1 a boot or a step failed (the table still prints
what was measured); 2 usage; 77 skipped (SKIFF_SKIP_GUESTS covers the --vmm kind: 1, all, uml
or qemu). A guest that dies (guest-run.sh exit 123, 124, 125: panic, abort, timeout, no
result) fails its boot at once: the host peers still waiting for it are stopped, and the reason
and console tail are printed (tests/support/guest_watch.py).
"""
import argparse
import functools
import hashlib
import json
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
sys.path.insert(0, os.path.join(REPO, "tests/support"))
from guest_watch import GuestRun, control_marker, exit_if_skipped, finish_peer, serve_scripts  # noqa: E402
INNER_ENV = "SKIFF_GAB_INNER"  # set inside the emulated host: "emulated" or "direct"
CTL_PORT = 999
GUEST_CID = 3
FIRST_PORT = 6000
MiB = 1 << 20


# -- statistics ---------------------------------------------------------------------------
def t_pdf(x, df):
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    return c * (1 + x * x / df) ** (-(df + 1) / 2)


def t_cdf_pos(x, df, steps=4000):
    """P(T <= x) for x >= 0: 1/2 plus the integral of the density over [0, x] (Simpson)."""
    h = x / steps
    s = t_pdf(0, df) + t_pdf(x, df)
    for i in range(1, steps):
        s += (4 if i % 2 else 2) * t_pdf(i * h, df)
    return 0.5 + s * h / 3


@functools.lru_cache(maxsize=None)
def t_quantile(p, df):
    """Student t quantile for p in (0.5, 1), by bisection on the CDF."""
    lo, hi = 0.0, 1.0
    while t_cdf_pos(hi, df) < p:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if t_cdf_pos(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def paired_ratio_ci(a, b):
    """Per-pair ratios b/a: their geometric mean and its 95 % confidence interval.

    Paired t-interval on the log ratios, mapped back: exp(mean +- t(0.975, n-1) sd / sqrt(n)).
    On the log scale a ratio and its inverse weigh the same, so an A/A run is centred on
    1 even when the pairs are noisy (the plain mean of ratios is biased upwards).
    Returns (ratio, low, high, ratios); low and high are None with fewer than 2 pairs.
    """
    r = [y / x for x, y in zip(a, b) if x is not None and y is not None and x > 0 and y > 0]
    if not r:
        return None, None, None, r
    lg = [math.log(x) for x in r]
    m = statistics.fmean(lg)
    if len(r) < 2:
        return math.exp(m), None, None, r
    half = t_quantile(0.975, len(r) - 1) * statistics.stdev(lg) / math.sqrt(len(r))
    return math.exp(m), math.exp(m - half), math.exp(m + half), r


# -- the figures ----------------------------------------------------------------------------
def kv(line):
    return dict(t.split("=", 1) for t in line.split() if "=" in t)


def fmt_size(n):
    if n % MiB == 0:
        return f"{n // MiB} MiB"
    if n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} B"


class Step:
    """One measurement in one boot: the guest command, the host peer, the figures it yields."""

    def __init__(self, kind, size, port, a, conns=1):
        self.kind, self.size, self.port, self.conns = kind, size, port, conns
        self.suffix = f"{size}" if conns == 1 else f"{size}_x{conns}"
        self.guest_line = None  # GUEST-BENCH summary (dict)
        self.guest_rc = None
        self.peer = None
        self.peer_line = None  # PEER summary (dict)
        self.error = None
        self.dev0 = self.dev1 = None  # skiff-vsock snapshots (counters, cpu_ns) around the step
        rs = a.read_size or size
        sec, mx = f"{a.seconds:g}", str(a.max_bytes)
        lowat = "--rcvlowat 1"
        gbuf = f" --buf-size {a.guest_buf}" if a.guest_buf else ""
        tmo = f"--timeout {a.step_timeout}" + pin_args(a)
        nc = ["--conns", str(conns)]
        if kind == "g2h":
            self.guest = f"guest-bench send 2:{port} --size {size} --seconds {sec} --max-bytes {mx}{gbuf} " \
                         f"--conns {conns} {tmo}"
            self.peer_args = ["sink", "--size", str(size), "--read-size", str(rs)] + nc
        elif kind == "h2g":
            self.guest = f"guest-bench recv 2:{port} --size {size} --read-size {rs} {lowat}{gbuf} " \
                         f"--conns {conns} {tmo}"
            self.peer_args = ["source", "--size", str(size), "--seconds", sec, "--max-bytes", mx] + nc
        else:
            self.guest = f"guest-bench pingpong 2:{port} --size {size} --count {a.rtt_count} {lowat}{gbuf} {tmo}"
            self.peer_args = ["echo", "--size", str(size)]

    def figures(self):
        """{figure name: value} from both summaries; sets self.error when they disagree."""
        g, h = self.guest_line, self.peer_line
        if g is None or h is None:
            self.error = self.error or ("no guest-bench result" if g is None else "no host peer result")
            return {}
        if g.get("status") != "ok" or h.get("status") != "ok":
            self.error = f"guest {g.get('status')} {g.get('err', '')} {g.get('where', '')}; " \
                         f"host {h.get('status')} {h.get('err', '')} {h.get('where', '')}"
            return {}
        gb, hb = int(g["bytes"]), int(h["bytes"])
        if gb != hb or gb == 0:
            self.error = f"byte counts differ: guest {gb}, host {hb}"
            return {}
        s = self.suffix
        if self.kind in ("g2h", "h2g"):
            out = {f"{self.kind}_{s}": hb / (int(h["ns"]) / 1e9) / 1e6}
            if self.kind == "h2g":
                hz = int(g["clk_tck"])
                busy = int(g["cpu_busy_ticks"]) / hz if hz and int(g["cpu_total_ticks"]) else None
                proc = (int(g["utime_us"]) + int(g["stime_us"])) / 1e6
                kib = gb / 1024
                out[f"cpu_guest_h2g_{s}"] = busy * 1e9 / kib if busy is not None else None
                out[f"cpu_proc_h2g_{s}"] = proc * 1e9 / kib
                out[f"cpu_host_h2g_{s}"] = int(h["tree_cpu_ns"]) / kib if "tree_cpu_ns" in h else None
                if "thread_cpu_ns" in h:  # QEMU: the host thread of the vCPU that takes the vsock IRQ
                    out[f"cpu_vcpu_h2g_{s}"] = int(h["thread_cpu_ns"]) / kib
                if int(g.get("irq_cpu_total_ticks", 0)):  # guest /proc/stat of that CPU
                    out[f"cpu_irq_h2g_{s}"] = int(g["irq_cpu_busy_ticks"]) / hz * 1e9 / kib
                out[f"bytes_per_recv_h2g_{s}"] = gb / int(g["calls"]) if int(g["calls"]) else None
            else:
                # The sender's side of guest->host: host CPU of the guest's processes and
                # whole-guest CPU per KiB sent.
                kib = gb / 1024
                out[f"cpu_host_g2h_{s}"] = int(h["tree_cpu_ns"]) / kib if "tree_cpu_ns" in h else None
                hz = int(g.get("clk_tck", 0))
                if hz and int(g.get("cpu_total_ticks", 0)):
                    out[f"cpu_guest_g2h_{s}"] = int(g["cpu_busy_ticks"]) / hz * 1e9 / kib
            out.update(self.dev_figures(gb))
            return out
        return {f"rtt_{s}": int(g["rtt_mean_ns"]) / 1e3, f"rtt_p99_{s}": int(g["rtt_p99_ns"]) / 1e3}


    def dev_figures(self, nbytes):
        """Per-step device figures from the skiff-vsock snapshots around the step (they
        also span the step's connection setup and teardown): device CPU per KiB, and
        packets, interrupts and kicks per MiB moved."""
        d0, d1 = self.dev0, self.dev1
        if not d0 or not d1 or not nbytes:
            return {}
        k, s, mib = self.kind, self.suffix, nbytes / MiB
        out = {f"dev_cpu_{k}_{s}": (d1["cpu_ns"] - d0["cpu_ns"]) / (nbytes / 1024)}
        for c in DEV_RATES:
            if c in d0 and c in d1:
                out[f"{c}_per_mib_{k}_{s}"] = (d1[c] - d0[c]) / mib
        return out


# Device counters shown per MiB moved, per step (skiff-vsock's SIGUSR1 counters).
DEV_RATES = ("rx_pkts", "tx_pkts", "irqs_sent", "kicks")


def pin_args(a):
    """guest-bench options that place the reader and the vsock interrupt (--reader-cpu,
    --irq-cpu), with a leading space; empty when neither is set."""
    out = ""
    if a.reader_cpu is not None:
        out += f" --cpu {a.reader_cpu}"
    if a.irq_cpu is not None:
        out += f" --irq-cpu {a.irq_cpu}"
    return out


def task_cpu_ns(pid):
    """CPU time of every thread of process @pid so far, ns (schedstat), or None."""
    tot = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                tot += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return tot


def figure_steps(a):
    """The steps of one boot, in order; each gets its own vsock port."""
    steps, port = [], FIRST_PORT
    for n in a.conns:
        for s in a.sizes:
            steps.append(Step("g2h", s, port, a, n))
            steps.append(Step("h2g", s, port + 1, a, n))
            port += 2
    for s in a.rtt_sizes:
        steps.append(Step("rtt", s, port, a))
        port += 1
    return steps


def figure_meta(name):
    """(label, unit, better, limit key) of a figure name."""
    m = re.match(r"(.*)_x(\d+)$", name)
    if m:  # N connections at once: same figure, summed over the connections
        label, unit, better, lim = figure_meta(m.group(1))
        return f"{label} x{m.group(2)}", unit, better, lim
    m = re.match(r"(g2h|h2g)_(\d+)$", name)
    if m:
        d = "guest->host" if m.group(1) == "g2h" else "host->guest"
        return f"{d} {fmt_size(int(m.group(2)))}", "MB/s", "higher", f"socketpair_{m.group(2)}"
    m = re.match(r"rtt(_p99)?_(\d+)$", name)
    if m:
        what = "RTT p99" if m.group(1) else "RTT mean"
        return f"{what} {fmt_size(int(m.group(2)))}", "us", "lower", f"socketpair_rtt_{m.group(2)}"
    m = re.match(r"cpu_(guest|proc|host|vcpu|irq)_(h2g|g2h)_(\d+)$", name)
    if m:
        who = {"guest": "guest CPU", "proc": "recv proc CPU", "host": "guest's host CPU",
               "vcpu": "IRQ vCPU host CPU", "irq": "IRQ CPU guest CPU"}[m.group(1)]
        return f"{who}/KiB {m.group(2)} {fmt_size(int(m.group(3)))}", "ns/KiB", "lower", None
    m = re.match(r"bytes_per_recv_h2g_(\d+)$", name)
    if m:
        return f"bytes/recv call h2g {fmt_size(int(m.group(1)))}", "B", "higher", None
    m = re.match(r"dev_cpu_(g2h|h2g)_(\d+)$", name)
    if m:
        return f"device CPU/KiB {m.group(1)} {fmt_size(int(m.group(2)))}", "ns/KiB", "lower", None
    m = re.match(r"(\w+)_per_mib_(g2h|h2g)_(\d+)$", name)
    if m:
        return f"{m.group(1)}/MiB {m.group(2)} {fmt_size(int(m.group(3)))}", "1/MiB", "lower", None
    return name, "", "", None


# -- one boot -------------------------------------------------------------------------------
class Turn:
    """Step-level interleaving of two live guests: A step 1, B step 1, A step 2, ...

    Each boot's control server asks wait() before it hands its guest step k, and says
    done() when the guest comes back for the next one. A boot that ends (or fails) gives
    up its remaining turns, so the other never waits for it.
    """

    def __init__(self, nsteps, nboots=2, first=0):
        # @first: the boot that goes first at every step; the harness alternates it from
        # pair to pair, so that going first or second (e.g. a host peer or page cache
        # warmed by the other guest's step) does not always favour the same kernel.
        boots = [(first + i) % nboots for i in range(nboots)]
        self.order = [(b, k) for k in range(nsteps) for b in boots]
        self.finished = set()
        self.pos = 0
        self.cond = threading.Condition()

    def _advance(self):
        while self.pos < len(self.order) and self.order[self.pos] in self.finished:
            self.pos += 1
        self.cond.notify_all()

    def wait(self, boot, k, stop, limit=45.0):
        """Until it is (boot, k)'s turn. At most @limit seconds: the guest's fetch gives up
        after 60 s (vsock-tool's default timeout), so a very long step of the other guest
        costs the strict alternation, not the run."""
        end = time.monotonic() + limit
        with self.cond:
            while not stop.is_set() and time.monotonic() < end:
                if self.pos >= len(self.order) or self.order[self.pos] == (boot, k):
                    return True
                self.cond.wait(0.2)
            return False

    def done(self, boot, k):
        with self.cond:
            self.finished.add((boot, k))
            self._advance()

    def boot_ended(self, boot):
        with self.cond:
            self.finished.update(t for t in self.order if t[0] == boot)
            self._advance()


class Boot:
    def __init__(self, a, variant, kernel, pair, work, turn=None, bid=0):
        self.a, self.variant, self.kernel, self.pair = a, variant, kernel, pair
        self.turn, self.bid = turn, bid  # step interleaving with another boot (Turn), or None
        self.turn_timeouts = 0  # steps started without their turn (Turn.wait limit)
        self.work = work
        self.vu_sock = os.path.join(work, "vu.sock")
        self.uds = os.path.join(work, "h.sock")
        self.steps = figure_steps(a)
        self.current = None  # the step whose output the console shows (console thread only)
        self.vm_pid = None  # guest-run.sh: the UML processes are its descendants
        self.done = threading.Event()
        self.console = []
        self.procs = []
        self.errors = []
        self.counters = {}
        self.seconds = None
        self.dev_pid = None  # skiff-vsock, for the per-step snapshots
        self.devlog = os.path.join(work, "skiff-vsock.log")
        self.vm = None  # GuestRun

    def log(self, msg):
        if self.a.verbose:
            print(f"guest_ab: {msg}", flush=True)

    def start_peer(self, st):
        argv = [self.a.peer] + st.peer_args[:1] + ["--listen", f"{self.uds}_{st.port}"] + st.peer_args[1:] \
            + ["--timeout", str(self.a.step_timeout), "--cpu-tree", str(self.vm_pid)]
        if self.a.vmm == "qemu" and self.a.irq_cpu is not None:
            argv += ["--cpu-thread", f"CPU {self.a.irq_cpu}/TCG"]
        st.peer = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.procs.append(st.peer)
        line = st.peer.stdout.readline()
        if not line.startswith("PEER-LISTENING"):
            raise RuntimeError(f"host peer did not listen: {line.strip()}")

    def dev_snapshot(self):
        """skiff-vsock's counters now (SIGUSR1 makes it print them to its log) and its
        CPU time (ns); None if it does not answer within 2 s, or without skiff-vsock (skiff)."""
        if self.dev_pid is None:
            return None
        cpu = task_cpu_ns(self.dev_pid)
        try:
            with open(self.devlog) as f:
                n0 = f.read().count("skiff-vsock: counters:")
            os.kill(self.dev_pid, signal.SIGUSR1)
        except OSError:
            return None
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            with open(self.devlog) as f:
                text = f.read()
            lines = re.findall(r"skiff-vsock: counters: (.*)\n", text)
            if len(lines) > n0 and cpu is not None:
                toks = lines[-1].split()
                out = {toks[i]: int(toks[i + 1]) for i in range(0, len(toks) - 1, 2)}
                out["cpu_ns"] = cpu
                return out
            time.sleep(0.005)
        return None

    def plan_server(self, srv):
        """Serve one step script per fetch (init.sh control mode), then an empty one."""
        serve_scripts(srv, self.done, self.next_script)

    def next_script(self, served):
        script = ""
        if 0 < served <= len(self.steps):
            self.steps[served - 1].dev1 = self.dev_snapshot()
        if self.turn and served > 0:
            self.turn.done(self.bid, served - 1)  # the guest is back: its last step ended
        if self.turn and served < len(self.steps) and not self.turn.wait(self.bid, served, self.done):
            self.turn_timeouts += 1
        if served < len(self.steps):
            st = self.steps[served]
            self.log(f"pair {self.pair + 1} {self.variant}: step {served + 1} ({st.kind} {st.suffix}) starts")
            try:
                self.start_peer(st)
                st.dev0 = self.dev_snapshot()
                script = st.guest + "\n"
            except (OSError, RuntimeError) as e:
                st.error = str(e)
                script = "echo 'GUEST-BENCH status=fail err=EHOSTDOWN where=host-peer'\n"
        return script

    def on_line(self, line):
        self.console.append(line)
        if self.a.verbose:
            print(f"  | {line}", flush=True)
        # Output belongs to the step of the guest's last SKIFF-STEP marker.
        mark = control_marker(line)
        if mark and mark[0] == "step":
            n = mark[1]
            self.current = self.steps[n - 1] if 1 <= n <= len(self.steps) else None
            return
        cur = self.current
        if cur is None:
            return
        if mark:
            cur.guest_rc = mark[1]
        elif line.startswith("GUEST-BENCH "):
            cur.guest_line = kv(line)

    def device_argv(self):
        a = self.a
        binary = a.skiff_vsock_a if self.variant == "baseline" and a.skiff_vsock_a else a.skiff_vsock
        argv = [binary, "--socket", self.vu_sock, "--cid", str(GUEST_CID), "--uds", self.uds,
                "--mrg-rxbuf", a.mrg_rxbuf]
        if a.rx_pkt_max and a.dev_has_rx_pkt_max:
            argv += ["--rx-pkt-max", str(a.rx_pkt_max)]
        if a.conn_buf:
            argv += ["--conn-buf", str(a.conn_buf)]
        return argv

    def start_device(self):
        """skiff-vsock for UML and QEMU; returns once its vhost-user socket exists."""
        devlog = self.devlog
        with open(devlog, "w") as f:
            dev = subprocess.Popen(self.device_argv(), stderr=f, stdout=f)
        self.procs.append(dev)
        self.dev_pid = dev.pid
        deadline = time.monotonic() + 10
        while not os.path.exists(self.vu_sock):
            if dev.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("skiff-vsock did not come up: " + tail(devlog))
            time.sleep(0.02)
        return dev

    def stop_device(self, dev):
        """SIGTERM to skiff-vsock; its last counters line (printed then) into self.counters."""
        dev.send_signal(signal.SIGTERM)
        try:
            dev.wait(timeout=20)
        except subprocess.TimeoutExpired:
            dev.kill()
            dev.wait()
            self.errors.append("skiff-vsock did not exit on SIGTERM")
        m = None
        for m in re.finditer(r"skiff-vsock: counters: (.*)", open(self.devlog).read()):
            pass  # the last one: printed on SIGTERM
        if m:
            toks = m.group(1).split()
            self.counters = {toks[i]: int(toks[i + 1]) for i in range(0, len(toks) - 1, 2)}

    def run(self):
        a = self.a
        t0 = time.monotonic()
        skiff = a.vmm == "skiff"
        dev = None if skiff else self.start_device()
        stats = os.path.join(self.work, "skiff-stats")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(f"{self.uds}_{CTL_PORT}")
        srv.listen(4)
        srv.settimeout(0.2)
        threading.Thread(target=self.plan_server, args=(srv,), daemon=True).start()
        vsock = f"cid={GUEST_CID},uds={self.uds},mrg-rxbuf={a.mrg_rxbuf}" if skiff else self.vu_sock
        if skiff and a.conn_buf:
            vsock += f",conn-buf={a.conn_buf}"
        argv = [os.path.join(REPO, "scripts/guest-run.sh"), a.vmm, "--kernel", self.kernel, "--initrd", a.initrd,
                "--vsock", vsock, "--append", f"skiff.ctl={CTL_PORT}", "--timeout", str(a.boot_timeout),
                "--mem", str(a.mem)]
        if skiff:
            # skiff run with its in-process device (seccomp kill); counters at exit to stats.
            # (env execs guest-run.sh, which passes SKIFF_STATS through: same pid)
            argv = ["env", f"SKIFF_STATS={stats}"] + argv + ["--skiff", a.skiff, "--smp", str(a.smp)]
        elif a.vmm == "qemu":
            # QEMU TCG microvm (see guest-run.sh): version-1 virtio-mmio for the device.
            # QEMU 7.2's vhost-user-vsock-device does not pass MRG_RXBUF on: both
            # kernels run without the feature there.
            argv += ["--smp", str(a.smp), "--", "-global", "virtio-mmio.force-legacy=false"]
        self.vm = vm = GuestRun(argv, on_line=self.on_line)
        self.vm_pid = vm.pid  # set before the guest can fetch its first step
        if vm.wait(a.boot_timeout + 30) is None:  # guest-run.sh's own --timeout failed
            vm.kill(f"guest-run.sh still running {a.boot_timeout + 30} s after start: killed")
        rc = vm.status
        self.done.set()
        if self.turn:
            self.turn.boot_ended(self.bid)
        self.seconds = time.monotonic() - t0
        if vm.dead:
            self.errors.append(f"guest: {vm.reason()}")
        elif rc != 0:
            self.errors.append(f"guest-run.sh exited {rc}")
        for st in self.steps:
            if st.peer is None:
                continue
            for line in finish_peer(st.peer, vm, a.step_timeout + 10).splitlines():
                if line.startswith("PEER "):
                    st.peer_line = kv(line)
        if dev:
            self.stop_device(dev)
        elif os.path.exists(stats):  # skiff's SKIFF_STATS: key=value lines
            with open(stats) as f:
                for line in f:
                    k, _, v = line.strip().partition("=")
                    if v:
                        self.counters[k] = int(v, 0)
        figs = {}
        for st in self.steps:
            figs.update(st.figures())
            if st.error:
                self.errors.append(f"{st.kind} {st.suffix}: {st.error}")
        if self.errors and not a.verbose:
            print("--- guest console (last 30 lines) ---\n" + "\n".join(self.console[-30:]), file=sys.stderr)
            if dev:
                print("--- skiff-vsock log ---\n" + tail(self.devlog), file=sys.stderr)
        return figs

    def raw(self):
        return [{"kind": st.kind, "size": st.size, "conns": st.conns, "guest": st.guest_line, "host": st.peer_line,
                 "error": st.error} for st in self.steps]

    def cleanup(self):
        self.done.set()
        if self.turn:
            self.turn.boot_ended(self.bid)
        if self.vm:
            self.vm.kill()
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def tail(path, n=15):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# -- limits -----------------------------------------------------------------------------------
def measure_limits(a):
    lim = {}
    for s in a.sizes:
        rs = a.read_size or s
        out = subprocess.run([a.peer, "socketpair", "--size", str(s), "--read-size", str(rs), "--seconds",
                              f"{a.limit_seconds:g}", "--max-bytes", str(a.max_bytes)],
                             stdout=subprocess.PIPE, text=True, timeout=60).stdout
        r = kv(out.strip().splitlines()[-1]) if out.strip() else {}
        lim[f"socketpair_{s}"] = int(r["bytes"]) / (int(r["ns"]) / 1e9) / 1e6 if r.get("status") == "ok" else None
    for s in a.rtt_sizes:
        out = subprocess.run([a.peer, "socketpair-pingpong", "--size", str(s), "--count", str(a.rtt_count)],
                             stdout=subprocess.PIPE, text=True, timeout=60).stdout
        r = kv(out.strip().splitlines()[-1]) if out.strip() else {}
        lim[f"socketpair_rtt_{s}"] = int(r["rtt_mean_ns"]) / 1e3 if r.get("status") == "ok" else None
    return lim


# -- driver -------------------------------------------------------------------------------------
def kernel_path(variant, vmm="uml"):
    arch, f = ("um", "linux") if vmm == "uml" else ("x86_64", "bzImage")
    return subprocess.run([os.path.join(REPO, "scripts/build-kernels.sh"), "--print-path", variant, arch, f],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for blk in iter(lambda: f.read(1 << 20), b""):
            h.update(blk)
    return h.hexdigest()


def series_list():
    try:
        with open(os.path.join(REPO, "guest-kernel-patches/series/series")) as f:
            return [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    except OSError:
        return []


def parse_size(s):
    m = re.fullmatch(r"(\d+)([KkMm]?)", s.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size '{s}'")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20}[m.group(2).lower()]


def parse_sizes(s):
    v = [parse_size(x) for x in s.split(",") if x]
    if not v or any(x <= 0 or x > 4 * MiB for x in v):
        raise argparse.ArgumentTypeError(f"bad size list '{s}'")
    return v


def figure_names(a):
    """Every figure of a run, in table order."""
    sfx = [f"{s}" if n == 1 else f"{s}_x{n}" for n in a.conns for s in a.sizes]
    names = [f"g2h_{s}" for s in sfx] + [f"h2g_{s}" for s in sfx]
    names += [f"rtt_{s}" for s in a.rtt_sizes] + [f"rtt_p99_{s}" for s in a.rtt_sizes]
    for k in ("cpu_host_h2g", "cpu_guest_h2g", "cpu_proc_h2g", "cpu_vcpu_h2g", "cpu_irq_h2g",
              "bytes_per_recv_h2g"):
        names += [f"{k}_{s}" for s in sfx]
    for k in ("cpu_host_g2h", "cpu_guest_g2h"):
        names += [f"{k}_{s}" for s in sfx]
    for d in ("g2h", "h2g") if a.vmm != "skiff" else ():  # skiff-vsock's per-step snapshots
        for k in ["dev_cpu"] + [f"{c}_per_mib" for c in DEV_RATES]:
            names += [f"{k}_{d}_{s}" for s in sfx]
    return names


def parse_conns(s):
    try:
        v = [int(x) for x in s.split(",") if x]
    except ValueError:
        v = []
    if not v or any(x < 1 or x > 64 for x in v) or len(set(v)) != len(v):
        raise argparse.ArgumentTypeError(f"bad connection count list '{s}' (1..64, no repeats)")
    return v


def summarise(pairs, names):
    summary = {}
    for name in names:
        label, unit, better, limkey = figure_meta(name)
        av = [p["A"]["figures"].get(name) for p in pairs]
        bv = [p["B"]["figures"].get(name) for p in pairs]
        ok = [(x, y) for x, y in zip(av, bv) if x is not None and y is not None]
        am = statistics.fmean([x for x, _ in ok]) if ok else None
        bm = statistics.fmean([y for _, y in ok]) if ok else None
        m, lo, hi, ratios = paired_ratio_ci([x for x, _ in ok], [y for _, y in ok])
        lims = [p["limits"].get(limkey) for p in pairs if limkey and p["limits"].get(limkey)]
        lim = statistics.median(lims) if lims else None
        frac = None
        if lim and am and bm:
            frac = (am / lim, bm / lim) if better == "higher" else (lim / am, lim / bm)
        summary[name] = {
            "label": label, "unit": unit, "better": better, "n_pairs": len(ok),
            "a_values": av, "b_values": bv, "ratios_b_over_a": ratios,
            "a_mean": am, "b_mean": bm,
            "change_pct": (m - 1) * 100 if m is not None else None,
            "ci95_pct": [(lo - 1) * 100, (hi - 1) * 100] if lo is not None else None,
            "limit_key": limkey, "limit": lim,
            "a_frac_of_limit": frac[0] if frac else None,
            "b_frac_of_limit": frac[1] if frac else None,
        }
    return summary


def num(v, nd=1):
    if v is None:
        return "n/a"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    return f"{v:.{nd}f}"


def print_table(summary, cfg):
    print()
    print(f"A = {cfg['kernel_a_label']} ({cfg['kernel_a']})\nB = {cfg['kernel_b_label']} ({cfg['kernel_b']})")
    print(f"{cfg['comparison']}; {cfg['pairs']} pair(s) A B; device: mrg_rxbuf={cfg['mrg_rxbuf']}, "
          f"rx_pkt_max={cfg['rx_pkt_max_applied']}, conn_buf={cfg['conn_buf']}, guest_buf={cfg['guest_buf']}; transfers {cfg['seconds']:g} s or "
          f"{fmt_size(cfg['max_bytes'])}; RTT over {cfg['rtt_count']} requests; SO_RCVLOWAT=1 on guest receivers")
    hdr = f"{'figure':<30} {'unit':<7} {'mean A':>9} {'mean B':>9} {'B/A change [95% CI]':>26} " \
          f"{'A/limit':>8} {'B/limit':>8} {'limit':>9}"
    print(hdr)
    print("-" * len(hdr))
    for name, s in summary.items():
        if s["change_pct"] is None:
            ch = "n/a"
        elif s["ci95_pct"] is None:
            ch = f"{s['change_pct']:+.1f}% [n/a]"
        else:
            ch = f"{s['change_pct']:+.1f}% [{s['ci95_pct'][0]:+.1f}, {s['ci95_pct'][1]:+.1f}]"
        fa = f"{s['a_frac_of_limit']:.3f}" if s["a_frac_of_limit"] is not None else "-"
        fb = f"{s['b_frac_of_limit']:.3f}" if s["b_frac_of_limit"] is not None else "-"
        lim = num(s["limit"]) if s["limit"] is not None else "-"
        print(f"{s['label']:<30} {s['unit']:<7} {num(s['a_mean']):>9} {num(s['b_mean']):>9} {ch:>26} "
              f"{fa:>8} {fb:>8} {lim:>9}")
    print("limit: AF_UNIX socketpair in this run (throughput: writer+reader threads, same payload; RTT: "
          "ping-pong), median over pairs; x/limit: fraction of the limit's speed (RTT: limit/RTT).")
    print("CPU per KiB received: guest's host CPU = CPU time of the guest's host processes (UML or QEMU) over "
          "the receive (host /proc/PID/task/*/schedstat, ns; immune to host steal); guest CPU = whole-guest "
          "non-idle time (guest /proc/stat, 10 ms ticks); recv proc CPU = the receiving process's utime+stime "
          "(guest getrusage); IRQ vCPU host CPU / IRQ CPU guest CPU (--irq-cpu): the same two views for the guest "
          "CPU that takes the vsock interrupt only (its QEMU thread 'CPU N/TCG'; its /proc/stat line).")


DIRECTIONAL = ("guest_ab: DIRECTIONAL FIGURES ONLY: skiff ran in an emulated host (QEMU TCG with AMD SVM, "
               "scripts/test-host.sh): the virtualization is emulated, so these are not this machine's speed; "
               "compare A with B, not with other runs or machines")


def run_in_test_host(a):
    """--vmm skiff outside the emulated host: run this same command line inside one
    (scripts/test-host.sh; directly where /dev/kvm is hardware virtualization), --json written
    to a work directory and copied out. Return: its exit status."""
    kvm = subprocess.run(["bash", os.path.join(REPO, "scripts/machine-info.sh"), "--kvm"], stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    mode = "direct" if kvm == "hardware" else "emulated"
    work = tempfile.mkdtemp(prefix="skiff-gab-host-")
    argv = [sys.executable, os.path.abspath(__file__)] + sys.argv[1:]
    if a.json:
        i = max(i for i, x in enumerate(argv) if x == "--json" or x.startswith("--json="))
        inner_json = os.path.join(work, "out.json")
        argv[i:i + (1 if argv[i].startswith("--json=") else 2)] = ["--json", inner_json]
    # the whole run's bound: every boot's own bound, both boots of a pair at once, plus the host's
    # boot (allowed 240 s: on this project's loaded 2-core machines it has taken over 60 s)
    limit = a.pairs * (a.boot_timeout + 60) + 300
    if mode == "emulated":
        print(f"guest_ab: --vmm skiff: this machine's /dev/kvm is {kvm or 'missing'}, not hardware "
              f"virtualization: running inside an emulated host (scripts/test-host.sh, at most {limit} s)",
              flush=True)
    env = dict(os.environ, **{INNER_ENV: mode})
    try:
        rc = subprocess.run(["bash", os.path.join(REPO, "scripts/test-host.sh"), "--work", work, "--timeout",
                             str(limit), "--boot-timeout", "240", "--", *argv], env=env, cwd=work).returncode
        if a.json and os.path.exists(os.path.join(work, "out.json")):
            shutil.copyfile(os.path.join(work, "out.json"), a.json)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skiff-vsock", required=True, help="skiff-vsock binary (set by build/bench/guest_ab)")
    ap.add_argument("--skiff-vsock-a", help="skiff-vsock binary of the A side only (default: --skiff-vsock): "
                    "old device against new, with --kernel-a and --kernel-b the same kernel")
    ap.add_argument("--skiff", default=os.environ.get("SKIFF_BIN", os.path.join(REPO, "build/vmm/skiff")),
                    help="skiff binary for --vmm skiff (set by build/bench/guest_ab; default $SKIFF_BIN, "
                         "else build/vmm/skiff)")
    ap.add_argument("--guest-bench", required=True, help="guest-bench binary (only checked: it is in the initrd)")
    ap.add_argument("--peer", required=True, help="guest-ab-peer binary")
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--kernel-a", help="A kernel (default: build-kernels.sh --print-path baseline um)")
    ap.add_argument("--kernel-b", help="B kernel (default: build-kernels.sh --print-path patched um)")
    ap.add_argument("--pairs", type=int, default=8, help="A/B pairs (default 8)")
    ap.add_argument("--vmm", choices=["uml", "qemu", "skiff"], default="uml",
                    help="guest: user-mode Linux (default), a QEMU TCG microvm (no MRG_RXBUF through QEMU 7.2), "
                         "or skiff with its in-process device (x86-64 kernels; in an emulated host where this "
                         "machine has no hardware KVM: directional figures only)")
    ap.add_argument("--smp", type=int, default=1, help="guest vCPUs (--vmm qemu or skiff; QEMU MTTCG: one host "
                    "thread each)")
    ap.add_argument("--reader-cpu", type=int, help="guest CPU the guest side of every step runs on "
                    "(guest-bench --cpu; needs --smp > C with --vmm qemu)")
    ap.add_argument("--irq-cpu", type=int, help="guest CPU that takes the vsock interrupt, and so runs the RX "
                    "worker (guest-bench --irq-cpu); with --vmm qemu also reports the host CPU time of that "
                    "vCPU's thread per KiB received (cpu_vcpu)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 pair, short transfers, 1000 RTT requests")
    ap.add_argument("--mrg-rxbuf", choices=["on", "off"], default="on", help="skiff-vsock --mrg-rxbuf (default on)")
    ap.add_argument("--rx-pkt-max", type=parse_size, default=0,
                    help="cap on the payload of each host-to-guest packet (skiff-vsock --rx-pkt-max, when it has it)")
    ap.add_argument("--sizes", type=parse_sizes, default=[256, 4096, 65536], help="throughput payloads")
    ap.add_argument("--conns", type=parse_conns, default=[1],
                    help="connections at once for the throughput figures, a list (default 1; e.g. 1,8)")
    ap.add_argument("--rtt-sizes", type=parse_sizes, default=[256, 4096], help="ping-pong payloads")
    ap.add_argument("--rtt-count", type=int, help="ping-pong requests (default 10000; --vmm skiff 1000: "
                    "a round trip in the emulated host takes milliseconds)")
    ap.add_argument("--seconds", type=float, default=1.0, help="time bound of each transfer (default 1)")
    ap.add_argument("--max-bytes", type=parse_size, default=64 * MiB, help="byte bound of each transfer (64M)")
    ap.add_argument("--read-size", type=parse_size, default=0,
                    help="receive call size on the receiving side (default: the payload size)")
    ap.add_argument("--guest-buf", type=parse_size, default=0,
                    help="guest SO_VM_SOCKETS_BUFFER_SIZE (and _MAX_SIZE) on every guest socket, senders "
                         "included (default: kernel default, 256 KiB)")
    ap.add_argument("--conn-buf", type=parse_size, default=0,
                    help="the device's buf_alloc per connection: skiff-vsock --conn-buf, skiff's "
                         "--vsock conn-buf= (default: the device's, 256 KiB)")
    ap.add_argument("--limit-seconds", type=float, default=0.3, help="socketpair limit run per size and pair")
    ap.add_argument("--mem", type=int, default=256, help="guest RAM MiB")
    ap.add_argument("--interleave", choices=["step", "boot"], default="step",
                    help="step: per pair, both kernels boot at once and their steps alternate A B A B "
                         "(each A/B comparison seconds apart); boot: A's boot runs all steps, then B's (step)")
    ap.add_argument("--nice", type=int, default=0, metavar="N",
                    help="raise the scheduling priority of the whole run by N (nice -N; needs root): "
                         "on a loaded machine the guest then waits less for a CPU (default 0)")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--verbose", action="store_true", help="echo the guest console")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    exit_if_skipped("kvm" if a.vmm == "skiff" else a.vmm, "guest_ab")
    if a.rtt_count is None:
        a.rtt_count = 1000 if a.vmm == "skiff" else 10000
    if a.quick:
        a.pairs, a.seconds, a.rtt_count, a.limit_seconds = 1, 0.2, 1000, 0.1
    if a.pairs < 1 or a.rtt_count < 1 or not (0 < a.seconds <= 60) or not (0 <= a.nice <= 19):
        ap.error("--pairs, --rtt-count and --seconds must be positive (--seconds <= 60), --nice 0..19")
    if not 1 <= a.smp <= 4 or (a.smp > 1 and a.vmm == "uml"):
        ap.error("--smp is 1..4 and above 1 needs --vmm qemu or skiff (UML is uniprocessor)")
    for what, c in (("--reader-cpu", a.reader_cpu), ("--irq-cpu", a.irq_cpu)):
        if c is not None and not 0 <= c < a.smp:
            ap.error(f"{what} {c}: the guest has CPUs 0..{a.smp - 1} (--smp)")
    a.step_timeout = int(max(30, a.seconds * 10 + a.rtt_count * 0.005))
    a.boot_timeout = 60 + a.step_timeout * (2 * len(a.sizes) * len(a.conns) + len(a.rtt_sizes)) \
        * (2 if a.interleave == "step" else 1)
    if a.nice:
        try:  # inherited by every process of the run: skiff-vsock, UML, the host peers
            os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) - a.nice)
        except OSError as e:
            print(f"guest_ab: warning: --nice {a.nice}: {e}; running at normal priority", file=sys.stderr)
            a.nice = 0
    ka = a.kernel_a or kernel_path("baseline", a.vmm)
    kb = a.kernel_b or kernel_path("patched", a.vmm)
    skiff = a.vmm == "skiff"
    if not skiff and not a.skiff_vsock:
        print("guest_ab: FAIL: skiff-vsock was not built (device model missing in this build)")
        return 1
    dev = ("skiff", a.skiff) if skiff else ("skiff-vsock", a.skiff_vsock)
    if a.skiff_vsock_a and skiff:
        print("guest_ab: FAIL: --skiff-vsock-a is for --vmm uml or qemu (skiff-vsock devices)")
        return 1
    if a.skiff_vsock_a and not os.path.exists(a.skiff_vsock_a):
        print(f"guest_ab: FAIL: --skiff-vsock-a missing at '{a.skiff_vsock_a}'")
        return 1
    for what, p in (("A kernel", ka), ("B kernel", kb), dev, ("initrd", a.initrd),
                    ("guest-bench", a.guest_bench), ("guest-ab-peer", a.peer)):
        if not p or not os.path.exists(p):
            print(f"guest_ab: FAIL: {what} missing at '{p}' (kernels: scripts/build-kernels.sh"
                  f"{'' if skiff else ' --arch um'}; programs: cmake --build build --target guest-ab"
                  f"{' skiff' if skiff else ''})")
            return 1
    if skiff and not os.environ.get(INNER_ENV):
        return run_in_test_host(a)
    a.dev_has_rx_pkt_max = False
    if not skiff:
        helptext = subprocess.run([a.skiff_vsock, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True).stdout
        a.dev_has_rx_pkt_max = "--rx-pkt-max" in helptext
        if a.skiff_vsock_a:
            helptext = subprocess.run([a.skiff_vsock_a, "--help"], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True).stdout
            a.dev_has_rx_pkt_max = a.dev_has_rx_pkt_max and "--rx-pkt-max" in helptext
    if a.rx_pkt_max and not a.dev_has_rx_pkt_max:
        print(f"guest_ab: warning: {dev[0]} has no --rx-pkt-max; host-to-guest packets are not capped "
              f"(asked for {a.rx_pkt_max} B)", file=sys.stderr)
    emulated = skiff and os.environ.get(INNER_ENV) == "emulated"
    same = sha256(ka) == sha256(kb)
    cfg = {
        "kernel_a": ka, "kernel_b": kb,
        "kernel_a_label": "--kernel-a" if a.kernel_a else "baseline",
        "kernel_b_label": "--kernel-b" if a.kernel_b else "patched", "kernel_a_sha256": sha256(ka), "kernel_b_sha256": sha256(kb),
        "comparison": ("A/B: the same kernel, the devices differ (A: --skiff-vsock-a)" if same and a.skiff_vsock_a
                       else "A/A: both kernels are the same file contents" if same
                       else "A/B: the kernels differ (patched = baseline + guest-kernel-patches/series)"),
        "skiff_vsock_a": a.skiff_vsock_a or a.skiff_vsock, "skiff_vsock_b": a.skiff_vsock,
        "identical_kernels": same, "series": series_list(), "pairs": a.pairs, "quick": a.quick,
        "vmm": a.vmm, "smp": a.smp, "reader_cpu": a.reader_cpu, "irq_cpu": a.irq_cpu, "mrg_rxbuf": a.mrg_rxbuf, "rx_pkt_max_requested": a.rx_pkt_max,
        "rx_pkt_max_applied": (a.rx_pkt_max or "none") if a.dev_has_rx_pkt_max else f"unsupported by {dev[0]}",
        "emulated_host": emulated,
        "sizes": a.sizes, "conns": a.conns, "rtt_sizes": a.rtt_sizes, "rtt_count": a.rtt_count, "seconds": a.seconds,
        "max_bytes": a.max_bytes, "read_size": a.read_size or "payload", "guest_buf": a.guest_buf or "default",
        "conn_buf": a.conn_buf or "default",
        "rcvlowat": 1, "limit_seconds": a.limit_seconds, "guest_mem_mib": a.mem, "nice": -a.nice,
        "order": "per pair: A and B booted together, steps alternating A B (B A in odd pairs)" if a.interleave == "step"
        else "per pair: boot A (all steps), then boot B (all steps)",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    work = tempfile.mkdtemp(prefix="skiff-gab-", dir="/tmp")
    pairs, failed = [], False
    t_start = time.monotonic()
    try:
        for i in range(a.pairs):
            pair = {"pair": i, "limits": measure_limits(a)}
            sides = (("A", "baseline", ka), ("B", "patched", kb))
            turn = Turn(len(figure_steps(a)), first=i % 2) if a.interleave == "step" else None
            boots = []
            for bid, (side, variant, kernel) in enumerate(sides):
                bdir = os.path.join(work, f"p{i}{side}")
                os.mkdir(bdir)
                boots.append(Boot(a, variant, kernel, i, bdir, turn, bid))
            results = [None] * len(boots)

            def run_boot(bid):
                boot = boots[bid]
                try:
                    results[bid] = boot.run()
                except (OSError, RuntimeError) as e:
                    boot.errors.append(str(e))
                    results[bid] = {}
                finally:
                    boot.cleanup()

            if turn:  # both guests up at once, their steps alternating
                ths = [threading.Thread(target=run_boot, args=(bid,)) for bid in range(len(boots))]
                for t in ths:
                    t.start()
                for t in ths:
                    t.join()
            else:
                for bid in range(len(boots)):
                    run_boot(bid)
            for bid, (side, variant, _) in enumerate(sides):
                boot = boots[bid]
                pair[side] = {"variant": variant, "figures": results[bid] or {}, "boot_seconds": boot.seconds,
                              "errors": boot.errors, "device_counters": boot.counters,
                              "turn_timeouts": boot.turn_timeouts, "steps": boot.raw()}
                status = "ok" if not boot.errors else "FAILED: " + "; ".join(boot.errors)
                print(f"guest_ab: pair {i + 1}/{a.pairs} {side} ({variant}) "
                      f"{boot.seconds or 0:.1f} s {status}", flush=True)
                failed |= bool(boot.errors)
            pairs.append(pair)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"guest_ab: work directory kept: {work}")
    summary = summarise(pairs, figure_names(a))
    cfg["wall_seconds"] = time.monotonic() - t_start
    print_table(summary, cfg)
    if emulated:
        print(DIRECTIONAL)
    print(f"guest_ab: {a.pairs} pair(s) in {cfg['wall_seconds']:.0f} s" + (" with FAILURES" if failed else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": cfg, "summary": summary, "pairs": pairs}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
