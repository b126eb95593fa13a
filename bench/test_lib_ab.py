#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of bench/lib_ab.sh and its analyser lib_ab.py.

  test_lib_ab.py              the analyser's statistics on synthetic data whose answer is
                              known (no benchmark runs; ctest bench_lib_ab_stats)
  test_lib_ab.py smoke BIN    lib_ab.sh --smoke with BIN as both the old and the new
                              vsock_bench: it must print a well-formed table with a finite
                              ratio for every case (ctest bench_lib_ab_smoke)
  test_lib_ab.py build        lib_ab.sh --smoke HEAD HEAD: exports and builds HEAD, same
                              checks (ctest bench_lib_ab_build; exit 77 outside a git checkout)
"""
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lib_ab  # noqa: E402


def raw_lines(case, old, new):
    """Raw-table lines for one case from per-pair (gbps, cpu) lists of old and new."""
    out = []
    for p, (o, n) in enumerate(zip(old, new)):
        out.append(f"{case}\t{p}\told\t{o[0]}\t{o[1]}\t1\n")
        out.append(f"{case}\t{p}\tnew\t{n[0]}\t{n[1]}\t1\n")
    return out


def noisy(rng, n, gbps, cpu, spread=0.15):
    """n runs with multiplicative noise of +-spread around (gbps, cpu)."""
    return [(gbps * rng.uniform(1 - spread, 1 + spread), cpu * rng.uniform(1 - spread, 1 + spread))
            for _ in range(n)]


def row_of(lines, case):
    return {r["case"]: r for r in lib_ab.summarise(lib_ab.read_raw(lines))}[case]


class Stats(unittest.TestCase):
    def test_twice_as_fast_is_better(self):
        rng = random.Random(1)
        old = noisy(rng, 8, 2.0, 500)
        new = [(g * 2, c / 2) for g, c in noisy(rng, 8, 2.0, 500)]
        r = row_of(raw_lines("g2h:1:4096:1", old, new), "g2h:1:4096:1")
        self.assertEqual(r["tput_verdict"], "better")
        self.assertEqual(r["cpu_verdict"], "better")
        self.assertEqual(r["verdict"], "better")
        self.assertGreater(r["ratio"][1], 1.5)
        self.assertLess(r["ratio"][2], 2.7)

    def test_half_speed_is_worse(self):
        rng = random.Random(2)
        old = noisy(rng, 8, 2.0, 500)
        new = [(g / 2, c) for g, c in noisy(rng, 8, 2.0, 500)]
        r = row_of(raw_lines("h2g:8:256:0", old, new), "h2g:8:256:0")
        self.assertEqual(r["tput_verdict"], "worse")
        self.assertEqual(r["verdict"], "worse")

    def test_more_cpu_alone_is_worse(self):
        rng = random.Random(3)
        old = noisy(rng, 8, 2.0, 500, 0.05)
        new = [(g, c * 1.5) for g, c in noisy(rng, 8, 2.0, 500, 0.05)]
        r = row_of(raw_lines("c", old, new), "c")
        self.assertEqual(r["tput_verdict"], "within noise")
        self.assertEqual(r["cpu_verdict"], "worse")
        self.assertEqual(r["verdict"], "worse")

    def test_equal_data_is_within_noise(self):
        # New and old runs drawn from one spread, the pairs' ratios symmetric about 1 on the
        # log scale (r and 1/r): the median ratio is 1 and the verdict "within noise".
        rng = random.Random(4)
        old, new = [], []
        for f in (0.8, 0.9, 0.95, 1.0):
            g, c = rng.uniform(1, 3), rng.uniform(300, 900)
            old += [(g, c), (g * f, c / f)]
            new += [(g * f, c / f), (g, c)]
        r = row_of(raw_lines("c", old, new), "c")
        self.assertAlmostEqual(r["ratio"][0], 1.0)
        self.assertAlmostEqual(r["cpu_ratio"][0], 1.0)
        self.assertTrue(r["ratio"][1] < 1 < r["ratio"][2])
        self.assertEqual(r["verdict"], "within noise")

    def test_calibration(self):
        # 300 old-vs-old data sets of 8 pairs (+-15 % uniform noise per run): the 95 %
        # interval must exclude 1 in about 5 % of them (the bootstrap of a median of 8
        # undercovers a little: about 6 %), never in 10 %; and a 1.5x change must be seen
        # in nearly all.
        rng = random.Random(6)
        false_flags = missed = 0
        for t in range(300):
            same = [rng.uniform(0.85, 1.15) / rng.uniform(0.85, 1.15) for _ in range(8)]
            _, lo, hi = lib_ab.median_ci(same, seed=t)
            false_flags += lo > 1 or hi < 1
            faster = [1.5 * rng.uniform(0.85, 1.15) / rng.uniform(0.85, 1.15) for _ in range(8)]
            missed += lib_ab.verdict(*lib_ab.median_ci(faster, seed=t)[1:]) != "better"
        self.assertLess(false_flags / 300, 0.10)
        self.assertGreater(false_flags, 0)  # an interval that never excludes 1 tests nothing
        self.assertLess(missed / 300, 0.02)

    def test_identical_runs_collapse_on_one(self):
        runs = [(3.0, 400.0)] * 5
        r = row_of(raw_lines("c", runs, runs), "c")
        self.assertEqual(r["ratio"], (1.0, 1.0, 1.0))
        self.assertEqual(r["verdict"], "within noise")

    def test_median_not_mean(self):
        # One wild pair (10x) among ratios of 1: the median stays 1.
        m, lo, hi = lib_ab.median_ci([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0])
        self.assertEqual(m, 1.0)
        self.assertEqual(lo, 1.0)

    def test_interval_is_deterministic_and_contains_median(self):
        vals = [0.9, 1.1, 1.05, 0.97, 1.2, 0.85, 1.0, 1.02]
        a = lib_ab.median_ci(vals)
        self.assertEqual(a, lib_ab.median_ci(vals))
        self.assertTrue(a[1] <= a[0] <= a[2])
        self.assertTrue(min(vals) <= a[1] and a[2] <= max(vals))

    def test_too_few_pairs(self):
        r = row_of(raw_lines("c", [(1, 1), (1, 1)], [(2, 1), (2, 1)]), "c")
        self.assertEqual(r["verdict"], "too few pairs")
        self.assertEqual(r["ratio"][0], 2.0)
        self.assertIsNone(r["ratio"][1])

    def test_failed_runs_drop_their_pair(self):
        lines = raw_lines("c", [(1, 100)] * 4, [(1, 100)] * 4)
        lines.append("c\t4\told\t0\t0\t0\n")  # a failed run
        lines.append("c\t4\tnew\t5\t100\t1\n")
        lines.append("c\t5\tnew\t9\t100\t1\n")  # its old run never happened
        r = row_of(lines, "c")
        self.assertEqual(r["pairs"], 4)
        self.assertEqual(r["failed"], 1)
        self.assertEqual(r["ratio"], (1.0, 1.0, 1.0))
        failed_only = row_of(["d\t0\told\t0\t0\t0\n", "d\t0\tnew\t1\t1\t1\n"], "d")
        self.assertEqual(failed_only["verdict"], "failed")

    def test_malformed_input(self):
        with self.assertRaises(ValueError):
            lib_ab.read_raw(["c\t0\tmid\t1\t1\t1\n"])
        with self.assertRaises(ValueError):
            lib_ab.read_raw(["c\t0\told\t1\n"])

    def test_markdown_shape(self):
        rng = random.Random(5)
        lines = raw_lines("g2h:8:65536:0", noisy(rng, 4, 1, 1), noisy(rng, 4, 1, 1))
        lines += raw_lines("h2g:1:256:1", noisy(rng, 4, 1, 1), noisy(rng, 4, 3, 1))
        md = lib_ab.markdown(lib_ab.summarise(lib_ab.read_raw(lines)))
        check_table(self, md, 2)
        self.assertIn("| g2h 8x 64 KiB MRG off |", md)
        self.assertIn("| h2g 1x 256 B MRG on |", md)
        self.assertIn("**better**", md)


def check_table(t, text, ncases):
    """The Markdown table in text: header, separator, ncases rows of 9 cells, finite ratios."""
    rows = [ln for ln in text.splitlines() if ln.startswith("|")]
    t.assertEqual(len(rows), ncases + 2, text)
    t.assertIn("ratio new/old", rows[0])
    t.assertTrue(re.fullmatch(r"(\| -+:? )+\|", rows[1]), rows[1])
    for ln in rows[2:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        t.assertEqual(len(cells), 9, ln)
        t.assertGreaterEqual(int(cells[1]), 1, ln)
        for i in (2, 3, 5, 6):
            t.assertTrue(math.isfinite(float(cells[i])) and float(cells[i]) > 0, ln)
        ratio = float(cells[4].split()[0])
        t.assertTrue(math.isfinite(ratio) and ratio > 0, ln)
        t.assertTrue(math.isfinite(float(cells[7].split()[0])), ln)


class Smoke(unittest.TestCase):
    argv = []

    def test_smoke(self):
        with tempfile.TemporaryDirectory() as d:
            md = os.path.join(d, "t.md")
            p = subprocess.run([os.path.join(HERE, "lib_ab.sh"), "--smoke", "--md", md] + self.argv,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=500)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            check_table(self, p.stdout, 2)
            self.assertIn("SMOKE RUN", p.stdout)
            self.assertIn("-core machine", p.stdout)
            with open(md) as f:
                check_table(self, f.read(), 2)


def main():
    args = sys.argv[1:]
    if args[:1] == ["smoke"] and len(args) == 2:
        Smoke.argv = ["--old-bin", args[1], "--new-bin", args[1]]
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(Smoke)
    elif args == ["build"]:
        if subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True).returncode:
            print("not in a git checkout: skipped")
            return 77
        Smoke.argv = ["HEAD", "HEAD"]
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(Smoke)
    elif not args:
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(Stats)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    ok = unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
