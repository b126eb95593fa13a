#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Debian's stock kernels on skiff (issue 21, ctest skiff-linux-stock-kernels): for each
# kernel of scripts/stock-kernels.pins (bookworm, trixie, sid), skiff boots it with the test
# initramfs plus that kernel's vsock and virtio_mmio modules (stock-kernels.sh), which the
# guest's /init loads first. None of these kernels sets CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES
# and skiff puts no virtio_mmio.device= on the command line: the guest must find the vsock
# device in the ACPI DSDT (LNRO0005). Then it moves MIB MiB each way, every byte checked by
# vsock-tool on both sides (lib.sh). A case fails when the command line holds
# virtio_mmio.device=, when the guest's virtio-vsock device is not the child of the ACPI
# platform device LNRO0005:00 or there is not exactly one, on a data mismatch, a missing
# result, a console with Oops, BUG, WARNING or a panic, or a module that did not load, or
# when /proc/interrupts does not show the device on IO-APIC pin 5, edge. Last, skiff's own
# patched kernel (ACPI and CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES both) the same way: exactly
# one device, the ACPI one, since skiff adds virtio_mmio.device= only with acpi=off. Each
# case prints what the kernel logged about the device (dmesg lines with virtio, vsock or
# LNRO) and its wall time. One emulated-host boot for all kernels (scripts/test-host.sh).
#
# The guests boot with noxsave: in the emulated host, CPUID leaf 0xd's XSAVE size does not
# follow the guest's XCR0 (0xd.0 EBX stays 576 with AVX enabled; most likely QEMU TCG's
# nested SVM does not intercept XSETBV, so the host's KVM never recomputes it), 6.12 warns
# "XSAVE consistency problem" and 7.2 then dereferences NULL in fpstate_reset() and panics.
#
# Usage: stock_kernels_test.sh BUILD_DIR INITRAMFS [MIB]   (MIB default 4)
#   SKIFF_STOCK_SUITES="sid ..." only these suites' kernels (and skiff's own)
#   SKIFF_STOCK_REPEAT=N  every kernel N times (hunting a rare failure; the time limit grows with N)
# Exit 0 pass, 1 fail, 77 skipped (no stock kernel: stock-kernels.sh failed; its reason is
# shown), or test-host.sh's 123/124/125.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

if [ "${1:-}" != --inner ]; then
	build=$(cd "$1" && pwd) initrd=$(realpath "$2") mib=${3:-4}
	# shellcheck source=tests/skiff-linux/lib.sh
	. "$repo/tests/skiff-linux/lib.sh"
	skl_stock_prepare stock_kernels_test "$build" "$initrd"
	# skiff's own patched kernel has ACPI and CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES: it must
	# get the device once, from the DSDT (skiff adds no virtio_mmio.device= without
	# acpi=off). Skipped when scripts/build-kernels.sh has not built it.
	if k=$(bash "$repo/scripts/build-kernels.sh" --print-path patched x86_64 2>/dev/null); then
		echo "skiff-patched 6.1 $k $initrd ACPI+CMDLINE_DEVICES" >>"$w/kernels"
	fi
	set +e
	bash "$repo/tests/skiff-linux/host_run.sh" $((1200 * ${SKIFF_STOCK_REPEAT:-1})) -- \
		bash "$repo/tests/skiff-linux/stock_kernels_test.sh" --inner "$build" "$w/kernels" "$mib"
	exit $?
fi

set +e
build=$2 list=$3 mib=$4
small_kib=256 # the small-writes cases: KiB each
# The small-writes cases: host write size, port, seed, pause after each write (us). 1 byte
# as fast as possible: the guest merges payloads of up to 128 bytes into its last skb;
# 300 bytes, 2 ms apart so that the device sees each write alone: one skb each, the
# size that made Linux 6.12.92+ guests reset connections of other devices (libkrun
# issue 795).
small_cases="1:5002:44:0 300:5003:55:2000"
skiff=$build/vmm/skiff
tool=$build/tests/guest-programs/vsock-tool
# shellcheck source=tests/skiff-linux/lib.sh
. "$repo/tests/skiff-linux/lib.sh"
failed=0
fail() {
	echo "stock_kernels_test: FAIL: $case: $*"
	failed=1
}

