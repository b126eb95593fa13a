#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A/B figures of the RX batching series (issue 8), on top of guest_ab.py.

For each payload P (default 256, 512, 1K, 4K) one guest_ab run (baseline A vs patched B,
--pairs pairs, same run, 95 % CIs) with skiff-vsock --rx-pkt-max P, so that the guest
receives RW packets of P bytes (the device would otherwise coalesce the host's P-byte
writes into packets of up to 64 KiB), and these steps per boot (no guest->host steps):

  h2g_<P>      host->guest throughput, guest receive buffer (SO_VM_SOCKETS_BUFFER_SIZE)
               64 KiB, recv() size 64 KiB, SO_RCVLOWAT=1, host writes of P bytes
               (with the CPU figures of guest_ab.py for this transfer: the guest's host
               CPU, guest CPU, recv process CPU per KiB, bytes per recv call; with
               --irq-cpu C also the CPU of guest CPU C alone: its QEMU vCPU thread's
               host CPU time (cpu_vcpu) and its guest /proc/stat time (cpu_irq))
  h2gfix_<P>   fixed-syscall stress: the receiver's recv() buffer = write size = P (socket
               buffer 64 KiB as above), so each recv() returns at most one write and the
               receiver makes a fixed number of calls per byte (the cover letter's
               "receiver buffer = sender write size"; a 256-byte credit window instead
               would measure the credit-update round trip, about 0.1 MB/s here)
  rtt_<P>      ping-pong RTT over --rtt-count requests (P in --rtt-sizes only)

Then prints the three tables of the cover letter (throughput, stress, RTT) plus the CPU
per byte table, from the per-payload JSON files (written to --out-dir).

Usage: rx_batch_ab.py --skiff-vsock BIN --guest-bench BIN --peer BIN --initrd FILE
                      [--payloads 256,512,1K,4K] [--rtt-sizes 256,4096] [--pairs 16]
                      [--out-dir DIR] [--kinds h2g,fix,rtt] [--table-only] [guest_ab.py options...]
