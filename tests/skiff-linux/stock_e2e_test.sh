#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The end-to-end cases with Debian's stock kernels (issue 21, ctest skiff-linux-stock-e2e):
# for each kernel of scripts/stock-kernels.pins (bookworm 6.1, trixie 6.12, sid 7.2), with
# its own vsock and virtio_mmio modules appended to the test initramfs (loaded by the
# guest's /init; the device found through ACPI), tests/uml/e2e/guest_e2e.py --vmm skiff
# runs its full set on skiff's device: streams both ways (64 KiB writes: 6.17 and later
# split such TX packets over several descriptors), 32 connections at once both ways,
# SEQPACKET with message bounds, refused connections both ways, half-close both ways,
# one-shot host senders, a guest reboot with live connections and traffic after it; every
# byte checked, the device counters and the console of each boot. MRG_RXBUF is not
# offered (no stock kernel knows it). The guests boot with noxsave (stock_kernels_test.sh
# says why). One emulated-host boot for all kernels (scripts/test-host.sh); a table of
# every case per kernel at the end.
#
# Usage: stock_e2e_test.sh BUILD_DIR INITRAMFS
#   SKIFF_STOCK_SUITES="sid ..." only these suites' kernels
# Exit 0 pass, 1 fail, 77 skipped (no stock kernel: stock-kernels.sh failed, its reason
# shown), or host_run.sh's 123/124/125.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

if [ "${1:-}" != --inner ]; then
	build=$(cd "$1" && pwd) initrd=$(realpath "$2")
	# shellcheck source=tests/skiff-linux/lib.sh
	. "$repo/tests/skiff-linux/lib.sh"
	skl_stock_prepare stock_e2e_test "$build" "$initrd"
	set +e
	bash "$repo/tests/skiff-linux/host_run.sh" 1500 -- \
		bash "$repo/tests/skiff-linux/stock_e2e_test.sh" --inner "$build" "$w/kernels"
	exit $?
fi

set +e
build=$2 list=$3
[ -s "$list" ] || {
	echo "stock_e2e_test: FAIL: no kernel list at $list (the emulated host shares the machine's root, this tree and the work directory only: a build directory under /tmp outside this tree is not seen)"
	exit 1
}
failed=0
table=$(mktemp /tmp/skiff-stock-e2e.XXXXXX)
while read -r suite rel kernel initrd _; do
	out=$(mktemp /tmp/skiff-stock-e2e-out.XXXXXX)
	t0=$(date +%s)
	# Smaller than skiff's own kernels' run (64 MiB streams, 1 MiB per connection): a
	# distribution kernel under emulation is slower, and the cases are the same.
	SKIFF_GUEST_CMDLINE="noxsave${SKIFF_GUEST_CMDLINE:+ $SKIFF_GUEST_CMDLINE}" \
		python3 "$repo/tests/uml/e2e/guest_e2e.py" --vmm skiff --variant baseline --mrg-rxbuf off \
		--kernel "$kernel" --initrd "$initrd" --skiff "$build/vmm/skiff" \
		--vsock-tool "$build/tests/guest-programs/vsock-tool" --uds-peer "$build/tests/uml/uds-peer" \
		--stream-mib 16 --conn-kib 256 --timeout 300 </dev/null >"$out" 2>&1
	rc=$?
	t=$(($(date +%s) - t0))
	grep -E '^(PASS|FAIL|SKIP) ' "$out" | sed "s/^/$suite $rel: /" >>"$table"
	if [ $rc != 0 ]; then
		failed=1
		echo "stock_e2e_test: FAIL: $suite $rel: guest_e2e.py exit $rc after $t s; its last lines:"
		tail -n 40 "$out" | sed 's/^/  | /'
	else
		echo "stock_e2e_test: $suite $rel: all cases passed, $t s"
	fi
	rm -f "$out"
done <"$list"
echo "stock_e2e_test: every case per kernel:"
sed 's/^/  /' "$table"
[ -s "$table" ] || failed=1
rm -f "$table"
[ $failed = 0 ] && echo "stock_e2e_test: PASS" && exit 0
exit 1
