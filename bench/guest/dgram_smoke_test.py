#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ctest smoke run of the datagram benchmark (labels guest-uml, bench).

Usage: dgram_smoke_test.py DGRAM_BENCH [extra dgram_bench arguments...]
Runs `DGRAM_BENCH --quick --json FILE` (4 KiB, 1 sender, both directions; vsock and UDP in
the patched UML guest, UDP in the baseline one; the AF_UNIX limit) and checks that it exited
0 and that the JSON holds, for both directions: a throughput above zero for vsock, for UDP
guest to host (both kernels) and for the limit; a loss in [0, 1] for every path; guest CPU
per KiB for vsock both ways and UDP guest to host; and no step with a datagram of the wrong
length or order. UDP host to guest may move nothing: its 3-fragment datagrams rarely
reassemble under the host's flood (bench/guest/README.md), a measurement, not a failure.
It judges no figure's size.
Exit status 0 pass, 1 fail, 77 skipped (dgram_bench skipped: SKIFF_SKIP_GUESTS, or no root
or /dev/net/tun for the tap device).
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    fails = []
    with tempfile.TemporaryDirectory(prefix="dgs-") as d:
        out = os.path.join(d, "r.json")
        p = subprocess.Popen([sys.argv[1], "--quick", "--json", out] + sys.argv[2:], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            so, se = p.communicate(timeout=280)
        except subprocess.TimeoutExpired:
            p.terminate()  # SIGTERM: dgram_bench removes its tap device and stops its guest
            try:
                so, se = p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                so, se = p.communicate()
            fails.append("dgram_bench ran past 280 s")
        print(so[-4000:], se[-2000:], sep="\n")
        if p.returncode == 77:
            return 77
        if p.returncode:
            fails.append(f"dgram_bench exited {p.returncode}")
        if not os.path.exists(out):
            fails.append("no JSON written")
        else:
            j = json.load(open(out))
            if j.get("errors"):
                fails.append(f"errors: {j['errors']}")
            rows = {(x["dir"], x["size"], x["senders"]): x for x in j.get("rows", [])}
            for direction in ("g2h", "h2g"):
                row = rows.get((direction, 4096, 1))
                if not row:
                    fails.append(f"no {direction} 4 KiB row")
                    continue
                if not (row.get("limit_mbps") or 0) > 0:
                    fails.append(f"{direction}: no limit")
                for path in ("vsock", "udp", "udp_baseline"):
                    f = row.get(path, {})
                    moved = path == "vsock" or direction == "g2h"
                    if f.get("n") != 1:
                        fails.append(f"{direction} {path}: {f.get('n')} measured steps, want 1")
                    if moved and not (f.get("mbps") or 0) > 0:
                        fails.append(f"{direction} {path}: no throughput ({f})")
                    if f.get("loss") is None or not 0 <= f["loss"] <= 1:
                        fails.append(f"{direction} {path}: loss {f.get('loss')}")
                    if moved and path != "udp_baseline" and not (f.get("guest_cpu_ns_per_kib") or 0) > 0:
                        fails.append(f"{direction} {path}: no guest CPU figure")
            for variant, steps in j.get("steps", {}).items():
                for st in steps:
                    fig = st.get("figures") or {}
                    if st.get("error") or fig.get("bad") or fig.get("reorder"):
                        fails.append(f"{variant} {st['proto']} {st['dir']}: {st.get('error')} {fig}")
    for f in fails:
        print(f"dgram_smoke_test: FAIL: {f}")
    print(f"dgram_smoke_test: {'FAIL' if fails else 'pass'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
