#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ctest "aarch64" (issue 19): skiff on arm64 KVM, in an emulated arm64 host.
# Cross-builds skiff for arm64 (cmake/toolchain-aarch64.cmake) in WORKDIR/build,
# assembles the tiny arm64 guests of guest.S, packs them with skiff, its shared
# libraries and busybox into an initramfs, and boots Debian's arm64 kernel
# (scripts/arm64-host.sh) under
#   qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu max
# whose KVM (VHE, GICv3) runs skiff's guests: the tiny ones, then Linux
# guests booted by skiff to a busybox user space on 2 vCPUs that move
# SKIFF_ARM64_VSOCK_BYTES (default 16M) each way over skiff's virtio-mmio
# vsock device (the guest's driver bound through the DTB, SPI 16), every byte
# checked by vsock-tool on both sides, and power off (guest-init.sh): the
# same Debian arm64 kernel (MRG_RXBUF offered, declined), and skiff's own
# arm64 6.1 kernels from scripts/build-kernels.sh --arch arm64 (cached;
# cross-built here when not yet built): the baseline (MRG_RXBUF declined)
# and the patched one with MRG_RXBUF off and on (accepted; the guest shows
# its driver's negotiated features from sysfs). Inside, init.sh runs each case
# with the default --seccomp kill and prints "skiff-case NAME status=N"; this
# script checks every status and the console lines each case must show.
#
# Usage: run.sh WORKDIR
# Exit: 0 pass, 1 fail (the reason and the emulator's console tail), 77 skip
# (no cross compiler or no qemu-system-aarch64: scripts/setup.sh installs both).
# The emulator is not serialized here; wrap manual runs on a shared machine in
# flock. SKIFF_ARM64_TIMEOUT (seconds, default 900) bounds the emulator.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || {
	echo "usage: $0 WORKDIR" >&2
	exit 2
}
work=$(mkdir -p "$1" && cd "$1" && pwd)
timeout_s=${SKIFF_ARM64_TIMEOUT:-900}

fail() {
	echo "aarch64: FAIL: $*" >&2
	exit 1
}
for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-objcopy qemu-system-aarch64 cmake ninja cpio; do
	command -v "$tool" >/dev/null || {
		echo "aarch64: SKIP: $tool not found; scripts/setup.sh installs the cross toolchain and qemu-system-arm"
		exit 77
	}
done
libdir=/usr/lib/aarch64-linux-gnu
for lib in libseccomp.so.2 libfdt.so.1 libc.so.6 ld-linux-aarch64.so.1; do
	[ -e "$libdir/$lib" ] || {
		echo "aarch64: SKIP: $libdir/$lib missing; scripts/setup.sh installs the :arm64 libraries"
		exit 77
	}
done

t0=$(date +%s)
# 1. skiff for arm64, same warnings as errors; no tests or benchmarks (they run here, on x86-64)
cmake -S "$repo" -B "$work/build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/toolchain-aarch64.cmake" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKIFF_BUILD_TESTS=OFF -DSKIFF_BUILD_BENCH=OFF \
	>"$work/cmake.log" 2>&1 || {
	tail -n 20 "$work/cmake.log" >&2
	fail "cross configure failed (log $work/cmake.log)"
}
ninja -C "$work/build" -j2 skiff >"$work/ninja.log" 2>&1 || {
	tail -n 30 "$work/ninja.log" >&2
	fail "cross build failed (log $work/ninja.log)"
}
file_out=$(od -An -tx1 -j18 -N2 "$work/build/vmm/skiff" | tr -d ' ')
[ "$file_out" = b700 ] || fail "$work/build/vmm/skiff is not an arm64 ELF (e_machine $file_out)"

