#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Datagrams end to end through skiff-vsock (issue 18): patched UML guests running
vsock-dgram (tests/guest-programs/vsock-dgram.c, modes host and peer) against a host
program here that uses the AF_UNIX SOCK_DGRAM host side (devices/virtio_vsock/README.md,
Datagrams): U_dgram_<P> bound here, U_dgram_g<Q> and the U_dgram gateway the device's.

--mode host   one guest (CID 3): N datagrams guest to host, each checked byte for byte
              here and sent back with sendto() to the address recvfrom() gave; a first
              datagram from the host through the gateway (SEND <Q>), after three that are
              dropped (to an unbound guest port: by the guest, no_socket; a SEND line with
              a leading zero and an unbound host sender: by the device, bad_addr); a
              datagram bigger than one RX buffer then a small one (MRG off: the device
              drops the big one, dgram_rx_drop_too_big; MRG on: both arrive, the big one
              64 KiB); 64 KiB + 1 (too big either way); one read with MSG_PEEK|MSG_TRUNC
              first; the guest's datagram to a host port nobody bound (no_dest), then END;
              64 datagrams into the host socket that is not read (AF_UNIX queues some,
              the device drops the rest: dgram_tx_drop_full), then END on port P + 2
--mode peer   two guests (CIDs 3 and 4, one routing group): each says READY to the host
              and waits for GO, then N datagrams 3 -> 4 echoed, N 4 -> 3 echoed, then one
              from 3 to CID 6 (no such guest: no_dest on 3), the big and the small one from
              3 to 4 (MRG off: the big one dropped at 4's RX, counted on 4)
Every datagram is a pattern.h pattern checked whole on the receiving side; the device
counters skiff-vsock prints at SIGTERM must equal what was sent, received and dropped,
and the guest transport's own dgram_rx_drops must stay zero. Waits are bounded (60 s per
datagram here, 20 s in the guest), nothing is timed.
--vmm skiff   skiff's own path (--mode host only): the patched x86-64 kernel booted by skiff
              with its in-process device (--vsock cid=3,uds=...,dgram=on), the same host
              side and checks; the counters come from SKIFF_STATS (vsock_dgram_*). Needs a
              host with hardware-virtualization KVM: tests/skiff-linux/dgram_test.sh runs it
              in the emulated host.
Usage: dgram_e2e.py [--vmm uml] --skiff-vsock BIN --initrd FILE --mode host|peer --mrg on|off [--n N]
       dgram_e2e.py --vmm skiff --skiff BIN --initrd FILE --mode host --mrg on|off [--n N]
