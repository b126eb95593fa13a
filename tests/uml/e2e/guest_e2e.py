#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end vsock tests: a real Linux guest <-> a virtio-vsock device <-> host Unix sockets.

The guest is user-mode Linux (virtio_uml) or a QEMU TCG microvm (vhost-user-vsock-device),
both reaching skiff-vsock (vhost-user), or an x86-64 guest under skiff itself (--vmm skiff:
the in-process virtio-mmio device, no skiff-vsock; on a host with hardware-virtualization
KVM, see scripts/test-host.sh), booted by scripts/guest-run.sh with the initramfs of
scripts/build-initramfs.sh (or --initrd). The host side is the same for all: the device's
hybrid Unix socket (host clients connect to it and write "CONNECT <port>\n"; guest
connections to port P reach a listener on <socket>_P). One boot runs every case: the
guest's /init runs in control mode (skiff.ctl=999) and fetches one step script per case
from this driver over vsock port 999, until an empty one. Each case is
`vsock-tool` in the guest (tests/guest-programs) against `uds-peer` on the host (this
directory); both print a summary line that this script compares (bytes, message counts,
FNV-1a of the payload; the receiving side also checks the byte pattern itself). The reboot
case reboots the guest with connections open; the next boot fetches the following step.

Usage: guest_e2e.py --vmm uml|qemu|skiff [--kernel PATH | --variant baseline|patched]
                    (--skiff-vsock BIN | --skiff BIN) --vsock-tool BIN --uds-peer BIN
                    [--initrd FILE] [--mrg-rxbuf on|off] [--set full|smoke|span|fault]
                    [--stream-mib N] [--conn-kib N] [--verbose] [--keep]
                    [--rx-pkt-max N] [--expect-bufs N] [--test-fault FAULT[,port=P]]
