#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# skiff boots Linux guests with user space (ctest label skiff-linux): on a host with
# hardware-virtualization KVM, emulated where the machine has none (scripts/test-host.sh),
# skiff runs the x86-64 guest with the test initramfs and its virtio-mmio vsock device, and
# the guest moves MIB MiB each way, every byte checked by vsock-tool on both sides:
#   patched kernel, --vsock ...,mrg-rxbuf=on  (VIRTIO_VSOCK_F_MRG_RXBUF must be negotiated)
#   baseline kernel, --vsock ...,mrg-rxbuf=off (must not be)
# The guest connects to two host listeners (<uds>_5000: the guest sends, <uds>_5001: the
# host sends), so no side waits for the other to listen. Its connects wait up to 30 s, not
# the kernel's 2 s: seen once in 5 runs in the emulated host under load, both connects were
# answered 3.07 s after they started, one of them too late (ETIMEDOUT). Most likely the
# emulation stalling the guest; not proven to be that rather than a slow device answer. skiff runs with its seccomp filter
# in the default "kill" mode. A case fails on a byte or length mismatch, a missing result,
# a guest console with Oops, BUG, WARNING or a panic, device counters that show no traffic,
# or the wrong feature set; each case says its wall time.
#
# Usage: transfer_test.sh BUILD_DIR INITRAMFS [MIB]   (MIB default 16)
# Exit 0 pass, 1 fail, 77 skipped (guest kernels not built: run scripts/build-kernels.sh),
# or test-host.sh's 123/124/125 (the emulated host died, timed out, could not start).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

if [ "${1:-}" != --inner ]; then
	build=$(cd "$1" && pwd) initrd=$(realpath "$2") mib=${3:-16}
	for v in patched baseline; do
		if ! bash "$repo/scripts/build-kernels.sh" --print-path "$v" x86_64 >/dev/null 2>&1; then
			echo "transfer_test: SKIP: no $v x86_64 kernel; run scripts/build-kernels.sh"
			exit 77
		fi
	done
	[ -s "$initrd" ] || {
		echo "transfer_test: FAIL: no initramfs $initrd (build target skiff-initramfs)"
		exit 1
	}
	# Nothing is written outside /tmp (tmpfs in the emulated host): the work directory
	# of test-host.sh is an empty one of our own.
	w=$(mktemp -d "$build/skiff-linux.XXXXXX")
	trap 'rm -rf "$w"' EXIT
	cd "$w"
	set +e
	bash "$repo/scripts/test-host.sh" --work "$w" --timeout 400 -- \
		bash "$repo/tests/skiff-linux/transfer_test.sh" --inner "$build" "$initrd" "$mib"
	exit $?
fi

set +e
build=$2 initrd=$3 mib=$4
skiff=$build/vmm/skiff
tool=$build/tests/guest-programs/vsock-tool
# shellcheck source=tests/skiff-linux/lib.sh
. "$repo/tests/skiff-linux/lib.sh"
failed=0
fail() {
	echo "transfer_test: FAIL: $case: $*"
	failed=1
}

# run_case VARIANT MRG: one boot, both directions at once.
run_case() {
	local variant=$1 mrg=$2 kernel d t0 t1 rc guest feat
	failed_before=$failed
	failed=0
	case="$variant kernel, mrg-rxbuf=$mrg"
	kernel=$(bash "$repo/scripts/build-kernels.sh" --print-path "$variant" x86_64)
	d=$(mktemp -d /tmp/skiff-linux.XXXXXX)
	t0=$(date +%s.%N)
	skl_listen "$d" "$mib" 120
	guest="for f in /sys/bus/virtio/devices/*; do
	[ \"\$(cat \$f/device)\" = 0x0013 ] && echo VSOCK-FEATURES \$(cat \$f/features)
done
$(skl_guest_transfer "$mib")"
	rc=0
	SKIFF_STATS=$d/stats timeout -k 5 150 "$skiff" run --kernel "$kernel" --initrd "$initrd" \
		--mem 256M --console "file:$d/console" \
		--cmdline "console=ttyS0 quiet reboot=k panic=-1 no_timer_check skiff.run64=$(printf '%s' "$guest" | base64 -w0)" \
		--vsock "cid=3,uds=$d/v.sock,mrg-rxbuf=$mrg" 2>"$d/skiff" || rc=$?
	skl_reap
	t1=$(date +%s.%N)
	tr -d '\r' <"$d/console" >"$d/console.txt" 2>/dev/null
	skl_check "$d" "$rc"
	# The features the guest's driver negotiated, as sysfs shows them (one 0/1 per bit).
	feat=$(sed -n 's/^VSOCK-FEATURES //p' "$d/console.txt" | head -n1)
	if [ -z "$feat" ]; then
		fail "the guest shows no virtio-vsock device"
	elif [ "${feat:4:1}" != "$([ "$mrg" = on ] && echo 1 || echo 0)" ]; then
		fail "negotiated features $feat: VIRTIO_VSOCK_F_MRG_RXBUF (bit 4) not as offered (mrg-rxbuf=$mrg)"
	fi
	grep -q '^vsock_rx_pkts=[1-9]' "$d/stats" && grep -q '^vsock_tx_pkts=[1-9]' "$d/stats" ||
		fail "device counters show no traffic: $(grep vsock_ "$d/stats" | tr '\n' ' ')"
	printf 'transfer_test: %s: %s MiB each way, features %s, %.1f s wall (boot to power-off; emulation speed if emulated)\n' \
		"$case" "$mib" "$feat" "$(echo "$t1 - $t0" | bc)"
	[ $failed = 1 ] && skl_show_failure "$d"
	rm -rf "$d"
	[ "$failed_before" = 0 ] || failed=1
}

bash "$repo/scripts/machine-info.sh" --kvm | grep -qx hardware || {
	echo "transfer_test: FAIL: /dev/kvm here is not hardware virtualization"
	exit 1
}
run_case patched on
run_case baseline off
[ $failed = 0 ] && echo "transfer_test: PASS" && exit 0
exit 1
