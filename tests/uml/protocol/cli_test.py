#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""skiff-vsock as a process: arguments, one vhost-user request over its socket, SIGTERM
(clean exit, both socket files removed), SIGKILL leaving stale socket files that the next
start replaces. Usage: cli_test.py SKIFF_VSOCK"""
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


def start(d, *extra):
    p = subprocess.Popen([BIN, "--socket", f"{d}/vu.sock", "--cid", "7", "--uds", f"{d}/h.sock", *extra],
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and p.poll() is None:
        # The vhost-user socket is created last: once it accepts, the device is up too.
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(f"{d}/vu.sock")
            return p, s
        except OSError:
            time.sleep(0.02)
    raise SystemExit(f"skiff-vsock did not start: {p.stderr.read() if p.poll() is not None else 'timeout'}")


def request(s, req, payload=b""):
    s.sendall(struct.pack("<III", req, 1, len(payload)) + payload)
    hdr = s.recv(12, socket.MSG_WAITALL)
    r, flags, size = struct.unpack("<III", hdr)
    body = s.recv(size, socket.MSG_WAITALL) if size else b""
    return r, flags, body


r = subprocess.run([BIN, "--help"], capture_output=True, text=True)
expect(r.returncode == 0 and "--socket" in r.stdout and "--seccomp kill|log|off" in r.stdout,
       "--help exits 0 with usage (naming --seccomp)")
r = subprocess.run([BIN, "--version"], capture_output=True, text=True)
expect(r.returncode == 0 and r.stdout.startswith("skiff-vsock "), "--version")
for bad in (["--cid", "2", "--socket", "/tmp/x", "--uds", "/tmp/y"], ["--socket", "/tmp/x"],
            ["--cid", "3", "--socket", "/tmp/x", "--uds", "/tmp/y", "--mrg-rxbuf", "maybe"],
            ["--cid", "4294967295", "--socket", "/tmp/x", "--uds", "/tmp/y"], ["--bogus"],
            ["--cid", "3", "--socket", "/tmp/x", "--uds", "/tmp/y", "--seccomp", "maybe"],
            ["--guest", "socket=/tmp/x,cid=3", "--seccomp", "strict"],
            *(["--cid", "3", "--socket", "/tmp/x", "--uds", "/tmp/y", "--test-fault", f]
              for f in ("bad-num-buffers", "bad-num-buffers=", "bad-num-buffers=zeros", "bad-hdr-len=zero",
                        "bad-num-buffers=over,", "bad-num-buffers=over,port=", "bad-num-buffers=over,port=0",
                        "bad-num-buffers=over,port=4294967296", "bad-num-buffers=over,prt=5"))):
    r = subprocess.run([BIN, *bad], capture_output=True, text=True)
    expect(r.returncode == 64, f"bad arguments {bad} exit 64 (EX_USAGE) (got {r.returncode})")

r = subprocess.run([BIN, "--help"], capture_output=True, text=True)
expect("--test-fault" in r.stdout and "TEST ONLY" in r.stdout, "--help documents --test-fault as test only")

with tempfile.TemporaryDirectory(prefix="vu-cli-") as d:
    p, s = start(d, "--mrg-rxbuf", "off")
    r, flags, body = request(s, 1)  # GET_FEATURES
    feats = struct.unpack("<Q", body)[0] if len(body) == 8 else 0
    expect(r == 1 and flags == 5 and feats & (1 << 30) and feats & (1 << 32), "GET_FEATURES reply")
    expect(not feats & (1 << 4), "--mrg-rxbuf off: MRG_RXBUF not offered")
    r, flags, body = request(s, 24, struct.pack("<III", 0, 8, 0) + bytes(8))  # GET_CONFIG
    expect(len(body) == 20 and struct.unpack("<Q", body[12:])[0] == 7, "GET_CONFIG gives --cid")
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "hung"
    err = p.stderr.read()
    expect(rc == 0, f"SIGTERM with a frontend connected: exit 0 (got {rc})")
    expect("counters:" in err, "counters printed at exit")
    expect(not os.path.exists(f"{d}/vu.sock") and not os.path.exists(f"{d}/h.sock"),
           "both socket files removed")
    expect(s.recv(1) == b"", "frontend sees EOF")
    s.close()

    p, s = start(d)
    s.close()
    p.kill()
    p.wait()
    p.stderr.close()
    expect(os.path.exists(f"{d}/vu.sock"), "SIGKILL leaves a stale socket file")
    p, s = start(d)
    r, flags, body = request(s, 1)
    expect(len(body) == 8 and struct.unpack("<Q", body)[0] & (1 << 4), "stale files replaced; MRG_RXBUF on")
    p2 = subprocess.run([BIN, "--socket", f"{d}/vu.sock", "--cid", "8", "--uds", f"{d}/h2.sock"],
                        capture_output=True, text=True, timeout=20)
    expect(p2.returncode == 1, "a second instance on a live socket fails")
    r, flags, body = request(s, 1)
    expect(r == 1 and len(body) == 8, "its liveness probe did not take the frontend's place")
    p.send_signal(signal.SIGINT)
    expect(p.wait(timeout=20) == 0, "SIGINT: exit 0")
    p.stderr.close()
    s.close()

print("cli_test: " + ("all passed" if not fails else f"{len(fails)} failed"))
sys.exit(1 if fails else 0)
