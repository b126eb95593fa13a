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
failed=0
fail() {
	echo "transfer_test: FAIL: $case: $*"
	failed=1
}

# run_case VARIANT MRG: one boot, both directions at once.
run_case() {
	local variant=$1 mrg=$2 kernel d uds t0 t1 rc guest feat
	failed_before=$failed
	failed=0
	case="$variant kernel, mrg-rxbuf=$mrg"
	kernel=$(bash "$repo/scripts/build-kernels.sh" --print-path "$variant" x86_64)
	d=$(mktemp -d /tmp/skiff-linux.XXXXXX)
	uds=$d/v.sock
	t0=$(date +%s.%N)
	"$tool" listen "uds:${uds}_5000" --recv "${mib}M" --peer-seed 33 --timeout 120 >"$d/h-recv" 2>&1 &
	"$tool" listen "uds:${uds}_5001" --send "${mib}M" --seed 22 --timeout 120 >"$d/h-send" 2>&1 &
	for _ in $(seq 100); do
		grep -q LISTENING "$d/h-recv" && grep -q LISTENING "$d/h-send" && break
		sleep 0.1
	done
	guest="for f in /sys/bus/virtio/devices/*; do
	[ \"\$(cat \$f/device)\" = 0x0013 ] && echo VSOCK-FEATURES \$(cat \$f/features)
done
vsock-tool connect 2:5000 --send ${mib}M --seed 33 --connect-timeout 30000 --timeout 100 &
vsock-tool connect 2:5001 --recv ${mib}M --peer-seed 22 --connect-timeout 30000 --timeout 100
b=\$?
wait \$!
echo SKIFF-RESULT rc=\$((\$? + b))"
	rc=0
	SKIFF_STATS=$d/stats timeout -k 5 150 "$skiff" run --kernel "$kernel" --initrd "$initrd" \
		--mem 256M --console "file:$d/console" \
		--cmdline "console=ttyS0 quiet reboot=k panic=-1 no_timer_check skiff.run64=$(printf '%s' "$guest" | base64 -w0)" \
		--vsock "cid=3,uds=$uds,mrg-rxbuf=$mrg" 2>"$d/skiff" || rc=$?
	# The host listeners finish with the guest's data; 10 s after the guest, they are killed.
	for _ in $(seq 50); do
		[ -z "$(jobs -pr)" ] && break
		sleep 0.2
	done
	# shellcheck disable=SC2046 # one word per job
	kill $(jobs -pr) 2>/dev/null
	wait
	t1=$(date +%s.%N)
	tr -d '\r' <"$d/console" >"$d/console.txt" 2>/dev/null
	grep -q 'VM ended (reboot)' "$d/skiff" || fail "skiff exit $rc: $(tail -n 2 "$d/skiff" | tr '\n' ' ')"
	grep -qx 'SKIFF-RESULT rc=0' "$d/console.txt" || fail "guest result: $(grep SKIFF-RESULT "$d/console.txt" || echo none)"
	grep -E 'Oops|BUG|WARNING|[Pp]anic|Call Trace' "$d/console.txt" | sed 's/^/  console: /' |
		grep . && fail "the guest console shows the lines above"
	# Both ends of each direction agree on the data (FNV-1a of the stream, all ok lines).
	fnv() { sed -n "/^VSOCK-TOOL status=ok /s/.* $2=\([^ ]*\).*/\1/p" "$1" | grep -vx 0000000000000000 | head -n1; }
	[ -n "$(fnv "$d/h-recv" recv_fnv)" ] && [ "$(fnv "$d/h-recv" recv_fnv)" = "$(fnv "$d/console.txt" send_fnv)" ] ||
		fail "guest to host: $(grep -h 'VSOCK-TOOL status' "$d/h-recv" || echo 'no host result')"
	[ -n "$(fnv "$d/h-send" send_fnv)" ] && [ "$(fnv "$d/h-send" send_fnv)" = "$(fnv "$d/console.txt" recv_fnv)" ] ||
		fail "host to guest: $(grep -h 'VSOCK-TOOL status' "$d/h-send" || echo 'no host result')"
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
	if [ $failed = 1 ]; then
		echo "transfer_test: FAIL: $case: last console lines:"
		grep -v '^$' "$d/console.txt" | tail -n 15 | sed 's/^/  | /'
		sed 's/^/  skiff: /' "$d/skiff"
	fi
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