Exit 0 pass, 1 fail, 77 skipped (no patched kernel: run scripts/build-kernels.sh)."""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests/guest-programs"))
from pattern import pattern  # noqa: E402

PORT = 7000          # host port P
E2E_PORT = 52000     # the guests' ports (vsock-dgram.c E2E_PORT)
MAX_DGRAM = 65536
FLOOD = 64           # vsock-dgram.c E2E_FLOOD
host_full = []       # host-full: the flood datagrams the host socket queued (their i)
# The largest payload one RX buffer of the patched guest holds without MRG_RXBUF: the
# buffer is VIRTIO_VSOCK_DEFAULT_RX_BUF_SIZE = SKB_WITH_OVERHEAD(4096) = 4096 - 320
# (struct skb_shared_info, 64-bit) = 3776 bytes, the 44-byte header included. Checked to
# the byte: ONE_RX bytes arrive, ONE_RX + 1 are dropped by the device as too big.
ONE_RX = 4096 - 320 - 44
fails = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        fails.append(what)


def dev_size(i, mrg):
    """vsock-dgram.c dev_size()."""
    big = [1, 2, 7, 64, 1000, 4095, 4096, 4097, 8192, 12345, 32768, 65535, 65536]
    one = [1, 2, 7, 64, 1000, 2048, ONE_RX]  # ONE_RX: the largest that fits
    return big[i % len(big)] if mrg else one[i % len(one)]


def recv_check(s, seed, size, src, what):
    """One datagram on s: pattern(seed, size) from path src; returns it or None."""
    try:
        data, addr = s.recvfrom(MAX_DGRAM + 1)
    except OSError as e:
        expect(False, f"{what}: nothing received ({e})")
        return None
    good = data == pattern(seed, 0, size) and addr == src
    if not good:
        expect(False, f"{what}: got {len(data)} bytes from {addr!r}, want {size} (seed {seed}) from {src!r}")
        return None
    return data


def host_side(a, h, n, mrg):
    """--mode host, the host program (runs while the guest does)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(f"{h}_dgram_{PORT}")
    s.settimeout(60)
    s2 = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s2.bind(f"{h}_dgram_{PORT + 2}")
    s2.settimeout(60)
    yield  # bound: the guest may start
    g0, g1 = f"{h}_dgram_g{E2E_PORT}", f"{h}_dgram_g{E2E_PORT + 1}"
    ok = 0
    for i in range(n):
        data = recv_check(s, 100 + i, dev_size(i, mrg), g0, f"g2h datagram {i}")
        if data is None:
            break
        s.sendto(data, g0)  # the reply, to the address recvfrom() named
        ok += 1
    expect(ok == n, f"g2h: {ok} of {n} datagrams (sizes up to {max(dev_size(i, mrg) for i in range(n))}) "
           "received whole, each answered with sendto()")
    # Dropped on the way, in this order before the ones the guest waits for:
    s.sendto(b"SEND %d\n" % (E2E_PORT + 9) + pattern(1010, 0, 5), f"{h}_dgram")  # guest: no_socket
    s.sendto(b"SEND 0%d\n" % (E2E_PORT + 1) + pattern(1011, 0, 5), f"{h}_dgram")  # device: bad_addr
    s.sendto(b"SEND %d\n" % (E2E_PORT + 1) + pattern(1000, 0, 3000), f"{h}_dgram")
    got = recv_check(s, 1001, 200, g1, "host-first: the guest's answer")
    expect(got is not None, "host-first: through the gateway to a bound guest port, answered from it")
    u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # unbound sender: bad_addr
    u.sendto(pattern(1012, 0, 5), g1)  # (g1 exists since the gateway made it)
    u.close()
    s.sendto(pattern(1002, 0, MAX_DGRAM if mrg else ONE_RX + 1), g1)
    s.sendto(pattern(1003, 0, 1 if mrg else ONE_RX), g1)
    s.sendto(pattern(1005, 0, MAX_DGRAM + 1), g1)  # over 64 KiB: too big either way
    s.sendto(pattern(1004, 0, 20000 if mrg else ONE_RX), g1)  # peeked, then read
    got = recv_check(s, 1021, 3, g0, "END after the datagram to an unbound host port")
    expect(got is not None, "the guest's END arrived (its datagram to port P + 1 was handled before)")
    # host-full: FLOOD datagrams into s, not read until the END on P + 2 (after them on the
    # guest's TX queue) has come; what AF_UNIX did not queue the device dropped and counted.
    got = recv_check(s2, 1199, 4, g0, "host-full: END after the flood")
    s2.close()
    seqs = []
    s.setblocking(False)
    while True:
        try:
            data, addr = s.recvfrom(MAX_DGRAM + 1)
        except BlockingIOError:
            break
        j = len(data) - 100
        ok = 0 <= j < FLOOD and data == pattern(1100 + j, 0, 100 + j) and addr == g0
        seqs.append(j if ok else -1)
    host_full[:] = seqs
    expect(got is not None and seqs and -1 not in seqs and seqs == sorted(set(seqs)) and len(seqs) < FLOOD,
           f"host-full: {len(seqs)} of {FLOOD} queued, each whole, in order, none twice; the rest dropped")
    s.close()


def peer_side(a, hs):
    """--mode peer: READY from each guest, then GO to both."""
    socks = []
    for h in hs:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(f"{h}_dgram_{PORT}")
        s.settimeout(60)
        socks.append(s)
    yield socks
    ready = [recv_check(s, 2000, 5, f"{h}_dgram_g{E2E_PORT}", f"READY of {h}") for s, h in zip(socks, hs)]
    expect(all(r is not None for r in ready), "both guests READY")
    for s, h in zip(socks, hs):
        s.sendto(pattern(2001, 0, 2), f"{h}_dgram_g{E2E_PORT}")
    for s in socks:
        s.close()


