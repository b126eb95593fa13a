#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Analyser of bench/lib_ab.sh: old and new device library, vsock_bench runs alternated.

Input: the raw table lib_ab.sh writes, one vsock_bench run a line, tab-separated:

    case  pair  side  gbps  cpu_ns_per_kib  ok

case is vsock_bench's --case string (DIR:STREAMS:PAYLOAD:MRG), pair the pair number,
side "old" or "new", ok 1 when the run exited 0 and its JSON said ok. Lines starting
with '#' are comments.

Per case, over the pairs where both runs succeeded and moved data:
  - throughput ratio new/old of each pair; the median of those ratios and a percentile
    bootstrap interval of that median (resampling the pairs, on the log scale, fixed seed:
    the same data give the same interval);
  - CPU ns/KiB of old and new (medians) and the per-pair ratio new/old with the same
    median and interval;
  - verdicts: throughput "better" when the whole interval is above 1, "worse" when it is
    below 1, else "within noise"; CPU the other way round (less CPU per KiB is better).
    The case's verdict is "worse" if either is worse, else "better" if either is better,
    else "within noise". With fewer than MIN_PAIRS pairs there is no interval and the
    verdict is "too few pairs".

Usage: lib_ab.py RAW.tsv [--level 0.95] [--header TEXT] [--md FILE]
Prints the report (text and a Markdown table) on stdout; --md also writes the table.
Exit status 0 when every case had at least one good pair, 1 otherwise, 2 on bad input.
"""
import argparse
import math
import random
import statistics
import sys

MIN_PAIRS = 3
BOOT = 4000  # bootstrap resamples per interval
SEED = 17


def median_ci(values, level=0.95, seed=SEED):
    """Median of positive ratios and a percentile-bootstrap interval of it.

    Resamples the values with replacement BOOT times (random.Random(seed): deterministic),
    takes each resample's median of the logs, and returns exp of the (1-level)/2 and
    (1+level)/2 quantiles of those medians. Returns (median, low, high); low and high are
    None with fewer than MIN_PAIRS values; (None, None, None) with none.
    """
    if not values:
        return None, None, None
    logs = [math.log(v) for v in values]
    med = math.exp(statistics.median(logs))
    if len(logs) < MIN_PAIRS:
        return med, None, None
    rng = random.Random(seed)
    n = len(logs)
    meds = sorted(statistics.median(rng.choices(logs, k=n)) for _ in range(BOOT))
    lo_i = int(math.floor((1 - level) / 2 * (BOOT - 1)))
    hi_i = int(math.ceil((1 + level) / 2 * (BOOT - 1)))
    return med, math.exp(meds[lo_i]), math.exp(meds[hi_i])


def verdict(low, high, higher_is_better=True):
    """'better', 'worse' or 'within noise' for an interval of new/old; None: too few."""
    if low is None or high is None:
        return "too few pairs"
    if low > 1:
        return "better" if higher_is_better else "worse"
    if high < 1:
        return "worse" if higher_is_better else "better"
    return "within noise"


def combine(tput, cpu):
    """The case's verdict from the throughput and the CPU verdicts."""
    if "too few pairs" in (tput, cpu):
        return "too few pairs"
    if "worse" in (tput, cpu):
        return "worse"
    if "better" in (tput, cpu):
        return "better"
    return "within noise"


def read_raw(lines):
    """Parse the raw table: {case: {pair: {side: (gbps, cpu)}}}, cases in first-seen order.

    Failed runs (ok != 1) and runs that moved nothing are recorded as None.
    Raises ValueError on a malformed line.
    """
    cases = {}
    for no, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) != 6 or f[2] not in ("old", "new"):
            raise ValueError(f"line {no}: want case, pair, old|new, gbps, cpu, ok: {line!r}")
        case, pair, side = f[0], int(f[1]), f[2]
        gbps, cpu, ok = float(f[3]), float(f[4]), f[5] == "1"
        good = ok and math.isfinite(gbps) and gbps > 0 and math.isfinite(cpu) and cpu > 0
        cases.setdefault(case, {}).setdefault(pair, {})[side] = (gbps, cpu) if good else None
    return cases


