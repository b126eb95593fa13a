#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""skiff-vsock serving several guests (--guest): each guest socket answers with its own
CID, the host side is optional per guest, CIDs are unique per group, the two argument
forms do not mix, SIGTERM removes every socket file and prints per-guest counters.
Usage: multi_guest_test.py SKIFF_VSOCK"""
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1]
fails = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


def connect(path, p):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and p.poll() is None:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            return s
        except OSError:
            time.sleep(0.02)
    raise SystemExit(f"skiff-vsock did not start: {p.stderr.read() if p.poll() is not None else 'timeout'}")


def request(s, req, payload=b""):
    s.sendall(struct.pack("<III", req, 1, len(payload)) + payload)
    hdr = s.recv(12, socket.MSG_WAITALL)
    r, flags, size = struct.unpack("<III", hdr)
    body = s.recv(size, socket.MSG_WAITALL) if size else b""
    return r, flags, body


def get_cid(s):
    r, flags, body = request(s, 24, struct.pack("<III", 0, 8, 0) + bytes(8))  # GET_CONFIG
    return struct.unpack("<Q", body[12:])[0] if len(body) == 20 else None


def sigterm(p):
    """SIGTERM, then the exit code ("hung" after 20 s, then killed) and stderr."""
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "hung"
    return rc, p.stderr.read()


def run(args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30)


with tempfile.TemporaryDirectory(prefix="vu-multi-") as d:
    for bad in (["--guest", f"socket={d}/a,cid=3", "--cid", "4"],
                ["--guest", f"socket={d}/a"],
                ["--guest", f"cid=3"],
                ["--guest", f"socket={d}/a,cid=2"],
                ["--guest", f"socket={d}/a,cid=3,colour=red"],
                ["--guest", f"socket={d}/a,cid=3,cid=4"],
                ["--guest", f"socket={d}/a,cid=3", "--guest", f"socket={d}/a,cid=4"],
                ["--guest", f"socket={d}/a,cid=3,group=" + "x" * 64]):
        r = run(bad)
        expect(r.returncode == 64, f"bad arguments {bad[1:]} exit 64 (EX_USAGE) (got {r.returncode})")
    r = run(["--guest", f"socket={d}/a,cid=3", "--guest", f"socket={d}/b,cid=3"])
    expect(r.returncode == 64 and "cid 3 given to two guests of the default group" in r.stderr,
           "same CID in one group: a usage error, exit 64")
    r = run(["--guest", f"socket={d}/a,cid=3,uds={d}/h", "--guest", f"socket={d}/b,cid=4,uds={d}/h"])
    expect(r.returncode == 64 and f"path '{d}/h' is given twice (as socket or uds of two guests)"
           in r.stderr, "same host socket for two guests: exit 64")
    r = run(["--guest", f"socket={d}/a,cid=3", "--guest", f"socket={d}/b,cid=4,uds={d}/a"])
    expect(r.returncode == 64 and f"path '{d}/a' is given twice" in r.stderr,
           "one guest's socket as another's host socket: exit 64")
    expect(not os.path.exists(f"{d}/a") and not os.path.exists(f"{d}/b"),
           "nothing left behind after a failed start")

    p = subprocess.Popen([BIN, "--guest", f"socket={d}/a,cid=3,uds={d}/ha",
                          "--guest", f"socket={d}/b,cid=4",
                          "--guest", f"socket={d}/c,cid=3,group=lab", "--mrg-rxbuf", "off"],
                         stderr=subprocess.PIPE, text=True)
    socks = {n: connect(f"{d}/{n}", p) for n in "abc"}
    for n, cid in (("a", 3), ("b", 4), ("c", 3)):
        expect(get_cid(socks[n]) == cid, f"guest {n}: GET_CONFIG gives cid {cid}")
        r, flags, body = request(socks[n], 1)  # GET_FEATURES
        feats = struct.unpack("<Q", body)[0] if len(body) == 8 else 1 << 4
        expect(not feats & (1 << 4), f"guest {n}: global --mrg-rxbuf off applies")
    expect(os.path.exists(f"{d}/ha"), "guest a has its host side")
    expect(not [f for f in os.listdir(d) if f.startswith("h") and f != "ha"],
           "guests b and c have none")
    # One frontend per socket at a time; a new one on b takes over b only.
    s2 = connect(f"{d}/b", p)
    expect(get_cid(s2) == 4, "a second frontend on b is served")
    expect(get_cid(socks["a"]) == 3 and get_cid(socks["c"]) == 3, "a and c keep theirs")
    rc, err = sigterm(p)
    expect(rc == 0, f"SIGTERM: exit 0 (got {rc})")
    for cid in (3, 4):
        expect(f"cid {cid} counters:" in err, f"counters of cid {cid} printed")
    expect(err.count("vhost-user: msgs") == 3, "one vhost-user line per guest")
    expect(not any(os.path.exists(f"{d}/{n}") for n in ("a", "b", "c", "ha")),
           "every socket file removed")
    for s in list(socks.values()) + [s2]:
        s.close()

    # Datagrams: --dgram on for all, dgram=off for one guest; the gateway exists while it runs.
    p = subprocess.Popen([BIN, "--guest", f"socket={d}/a,cid=3,uds={d}/ha",
                          "--guest", f"socket={d}/b,cid=4,uds={d}/hb,dgram=off", "--dgram", "on"],
                         stderr=subprocess.PIPE, text=True)
    socks = {n: connect(f"{d}/{n}", p) for n in "ab"}
    for n, on in (("a", True), ("b", False)):
        r, flags, body = request(socks[n], 1)  # GET_FEATURES
        feats = struct.unpack("<Q", body)[0] if len(body) == 8 else 0
        expect(bool(feats & (1 << 3)) == on, f"guest {n}: DGRAM offered: {on}")
    expect(os.path.exists(f"{d}/ha_dgram") and not os.path.exists(f"{d}/hb_dgram"),
           "the datagram gateway of guest a only")
    rc, err = sigterm(p)
    expect(rc == 0 and "dgram_tx_pkts 0" in err, f"SIGTERM: exit 0, datagram counters (got {rc})")
    expect(not os.path.exists(f"{d}/ha_dgram"), "the gateway removed at exit")
    for s in socks.values():
        s.close()

    # A start that fails at its first guest leaves the sockets of later guests alone,
    # even when they belong to another live instance.
    # (Its host socket is taken by that instance: found at start, not by the argument checks.)
    p = subprocess.Popen([BIN, "--guest", f"socket={d}/x,cid=5,uds={d}/hx"], stderr=subprocess.PIPE,
                         text=True)
    sx = connect(f"{d}/x", p)
    r = run(["--guest", f"socket={d}/a,cid=3,uds={d}/hx", "--guest", f"socket={d}/x,cid=4"])
    expect(r.returncode == 1, f"first guest's device cannot be made: exit 1 (got {r.returncode})")
    expect(os.path.exists(f"{d}/x") and os.path.exists(f"{d}/hx") and get_cid(sx) == 5,
           "the other instance's socket files and frontend are untouched")
    expect(not os.path.exists(f"{d}/a"), "the failed start left no socket file of its own")
    # A socket whose directory is missing is a usage error, found before anything is made.
    r = run(["--guest", f"socket={d}/nodir/a,cid=3", "--guest", f"socket={d}/x,cid=4"])
    expect(r.returncode == 64 and f"directory '{d}/nodir' does not exist" in r.stderr,
           f"a socket in a missing directory: exit 64, named (got {r.returncode})")
    expect(os.path.exists(f"{d}/x") and get_cid(sx) == 5, "and the other instance is untouched")
    p.send_signal(signal.SIGTERM)
    expect(p.wait(timeout=20) == 0, "that instance still exits cleanly")
    p.stderr.close()
    sx.close()



def ack(s, req, payload=b"", fds=()):
    """A request with need_reply (and fds): its REPLY_ACK status, None if no reply."""
    msg = struct.pack("<III", req, 1 | 8, len(payload)) + payload
    if fds:
        socket.send_fds(s, [msg], list(fds))
    else:
        s.sendall(msg)
    hdr = s.recv(12, socket.MSG_WAITALL)
    if len(hdr) < 12:
        return None
    body = s.recv(struct.unpack("<III", hdr)[2], socket.MSG_WAITALL)
    return struct.unpack("<Q", body)[0] if len(body) == 8 else None


def start_device(s):
    """SET_OWNER .. SET_VRING_ENABLE for RX and TX on a 64 KiB memfd; returns
    (memfd, TX kick eventfd, fds to close) or None when a request failed."""
    mem = os.memfd_create("guest", 0)
    os.ftruncate(mem, 1 << 16)
    fds = [mem]
    ua = 0x7f0000000000
    ok = ack(s, 3) == 0  # SET_OWNER
    ok = ok and ack(s, 16, struct.pack("<Q", 1 << 3)) == 0  # SET_PROTOCOL_FEATURES: REPLY_ACK
    ok = ok and ack(s, 2, struct.pack("<Q", (1 << 32) | (1 << 30))) == 0  # SET_FEATURES
    ok = ok and ack(s, 5, struct.pack("<II", 1, 0) + struct.pack("<QQQQ", 0, 1 << 16, ua, 0),
                    [mem]) == 0  # SET_MEM_TABLE
    for q in (0, 1):  # RX, TX
        kick, call = os.eventfd(0), os.eventfd(0)
        fds += [kick, call]
        base = ua + 0x1000 * q
        ok = ok and ack(s, 13, struct.pack("<Q", q), [call]) == 0  # SET_VRING_CALL
        ok = ok and ack(s, 8, struct.pack("<II", q, 16)) == 0  # SET_VRING_NUM
        ok = ok and ack(s, 9, struct.pack("<IIQQQQ", q, 0, base, base + 0x400, base + 0x800,
                                         0)) == 0  # SET_VRING_ADDR
        ok = ok and ack(s, 12, struct.pack("<Q", q), [kick]) == 0  # SET_VRING_KICK
        ok = ok and ack(s, 18, struct.pack("<II", q, 1)) == 0  # SET_VRING_ENABLE
    if not ok:
        for fd in fds:
            os.close(fd)
        return None
    return mem, fds[-2], fds


# Issue 22, finding 7: a frontend that shrinks its memory file after SET_MEM_TABLE
# made the next guest-memory access raise SIGBUS, ending every guest of the process
# (here under the default --seccomp kill). Now only that frontend is dropped.
with tempfile.TemporaryDirectory(prefix="vu-multi-") as d:
    p = subprocess.Popen([BIN, "--guest", f"socket={d}/a,cid=3,uds={d}/ha",
                          "--guest", f"socket={d}/b,cid=4", "--rx-threads", "1"],
                         stderr=subprocess.PIPE, text=True)
    sa, sb = connect(f"{d}/a", p), connect(f"{d}/b", p)
    sa.settimeout(20)
    sb.settimeout(20)
    ga, gb = start_device(sa), start_device(sb)
    expect(ga is not None and gb is not None, "shrink: both devices started")
    if gb is not None:
        os.ftruncate(gb[0], 0)
        os.eventfd_write(gb[1], 1)  # the control thread reads the TX avail ring
        try:
            dropped = sb.recv(1) == b""
        except OSError:
            dropped = True
        expect(dropped, "shrink: that guest's frontend is dropped")
    try:
        cid_a = get_cid(sa)
    except OSError:
        cid_a = None
    expect(cid_a == 3, "shrink: the other guest's frontend is still served")
    expect(p.poll() is None, "shrink: the process lives on")
    if p.poll() is not None:
        raise SystemExit(f"skiff-vsock died ({p.returncode}): {p.stderr.read()[-400:]}")
    sb2 = connect(f"{d}/b", p)
    sb2.settimeout(20)
    gb2 = start_device(sb2)
    expect(gb2 is not None, "shrink: the faulted guest's device serves a new frontend")
    rc, err = sigterm(p)
    expect(rc == 0, f"shrink: SIGTERM, exit 0 (got {rc}): {err[-400:]}")
    expect("guest memory faulted" in err, "shrink: the reason is logged")
    expect("cid 4 vhost-user:" in err and "mem_faults 1" in err.split("cid 4 vhost-user:")[1],
           "shrink: counted in mem_faults of cid 4")
    for g in (ga, gb, gb2):
        for fd in (g[2] if g else []):
            os.close(fd)
    for s in (sa, sb, sb2):
        s.close()

print("multi_guest_test: " + ("all passed" if not fails else f"{len(fails)} failed"))
sys.exit(1 if fails else 0)