COUNTER_RE = re.compile(r"skiff-vsock: cid (\d+) (dgram_tx_pkts .*)")


def counters(log):
    out = {}
    for m in COUNTER_RE.finditer(log):
        f = m.group(2).split()
        out[int(m.group(1))] = {f[i]: int(f[i + 1]) for i in range(0, len(f), 2)}
    return out


def zero_drops(c):
    return {k: v for k, v in c.items() if "drop" in k and v}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vmm", choices=("uml", "skiff"), default="uml")
    ap.add_argument("--skiff-vsock")
    ap.add_argument("--skiff")
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--mode", choices=("host", "peer"), required=True)
    ap.add_argument("--mrg", choices=("on", "off"), required=True)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--kernel")
    a = ap.parse_args()
    skiff = a.vmm == "skiff"
    if (skiff and (not a.skiff or a.mode != "host")) or (not skiff and not a.skiff_vsock):
        ap.error("--vmm skiff takes --skiff and --mode host; --vmm uml takes --skiff-vsock")
    mrg = a.mrg == "on"
    arch = "x86_64" if skiff else "um"
    if not a.kernel:
        r = subprocess.run([os.path.join(REPO, "scripts/build-kernels.sh"), "--print-path", "patched", arch],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"dgram_e2e: SKIP: no patched {arch} kernel; run scripts/build-kernels.sh")
            return 77
        a.kernel = r.stdout.strip()
    n = a.n
    with tempfile.TemporaryDirectory(prefix="dge-") as d:
        cids = (3,) if a.mode == "host" else (3, 4)
        hs = [f"{d}/h{c}" for c in cids]
        log = open(f"{d}/skiff-vsock.log", "w+")
        dev = None
        if not skiff:
            argv = [a.skiff_vsock, "--dgram", "on", "--mrg-rxbuf", a.mrg]
            for c, h in zip(cids, hs):
                argv += ["--guest", f"socket={d}/vu{c},cid={c},uds={h}"]
            dev = subprocess.Popen(argv, stderr=log)
            deadline = time.monotonic() + 10
            while not all(os.path.exists(f"{d}/vu{c}") for c in cids):
                if dev.poll() is not None or time.monotonic() > deadline:
                    print("dgram_e2e: FAIL: skiff-vsock did not come up")
                    return 1
                time.sleep(0.02)
        side = host_side(a, hs[0], n, mrg) if a.mode == "host" else peer_side(a, hs)
        next(side)  # host sockets bound before any guest boots
        errs = []

        def host_run():
            try:
                next(side, None)
            except Exception as e:  # a failed host step fails the test, never hangs it
                errs.append(repr(e))
        t = threading.Thread(target=host_run, daemon=True)  # a stuck host side never holds the exit
        t.start()
        guests = []
        for i, c in enumerate(cids):
            if a.mode == "host":
                run = f"vsock-dgram host {PORT} {n} {int(mrg)} {ONE_RX}"
            else:
                run = f"vsock-dgram peer {PORT} {cids[1 - i]} {n} {'ab'[i]} {int(mrg)} {ONE_RX}"
            out = open(f"{d}/guest{c}.log", "w+")
            if skiff:
                vsock = f"cid={c},uds={hs[i]},mrg-rxbuf={a.mrg},dgram=on"
                env = dict(os.environ, SKIFF_STATS=f"{d}/skiff-stats", SKIFF_BIN=a.skiff)
            else:
                vsock, env = f"{d}/vu{c}", None
            guests.append((c, out, subprocess.Popen(
                [os.path.join(REPO, "scripts/guest-run.sh"), a.vmm, "--kernel", a.kernel, "--initrd", a.initrd,
                 "--vsock", vsock, "--timeout", "240", "--run", run], stdout=out, stderr=subprocess.STDOUT,
                env=env)))
        for c, out, p in guests:
            try:
                rc = p.wait(timeout=300)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = "hung"
            out.seek(0)
            text = out.read()
            print(f"--- guest cid {c} ---\n" + "\n".join(
                ln for ln in text.splitlines() if "DGRAM" in ln or "guest-run.sh" in ln), flush=True)
            expect(rc == 0, f"guest {c}: guest-run.sh exit 0 (got {rc})")
            expect("DGRAM status=ok failures=0" in text, f"guest {c}: vsock-dgram status=ok")
            # The guest drops only the host's datagram to its unbound port (host mode).
            drops = "no_socket=%d rcvbuf_full=0 malformed=0 too_big=0" % (a.mode == "host")
            expect("DGRAM-GUEST-DROPS " + drops in text, f"guest {c}: the guest transport's drops: {drops}")
        t.join(120)
        expect(not t.is_alive() and not errs, f"host side finished without error {errs}")
        if skiff:
            # skiff writes its device counters (key=value lines) at exit.
            try:
                with open(f"{d}/skiff-stats") as f:
                    st = dict(ln.split("=", 1) for ln in f.read().split() if "=" in ln)
                ctr = {cids[0]: {k[len("vsock_"):]: int(v, 0) for k, v in st.items()
                                 if k.startswith("vsock_dgram_")}}
            except (OSError, ValueError) as e:
                expect(False, f"skiff's SKIFF_STATS counters readable ({e})")
                ctr = {}
        else:
            dev.send_signal(signal.SIGTERM)
            try:
                rc = dev.wait(timeout=20)
            except subprocess.TimeoutExpired:
                dev.kill()
                rc = "hung"
            expect(rc == 0, f"skiff-vsock: exit 0 on SIGTERM (got {rc})")
            log.seek(0)
            ctr = counters(log.read())
        sizes = [dev_size(i, mrg) for i in range(n)]
        big, small = (MAX_DGRAM, 1) if mrg else (ONE_RX + 1, ONE_RX)
        if a.mode == "host":
            peek = 20000 if mrg else ONE_RX
            want = {3: dict(dgram_tx_pkts=n + 2 + len(host_full) + 1,
                            dgram_tx_bytes=sum(sizes) + 200 + 3 + sum(100 + j for j in host_full) + 4,
                            dgram_tx_drop_no_dest=1, dgram_tx_drop_full=FLOOD - len(host_full),
                            dgram_rx_pkts=n + 1 + 1 + (2 if mrg else 1) + 1,
                            dgram_rx_bytes=sum(sizes) + 5 + 3000 + small + (big if mrg else 0) + peek,
                            dgram_rx_drop_too_big=1 if mrg else 2, dgram_rx_drop_bad_addr=2)}
        else:
            want = {3: dict(dgram_tx_pkts=1 + 2 * n + 2, dgram_tx_bytes=5 + 2 * sum(sizes) + big + small,
                            dgram_tx_drop_no_dest=1,
                            dgram_rx_pkts=1 + 2 * n, dgram_rx_bytes=2 + 2 * sum(sizes),
                            dgram_rx_drop_too_big=0),
                    4: dict(dgram_tx_pkts=1 + 2 * n, dgram_tx_bytes=5 + 2 * sum(sizes),
                            dgram_rx_pkts=1 + 2 * n + (2 if mrg else 1),
                            dgram_rx_bytes=2 + 2 * sum(sizes) + small + (big if mrg else 0),
                            dgram_rx_drop_too_big=0 if mrg else 1)}
        for c, w in want.items():
            got = ctr.get(c)
            if got is None:
                expect(False, f"cid {c}: no datagram counters in the skiff-vsock log")
                continue
            bad = {k: (got.get(k), v) for k, v in w.items() if got.get(k) != v}
            other = {k: v for k, v in zero_drops(got).items() if k not in w}
            expect(not bad and not other, f"cid {c}: device counters {w} (wrong (got, want): {bad}; "
                   f"unexpected drops: {other})")
        if fails:
            log.seek(0)
            print("--- skiff-vsock log ---\n" + log.read()[-3000:])
    print(f"dgram_e2e: {'FAIL' if fails else 'pass'} ({a.vmm}, {a.mode}, mrg {a.mrg}, {len(fails)} failures)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