# run_case SUITE RELEASE VMLINUZ INITRD PACKAGES...: one boot, both directions at once.
run_case() {
	local suite=$1 rel=$2 kernel=$3 initrd=$4 d t0 t1 rc guest devs
	local failed_before=$failed
	failed=0
	case="$suite $rel (${*:5})"
	d=$(mktemp -d /tmp/skiff-stock.XXXXXX)
	t0=$(date +%s.%N)
	skl_listen "$d" "$mib" 400
	# Many small packets at a slow reader (issue 21): per case the host writes small_kib
	# KiB in writes of W bytes; the guest stalls 4 s after the first byte, then reads at
	# 64 KiB/s. Both cases at once.
	local sc w port seed gap small_guest=""
	for sc in $small_cases; do
		IFS=: read -r w port seed gap <<<"$sc"
		"$tool" listen "uds:$d/v.sock_$port" --send "${small_kib}K" --seed "$seed" --chunk "$w" --send-gap "$gap" \
			--timeout 400 >"$d/h-small$w" 2>&1 &
		for _ in $(seq 100); do
			grep -q LISTENING "$d/h-small$w" && break
			sleep 0.1
		done
		small_guest="$small_guest
(vsock-tool connect 2:$port --recv ${small_kib}K --peer-seed $seed --recv-stall 4000 --recv-rate 64K --connect-timeout 30000 --timeout 100 >/tmp/small$w 2>&1; echo \$? >/tmp/rc$w) &
small_pids=\"\$small_pids \$!\""
	done
	guest="$(skl_guest_alive)
echo STOCK-CMDLINE-MMIO \$(grep -o 'virtio_mmio[^ ]*' /proc/cmdline)
for f in /sys/bus/virtio/devices/*; do
	[ \"\$(cat \$f/device)\" = 0x0013 ] && echo STOCK-VSOCK-DEV \$(readlink -f \$f)
done
dmesg | grep -i -E 'virtio|vsock|LNRO|insmod' | sed 's/^/STOCK-DMESG /'
grep -i -E 'virtio|LNRO' /proc/interrupts | sed 's/^ */STOCK-IRQ /'
$(skl_guest_transfer "$mib")
$small_guest
wait \$small_pids
for w in $(for sc in $small_cases; do printf '%s ' "${sc%%:*}"; done); do sed \"s/^/SMALL\$w /\" /tmp/small\$w; echo SKIFF-SMALL\$w rc=\$(cat /tmp/rc\$w); done
kill \$skiff_alive"
	# skiff's messages and skl_watch's both go to $d/skiff, so both append (O_APPEND): with
	# 2> skiff's last message overwrote the start of skl_watch's line, skl_emulator_fault
	# missed it, and a stopped guest was not booted again.
	: >"$d/skiff"
	SKIFF_STATS=$d/stats timeout -k 5 400 "$skiff" run --kernel "$kernel" --initrd "$initrd" \
		--mem 256M --console "file:$d/console" \
		--cmdline "console=ttyS0 quiet noxsave reboot=k panic=-1 no_timer_check skiff.run64=$(printf '%s' "$guest" | base64 -w0)" \
		--vsock "cid=3,uds=$d/v.sock" 2>>"$d/skiff" &
	skl_watch $! "$d/console" "$d/skiff"
	rc=$?
	skl_reap
	t1=$(date +%s.%N)
	tr -d '\r' <"$d/console" >"$d/console.txt" 2>/dev/null
	skl_check "$d" "$rc"
	grep -q '^STOCK-CMDLINE-MMIO .*virtio_mmio\.device=' "$d/console.txt" &&
		fail "skiff put virtio_mmio.device= on the command line: $(grep '^STOCK-CMDLINE' "$d/console.txt")"
	devs=$(sed -n 's/^STOCK-VSOCK-DEV //p' "$d/console.txt")
	[ "$(printf '%s\n' "$devs" | grep -c .)" = 1 ] && [[ $devs == */LNRO0005:00/virtio* ]] ||
		fail "want one virtio-vsock device under the ACPI device LNRO0005:00, have: ${devs:-none}"
	grep -q '^STOCK-IRQ .*5-edge' "$d/console.txt" || fail "the device's interrupt is not IO-APIC 5-edge"
	for sc in $small_cases; do
		w=${sc%%:*}
		sed -n "s/^SMALL$w //p" "$d/console.txt" >"$d/small$w"
		grep -qx "SKIFF-SMALL$w rc=0" "$d/console.txt" && [ -n "$(skl_fnv "$d/h-small$w" send_fnv)" ] &&
			[ "$(skl_fnv "$d/h-small$w" send_fnv)" = "$(skl_fnv "$d/small$w" recv_fnv)" ] ||
			fail "${small_kib} KiB in $w-byte writes to a slow reader: guest $(grep -h "SKIFF-SMALL$w " "$d/console.txt" || echo 'no result'), $(grep -h 'VSOCK-TOOL status' "$d/small$w" | cut -c1-200), host $(grep -h 'VSOCK-TOOL status' "$d/h-small$w" | cut -c1-200 || echo 'no result')"
	done
	printf 'stock_kernels_test: %s: device %s, %s MiB each way, %.1f s wall (boot to reboot); %s KiB in 1-byte and in 300-byte writes: RX packets in all %s, held at the packet bound %s times\n' \
		"$case" "${devs:-none}" "$mib" "$(echo "$t1 - $t0" | bc)" "$small_kib" "$(sed -n 's/^vsock_rx_pkts=//p' "$d/stats" 2>/dev/null | head -n1)" "$(sed -n 's/^vsock_rx_pkt_limit_stalls=//p' "$d/stats" 2>/dev/null | head -n1)"
	sed -n 's/^STOCK-DMESG /  dmesg: /p; s/^STOCK-IRQ /  \/proc\/interrupts: /p' "$d/console.txt"
	[ $failed = 1 ] && skl_show_failure "$d"
	emu_fault=$(skl_emulator_fault "$d/skiff")
	rm -rf "$d"
	[ $failed = 1 ] && [ -n "$emu_fault" ] && attempt_fault=$emu_fault
	[ "$failed_before" = 0 ] || failed=1
}

