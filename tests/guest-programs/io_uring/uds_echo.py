#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-side echo peer for vsock_uring_test --peer-cid 2 --port P through skiff-vsock.

skiff-vsock (hybrid sockets, Firecracker model) turns a guest connection to host port P
into a connection to the Unix socket <uds>_<P>. This listens there and echoes every byte
back on every accepted connection until the guest shuts down its sending side, then
closes. Prints "UDS-ECHO-LISTENING path=..." once listening, and on exit (SIGTERM, or
--conns connections served) "UDS-ECHO conns=N bytes=N".

Usage: uds_echo.py UDS_PATH_PORT [--conns N] [--timeout S]
"""
import argparse
import os
import signal
import socket
import sys
import threading


def serve(conn, totals, lock):
    n = 0
    with conn:
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                conn.sendall(data)
                n += len(data)
        except (ConnectionResetError, BrokenPipeError):
            pass  # the guest gave up on this connection (e.g. an interrupted connect)
    with lock:
        totals["bytes"] += n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--conns", type=int, default=0, help="exit after N connections (0: never)")
    ap.add_argument("--timeout", type=float, default=600, help="give up after S seconds")
    a = ap.parse_args()

    if os.path.exists(a.path):
        os.unlink(a.path)
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(a.path)
    ls.listen(16)
    totals = {"bytes": 0, "conns": 0}
    lock = threading.Lock()
    threads = []

    def finish(*_):
        for t in threads:
            t.join(timeout=5)
        print(f"UDS-ECHO conns={totals['conns']} bytes={totals['bytes']}", flush=True)
        os.unlink(a.path)
        sys.exit(0)

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGALRM, finish)
    signal.alarm(int(a.timeout))
    print(f"UDS-ECHO-LISTENING path={a.path}", flush=True)
    while not a.conns or totals["conns"] < a.conns:
        conn, _ = ls.accept()
        totals["conns"] += 1
        t = threading.Thread(target=serve, args=(conn, totals, lock), daemon=True)
        t.start()
        threads.append(t)
    finish()


if __name__ == "__main__":
    main()
