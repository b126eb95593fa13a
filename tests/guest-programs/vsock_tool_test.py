#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-only test of vsock-tool (its uds: mode) against a fake hybrid-socket peer.

Checks the plan logic the guest runs: pattern and checksum (against pattern.py),
several connections, connection identification by the first pattern word, seqpacket
message lengths, ping-pong, and that corrupted data, a wrong seed and a refused
handshake are reported as failures. Usage: vsock_tool_test.py VSOCK_TOOL
"""
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pattern  # noqa: E402

TOOL = sys.argv[1]
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + detail))
    if not cond:
        failures.append(name)


def run_tool(*args, timeout=60):
    p = subprocess.run([TOOL, *args, "--timeout", "30"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout, text=True)
    line = [l for l in p.stdout.splitlines() if l.startswith("VSOCK-TOOL ")]
    kv = dict(w.split("=", 1) for w in line[-1].split()[1:]) if line else {}
    return p.returncode, kv, p.stdout


def recv_line(c, stream):
    if not stream:
        return c.recv(100)
    line = b""
    while not line.endswith(b"\n"):
        b = c.recv(1)
        if not b:
            break
        line += b
    return line


class FakeHybrid:
    """Listens on PATH like skiff's uds_path: "CONNECT <port>\\n" -> "OK 1\\n".
    Port 1 echoes until EOF; port 2 answers "NO\\n" (a refused handshake); port 3 echoes
    with the first payload byte flipped."""

    def __init__(self, path, kind):
        self.kind = kind
        self.s = socket.socket(socket.AF_UNIX, kind)
        self.s.bind(path)
        self.s.listen(64)
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        try:
            port = int(recv_line(c, self.kind == socket.SOCK_STREAM).split()[1])
            if port == 2:
                c.sendall(b"NO\n")
                return
            c.sendall(b"OK 1\n")
            first = True
            while True:
                d = c.recv(1 << 20)
                if not d:
                    break
                if port == 3 and first:
                    d = bytes([d[0] ^ 1]) + d[1:]
                first = False
                c.sendall(d)
            c.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            c.close()


def fnv_xor(seeds, n):
    x = 0
    for s in seeds:
        x ^= pattern.fnv1a(pattern.pattern(s, 0, n))
    return "%016x" % x


def main():
    tmp = tempfile.mkdtemp()
    stream = FakeHybrid(os.path.join(tmp, "s.sock"), socket.SOCK_STREAM)
    seqp = FakeHybrid(os.path.join(tmp, "q.sock"), socket.SOCK_SEQPACKET)
    s_addr = "uds:" + os.path.join(tmp, "s.sock")
    q_addr = "uds:" + os.path.join(tmp, "q.sock")
    n = 64 << 10

    rc, kv, out = run_tool("connect", s_addr + ":1", "--conns", "4", "--send", str(n), "--recv",
                           str(n), "--shut-wr", "--seed", "20", "--chunk", "4096")
    want = fnv_xor(range(20, 24), n)
    check("stream echo, 4 connections", rc == 0 and kv.get("status") == "ok"
          and kv.get("sent") == str(4 * n) and kv.get("received") == str(4 * n)
          and kv.get("send_fnv") == want and kv.get("recv_fnv") == want, out)

    rc, kv, out = run_tool("connect", s_addr + ":1", "--send", str(n), "--recv", str(n),
                           "--shut-wr", "--peer-seed", "5")
    check("wrong peer seed is a failure", rc == 1 and kv.get("status") == "fail"
          and kv.get("error") == "EBADMSG" and kv.get("detail") == "mismatch_at_offset_0", out)

    rc, kv, out = run_tool("connect", s_addr + ":3", "--send", str(n), "--recv", str(n),
                           "--shut-wr")
    check("one flipped byte is a failure", rc == 1 and kv.get("error") == "EBADMSG", out)

    rc, kv, out = run_tool("connect", s_addr + ":2", "--send", "1")
    check("refused handshake is a connect failure", rc == 1 and kv.get("where") == "connect"
          and kv.get("error") == "EPROTO", out)

    rc, kv, out = run_tool("connect", s_addr + ":1", "--pingpong", "200", "--chunk", "100")
    check("ping-pong", rc == 0 and kv.get("round_trips") == "200"
          and int(kv.get("rtt_min_ns", "0")) > 0, out)

    # The slow reader: 64 KiB at 256 KiB/s cannot take less than 0.25 s, nor a 300 ms stall
    # less than 0.3 s (lower bounds only: a loaded machine is slower, never faster).
    for args, least, name in ((("--recv-rate", "256K"), 0.25, "--recv-rate paces the reader"),
                              (("--recv-stall", "300"), 0.3, "--recv-stall stalls the reader")):
        t0 = time.monotonic()
        rc, kv, out = run_tool("connect", s_addr + ":1", "--send", str(n), "--recv", str(n),
                               "--shut-wr", "--chunk", "4096", *args)
        took = time.monotonic() - t0
        check(name, rc == 0 and kv.get("received") == str(n) and took >= least,
              "%.3f s; %s" % (took, out))

    sizes = [1, 17, 4096, 65536, 9]
    rc, kv, out = run_tool("connect", q_addr + ":1", "--type", "seqpacket", "--send", "50",
                           "--recv", "50", "--shut-wr", "--msg-sizes",
                           ",".join(map(str, sizes)))
    total = sum(sizes[k % len(sizes)] for k in range(50))
    check("seqpacket echo keeps message lengths", rc == 0 and kv.get("msgs_received") == "50"
          and kv.get("received") == str(total), out)

    # listen: connections arrive in reverse seed order, identified by their first word.
    for seeds, name, ok in (((13, 12, 11, 10), "listen identifies connections", True),
                            ((10, 11, 12, 99), "listen rejects an unknown seed", False)):
        path = os.path.join(tmp, "l%d.sock" % seeds[-1])
        p = subprocess.Popen([TOOL, "listen", "uds:" + path, "--conns", "4", "--recv", str(n),
                              "--peer-seed", "10", "--timeout", "30"], stdout=subprocess.PIPE,
                             text=True)
        first = p.stdout.readline()
        conns = []
        for s in seeds:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(path)
            conns.append((c, s))
        for c, s in conns:
            c.sendall(pattern.pattern(s, 0, n))
            c.shutdown(socket.SHUT_WR)
        rest = p.stdout.read()
        p.wait(timeout=30)
        for c, _ in conns:
            c.close()
        line = [l for l in rest.splitlines() if l.startswith("VSOCK-TOOL ")]
        kv = dict(w.split("=", 1) for w in line[-1].split()[1:]) if line else {}
        if ok:
            check(name, first.startswith("VSOCK-TOOL-LISTENING") and p.returncode == 0
                  and kv.get("status") == "ok" and kv.get("recv_fnv") == fnv_xor(seeds, n),
                  first + rest)
        else:
            check(name, p.returncode == 1 and kv.get("status") == "fail", first + rest)

    print("vsock_tool_test: %s" % ("FAILED: " + ", ".join(failures) if failures else "all passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