bash "$repo/scripts/machine-info.sh" --kvm | grep -qx hardware || {
	echo "stock_kernels_test: FAIL: /dev/kvm here is not hardware virtualization"
	exit 1
}
# No kernel to boot is a failure, not a pass (the list is in the build directory, which the
# emulated host sees only inside this tree or outside /tmp).
[ -s "$list" ] || {
	echo "stock_kernels_test: FAIL: no kernel list at $list (the emulated host shares the machine's root, this tree and the work directory only: a build directory under /tmp outside this tree is not seen)"
	exit 1
}
# In an emulated host a case whose guest met QEMU's SVM fault (a triple fault, or a guest that
# stopped altogether: skl_watch) boots again, at most twice (skl_emulator_fault).
for _ in $(seq "${SKIFF_STOCK_REPEAT:-1}"); do
	while read -r suite rel kernel initrd pkgs; do
		for attempt in 1 2 3; do
			attempt_fault='' keep=$failed
			failed=0
			# shellcheck disable=SC2086 # one word per package
			run_case "$suite" "$rel" "$kernel" "$initrd" $pkgs </dev/null
			if [ $failed = 1 ] && [ -n "$attempt_fault" ] && [ -n "${SKIFF_EMULATED_HOST:-}" ] && [ $attempt -lt 3 ]; then
				echo "stock_kernels_test: RETRY: $case: $attempt_fault: QEMU's SVM emulation (docs/test-host.md), the failures above are the emulator's; booting it again (attempt $((attempt + 1)) of 3)"
				failed=$keep
				continue
			fi
			[ $keep = 1 ] && failed=1
			break
		done
	done <"$list"
done
[ $failed = 0 ] && echo "stock_kernels_test: PASS" && exit 0
exit 1