Sets: full and smoke (the negotiated features, streams both ways, many connections,
SEQPACKET, refused connects both ways, half-close both ways, one-shot host senders;
full: 64 MiB streams (--stream-mib), 32 connections of 1 MiB (--conn-kib), a reboot with
live connections and traffic after it); span (mergeable RX buffers: 8 MiB streams and
SEQPACKET messages at 1/2/16/17-buffer boundaries; with --expect-bufs N the device's
rx_chains_max must be N); fault (a lying device,
skiff-vsock --test-fault: the guest must drop every lying packet, say so in dmesg, not leak
(MemFree), show no Oops/BUG/WARN, and keep moving checked data). Every set fails on an
Oops/BUG/WARNING/Call Trace line on the console.
Host clients that connect before the device is up (3, to a port nobody listens on) must be
closed without "OK": under skiff-vsock they connect before the guest boots (the device's
lobby holds them, then closes them); under skiff, as soon as skiff has bound its socket
(before the guest's driver is up, if the lobby gets them; either way, closed without OK).
The features case reads the negotiated feature bits from the guest's sysfs:
VIRTIO_VSOCK_F_MRG_RXBUF (bit 4) must be on exactly when offered to a kernel that knows it.
--vmm skiff also checks the device counters each skiff process writes at its exit (each
boot is one; SKIFF_STATS, read through a FIFO): packets both ways, at least the bytes the
cases moved, exactly the refusals the cases and the early clients caused, no malformed
packets, and MRG_RXBUF in the device's offer as --mrg-rxbuf says. skiff's guest connects
wait up to 30 s (--connect-timeout), not the kernel's 2 s (emulated hosts stall).
Without --kernel, the image comes from scripts/build-kernels.sh --print-path (CI builds the
kernels before ctest, so a missing image is a failure, not a skip).
A guest that dies (guest-run.sh exit 123/124/125: panic, Oops, abort, timeout, no result)
fails the run as soon as guest-run.sh reports it: host peers still waiting for it are
stopped at once, and the reason and the console tail are printed (tests/support/guest_watch.py).
So does a skiff guest that stops running altogether: it prints a heartbeat every 10 s
(init.sh skiff.alive=10), and a console silent for 60 s after the first one ends the run
with "guest_watch: the guest stopped" (host_run.sh retries that in an emulated host).
Exit status 0 when every case passed, 1 otherwise, 77 when skipped (SKIFF_SKIP_GUESTS covers
the --vmm kind: 1, all, uml, qemu, or kvm for skiff; README.md, Tests).
"""
import argparse
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.."))
sys.path.insert(0, os.path.join(REPO, "tests/support"))
from guest_watch import (HEARTBEAT_ARG, HEARTBEAT_PREFIX, GuestRun,  # noqa: E402
                         exit_if_skipped, finish_peer)

PLAN_PORT = 999
EARLY_PORT = 998  # host clients that connect before the device is up (nobody listens)
EARLY_CLIENTS = 3
GUEST_CID = 3
MiB = 1 << 20
VIRTIO_VSOCK_F_MRG_RXBUF = 4
REFUSE_MS_MAX = 1500  # a refusal must come from the guest's RST, before the device's 2 s deadline
# SKIFF_SKIP_GUESTS kind of each --vmm (tests/support/guest_watch.py)
GUEST_KIND = {"uml": "uml", "qemu": "qemu", "skiff": "kvm"}
# skiff's guest (emulated host): a console silent this long after the heartbeat began
# means the guest stopped running (guest_watch.py); 6 beats missed.
STALL_S = 60


def kv(line):
    return dict(t.split("=", 1) for t in line.split() if "=" in t)


class Case:
    """One guest command, the host peer run against it, and the check of both summaries."""

    def __init__(self, name, guest, host=None, host_when="boot", check=None, boot=1, summary=True, refusals=0):
        # host_when: "boot" (started before the guest boots), "listening" (when the guest's
        # vsock-tool listens on the port), "fetch" (run to its end when the guest fetches
        # this step, before the step is served: the guest is up and idle)
        self.name, self.guest, self.host, self.host_when = name, guest, host, host_when
        self.check, self.boot = check, boot
        self.summary = summary  # False: a plain shell step, checked on its console lines
        self.refusals = refusals  # connection attempts the device refuses (its conns_refused)
        self.lines = []  # console lines printed while this case ran
        self.guest_sum = None  # VSOCK-TOOL summary (dict)
        self.guest_rc = None
        self.host_sum = None  # UDS-PEER summary (dict)
        self.host_proc = None
        self.port = None
        self.error = None
        self.note = ""  # shown after PASS (what was measured)
        self.t_step = self.t_result = None  # when the guest announced the step, and ended it
        self.t_summary = None  # when the guest printed its summary


def same(a, b, what):
    if a != b:
        return f"{what}: {a} != {b}"
    return None


def check_g2h(c, g, h, n):
    for err in (same(g.get("status"), "ok", "guest status"), same(h.get("status"), "ok", "host status"),
                same(int(g["sent"]), n, "guest sent"), same(int(h["received"]), n, "host received"),
                same(g["send_fnv"], h["recv_fnv"], "guest send_fnv vs host recv_fnv")):
        if err:
            return err
    return None


def check_h2g(c, g, h, n):
    for err in (same(g.get("status"), "ok", "guest status"), same(h.get("status"), "ok", "host status"),
                same(int(h["sent"]), n, "host sent"), same(int(g["received"]), n, "guest received"),
                same(h["send_fnv"], g["recv_fnv"], "host send_fnv vs guest recv_fnv")):
        if err:
            return err
    return None


def check_both(c, g, h, n_g2h, n_h2g):
    return check_g2h(c, g, h, n_g2h) or (
        same(int(h["sent"]), n_h2g, "host sent") or same(int(g["received"]), n_h2g, "guest received")
        or same(h["send_fnv"], g["recv_fnv"], "host send_fnv vs guest recv_fnv"))


def check_seqpacket(c, g, h, msgs, nbytes):
    return (check_both(c, g, h, nbytes, nbytes) or same(int(g["msgs_sent"]), msgs, "guest msgs_sent")
            or same(int(h["msgs_received"]), msgs, "host msgs_received")
            or same(int(g["msgs_received"]), msgs, "guest msgs_received"))


def check_refused(c, g, h, limit_ms):
    if g.get("status") != "ok" or g.get("got") != "ECONNRESET":
        return f"guest: expected ECONNRESET, got {g.get('got')} (status {g.get('status')})"
    ms = int(g["connect_ns_max"]) / 1e6
    c.note = f"refused after {ms:.0f} ms"
    if ms > limit_ms:
        return f"ECONNRESET took {ms:.0f} ms (want < {limit_ms} ms)"
    return None


def check_host_refused(c, g, h, n):
    # Host clients to a guest port nobody listens on: the device sends the guest a REQUEST,
    # the guest answers RST, the device closes the client without "OK". Prompt: well
    # before the device's own deadline for a guest that does not answer (2 s, which would
    # close it without "OK" too).
    err = (same(h.get("status"), "ok", "host status") or same(int(h["refused"]), n, "host refused")
           or same(int(h["accepted"]), 0, "host accepted"))
    if err:
        return err
    ms = int(h["refuse_ns_max"]) / 1e6
    c.note = f"{n} refused, the slowest after {ms:.0f} ms"
    if ms > REFUSE_MS_MAX:
        return f"a refusal took {ms:.0f} ms (want < {REFUSE_MS_MAX} ms: the guest's RST, not the device's deadline)"
    return None


def vsock_features(c):
    """The virtio-vsock device's negotiated features as the guest's sysfs shows them (a
    string of 0/1, bit 0 first), or None."""
    for line in c.lines:
        m = re.match(r"VSOCK-FEATURES ([01]+)$", line.strip())
        if m:
            return m.group(1)
    return None


def check_features(c, want_mrg):
    f = vsock_features(c)
    if f is None:
        return "the guest shows no virtio-vsock device in /sys/bus/virtio/devices"
    got = len(f) > VIRTIO_VSOCK_F_MRG_RXBUF and f[VIRTIO_VSOCK_F_MRG_RXBUF] == "1"
    c.note = f"MRG_RXBUF {'on' if got else 'off'}, sysfs {f.rstrip('0')}"
    if got != want_mrg:
        return (f"negotiated features {f}: VIRTIO_VSOCK_F_MRG_RXBUF (bit {VIRTIO_VSOCK_F_MRG_RXBUF}) "
                f"{'on' if got else 'off'}, want {'on' if want_mrg else 'off'}")
    return None


def check_reboot(c, g, h, n):
    # The guest rebooted with the connections open: the host must see each one end (EOF
    # or RST; uds-peer --allow-reset fails on a hang or another error). Data the guest had
    # queued but the device had not taken yet dies with the guest, so at most n bytes
    # arrive; when all of them did, they must be the ones sent.
    err = same(h.get("status"), "ok", "host status") or same(int(h["conns"]), 4, "host conns")
    if err:
        return err
    if int(h["received"]) > n:
        return f"host received {h['received']} > {n} sent"
    if int(h["received"]) == n and g is not None:
        return same(g["send_fnv"], h["recv_fnv"], "guest send_fnv vs host recv_fnv")
    return None


def seq_bytes(sizes, msgs):
    return sum(sizes[k % len(sizes)] for k in range(msgs))


# -- mergeable RX buffers (issue 6) ---------------------------------------------------
# Guest RX buffers are one 4 KiB page; the first one of a packet holds the 46-byte header
# (44 + num_buffers; without MRG_RXBUF 44, and packets are one buffer). A payload of up to
# 4096 * n - 46 bytes fits in n buffers.
PAGE = 4096
MRG_HDR = 46


def bufs_cap(n):
    return PAGE * n - MRG_HDR


# SEQPACKET message sizes at and around the buffer boundaries of 1, 2, 16 and 17 buffers.
SEQ_EDGE_SIZES = [1, 46, bufs_cap(1) - 1, bufs_cap(1), bufs_cap(1) + 1, PAGE, bufs_cap(2) - 1, bufs_cap(2),
                  bufs_cap(2) + 1, bufs_cap(15) + 1, bufs_cap(16) - 1, bufs_cap(16), bufs_cap(16) + 1, 65535,
                  65536, 3]


def make_span_cases():
    """Data whose host-to-guest packets span the buffers that --rx-pkt-max allows (see
    --expect-bufs), streams and SEQPACKET messages cut at buffer boundaries."""
    n = 8 * MiB
    sz = ",".join(map(str, SEQ_EDGE_SIZES))
    msgs = 4 * len(SEQ_EDGE_SIZES)
    nb = seq_bytes(SEQ_EDGE_SIZES, msgs)
    return [
        Case("span_h2g", f"vsock-tool listen 6300 --recv {n} --peer-seed 31",
             ["connect", "6300", "--send", str(n), "--seed", "31"], host_when="listening",
             check=lambda c, g, h: check_h2g(c, g, h, n)),
        Case("span_both", f"vsock-tool connect 2:6301 --send {n} --recv {n} --peer-seed 32 --seed 33",
             ["listen", "6301", "--recv", "--send", str(n), "--seed", "32"],
             check=lambda c, g, h: check_both(c, g, h, n, n)),
        Case("seq_edges", f"vsock-tool connect 2:6302 --type seqpacket --send {msgs} --recv {msgs} "
             f"--msg-sizes {sz} --peer-seed 34 --seed 35",
             ["listen", "6302", "--type", "seqpacket", "--recv", "--send", str(msgs), "--msg-sizes", sz,
              "--seed", "34"], check=lambda c, g, h: check_seqpacket(c, g, h, msgs, nb)),
    ]


FAULT_PORT = 6200
VICTIM_CONNS = 64
VICTIM_BYTES = 192 * 1024  # per connection, under the guest's 256 KiB buf_alloc
LEAK_SLACK_KB = 3072  # MemFree may drop this much; the victim step would pin 12 MiB if leaked
BAD_SIGNS = re.compile(r"Oops|BUG:|WARNING:|Call Trace|general protection|Kernel panic")
# What the guest driver (patch 0004, virtio_vsock_rx_mergeable()) must say for each lie.
FAULT_WARNINGS = {
    "bad-num-buffers=zero": r"rx: bad num_buffers 0\b",
    "bad-num-buffers=over": r"rx: buffer \d+ of \d+ overruns the packet|rx: \d+ of \d+ buffers missing",
    "bad-num-buffers=ring": r"rx: bad num_buffers (1[89]|[2-9]\d|\d{3,})\b",
    "bad-hdr-len=over": r"rx: packet of \d+ bytes in \d+ buffers holds \d+",
    "bad-hdr-len=under": r"rx: buffer \d+ of \d+ overruns the packet",
}


def mem_free_kb(c):
    for line in c.lines:
        m = re.match(r"SKIFF-MEM free_kb=(\d+)", line)
        if m:
            return int(m.group(1))
    return None


def check_victim(c, g, h, fault):
    # Every data packet to FAULT_PORT lied: the guest must drop all of them (no byte
    # delivered) and its receiver must end, by EOF or by its own timeout. A timeout is a
    # legal outcome: once a packet's layout is a lie the guest cannot know where the next
    # packet starts, so the rest of the lying packet's buffers are read as packet starts
    # (and dropped as such), or, with num_buffers one too many, the next buffer is taken
    # with it; either can swallow a following header-only packet (a SHUTDOWN or a REQUEST),
    # which leaves that victim connection waiting. The host side must end too (any status).
    if g.get("status") == "ok":
        return "guest victim receiver says ok: the lying packets were accepted"
    if g.get("where") != "timeout" and int(g.get("received", -1)) != 0:
        return f"guest received {g.get('received')} bytes from lying packets (want 0)"
    if "status" not in h:
        return "host victim peer gave no summary (hung?)"
    return None


def make_fault_cases(fault):
    n = 8 * MiB
    mem = "sed -n 's/^MemFree: *\\([0-9]*\\) kB/SKIFF-MEM free_kb=\\1/p' /proc/meminfo"
    cases = [
        # The same traffic as after the lies, so that MemFree is compared between like states.
        Case("warm", f"vsock-tool connect 2:6201 --conns 2 --send {n} --recv {n} --peer-seed 41 --seed 42",
             ["listen", "6201", "--conns", "2", "--recv", "--send", str(n), "--seed", "41"],
             check=lambda c, g, h: check_both(c, g, h, 2 * n, 2 * n)),
        Case("warm_h2g", f"vsock-tool listen 6204 --recv {n} --peer-seed 47",
             ["connect", "6204", "--send", str(n), "--seed", "47"], host_when="listening",
             check=lambda c, g, h: check_h2g(c, g, h, n)),
        Case("mem_before", mem, summary=False,
             check=lambda c, g, h: None if mem_free_kb(c) else "no MemFree line"),
        Case("victim", f"vsock-tool listen {FAULT_PORT} --conns {VICTIM_CONNS} --recv {VICTIM_BYTES} "
             "--peer-seed 43 --timeout 15",
             ["connect", str(FAULT_PORT), "--conns", str(VICTIM_CONNS), "--send", str(VICTIM_BYTES), "--seed", "43",
              "--allow-reset"], host_when="listening", check=lambda c, g, h: check_victim(c, g, h, fault)),
        # After the lies: connections keep moving checked data both ways, through many
        # more RX buffers than the ring holds (it must keep being refilled).
        Case("after", f"vsock-tool connect 2:6202 --conns 2 --send {n} --recv {n} --peer-seed 44 --seed 45",
             ["listen", "6202", "--conns", "2", "--recv", "--send", str(n), "--seed", "44"],
             check=lambda c, g, h: check_both(c, g, h, 2 * n, 2 * n)),
        Case("after_h2g", f"vsock-tool listen 6203 --recv {n} --peer-seed 46",
             ["connect", "6203", "--send", str(n), "--seed", "46"], host_when="listening",
             check=lambda c, g, h: check_h2g(c, g, h, n)),
        Case("mem_after", mem, summary=False, check=None),
        Case("dmesg", "dmesg | sed 's/^/SKIFF-DMESG /'", summary=False, check=None),
    ]
    by = {c.name: c for c in cases}

    def check_mem(c, g, h):
        a, b = mem_free_kb(by["mem_before"]), mem_free_kb(c)
        if a is None or b is None:
            return "no MemFree line"
        if a - b > LEAK_SLACK_KB:
            return f"MemFree fell by {a - b} KiB across the lying packets (leak? slack {LEAK_SLACK_KB})"
        return None

    def check_dmesg(c, g, h):
        log = [ln[len("SKIFF-DMESG "):] for ln in c.lines if ln.startswith("SKIFF-DMESG ")]
        if not log:
            return "no dmesg output"
        want = FAULT_WARNINGS[fault]
        if not any(re.search(want, ln) for ln in log):
            return f"the guest never reported the lie ({want!r} not in dmesg)"
        return None

    by["mem_after"].check = check_mem
    by["dmesg"].check = check_dmesg
    return cases


# The guest prints its virtio-vsock device's negotiated features (device ID 0x0013).
SHOW_FEATURES = ("for f in /sys/bus/virtio/devices/*; do "
                 "[ \"$(cat $f/device)\" = 0x0013 ] && echo VSOCK-FEATURES $(cat $f/features); done; true")


def want_mrg_rxbuf(a):
    """Whether the driver must accept VIRTIO_VSOCK_F_MRG_RXBUF: offered (--mrg-rxbuf on),
    known to the kernel (the patched series adds it) and passed on by the VMM (QEMU 7.2
    filters the experimental feature bits)."""
    return a.mrg_rxbuf == "on" and a.variant == "patched" and a.vmm != "qemu"


def make_cases(full, a):
    cases = []
    big = (a.stream_mib if full else 4) * MiB
    conns = 32 if full else 4
    per = 1 * MiB
    per_conn = a.conn_kib * 1024 if full else per  # each of the many connections
    add = cases.append
    add(Case("features", SHOW_FEATURES, summary=False,
             check=lambda c, g, h: check_features(c, want_mrg_rxbuf(a))))
    add(Case("g2h_stream", f"vsock-tool connect 2:5001 --send {big}",
             ["listen", "5001", "--recv"], check=lambda c, g, h: check_g2h(c, g, h, big)))
    add(Case("h2g_stream", f"vsock-tool listen 5002 --recv {big} --peer-seed 7",
             ["connect", "5002", "--send", str(big), "--seed", "7"], host_when="listening",
             check=lambda c, g, h: check_h2g(c, g, h, big)))
    add(Case("g2h_conns", f"vsock-tool connect 2:5003 --conns {conns} --send {per_conn}",
             ["listen", "5003", "--recv", "--conns", str(conns)],
             check=lambda c, g, h: check_g2h(c, g, h, conns * per_conn)))
    add(Case("h2g_conns", f"vsock-tool listen 5004 --conns {conns} --recv {per_conn} --peer-seed 9",
             ["connect", "5004", "--conns", str(conns), "--send", str(per_conn), "--seed", "9"],
             host_when="listening", check=lambda c, g, h: check_h2g(c, g, h, conns * per_conn)))
    sizes = [1, 17, 4096, 4097, 65536, 3000, 100]
    msgs = 200
    sz = ",".join(map(str, sizes))
    nb = seq_bytes(sizes, msgs)
    add(Case("seqpacket", f"vsock-tool connect 2:5005 --type seqpacket --send {msgs} --recv {msgs} "
             f"--msg-sizes {sz} --peer-seed 5",
             ["listen", "5005", "--type", "seqpacket", "--recv", "--send", str(msgs), "--msg-sizes", sz,
              "--seed", "5"], check=lambda c, g, h: check_seqpacket(c, g, h, msgs, nb)))
    # The guest's connect timeout is the kernel's 2 s (UML, QEMU) or 30 s (skiff, below):
    # an answer in time is the device's RST, not a timeout.
    limit = 2000 if a.vmm != "skiff" else 10000
    add(Case("no_listener", "vsock-tool connect 2:5006 --expect-error ECONNRESET",
             None, check=lambda c, g, h: check_refused(c, g, h, limit), refusals=1))
    # The other way: host clients to a guest port nobody listens on (the guest is idle,
    # waiting for its next step), one after the other.
    add(Case("host_no_listener", "true", ["connect", "5013", "--conns", "3", "--expect-refused"],
             host_when="fetch", summary=False, check=lambda c, g, h: check_host_refused(c, g, h, 3), refusals=3))
    add(Case("halfclose_guest_first",
             f"vsock-tool connect 2:5007 --send {per} --shut-wr --recv {per} --order send-first --peer-seed 3",
             ["listen", "5007", "--recv", "--order", "recv-first", "--send", str(per), "--seed", "3"],
             check=lambda c, g, h: check_both(c, g, h, per, per)))
    add(Case("halfclose_host_first",
             f"vsock-tool listen 5008 --recv {per} --peer-seed 4 --order recv-first --send {per} --seed 14 "
             f"--shut-wr",
             ["connect", "5008", "--send", str(per), "--seed", "4", "--order", "send-first", "--recv"],
             host_when="listening", check=lambda c, g, h: check_both(c, g, h, per, per)))
    # One-shot senders (issue 22 #8): the CONNECT line and the data in one write, then SHUT_WR
    # and close without reading "OK": every byte reaches the guest, then EOF.
    for port, n, seed in ((5011, 5, 11), (5012, 65536, 12)):
        add(Case(f"oneshot_h2g_{n}", f"vsock-tool listen {port} --recv {n} --peer-seed {seed}",
                 ["connect", str(port), "--send", str(n), "--seed", str(seed), "--oneshot"],
                 host_when="listening", check=lambda c, g, h, n=n: check_h2g(c, g, h, n)))
    if full:
        add(Case("reboot_live_conns", "vsock-tool connect 2:5009 --conns 4 --send 65536 --reboot",
                 ["listen", "5009", "--recv", "--conns", "4", "--allow-reset"],
                 check=lambda c, g, h: check_reboot(c, g, h, 4 * 65536)))
        add(Case("after_reboot", f"vsock-tool connect 2:5010 --send {per}",
                 ["listen", "5010", "--recv"], boot=2, check=lambda c, g, h: check_g2h(c, g, h, per)))
    if a.vmm == "skiff":
        # Guest connects wait up to 30 s, not the kernel's 2 s: in the emulated host under
        # load (tests/skiff-linux) answers were seen 3 s late (the guest or the host stalled).
        for c in cases:
            if c.guest.startswith("vsock-tool connect "):
                c.guest += " --connect-timeout 30000"
    return cases


# Cases that fail for a reason outside this driver, skipped unless --all (each with the
# reason; printed as SKIP so that nobody mistakes them for passes). Empty now.
KNOWN_BROKEN = {}


class Runner:
    def __init__(self, a):
        self.a = a
        self.work = tempfile.mkdtemp(prefix="skiff-e2e-", dir="/tmp")
        self.vsock_sock = os.path.join(self.work, "vu.sock")  # skiff-vsock's vhost-user socket
        self.uds = os.path.join(self.work, "h.sock")
        self.stats_path = os.path.join(self.work, "skiff-stats")  # --vmm skiff: SKIFF_STATS, a FIFO
        self.stats = []  # --vmm skiff: the device counters of each skiff process (dict), in order
        self.stats_stop = threading.Event()
        self.t_begin = []  # when each boot's /init began (SKIFF-BEGIN)
        self.t_vm = None  # when the guest was started
        if a.set == "span":
            made = make_span_cases()
        elif a.set == "fault":
            made = make_fault_cases(a.test_fault.split(",")[0])
        else:
            made = make_cases(a.set == "full", a)
        cases = [c for c in made if not a.only or c.name in a.only]
        self.skipped = [c for c in cases if c.name in KNOWN_BROKEN and not a.all and not a.only]
        self.cases = [c for c in cases if c not in self.skipped]
        self.lock = threading.Lock()
        self.current = None  # the case whose step the guest announced last
        self.steps = 0
        self.boots = 0
        self.console = []
        self.done = threading.Event()
        self.procs = []
        self.early_error = None
        self.early = []  # sockets of the host clients that came before the device was up
        self.early_note = ""
        self.vm = None  # GuestRun

    def log(self, msg):
        print(f"guest_e2e: {msg}", flush=True)

    # -- host side -------------------------------------------------------
    def start_host(self, c, wait=True):
        """Start @c's host peer; a listener is waited for unless @wait is False (then
        call host_listening(c))."""
        argv = [self.a.uds_peer, c.host[0], self.uds] + c.host[1:] + ["--timeout", str(self.a.timeout)]
        if self.a.verbose:
            self.log("host: " + " ".join(argv))
        c.host_proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.procs.append(c.host_proc)
        if wait:
            self.host_listening(c)

    def host_listening(self, c):
        if c.host[0] == "listen":
            line = c.host_proc.stdout.readline()
            if not line.startswith("UDS-PEER-LISTENING"):
                raise RuntimeError(f"{c.name}: uds-peer did not listen: {line.strip()}")

    def run_host_now(self, c):
        """Run @c's host peer to its end (its own --timeout bounds it)."""
        self.start_host(c)
        try:
            c.host_proc.wait(self.a.timeout + 10)
        except subprocess.TimeoutExpired:
            c.host_proc.kill()

    def finish_host(self, c, timeout):
        if c.host_proc is None:
            return
        for line in finish_peer(c.host_proc, self.vm, timeout).splitlines():
            if line.startswith("UDS-PEER "):
                c.host_sum = kv(line)

    def plan_server(self):
        """Serve one step script per fetch (init.sh control mode), then an empty one."""
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(f"{self.uds}_{PLAN_PORT}")
        srv.listen(4)
        srv.settimeout(0.5)
        served = 0
        while not self.done.is_set():
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            script = ""
            if served < len(self.cases):
                c = self.cases[served]
                if c.host_when == "fetch":
                    self.run_host_now(c)
                script = c.guest + "\n"
            served += 1
            conn.sendall(script.encode())
            conn.close()
        srv.close()

    # -- host clients before the device is up -----------------------------
    def early_clients(self, n):
        """Host clients of --uds before the device is up: skiff-vsock's lobby
        thread (filtered, --seccomp kill by default) holds them for at most the
        device's host wait (5 s) and closes them without "OK" unless the device
        starts in time; even then nothing listens on EARLY_PORT in the guest."""
        cs = []
        try:
            for _ in range(n):
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                cs.append(c)
                c.settimeout(60)
                c.connect(self.uds)
                c.sendall(f"CONNECT {EARLY_PORT}\n".encode())
        except OSError:
            for c in cs:
                c.close()
            raise
        return cs

    def early_clients_skiff(self, t_start):
        """--vmm skiff (a thread): skiff binds --uds when it starts, before the guest
        boots, so the earliest a host client can come is when that socket appears. Then
        EARLY_CLIENTS connect; the device's lobby holds them until the guest's driver is
        up (DRIVER_OK), which is seconds of guest boot away, at most 5 s, and they become
        CONNECTs to EARLY_PORT, refused by the guest, or are closed at the 5 s limit:
        either way closed without "OK"."""
        while not os.path.exists(self.uds):
            if self.vm.ended.is_set() or time.monotonic() - t_start > self.a.timeout:
                self.early_note = "skiff's socket never appeared"
                return
            time.sleep(0.01)
        t_sock = time.monotonic()
        while True:
            try:
                self.early = self.early_clients(EARLY_CLIENTS)
                break
            except (ConnectionRefusedError, FileNotFoundError):  # bound, not yet listening
                if time.monotonic() - t_sock > 5 or self.vm.ended.is_set():
                    self.early_note = "skiff's socket did not take connections within 5 s"
                    return
                time.sleep(0.01)
        self.early_note = (f"connected {time.monotonic() - t_sock:.2f} s after skiff bound its socket, "
                           f"{t_sock - t_start:.1f} s after the start")

    def check_early(self, cs):
        """Each early client must have been closed (EOF, or a reset since its
        CONNECT line may be unread) without "OK"."""
        bad = []
        for i, c in enumerate(cs):
            data = b""
            try:
                while True:
                    b = c.recv(64)
                    if not b:
                        break
                    data += b
            except ConnectionResetError:
                pass
            except OSError as e:
                data = f"<{e}>".encode()  # timeout: never closed
            c.close()
            if data:
                bad.append(f"client {i}: {data!r}")
        return "; ".join(bad) or None

    # -- guest console -----------------------------------------------------
    def on_line(self, line):
        self.console.append(line)
        if self.a.verbose:
            print(f"  | {line}", flush=True)
        if line.startswith(HEARTBEAT_PREFIX):
            return  # the guest's heartbeat, not a case's output
        if line.startswith("SKIFF-BEGIN"):
            self.boots += 1
            self.t_begin.append(time.monotonic())
            return
        # Steps are served in case order and each one is announced before it runs
        # (init.sh control mode), across reboots too.
        if re.match(r"SKIFF-STEP \d+", line):
            self.current = self.cases[self.steps] if self.steps < len(self.cases) else None
            self.steps += 1
            if self.current:
                self.current.t_step = time.monotonic()
            return
        cur = self.current
        if cur:
            cur.lines.append(line)
        m = re.match(r"SKIFF-RESULT step=\d+ rc=(\S+)", line)
        if m and cur:
            cur.guest_rc = m.group(1)
            cur.t_result = time.monotonic()
            return
        m = re.match(r"VSOCK-TOOL-LISTENING port=(\d+)", line)
        if m:
            for c in self.cases:
                if c.host and c.host_when == "listening" and c.host[1] == m.group(1) and not c.host_proc:
                    self.start_host(c)
            return
        if line.startswith("VSOCK-TOOL ") and cur:
            cur.guest_sum = kv(line)
            cur.t_summary = time.monotonic()

    def vm_argv(self, initrd):
        a = self.a
        vsock = self.vsock_sock
        append = f"skiff.ctl={PLAN_PORT}"
        argv = []
        if a.vmm == "skiff":
            vsock = f"cid={GUEST_CID},uds={self.uds},mrg-rxbuf={a.mrg_rxbuf}"
            argv = ["env", f"SKIFF_STATS={self.stats_path}"]
            # The kernel's check that the 8254 timer reaches the IO-APIC counts ticks in a
            # busy loop: in an emulated host under load it can fail and panic the boot
            # ("MP-BIOS bug: 8254 timer not connected to IO-APIC", seen on a reboot here).
            append += " no_timer_check"
            # A guest that stops running in the emulated host (QEMU's SVM fault) is told
            # from a quiet one by its heartbeat and ended at once (GuestRun stall_s).
            append += " " + HEARTBEAT_ARG
        argv += [os.path.join(REPO, "scripts/guest-run.sh"), a.vmm, "--variant", a.variant, "--initrd", initrd,
                 "--vsock", vsock, "--append", append, "--timeout", str(a.timeout)]
        if a.vmm == "skiff":
            argv += ["--skiff", a.skiff]
        if a.kernel:
            argv += ["--kernel", a.kernel]
        if a.vmm == "qemu":
            # QEMU's virtio-mmio is legacy (version 1) unless told otherwise; the device
            # model requires VIRTIO_F_VERSION_1, which legacy drivers never accept.
            argv += ["--", "-global", "virtio-mmio.force-legacy=false"]
        return argv

    def build_initrd(self):
        if self.a.initrd:
            return self.a.initrd
        out = os.path.join(self.work, "initrd.cpio")
        subprocess.run([os.path.join(REPO, "scripts/build-initramfs.sh"), "-o", out, "--bin", self.a.vsock_tool],
                       check=True, stdout=subprocess.DEVNULL)
        return out

    def start_device(self):
        """skiff-vsock (uml, qemu): serve the vhost-user socket; returns the process."""
        a = self.a
        extra = ["--verbose"] if a.verbose else []
        if a.rx_pkt_max:
            extra += ["--rx-pkt-max", str(a.rx_pkt_max)]
        if a.test_fault:
            extra += ["--test-fault", a.test_fault]
        dev = subprocess.Popen([a.skiff_vsock, "--socket", self.vsock_sock, "--cid", str(GUEST_CID),
                                "--uds", self.uds, "--mrg-rxbuf", a.mrg_rxbuf] + extra,
                               stderr=open(os.path.join(self.work, "skiff-vsock.log"), "w"))
        self.procs.append(dev)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.vsock_sock):
            if dev.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("skiff-vsock did not come up: " + self.tail("skiff-vsock.log"))
            time.sleep(0.02)
        return dev

    def run(self):
        a = self.a
        t0 = time.monotonic()
        if a.set == "full" and (a.stream_mib, a.conn_kib) != (64, 1024):
            self.log(f"smaller than by default: single streams of {a.stream_mib} MiB each way (--stream-mib, "
                     f"64 by default), {a.conn_kib} KiB on each of the 32 connections (--conn-kib, 1024)")
        dev = self.start_device() if a.vmm != "skiff" else None
        threading.Thread(target=self.plan_server, daemon=True).start()
        stats = None
        if not dev:
            os.mkfifo(self.stats_path)
            stats = threading.Thread(target=self.stats_reader, daemon=True)
            stats.start()
        if dev:
            self.early = self.early_clients(EARLY_CLIENTS)
        # All at once: a process start costs up to a second in an emulated host.
        at_boot = [c for c in self.cases if c.host and c.host_when == "boot"]
        for c in at_boot:
            self.start_host(c, wait=False)
        for c in at_boot:
            self.host_listening(c)
        initrd = self.build_initrd()
        self.t_vm = time.monotonic()
        self.vm = GuestRun(self.vm_argv(initrd), on_line=self.on_line,
                           stall_s=STALL_S if self.a.vmm == "skiff" else None)
        early = None
        if not dev:
            early = threading.Thread(target=self.early_clients_skiff, args=(time.monotonic(),), daemon=True)
            early.start()
        if self.vm.wait(a.timeout + 30) is None:  # guest-run.sh's own --timeout failed
            self.vm.kill(f"guest-run.sh still running {a.timeout + 30} s after start: killed")
        t_guest = time.monotonic() - t0
        self.done.set()
        for c in self.cases:
            self.finish_host(c, timeout=30)
        if early:
            early.join(10)
        if self.vm.dead:  # not checked: the device's 5 s host wait may not be over yet
            for c in self.early:
                c.close()
        elif not self.early:
            self.early_error = self.early_note or "no host client connected"
        else:
            self.early_error = self.check_early(self.early)
        if stats:
            # The last skiff closed the FIFO before it exited, before guest-run.sh did.
            self.stats_stop.set()
            stats.join(10)
        if not dev:
            leftovers = [p for p in (self.uds,) if os.path.exists(p)]
            return self.report(True, 0, leftovers, t_guest)
        # The backend outlives the guest(s) and exits cleanly on SIGTERM.
        alive = dev.poll() is None
        dev.send_signal(signal.SIGTERM)
        try:
            rc = dev.wait(timeout=20)
        except subprocess.TimeoutExpired:
            dev.kill()
            rc = "hung"
        leftovers = [p for p in (self.vsock_sock, self.uds) if os.path.exists(p)]
        return self.report(alive, rc, leftovers, t_guest)

    def stats_reader(self):
        """--vmm skiff (a thread): SKIFF_STATS is a FIFO. Each skiff process (a guest
        reboot starts a new one, which would overwrite a plain file before the driver
        could read it) opens it when its VM starts and writes its counters (key=value
        lines) at its exit; its close ends one record, appended to self.stats. Until
        stats_stop is set and nothing is pending."""
        while True:
            fd = os.open(self.stats_path, os.O_RDONLY | os.O_NONBLOCK)  # no writer needed
            data, ended = b"", False
            try:
                p = select.poll()
                p.register(fd, select.POLLIN)
                while not ended:
                    # POLLHUP comes only once a writer has come and gone (Linux FIFOs).
                    if not p.poll(0 if self.stats_stop.is_set() else 200):
                        if self.stats_stop.is_set():
                            return
                        continue
                    chunk = os.read(fd, 4096)
                    data += chunk
                    ended = not chunk
            finally:
                os.close(fd)
            try:
                self.stats.append({k: int(v, 0) for k, v in
                                   (ln.split("=", 1) for ln in data.decode().split() if "=" in ln)})
            except ValueError:
                self.stats.append({"unreadable": 1})

    def check_stats(self):
        """--vmm skiff: the device counters of each boot against what its cases did.
        Prints one line per boot; returns the number of failures."""
        if self.a.vmm != "skiff":
            return 0
        if self.vm.dead:  # which skiff wrote the last counters is not known
            print("NOT CHECKED skiff device counters (the guest died)")
            return 0
        failed = 0
        for b, st in enumerate(self.stats, 1):
            cases = [c for c in self.cases if c.boot == b]
            # Lower bounds: plan fetches and the refused cases move bytes of their own.
            h_recv = sum(int((c.host_sum or {}).get("received", 0)) for c in cases)
            g_recv = sum(int((c.guest_sum or {}).get("received", 0)) for c in cases)
            refusals = sum(c.refusals for c in cases) + (EARLY_CLIENTS if b == 1 else 0)
            errs = []
            if not st:
                errs.append("no counters (skiff did not write SKIFF_STATS)")
            else:
                if st.get("vsock_rx_pkts", 0) == 0 or st.get("vsock_tx_pkts", 0) == 0:
                    errs.append("no packets one way")
                if st.get("vsock_tx_bytes", 0) < h_recv:
                    errs.append(f"vsock_tx_bytes {st.get('vsock_tx_bytes')} < {h_recv} the host peers received")
                if st.get("vsock_rx_bytes", 0) < g_recv:
                    errs.append(f"vsock_rx_bytes {st.get('vsock_rx_bytes')} < {g_recv} the guest received")
                if st.get("vsock_conns_refused") != refusals:
                    errs.append(f"vsock_conns_refused {st.get('vsock_conns_refused')}, want {refusals}")
                if st.get("vsock_malformed_pkts") != 0:
                    errs.append(f"vsock_malformed_pkts {st.get('vsock_malformed_pkts')}")
                # What the driver accepted is gone by then (its reset at power-off clears
                # it); the guest's sysfs shows it (the features case). Here: the offer.
                offered = bool(st.get("vsock_device_features", 0) >> VIRTIO_VSOCK_F_MRG_RXBUF & 1)
                if offered != (self.a.mrg_rxbuf == "on"):
                    errs.append(f"device features {st.get('vsock_device_features', 0):#x}: MRG_RXBUF "
                                f"{'offered' if offered else 'not offered'} with mrg-rxbuf={self.a.mrg_rxbuf}")
            shown = " ".join(f"{k[len('vsock_'):]}={st[k]:#x}" if k.endswith("features") else
                             f"{k[len('vsock_'):]}={st[k]}" for k in
                             ("vsock_device_features", "vsock_rx_pkts", "vsock_tx_pkts", "vsock_rx_bytes",
                              "vsock_tx_bytes", "vsock_conns_opened", "vsock_conns_refused", "vsock_conn_resets",
                              "vsock_malformed_pkts", "vsock_dropped_pkts", "vsock_stray_pkts") if k in st)
            print(f"{'FAIL' if errs else 'PASS'} skiff device counters, boot {b}: {shown}"
                  + (": " + "; ".join(errs) if errs else ""))
            failed += bool(errs)
        return failed

    def check_packets(self):
        """--expect-bufs N: the device's rx_chains_max (printed on SIGTERM: the most RX
        buffers one host-to-guest packet took) must be exactly N. Returns failures."""
        n = self.a.expect_bufs
        if not n:
            return 0
        log = self.tail("skiff-vsock.log", 50)
        m = re.search(r"rx_chains_max (\d+)", log)
        c = re.search(r"rx_pkts (\d+) rx_bytes (\d+)", log)
        if not m or not c:
            print("FAIL packets: no device counters in the skiff-vsock log")
            return 1
        got, pkts, nbytes = int(m.group(1)), int(c.group(1)), int(c.group(2))
        ok = got == n
        print(f"{'PASS' if ok else 'FAIL'} packets: {pkts} host-to-guest packets, {nbytes} bytes "
              f"(mean {nbytes / max(pkts, 1):.0f} B), rx-pkt-max {self.a.rx_pkt_max or 'none'}: the largest "
              f"took {got} RX buffer(s), want {n}")
        return 0 if ok else 1

    def tail(self, name, n=15):
        try:
            with open(os.path.join(self.work, name)) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def report(self, alive, rc, leftovers, t_guest):
        failed = 0
        boots = self.boots
        if self.vm.dead:
            failed += 1
            print(f"FAIL {self.a.vmm} guest: {self.vm.reason()}")
        for c in self.cases:
            if c.guest_sum is None and c.summary and c.name != "reboot_live_conns":
                c.error = "guest printed no VSOCK-TOOL summary (case did not run?)"
            elif c.host and c.host_sum is None:
                c.error = "host uds-peer printed no summary"
            else:
                try:
                    c.error = c.check(c, c.guest_sum, c.host_sum or {})
                except (KeyError, ValueError) as e:
                    c.error = f"summary field missing: {e}"
            took = f" [{c.t_result - c.t_step:.1f} s]" if c.t_step and c.t_result else ""
            print(f"{'PASS' if not c.error else 'FAIL'} {self.a.vmm} {self.a.variant} mrg={self.a.mrg_rxbuf} {c.name}"
                  + took + (f": {c.error}" if c.error else f" ({c.note})" if c.note else ""))
            if c.error:
                failed += 1
                print(f"    guest: {c.guest_sum}\n    host:  {c.host_sum}")
        early = "before the frontend" if self.a.vmm != "skiff" else "before the device was up"
        if self.early_error:
            failed += 1
            print(f"FAIL host clients {early}: not closed without OK: {self.early_error}")
        elif self.vm.dead:
            print(f"NOT CHECKED host clients connected {early} (the guest died)")
        else:
            print(f"PASS host clients connected {early}: closed without OK"
                  + (f" ({self.early_note})" if self.early_note else ""))
        if self.a.vmm == "skiff":
            if leftovers:
                failed += 1
                print(f"FAIL skiff left its socket behind: {leftovers}")
        elif not alive or rc != 0 or leftovers:
            failed += 1
            print(f"FAIL skiff-vsock: alive after guest={alive} exit on SIGTERM={rc} leftovers={leftovers}")
        bad = [ln for ln in self.console if BAD_SIGNS.search(ln)]
        if bad:
            failed += 1
            print("FAIL guest kernel trouble on the console: " + " | ".join(bad[:5]))
        failed += self.check_packets()
        failed += self.check_stats()
        if self.a.vmm == "skiff" and not self.vm.dead and len(self.stats) != boots:
            failed += 1
            print(f"FAIL {len(self.stats)} sets of skiff counters for {boots} boot(s)")
        want_boots = 2 if any(c.name == "reboot_live_conns" for c in self.cases) else 1
        if boots != want_boots:
            failed += 1
            print(f"FAIL guest fetched {boots} plans, expected {want_boots} (boots)")
        for c in self.skipped:
            print(f"SKIP {self.a.vmm} {self.a.variant} mrg={self.a.mrg_rxbuf} {c.name}: known broken: "
                  f"{KNOWN_BROKEN[c.name]}")
        starts = [self.t_vm] + [c.t_summary for c in self.cases if c.name == "reboot_live_conns"]
        began = ", ".join(f"{b - s:.1f} s" for s, b in zip(starts, self.t_begin) if s)
        print(f"guest_e2e: {len(self.cases) - sum(1 for c in self.cases if c.error)}/{len(self.cases)} cases "
              f"passed, {boots} boot(s), {t_guest:.1f} s in all" + (f"; /init began after {began}" if began else ""))
        if failed:
            print("--- guest console (last 40 lines) ---\n" + "\n".join(self.console[-40:]))
            if self.a.vmm != "skiff":
                print("--- skiff-vsock log ---\n" + self.tail("skiff-vsock.log", 30))
        return 1 if failed else 0

    def cleanup(self):
        if self.vm:
            self.vm.kill()
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if not self.a.keep:
            shutil.rmtree(self.work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vmm", choices=["uml", "qemu", "skiff"], required=True)
    ap.add_argument("--kernel", help="kernel image; default: from scripts/build-kernels.sh --print-path")
    ap.add_argument("--variant", choices=["baseline", "patched"], default="baseline")
    ap.add_argument("--skiff-vsock", help="the vhost-user device (uml, qemu)")
    ap.add_argument("--skiff", help="the skiff binary (--vmm skiff)")
    ap.add_argument("--initrd", help="a prebuilt test initramfs (default: built with --vsock-tool)")
    ap.add_argument("--vsock-tool", required=True)
    ap.add_argument("--uds-peer", required=True)
    ap.add_argument("--mrg-rxbuf", choices=["on", "off"], default="on")
    ap.add_argument("--set", choices=["full", "smoke", "span", "fault"], default="full",
                    help="span: packets over N buffers and SEQPACKET edges (with --rx-pkt-max); "
                    "fault: a lying device (needs --test-fault)")
    ap.add_argument("--stream-mib", type=int, default=64, help="full set: the single streams' size (MiB)")
    ap.add_argument("--conn-kib", type=int, default=1024,
                    help="full set: what each of the 32 connections carries (KiB)")
    ap.add_argument("--rx-pkt-max", type=int, default=0, help="skiff-vsock --rx-pkt-max")
    ap.add_argument("--expect-bufs", type=int, default=0,
                    help="check the device's mean packet payload shows packets of this many buffers")
    ap.add_argument("--test-fault", default="", help="skiff-vsock --test-fault (test-only lying device)")
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--only", action="append", help="run only this case (repeatable)")
    ap.add_argument("--all", action="store_true", help="also run the KNOWN_BROKEN cases")
    ap.add_argument("--verbose", action="store_true", help="echo the guest console")
    a = ap.parse_args()
    exit_if_skipped(GUEST_KIND[a.vmm], "guest_e2e")
    if a.vmm == "skiff" and (a.rx_pkt_max or a.test_fault or a.expect_bufs):
        print("guest_e2e: --rx-pkt-max, --expect-bufs and --test-fault are skiff-vsock's (uml, qemu)")
        return 2
    if a.vmm == "skiff":
        kvm = subprocess.run(["bash", os.path.join(REPO, "scripts/machine-info.sh"), "--kvm"],
                             stdout=subprocess.PIPE, text=True).stdout.strip()
        if kvm != "hardware":
            print(f"guest_e2e: FAIL: /dev/kvm here is {kvm or 'missing'}, not hardware virtualization: "
                  "Linux under skiff needs it (run this through scripts/test-host.sh)")
            return 1
    kernel = a.kernel
    if not kernel:
        arch, f = ("um", "linux") if a.vmm == "uml" else ("x86_64", "bzImage")
        kernel = subprocess.run([os.path.join(REPO, "scripts/build-kernels.sh"), "--print-path", a.variant, arch, f],
                                stdout=subprocess.PIPE, text=True).stdout.strip()
        a.kernel = kernel  # guest-run.sh need not look it up again
    dev = ("skiff", a.skiff) if a.vmm == "skiff" else ("skiff-vsock", a.skiff_vsock)
    for what, p in (("kernel", kernel), dev, ("vsock-tool", a.vsock_tool), ("uds-peer", a.uds_peer),
                    ("initramfs", a.initrd or a.vsock_tool)):
        if not p or not os.path.exists(p):
            print(f"guest_e2e: FAIL: {what} " + (f"missing at {p}" if p else "not given")
                  + " (kernels: scripts/build-kernels.sh)")
            return 1
    if a.set == "fault" and a.test_fault.split(",")[0] not in FAULT_WARNINGS:
        print(f"guest_e2e: --set fault needs --test-fault one of {', '.join(FAULT_WARNINGS)}")
        return 2
    r = Runner(a)
    try:
        return r.run()
    finally:
        r.cleanup()


if __name__ == "__main__":
    sys.exit(main())
