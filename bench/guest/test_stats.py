#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Unit test of guest_ab.py's statistics: the Student t quantile against published table
values, and the paired log-ratio interval against a hand-computed case."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest_ab  # noqa: E402

# t(0.975, df) from standard tables (4 significant digits).
TABLE = {1: 12.71, 2: 4.303, 3: 3.182, 5: 2.571, 7: 2.365, 10: 2.228, 15: 2.131, 30: 2.042, 100: 1.984}


def main():
    errs = []
    for df, want in TABLE.items():
        got = guest_ab.t_quantile(0.975, df)
        if abs(got - want) > 0.0015 * want:
            errs.append(f"t(0.975, {df}) = {got:.4f}, table says {want}")
    # Two pairs: ratios 2 and 1/2. Geometric mean 1; log sd = ln 2 * sqrt(2);
    # half width = 12.706 * ln2*sqrt(2) / sqrt(2) = 12.706 ln 2.
    m, lo, hi, r = guest_ab.paired_ratio_ci([1.0, 2.0], [2.0, 1.0])
    half = guest_ab.t_quantile(0.975, 1) * math.log(2)
    if r != [2.0, 0.5] or abs(m - 1) > 1e-12 or abs(lo - math.exp(-half)) > 1e-9 or abs(hi - math.exp(half)) > 1e-9:
        errs.append(f"paired_ratio_ci([1,2],[2,1]) = {m, lo, hi, r}")
    # Identical pairs: no spread, the interval collapses on the ratio.
    m, lo, hi, _ = guest_ab.paired_ratio_ci([10, 20, 30], [11, 22, 33])
    if not all(abs(x - 1.1) < 1e-12 for x in (m, lo, hi)):
        errs.append(f"constant ratio 1.1 gave {m, lo, hi}")
    # One pair: a ratio, no interval; missing or zero values are left out.
    m, lo, hi, r = guest_ab.paired_ratio_ci([2, None, 0], [3, 1, 1])
    if r != [1.5] or abs(m - 1.5) > 1e-12 or lo is not None or hi is not None:
        errs.append(f"single valid pair: expected ratio 1.5 without interval, got {m, lo, hi, r}")
    for e in errs:
        print("FAIL:", e)
    print("PASS" if not errs else f"{len(errs)} failure(s)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
