#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""skiff-vsock as a process: arguments, one vhost-user request over its socket, SIGTERM
(clean exit, both socket files removed), SIGKILL leaving stale socket files that the next
start replaces. Usage: cli_test.py SKIFF_VSOCK
       cli_test.py --release SKIFF_VSOCK_RELEASE: a build without the test hooks
       (SKIFF_TEST_HOOKS off, as a release build): --help does not show --test-fault
       and the option is refused like any unknown one; only that.
       cli_test.py --no-hooks SKIFF_VSOCK: every check, on a build without the hooks
       (those of --release instead of those of --test-fault)."""
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

MODE = sys.argv[1] if sys.argv[1] in ("--release", "--no-hooks") else ""
BIN = sys.argv[2] if MODE else sys.argv[1]
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


def usage_error(args, *needles):
    """A bad command line: exit 64 exactly and one stderr line, starting with the tool's name
    (not argv[0]'s path), that contains every needle (the option, the value, what is valid)."""
    try:
        r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:  # the arguments were taken: it started serving
        expect(False, f"bad arguments {args}: exit 64 (got: accepted, still running after 10 s)")
        return
    lines = r.stderr.splitlines()
    ok = (r.returncode == 64 and len(lines) == 1 and lines[0].startswith("skiff-vsock: ")
          and all(n in lines[0] for n in needles))
    expect(ok, f"bad arguments {args}: exit 64 (got {r.returncode}), one line naming {needles}"
           + ("" if ok else f": {r.stderr!r}"))


def release_checks():
    """The hook-less build: no --test-fault anywhere in its interface."""
    r = subprocess.run([BIN, "--help"], capture_output=True, text=True)
    expect(r.returncode == 0 and "--seccomp kill|log|off" in r.stdout
           and "--test-fault" not in r.stdout and "TEST ONLY" not in r.stdout,
           "release --help: usage without --test-fault or any TEST ONLY option")
    t = tempfile.mkdtemp(prefix="vu-cli-rel-")
    one = ["--socket", f"{t}/x", "--cid", "3", "--uds", f"{t}/y"]
    usage_error([*one, "--test-fault", "bad-hdr-len=over"], "unknown option '--test-fault'",
                "see skiff-vsock --help")
    usage_error([*one, "--test-fault=bad-num-buffers=zero,port=6200"],
                "unknown option '--test-fault=bad-num-buffers=zero,port=6200'")
    expect(not os.listdir(t), "release: the refused command line made no socket")
    shutil.rmtree(t)


if MODE:
    release_checks()
if MODE == "--release":
    print("cli_test --release: " + ("all passed" if not fails else f"{len(fails)} failed"))
    sys.exit(1 if fails else 0)

for h in ("--help", "-h"):
    r = subprocess.run([BIN, h], capture_output=True, text=True)
    expect(r.returncode == 0 and "--socket" in r.stdout and "--seccomp kill|log|off" in r.stdout,
           f"{h} exits 0 with usage (naming --seccomp)")
    expect("--rx-threads N       RX pump threads per guest, 1 .. 16" in r.stdout
           and "--cid N              guest CID, 3 .. 4294967294" in r.stdout
           and "1 .. 65536" in r.stdout and "4096 .. 64M" in r.stdout,
           f"{h} gives the range of every numeric option")
for v in ("--version", "-V"):
    r = subprocess.run([BIN, v], capture_output=True, text=True)
    expect(r.returncode == 0 and r.stdout.startswith("skiff-vsock "), v)

T = tempfile.mkdtemp(prefix="vu-cli-args-")  # where a wrongly accepted command line makes sockets
X, Y = f"{T}/x", f"{T}/y"
ONE = ["--socket", X, "--cid", "3", "--uds", Y]
# getopt's own errors (unknown, missing value, ambiguous, value to a flag), extra arguments
usage_error(["--bogus"], "unknown option '--bogus'", "see skiff-vsock --help")
usage_error(["-x"], "unknown option '-x'")
usage_error(["--cid"], "option '--cid' needs a value")
usage_error(["--ver"], "option '--ver' is ambiguous", "--verbose", "--version")
usage_error(["--verbose=yes", *ONE], "option '--verbose' takes no value")
usage_error([*ONE, "extra"], "unexpected argument 'extra'")
# numbers: the option, the value and the range
for cid in ("2", "4294967295", "0x10", "-3", "three"):
    usage_error(["--socket", X, "--cid", cid, "--uds", Y], f"bad --cid '{cid}'",
                "from 3 to 4294967294")
for n in ("0", "17", "999"):
    usage_error([*ONE, "--rx-threads", n], f"bad --rx-threads '{n}'", "from 1 to 16")
for n in ("0", "65537", "64Q"):
    usage_error([*ONE, "--rx-pkt-max", n], f"bad --rx-pkt-max '{n}'", "from 1 to 65536")
for n in ("4095", "65M", "lots"):
    usage_error([*ONE, "--conn-buf", n], f"bad --conn-buf '{n}'", "from 4096 (4K) to 67108864 (64M)")
usage_error([*ONE, "--mrg-rxbuf", "maybe"], "bad --mrg-rxbuf 'maybe'", "give on or off")
usage_error([*ONE, "--dgram", "maybe"], "bad --dgram 'maybe'", "give on or off")
for v in ("pump1", "", "OWN"):
    usage_error([*ONE, "--ctl-thread", v], f"bad --ctl-thread '{v}'", "give auto, own or pump0")
usage_error(["--guest", f"socket={X},cid=3,dgram=yes"], "bad --guest dgram 'yes'", "give on or off")
usage_error([*ONE, "--seccomp", "maybe"], "bad --seccomp 'maybe'", "give kill, log or off")
usage_error(["--guest", f"socket={X},cid=3", "--seccomp", "strict"], "bad --seccomp 'strict'")
for f in ("bad-num-buffers", "bad-num-buffers=", "bad-num-buffers=zeros", "bad-hdr-len=zero",
          "bad-num-buffers=over,", "bad-num-buffers=over,port=", "bad-num-buffers=over,port=0",
          "bad-num-buffers=over,port=4294967296", "bad-num-buffers=over,prt=5"):
    if not MODE:
        usage_error([*ONE, "--test-fault", f], f"bad --test-fault '{f}'",
                    "port=P (P from 1 to 4294967295)")
# options given twice (--guest is the repeatable one)
usage_error([*ONE, "--cid", "4"], "--cid given twice ('3', then '4')")
usage_error([*ONE, "--rx-threads", "1", "--rx-threads", "2"], "--rx-threads given twice ('1', then '2')")
usage_error([*ONE, "--socket", f"{T}/z"], f"--socket given twice ('{X}', then '{T}/z')")
# the one-guest form: what is missing is named
usage_error(["--socket", X], "--socket, --cid and --uds are required (missing: --cid --uds)")
usage_error(["--guest", f"socket={X},cid=3", "--cid", "4"], "--guest does not mix with --cid")
usage_error(["--socket", X, "--cid", "3", "--uds", X], f"path '{X}' is given twice (as socket or uds of one guest)")
# --guest lists: empty items, trailing commas, repeated and unknown keys, values
usage_error(["--guest", f"socket={X},cid=3,"], f"--guest 'socket={X},cid=3,' ends with a comma")
usage_error(["--guest", f"socket={X},,cid=3"], f"--guest 'socket={X},,cid=3': item 2 is empty")
usage_error(["--guest", f",socket={X},cid=3"], "item 1 is empty (a leading comma)")
usage_error(["--guest", f"socket={X},cid=3,cid=4"], "--guest: key 'cid' given twice ('3', then '4')")
usage_error(["--guest", f"socket={X},cid=3,colour=red"], "--guest: unknown key 'colour'",
            "socket, cid, uds, group")
usage_error(["--guest", f"socket={X},cid"], "--guest item 'cid' is not key=value")
usage_error(["--guest", f"socket={X},cid="], "--guest key 'cid' has no value")
usage_error(["--guest", f"socket={X}"], f"--guest 'socket={X}' lacks cid=N")
usage_error(["--guest", f"socket={X},cid=2"], "bad --guest cid '2'", "from 3 to 4294967294")
usage_error(["--guest", f"socket={X},cid=3,group=" + "g" * 64], "bad --guest group", "at most 63 bytes")
# paths: a missing directory is named with the remedy, before anything is created
usage_error(["--socket", X, "--cid", "3", "--uds", "/nonexistent/v.sock"],
            "cannot create the host socket '/nonexistent/v.sock'", "directory '/nonexistent' does not exist",
            "mkdir -p '/nonexistent'", "--uds PATH")
usage_error(["--socket", "/nonexistent/vu.sock", "--cid", "3", "--uds", Y],
            "cannot create the vhost-user socket '/nonexistent/vu.sock'", "mkdir -p '/nonexistent'")
usage_error(["--guest", f"socket={X},cid=3,uds=/nonexistent/h"], "--guest uds=PATH",
            "directory '/nonexistent' does not exist")
usage_error(["--socket", X, "--cid", "3", "--uds", "/dev/null"],
            "'/dev/null': a file that is not a socket is there")
usage_error(["--socket", X, "--cid", "3", "--uds", "/tmp/" + "u" * 92],
            "is 97 bytes, too long", "at most 96 bytes")

shutil.rmtree(T)

if not MODE:
    r = subprocess.run([BIN, "--help"], capture_output=True, text=True)
    expect("--test-fault" in r.stdout and "TEST ONLY" in r.stdout,
           "--help documents --test-fault as test only")

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

    for v in ("auto", "own", "pump0"):  # each layout is taken (the device tests run them)
        p, s = start(d, "--ctl-thread", v)
        r, flags, body = request(s, 1)
        expect(r == 1 and len(body) == 8, f"--ctl-thread {v}: starts and serves")
        p.send_signal(signal.SIGTERM)
        expect(p.wait(timeout=20) == 0, f"--ctl-thread {v}: SIGTERM, exit 0")
        p.stderr.close()
        s.close()

print("cli_test: " + ("all passed" if not fails else f"{len(fails)} failed"))
sys.exit(1 if fails else 0)
