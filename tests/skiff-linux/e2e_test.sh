#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The end-to-end cases on skiff's own path (ctest label skiff-linux): on a host with
# hardware-virtualization KVM, emulated where the machine has none (scripts/test-host.sh),
# tests/uml/e2e/guest_e2e.py --vmm skiff boots the x86-64 guest under skiff (its in-process
# virtio-mmio vsock device, seccomp kill) with the test initramfs and runs the full set:
# the negotiated features, streams both ways, 32 connections at once both ways, SEQPACKET
# with message bounds, refused connections both ways, half-close both ways, one-shot host
# senders, a guest reboot with live connections and traffic after it; every byte checked,
# the device counters of each boot (SKIFF_STATS) and the guest console too (guest_e2e.py's
# header). The test host runs only the driver, its host peers and the guest; the initramfs
# is the build's (target skiff-initramfs).
#
# Usage: e2e_test.sh BUILD_DIR VARIANT MRG [guest_e2e.py options...]
#   VARIANT patched|baseline, MRG on|off (skiff's mrg-rxbuf=)
# Exit 0 pass, 1 fail, 77 skipped (no VARIANT x86_64 kernel: run scripts/build-kernels.sh;
# or SKIFF_SKIP_GUESTS), or host_run.sh's 123/124/125 (the emulated host died, timed out,
# could not start).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

[ $# -ge 3 ] || {
	sed -n '15,16p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
build=$(cd "$1" && pwd) variant=$2 mrg=$3
shift 3
kernel=$(bash "$repo/scripts/build-kernels.sh" --print-path "$variant" x86_64 2>/dev/null) || true
initrd=$build/tests/guest-programs/initramfs.cpio.gz
[ -s "$initrd" ] || {
	echo "e2e_test: FAIL: no initramfs $initrd (build target skiff-initramfs)"
	exit 1
}
# The guests' 300 s: at load average 15-17 one run took 228 s (both boots and all cases),
# where one at load 5 takes 35-40 s.
exec bash "$repo/tests/skiff-linux/host_run.sh" 420 --kernel "$variant" -- \
	python3 "$repo/tests/uml/e2e/guest_e2e.py" --vmm skiff --variant "$variant" --mrg-rxbuf "$mrg" \
	--kernel "$kernel" --skiff "$build/vmm/skiff" --initrd "$initrd" --vsock-tool "$build/tests/guest-programs/vsock-tool" \
	--uds-peer "$build/tests/uml/uds-peer" --timeout 300 "$@"
