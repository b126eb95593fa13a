#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where the time of a UML guest receiving vsock data goes (issue 8 diagnostics).

Runs build/bench/rx_batch_ab (one pair, boot after boot, only the steps given) under
`perf record -a` (cpu-clock sampling: the host has no hardware counters), notes every
~0.2 s which host processes belong to which guest (their command line holds the kernel
path, UML's user processes included) and which are this build's skiff-vsock, and then
splits each guest's samples into: host kernel (ptrace, signals, context switches,
vhost-user socket I/O done for UML), UML kernel code (the guest kernel, native), of that
the vsock/socket receive path, and guest user space; plus the device's samples.

Usage: rx_batch_profile.py RX_BATCH_AB [rx_batch_ab options...]
  e.g. rx_batch_profile.py build/bench/rx_batch_ab --payloads 256 --kinds h2g --seconds 6
Needs perf and root (perf_event_paranoid allows -a for root). Prints one table.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

RX_PATH = re.compile(r"vsock|virtio_transport|sock_|_sock|skb|sk_|lock_sock|release_sock|__wake_up|"
                     r"try_to_wake_up|autoremove|woken|ep_poll|pollwake")


def collect(stop, owners, kernels, dev):
    while not stop.is_set():
        out = subprocess.run(["ps", "-eo", "pid=,args="], stdout=subprocess.PIPE, text=True).stdout
        for ln in out.splitlines():
            pid, _, args = ln.strip().partition(" ")
            for name, path in kernels.items():
                if path in args:
                    owners[int(pid)] = name
            if dev in args:
                owners[int(pid)] = "skiff-vsock"
        stop.wait(0.2)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    ab = sys.argv[1]
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
    kernels = {}
    for v in ("baseline", "patched"):
        kernels[v] = subprocess.run([os.path.join(repo, "scripts/build-kernels.sh"), "--print-path", v, "um"],
                                    stdout=subprocess.PIPE, text=True).stdout.strip()
    dev = re.search(r"--skiff-vsock '([^']*)'", open(ab).read()).group(1)
    work = tempfile.mkdtemp(prefix="skiff-rxprof-")
    data = os.path.join(work, "perf.data")
    owners, stop = {}, threading.Event()
    th = threading.Thread(target=collect, args=(stop, owners, kernels, dev), daemon=True)
    th.start()
    perf = subprocess.Popen(["perf", "record", "-a", "-F", "999", "-o", data], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(1)
    try:
        subprocess.run([ab, "--pairs", "1", "--interleave", "boot", "--out-dir", work] + sys.argv[2:], check=False)
    finally:
        perf.send_signal(2)
        perf.wait()
        stop.set()
        th.join()
    out = subprocess.run(["perf", "script", "-i", data, "-F", "pid,ip,sym,dso"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    cnt = collections.Counter()
    syms = collections.Counter()
    for ln in out.splitlines():
        m = re.match(r"\s*(\d+)\s+\S+\s+(.*?)\s+\((.*)\)\s*$", ln)
        if not m:
            continue
        who = owners.get(int(m.group(1)))
        if not who:
            continue
        sym, dso = m.group(2), m.group(3)
        cnt[(who, "all")] += 1
        if "kallsyms" in dso:
            cnt[(who, "host kernel")] += 1
        elif who != "skiff-vsock" and dso == kernels[who]:
            cnt[(who, "UML kernel code")] += 1
            if RX_PATH.search(sym):
                cnt[(who, "  of which socket/vsock/wake-up")] += 1
                syms[(who, sym)] += 1
        else:
            cnt[(who, "user space")] += 1
    print(f"\nperf cpu-clock samples at 999 Hz (1 sample ~ 1 ms of CPU); data: {data}")
    for who in ("baseline", "patched", "skiff-vsock"):
        n = cnt[(who, "all")]
        if not n:
            continue
        parts = ", ".join(f"{k}: {cnt[(w, k)]} ({100 * cnt[(w, k)] / n:.1f}%)" for (w, k) in list(cnt)
                          if w == who and k != "all")
        print(f"  {who}: {n} samples; {parts}")
        top = [f"{s} {c}" for (w, s), c in syms.most_common(200) if w == who][:10]
        if top:
            print(f"    top socket/vsock symbols: {', '.join(top)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