def summarise(cases, level=0.95):
    """One dict per case with the figures and verdicts (see the module's docstring)."""
    rows = []
    for case, pairs in cases.items():
        good = [p for p in pairs.values() if p.get("old") and p.get("new")]
        runs = sum(len(p) for p in pairs.values())
        failed = sum(1 for p in pairs.values() for v in p.values() if v is None)
        r = {"case": case, "pairs": len(good), "runs": runs, "failed": failed}
        if good:
            r["old_gbps"] = statistics.median(p["old"][0] for p in good)
            r["new_gbps"] = statistics.median(p["new"][0] for p in good)
            r["old_cpu"] = statistics.median(p["old"][1] for p in good)
            r["new_cpu"] = statistics.median(p["new"][1] for p in good)
            r["ratio"] = median_ci([p["new"][0] / p["old"][0] for p in good], level)
            r["cpu_ratio"] = median_ci([p["new"][1] / p["old"][1] for p in good], level)
            r["tput_verdict"] = verdict(r["ratio"][1], r["ratio"][2], True)
            r["cpu_verdict"] = verdict(r["cpu_ratio"][1], r["cpu_ratio"][2], False)
            r["verdict"] = combine(r["tput_verdict"], r["cpu_verdict"])
        else:
            r["verdict"] = "failed"
        rows.append(r)
    return rows


def case_name(case):
    """'h2g:8:4096:1' -> 'h2g 8x 4 KiB MRG on' (other strings unchanged)."""
    f = case.split(":")
    if len(f) < 4:
        return case
    pl = int(f[2])
    size = f"{pl >> 10} KiB" if pl >= 1024 and pl % 1024 == 0 else f"{pl} B"
    name = f"{f[0]} {f[1]}x {size} MRG {'on' if f[3] == '1' else 'off'}"
    if len(f) > 4 and f[4] != "0":
        name += f" {f[4]} pumps"
    return name


def fmt_ci(t):
    m, lo, hi = t
    if lo is None:
        return f"{m:.3f}"
    return f"{m:.3f} [{lo:.3f}, {hi:.3f}]"


def markdown(rows, level=0.95):
    """The Markdown table, one row per case."""
    pct = f"{level * 100:g} %"
    out = [
        f"| case | pairs | GB/s old | GB/s new | ratio new/old [{pct}] | CPU ns/KiB old | "
        f"CPU ns/KiB new | CPU new/old [{pct}] | verdict |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        name = case_name(r["case"])
        if r["verdict"] == "failed":
            out.append(f"| {name} | 0 | - | - | - | - | - | - | failed ({r['failed']} of {r['runs']} runs) |")
            continue
        v = r["verdict"]
        if v not in ("within noise", "too few pairs"):
            v = f"**{v}** (GB/s {r['tput_verdict']}, CPU {r['cpu_verdict']})"
        if r["failed"]:
            v += f"; {r['failed']} run(s) failed"
        out.append(
            f"| {name} | {r['pairs']} | {r['old_gbps']:.3f} | {r['new_gbps']:.3f} | "
            f"{fmt_ci(r['ratio'])} | {r['old_cpu']:.0f} | {r['new_cpu']:.0f} | "
            f"{fmt_ci(r['cpu_ratio'])} | {v} |"
        )
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", help="raw table written by lib_ab.sh ('-': stdin)")
    ap.add_argument("--level", type=float, default=0.95, help="interval level (0.95)")
    ap.add_argument("--header", default="", help="text printed above the table")
    ap.add_argument("--md", help="also write the Markdown table to this file")
    a = ap.parse_args(argv)
    if not 0.5 <= a.level < 1:
        ap.error("--level must be in [0.5, 1)")
    try:
        with (sys.stdin if a.raw == "-" else open(a.raw)) as f:
            cases = read_raw(f)
    except (OSError, ValueError) as e:
        print(f"lib_ab.py: {e}", file=sys.stderr)
        return 2
    if not cases:
        print("lib_ab.py: no runs in the input", file=sys.stderr)
        return 2
    rows = summarise(cases, a.level)
    table = markdown(rows, a.level)
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    n_int = 2 * sum(1 for r in rows if r["verdict"] not in ("failed", "too few pairs"))
    if a.header:
        print(a.header.rstrip("\n"))
        print()
    print(table)
    print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if n_int:
        print(
            f"({n_int} intervals at {a.level * 100:g} %: about {n_int * (1 - a.level):.1f} "
            "of them exclude 1 by chance alone when nothing changed; an old-vs-old run shows "
            "this machine's noise floor)"
        )
    if a.md:
        with open(a.md, "w") as f:
            if a.header:
                f.write(a.header.rstrip("\n") + "\n\n")
            f.write(table)
    return 1 if any(r["verdict"] == "failed" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
