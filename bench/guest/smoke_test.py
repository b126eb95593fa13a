#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ctest smoke run of the A/B guest benchmark (labels guest-uml, bench).

Usage: smoke_test.py GUEST_AB [extra guest_ab arguments...]
Runs `GUEST_AB --quick --json FILE` (one A/B pair, short transfers) and checks that it
exited 0, printed its table, and wrote JSON with every key: the configuration, every
figure for both kernels with its summary, the socketpair limits, the per-step raw results.
It never judges a figure's value beyond "a finite number of the right sign".
Exit status 0 pass, 1 fail, 77 skipped (SKIFF_SKIP_GUESTS: 1, all, or the --vmm kind, default uml).
"""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/support"))
from guest_watch import exit_if_skipped  # noqa: E402

SIZES = [256, 4096, 65536]
RTT_SIZES = [256, 4096]
CONFIG_KEYS = ["kernel_a", "kernel_b", "kernel_a_sha256", "kernel_b_sha256", "comparison", "identical_kernels",
               "series", "pairs", "mrg_rxbuf", "rx_pkt_max_applied", "sizes", "rtt_sizes", "rtt_count", "seconds",
               "max_bytes", "read_size", "rcvlowat", "wall_seconds"]
SUMMARY_KEYS = ["label", "unit", "better", "n_pairs", "a_values", "b_values", "ratios_b_over_a", "a_mean", "b_mean",
                "change_pct", "ci95_pct", "limit_key", "limit", "a_frac_of_limit", "b_frac_of_limit"]


def expected_figures():
    names = []
    for s in SIZES:
        names += [f"g2h_{s}", f"h2g_{s}", f"cpu_host_h2g_{s}", f"cpu_guest_h2g_{s}",
                  f"cpu_proc_h2g_{s}", f"bytes_per_recv_h2g_{s}"]
    for s in RTT_SIZES:
        names += [f"rtt_{s}", f"rtt_p99_{s}"]
    return names


def finite(v, positive):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return ok and (v > 0 if positive else v >= 0)


def check(doc):
    errs = []
    cfg = doc.get("config", {})
    errs += [f"config.{k} missing" for k in CONFIG_KEYS if k not in cfg]
    if cfg.get("identical_kernels") != (cfg.get("kernel_a_sha256") == cfg.get("kernel_b_sha256")):
        errs.append("config.identical_kernels disagrees with the kernels' sha256")
    pairs = doc.get("pairs", [])
    if len(pairs) != 1:
        errs.append(f"{len(pairs)} pairs in the JSON, --quick runs 1")
    summary = doc.get("summary", {})
    for name in expected_figures():
        s = summary.get(name)
        if s is None:
            errs.append(f"summary.{name} missing")
            continue
        errs += [f"summary.{name}.{k} missing" for k in SUMMARY_KEYS if k not in s]
        positive = not name.startswith("cpu_")  # a short run may see 0 CPU ticks
        for k in ("a_mean", "b_mean"):
            if not finite(s.get(k), positive):
                errs.append(f"summary.{name}.{k} = {s.get(k)!r}, not a finite number")
        if not isinstance(s.get("change_pct"), (int, float)) and not name.startswith("cpu_"):
            errs.append(f"summary.{name}.change_pct = {s.get('change_pct')!r}")
        if s.get("limit_key") and not finite(s.get("limit"), True):
            errs.append(f"summary.{name}.limit = {s.get('limit')!r} (limit {s.get('limit_key')} not measured)")
    for p in pairs:
        for s in SIZES:
            if not finite(p.get("limits", {}).get(f"socketpair_{s}"), True):
                errs.append(f"pair {p.get('pair')}: limits.socketpair_{s} missing")
        for s in RTT_SIZES:
            if not finite(p.get("limits", {}).get(f"socketpair_rtt_{s}"), True):
                errs.append(f"pair {p.get('pair')}: limits.socketpair_rtt_{s} missing")
        for side in ("A", "B"):
            b = p.get(side, {})
            if b.get("errors"):
                errs.append(f"pair {p.get('pair')} {side}: {b['errors']}")
            missing = [n for n in expected_figures() if n not in b.get("figures", {})]
            if missing:
                errs.append(f"pair {p.get('pair')} {side}: figures missing: {missing}")
            if len(b.get("steps", [])) != 2 * len(SIZES) + len(RTT_SIZES):
                errs.append(f"pair {p.get('pair')} {side}: {len(b.get('steps', []))} raw steps")
            if "rx_pkts" not in b.get("device_counters", {}):
                errs.append(f"pair {p.get('pair')} {side}: skiff-vsock counters missing")
    return errs


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    vmm = sys.argv[sys.argv.index("--vmm") + 1] if "--vmm" in sys.argv[2:-1] else "uml"
    exit_if_skipped(vmm, "bench-guest-ab-smoke")
    with tempfile.TemporaryDirectory(prefix="skiff-gab-smoke-") as d:
        out = os.path.join(d, "guest_ab.json")
        argv = [sys.argv[1], "--quick", "--json", out] + sys.argv[2:]
        print("bench-guest-ab-smoke: " + " ".join(argv), flush=True)
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=540)
        print(p.stdout)
        if p.returncode != 0:
            print(f"FAIL: guest_ab exited {p.returncode}")
            return 1
        if "B/A change [95% CI]" not in p.stdout:
            print("FAIL: no table in the output")
            return 1
        try:
            with open(out) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"FAIL: JSON: {e}")
            return 1
    errs = check(doc)
    for e in errs:
        print(f"FAIL: {e}")
    if errs:
        return 1
    print(f"PASS: guest_ab --quick ran end to end; JSON has all {len(expected_figures())} figures "
          f"({doc['config']['comparison']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
