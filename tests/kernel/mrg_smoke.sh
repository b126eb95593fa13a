#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Manual runtime check of a guest kernel against skiff-vsock (not a ctest: the
# guest-uml label's e2e driver, tests/uml/e2e/guest_e2e.py, is the registered one).
# Boots a user-mode Linux KERNEL with virtio_uml against skiff-vsock offering
# (--mrg-rxbuf on) or not (off) mergeable RX buffers, and moves SIZE bytes:
#   1. one guest-initiated connection, both directions at once: the guest sends
#      pattern 3 and checks every byte of pattern 7 from the host; the host
#      (uds-peer) sends pattern 7 and reports the FNV-1a of what it received;
#   2. a second connection, host to guest only (pattern 8).
# PASS when both guest runs and both host peers say ok and the FNV-1a sums of
# each direction agree. Prints the device's counters (rx_bytes / rx_pkts is the
# mean host-to-guest packet size: about 3.6 KB without mergeable buffers).
#
# Usage: mrg_smoke.sh KERNEL on|off [SIZE] [BUILD_DIR]
#   SIZE default 16M; BUILD_DIR (default <repo>/build) must have the targets
#   skiff-vsock, vsock-tool and uds-peer built.
# Exit status: 0 PASS, 1 FAIL.
set -u
kernel=$1 mrg=$2 size=${3:-16M}
repo=$(cd "$(dirname "$0")/../.." && pwd)
b=${4:-$repo/build}
w=$(mktemp -d "${TMPDIR:-/tmp}/mrg-smoke.XXXXXX")
vt=$b/tests/guest-programs/vsock-tool
# The two cases of the header, run by the guest's /init one after the other.
script="vsock-tool connect 2:5001 --send $size --seed 3 --recv $size --peer-seed 7 --shut-wr --timeout 60 --verbose && vsock-tool connect 2:5003 --recv $size --peer-seed 8 --timeout 60 --verbose"
$repo/scripts/build-initramfs.sh -o $w/initrd.cpio.gz --bin $vt --run "$script" >/dev/null || exit 1
$b/vhost_user/skiff-vsock --socket $w/vu.sock --cid 3 --uds $w/v.sock --mrg-rxbuf $mrg > $w/skiff.log 2>&1 &
sv=$!
for i in $(seq 100); do [ -S $w/vu.sock ] && break; sleep 0.1; done
$b/tests/uml/uds-peer listen $w/v.sock 5001 --recv --send $size --seed 7 --timeout 60 > $w/peer-g2h.log 2>&1 &
pg=$!
$b/tests/uml/uds-peer listen $w/v.sock 5003 --send $size --seed 8 --timeout 60 > $w/peer-2.log 2>&1 &
pg2=$!
t0=$(date +%s.%N)
$repo/scripts/guest-run.sh uml --kernel $kernel --initrd $w/initrd.cpio.gz --vsock $w/vu.sock --timeout 600 --log $w/console.log > /dev/null 2>&1 &
gr=$!
wait $gr; grc=$?
t1=$(date +%s.%N)
wait $pg $pg2
kill -TERM $sv; wait $sv
echo "== guest rc=$grc, $(echo "$t1 - $t0" | bc) s, workdir $w"
grep -E "VSOCK-TOOL |VSOCK-CONN|SKIFF-RESULT|virtio_vsock|rx:|BUG|WARN|Oops|panic" $w/console.log
echo "-- host:"; cat $w/peer-g2h.log $w/peer-2.log
echo "-- skiff:"; cat $w/skiff.log
# Verdict: every guest line ok, and the checksums match across the two sides.
python3 - "$w" <<'PY'
import sys
w = sys.argv[1]
def kv(l): return dict(t.split("=", 1) for t in l.split() if "=" in t)
g = [kv(l) for l in open(f"{w}/console.log") if l.startswith("VSOCK-TOOL ")]
h = [kv(l) for f in ("peer-g2h.log", "peer-2.log") for l in open(f"{w}/{f}") if l.startswith("UDS-PEER ")]
ok = len(g) == 2 and len(h) == 2 and all(x.get("status") == "ok" for x in g + h)
ok = ok and g[0]["send_fnv"] == h[0]["recv_fnv"] and g[0]["recv_fnv"] == h[0]["send_fnv"]
ok = ok and g[1]["recv_fnv"] == h[1]["send_fnv"] and g[1]["received"] == h[1]["sent"]
print("VERDICT", "PASS" if ok else "FAIL",
      "g2h_bytes=%s h2g_bytes=%s" % (g[0].get("sent") if g else "?", int(g[0].get("received", 0)) + int(g[1].get("received", 0)) if len(g) > 1 else "?"))
sys.exit(0 if ok else 1)
PY