# 2. the tiny guests, arm64 Images
for c in 1:smp-poweroff 2:reset 3:nisv; do
	n=${c%%:*} name=${c#*:}
	aarch64-linux-gnu-gcc -DGUEST_CASE="$n" -nostdlib -static -Wl,-Ttext=0 -Wl,--build-id=none \
		-o "$work/$name.elf" "$here/guest.S" || fail "assembling guest $name"
	aarch64-linux-gnu-objcopy -O binary "$work/$name.elf" "$work/$name.img"
done
# vsock-tool (tests/guest-programs/): the guest's and the emulated host's side of the transfers
aarch64-linux-gnu-gcc -O2 -Wall -Wextra -Werror -static -pthread -I"$repo/tests/guest-programs" \
	-o "$work/vsock-tool" "$repo/tests/guest-programs/vsock-tool.c" || fail "cross-building vsock-tool"

# skiff's baseline and patched arm64 guest kernels (cached; built here only when the
# guest-kernels stage of scripts/test.sh has not built them yet)
own_dir=$work/own-kernels
mkdir -p "$own_dir"
"$repo/scripts/build-kernels.sh" --arch arm64 >"$work/kernels.log" 2>&1 || {
	tail -n 20 "$work/kernels.log" >&2
	fail "scripts/build-kernels.sh --arch arm64 failed (log $work/kernels.log)"
}
for v in baseline patched; do
	k=$("$repo/scripts/build-kernels.sh" --print-path "$v" arm64) || fail "no $v arm64 kernel at $k"
	cp "$k" "$own_dir/$v.img"
done

# 3. the host: kernel and busybox (cached), initramfs
host=$("$repo/scripts/arm64-host.sh") || fail "scripts/arm64-host.sh could not fetch the arm64 host kernel"
root=$work/root
rm -rf "$root"
mkdir -p "$root/bin" "$root/lib" "$root/guests" "$root/dev" "$root/proc" "$root/sys" "$root/tmp"
cp "$host/busybox" "$root/bin/busybox"
cp "$work/build/vmm/skiff" "$root/bin/skiff"
for lib in libseccomp.so.2 libfdt.so.1 libc.so.6 ld-linux-aarch64.so.1; do
	cp -L "$libdir/$lib" "$root/lib/$lib"
done
cp "$work"/*.img "$root/guests/"
# the Linux guest: the host's own kernel, and an initramfs of busybox and guest-init.sh
cp "$host/Image" "$root/guests/linux.img"
groot=$work/guest-root
rm -rf "$groot"
mkdir -p "$groot/bin" "$groot/proc" "$groot/sys" "$groot/etc" "$groot/lib/modules"
cp "$host/busybox" "$groot/bin/busybox"
cp "$work/vsock-tool" "$groot/bin/vsock-tool"
cp "$host"/ko/*.ko "$groot/lib/modules/"
cp "$host/modules" "$groot/etc/skiff-modules"
cp "$here/guest-init.sh" "$groot/init"
chmod +x "$groot/init"
(cd "$groot" && find . | cpio -o -H newc --quiet | gzip -1) >"$root/guests/linux-initrd.gz"
# skiff's own arm64 6.1 kernels, baseline and patched (vsock built in: no modules)
for v in baseline patched; do
	cp "$own_dir/$v.img" "$root/guests/$v.img"
done
rm -rf "$groot/lib/modules" "$groot/etc/skiff-modules"
(cd "$groot" && find . | cpio -o -H newc --quiet | gzip -1) >"$root/guests/own-initrd.gz"
cp "$here/init.sh" "$root/init"
cp "$work/vsock-tool" "$root/bin/vsock-tool"
echo "${SKIFF_ARM64_VSOCK_BYTES:-16M}" >"$root/vsock-bytes"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.cpio.gz"
t1=$(date +%s)

# 4. boot it; init.sh powers the emulator off when done
log=$work/console.log
t2=$(date +%s)
set +e
timeout "$timeout_s" qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu max -smp 2 \
	-m 1024 -nographic -no-reboot -kernel "$host/Image" -initrd "$work/initramfs.cpio.gz" \
	-append "console=ttyAMA0 panic=-1 quiet" </dev/null >"$log" 2>&1
qrc=$?
set -e
t3=$(date +%s)
echo "aarch64: build and initramfs $((t1 - t0)) s, emulated host $((t3 - t2)) s (qemu status $qrc)"

problems=0
need() { # need CASE STATUS: the case ran and ended with STATUS
	grep -q "^skiff-case $1 status=$2\b" "$log" || {
		echo "aarch64: case $1: want status $2, got: $(grep "^skiff-case $1 " "$log" || echo 'no result')" >&2
		problems=$((problems + 1))
	}
}
has() { # has TEXT: the console shows it
	grep -qF -- "$1" "$log" || {
		echo "aarch64: console lacks: $1" >&2
		problems=$((problems + 1))
	}
}
has "skiff-arm64: /dev/kvm present"
need smp-poweroff 0
has "skiff-arm64: cpu0 hello"
has "skiff-arm64: cpu1 hello"
has "skiff-arm64: system off"
need reset 65
has "skiff-arm64: reset"
need nisv 68
has "guest access to 0xb000000 outside RAM that KVM cannot decode"
need not-an-image 64
has "is not an arm64 Linux Image"
need initrd-too-big 64
has "give at least"
has "earlycon: ns16550a0 at MMIO 0x0000000009000000"
has "CPU1: Booted secondary processor"
has "9000000.uart: ttyS0 at MMIO 0x9000000"
has "skiff-arm64-linux: user space up, 2 cpus"
# the DTB's virtio_mmio node: SPI 16 = INTID 48, edge, bound by virtio_mmio
grep -qE "GICv3 +48 Edge +virtio0" "$log" || {
	echo "aarch64: the guest's virtio0 is not on GICv3 INTID 48 (edge)" >&2
	problems=$((problems + 1))
}
# MRG_RXBUF is feature bit 4 (skiff/virtio_vsock_ext.h): accepted by the patched
# kernel when offered, declined by the others.
for c in stock-mrg-on:0 baseline-mrg-on:0 patched-mrg-off:0 patched-mrg-on:1; do
	name=${c%:*} want=${c#*:}
	need "$name" 0
	need "host-$name" 0
	f=$(tr -d '\r' <"$log" | sed -n "s/^skiff-features $name //p")
	if [ "${#f}" -lt 33 ] || [ "${f:4:1}" != "$want" ] || [ "${f:32:1}" != 1 ]; then
		echo "aarch64: $name: negotiated features '${f:-none}', want MRG_RXBUF (bit 4) $want and VERSION_1 (bit 32)" >&2
		problems=$((problems + 1))
	fi
done
[ "$(grep -c "^skiff-arm64-linux: vsock .* bytes each way" "$log")" = 4 ] || {
	echo "aarch64: the guests did not report all 4 transfers" >&2
	problems=$((problems + 1))
}
# each Linux guest says which kernel it runs: Debian's, then skiff's own 6.1 three times
[ "$(tr -d '\r' <"$log" | grep -cE "^skiff-arm64-linux: user space up, 2 cpus, 6\.1\.[0-9]+$")" = 3 ] || {
	echo "aarch64: skiff's own 6.1 kernels did not all reach user space on 2 CPUs" >&2
	problems=$((problems + 1))
}
if grep -q "skiff-arm64: FAIL" "$log"; then
	grep "skiff-arm64: FAIL" "$log" >&2
	problems=$((problems + 1))
fi
if [ "$problems" -ne 0 ]; then
	echo "--- emulated host console (last 60 lines of $log) ---" >&2
	tail -n 60 "$log" >&2
	fail "$problems check(s) failed"
fi
grep "^skiff-case " "$log"
echo "aarch64: PASS"