build/bench/rx_batch_ab passes the first four. Other options go to guest_ab.py as they are
(e.g. --seconds, --rtt-count, --nice, --interleave, --kernel-a/--kernel-b, and for the
cover letter's placement on an SMP guest: --vmm qemu --smp 2 --reader-cpu 0 --irq-cpu 1).
Exit status: the worst of the guest_ab runs (0 ok, 1 a boot or a step failed).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest_ab  # noqa: E402

KiB = 1024


class FixedStep(guest_ab.Step):
    """h2g with the recv() buffer equal to the write size (one write per call at most)."""

    def __init__(self, size, port, a):
        super().__init__("h2g", size, port, a)
        tmo = f"--timeout {a.step_timeout}" + guest_ab.pin_args(a)
        self.guest = f"guest-bench recv 2:{port} --size {size} --read-size {size} --rcvlowat 1 " \
                     f"--buf-size {a.guest_buf} --conns 1 {tmo}"
        self.suffix = f"fix{size}"

    def figures(self):
        out = super().figures()
        # guest_ab names them h2g_fix<P>, cpu_host_h2g_fix<P>, ...: h2gfix_<P> etc.
        return {k.replace(f"_fix{self.size}", f"fix_{self.size}"): v for k, v in out.items()}


def rx_batch_steps(a):
    steps, port = [], guest_ab.FIRST_PORT
    for s in a.sizes:
        if "h2g" in a.rx_batch_kinds:
            steps.append(guest_ab.Step("h2g", s, port, a))
        if "fix" in a.rx_batch_kinds:
            steps.append(FixedStep(s, port + 1, a))
        port += 2
    for s in a.rx_batch_rtt:
        steps.append(guest_ab.Step("rtt", s, port, a))
        port += 1
    return steps


def rx_batch_names(a):
    names = []
    for s in a.sizes:
        for k in ("h2g", "cpu_host_h2g", "cpu_guest_h2g", "cpu_proc_h2g", "cpu_vcpu_h2g", "cpu_irq_h2g",
                  "bytes_per_recv_h2g"):
            names += [f"{k}_{s}", f"{k}fix_{s}"]
    for s in a.rx_batch_rtt:
        names += [f"rtt_{s}", f"rtt_p99_{s}"]
    return names


_figure_meta = guest_ab.figure_meta


def rx_batch_meta(name):
    if "fix_" in name:
        label, unit, better, lim = _figure_meta(name.replace("fix_", "_"))
        return label + " fixed-syscall", unit, better, lim
    return _figure_meta(name)


def run_one(size, rtt, kinds, rest, json_path):
    """One guest_ab run for payload @size, in this process (guest_ab's hooks replaced)."""
    guest_ab.figure_steps = rx_batch_steps
    guest_ab.figure_names = rx_batch_names
    guest_ab.figure_meta = rx_batch_meta
    orig_parse = argparse.ArgumentParser.parse_args

    def parse(self, args=None, namespace=None):
        ns = orig_parse(self, args, namespace)
        ns.rx_batch_rtt = [size] if rtt and "rtt" in kinds else []
        ns.rx_batch_kinds = kinds
        return ns

    argparse.ArgumentParser.parse_args = parse
    argv = rest + ["--sizes", str(size), "--rx-pkt-max", str(size), "--guest-buf", "64K", "--read-size", "64K",
                   "--rtt-sizes", str(size), "--json", json_path]
    print(f"rx_batch_ab: payload {size} B: guest_ab.py {' '.join(argv)}", flush=True)
    sys.argv = ["guest_ab.py"] + argv
    try:
        return guest_ab.main()
    finally:
        argparse.ArgumentParser.parse_args = orig_parse


def ci(s):
    if not s or s.get("change_pct") is None:
        return "n/a"
    if not s.get("ci95_pct"):
        return f"{s['change_pct']:+.2f}% [n/a]"
    lo, hi = s["ci95_pct"]
    return f"{s['change_pct']:+.2f}% [{lo:+.2f}%, {hi:+.2f}%]"


def val(s, key, scale=1.0, nd=3):
    v = s.get(key) if s else None
    return "n/a" if v is None else f"{v * scale:.{nd}f}"


def tables(out_dir, payloads, rtts):
    runs = {}
    for p in payloads:
        path = os.path.join(out_dir, f"rx-batch-{p}.json")
        if os.path.exists(path):
            with open(path) as f:
                runs[p] = json.load(f)
    if not runs:
        print("rx_batch_ab: no results")
        return
    any_run = next(iter(runs.values()))
    print(f"\npairs per payload: {any_run['config']['pairs']}; device mrg_rxbuf={any_run['config']['mrg_rxbuf']}, "
          f"rx_pkt_max = payload; A = baseline, B = patched; change = geometric mean of B/A over the pairs, "
          f"95 % paired t-interval")

    def row(p, name):
        return runs[p]["summary"].get(name) if p in runs else None

    def lbl(p):
        return f"{p // KiB}K" if p % KiB == 0 else f"{p}B"

    print("\nHost-to-guest RX throughput (64 KiB receive buffer, recv() 64 KiB, SO_RCVLOWAT=1; MB/s):")
    print(f"  {'payload':<8} {'baseline':>10} {'patched':>10}  change (95% CI)            bytes/recv A/B")
    for p in payloads:
        s, b = row(p, f"h2g_{p}"), row(p, f"bytes_per_recv_h2g_{p}")
        print(f"  {lbl(p):<8} {val(s, 'a_mean', 1, 1):>10} {val(s, 'b_mean', 1, 1):>10}  {ci(s):<26} "
              f"{val(b, 'a_mean', 1, 0)}/{val(b, 'b_mean', 1, 0)}")
    print("\nFixed-syscall stress (recv() buffer = write size, socket buffer 64 KiB; MB/s):")
    print(f"  {'payload':<8} {'baseline':>10} {'patched':>10}  change (95% CI)            bytes/recv A/B")
    for p in payloads:
        s, b = row(p, f"h2gfix_{p}"), row(p, f"bytes_per_recv_h2gfix_{p}")
        print(f"  {lbl(p):<8} {val(s, 'a_mean', 1, 1):>10} {val(s, 'b_mean', 1, 1):>10}  {ci(s):<26} "
              f"{val(b, 'a_mean', 1, 0)}/{val(b, 'b_mean', 1, 0)}")
    print(f"\nRequest-response latency (ping-pong, {any_run['config']['rtt_count']} requests; mean RTT, us):")
    for p in rtts:
        s = row(p, f"rtt_{p}")
        print(f"  {lbl(p):<8} {val(s, 'a_mean', 1, 1):>10} {val(s, 'b_mean', 1, 1):>10}  {ci(s)}")
    print("\nCPU per byte received (64 KiB receiver; ns per KiB; host = all of the guest's host threads, "
          "guest = guest /proc/stat non-idle):")
    for p in payloads:
        h, g = row(p, f"cpu_host_h2g_{p}"), row(p, f"cpu_guest_h2g_{p}")
        print(f"  {lbl(p):<8} host {val(h, 'a_mean', 1, 0):>8} -> {val(h, 'b_mean', 1, 0):>8}  {ci(h):<28} "
              f"guest {val(g, 'a_mean', 1, 0):>8} -> {val(g, 'b_mean', 1, 0):>8}  {ci(g)}")
    irq = any_run["config"].get("irq_cpu")
    if irq is not None:
        print(f"\nCPU per byte received on the IRQ CPU (guest CPU {irq}: vsock interrupt and RX worker; "
              f"64 KiB receiver; ns per KiB; vCPU = its QEMU thread's host CPU time, guest = its /proc/stat):")
        for p in payloads:
            v, g = row(p, f"cpu_vcpu_h2g_{p}"), row(p, f"cpu_irq_h2g_{p}")
            print(f"  {lbl(p):<8} vCPU {val(v, 'a_mean', 1, 0):>8} -> {val(v, 'b_mean', 1, 0):>8}  {ci(v):<28} "
                  f"guest {val(g, 'a_mean', 1, 0):>8} -> {val(g, 'b_mean', 1, 0):>8}  {ci(g)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 add_help=True)
    ap.add_argument("--payloads", type=guest_ab.parse_sizes, default=[256, 512, 1024, 4096])
    ap.add_argument("--rtt-sizes", type=guest_ab.parse_sizes, default=[256, 4096])
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--kinds", default="h2g,fix,rtt", help="steps per boot, a subset of h2g,fix,rtt (all)")
    ap.add_argument("--table-only", action="store_true", help="print the tables from --out-dir's JSON files")
    a, rest = ap.parse_known_args()
    os.makedirs(a.out_dir, exist_ok=True)
    rc = 0
    if not a.table_only:
        for p in a.payloads:
            r = run_one(p, p in a.rtt_sizes, a.kinds.split(","), rest + ["--pairs", str(a.pairs)],
                        os.path.join(a.out_dir, f"rx-batch-{p}.json"))
            if r == 77:
                return 77
            rc = max(rc, r)
    tables(a.out_dir, a.payloads, [p for p in a.rtt_sizes if p in a.payloads])
    return rc


if __name__ == "__main__":
    sys.exit(main())
