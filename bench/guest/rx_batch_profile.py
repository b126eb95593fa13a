#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where the time of a guest receiving vsock data goes (issue 8 diagnostics).

Runs build/bench/rx_batch_ab (one pair, boot after boot, only the steps given) under
`perf record -a` (cpu-clock sampling: the host has no hardware counters), notes every
~0.2 s which host processes belong to which guest (their command line holds the kernel
path, UML's user processes included) and which are this build's skiff-vsock, and then
splits each guest's samples into: host kernel (ptrace, signals, context switches,
vhost-user socket I/O done for UML), UML kernel code (the guest kernel, native), of that
the vsock/socket receive path, and guest user space; plus the device's samples.

With --vmm qemu (an x86-64 QEMU TCG guest; add --smp 2 --reader-cpu 0 --irq-cpu 1 for
the cover letter's placement) the guest is one QEMU process: its samples are split by
thread instead ("CPU 0/TCG", "CPU 1/TCG": the vCPUs, translated guest code and QEMU's
helpers; the main loop, which injects the device's interrupts; others), the device's
by thread too, and the host's idle samples are counted, so the table shows which thread
is busy and whether the two host CPUs are.

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
            if args.split(" ", 1)[0] == dev:
                owners[int(pid)] = "skiff-vsock"
        stop.wait(0.2)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    ab = sys.argv[1]
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
    qemu = "qemu" in [sys.argv[i + 1] for i in range(1, len(sys.argv) - 1) if sys.argv[i] == "--vmm"]
    kernels = {}
    for v in ("baseline", "patched"):
        arch = ("x86_64", "bzImage") if qemu else ("um", "linux")
        kernels[v] = subprocess.run([os.path.join(repo, "scripts/build-kernels.sh"), "--print-path", v, *arch],
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
    if qemu:
        return by_thread(data, owners)
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


def by_thread(data, owners):
    """QEMU guests: samples per (owner, thread name), the host kernel's share of each, and
    the host's idle samples (pid 0) against all samples."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,time,ip,dso"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    cnt, kern = collections.Counter(), collections.Counter()
    total = idle = 0
    t0 = t1 = None
    for ln in out.splitlines():
        m = re.match(r"\s*(.*?)\s+(\d+)\s+([\d.]+):\s+\S+\s+\((.*)\)\s*$", ln)
        if not m:
            continue
        comm, pid, t, dso = m.group(1), int(m.group(2)), float(m.group(3)), m.group(4)
        total += 1
        t0 = t if t0 is None else min(t0, t)
        t1 = t if t1 is None else max(t1, t)
        if pid == 0:
            idle += 1
            continue
        who = owners.get(pid)
        if not who:
            continue
        cnt[(who, comm)] += 1
        kern[(who, comm)] += "kallsyms" in dso
    print(f"\nperf cpu-clock samples at 999 Hz (1 sample ~ 1 ms of CPU); data: {data}")
    if total:
        print(f"  all: {total} samples over {t1 - t0:.1f} s, host idle {idle} ({100 * idle / total:.1f}%)")
    for who in ("baseline", "patched", "skiff-vsock"):
        rows = sorted(((c, k) for k, c in cnt.items() if k[0] == who), reverse=True)
        if not rows:
            continue
        n = sum(c for c, _ in rows)
        print(f"  {who}: {n} samples")
        for c, k in rows[:8]:
            print(f"    {k[1]:<20} {c:>6} ({100 * c / n:.1f}%), host kernel {100 * kern[k] / c:.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
