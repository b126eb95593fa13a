#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: MIT
# /init of the arm64 Linux guest that skiff boots inside the emulated host
# (tests/aarch64/run.sh, cases linux-vsock-*): say that user space runs and on
# how many CPUs (vCPU 1 came up through PSCI CPU_ON); load the vsock modules
# when the kernel has them as modules (Debian's: /etc/skiff-modules has them in
# load order; skiff's own baseline and patched kernels build vsock in);
# with skiff_vsock_bytes=N on the command line, connect to the host (CID 2,
# port 5000) and move N bytes each way at once, every byte checked
# (vsock-tool's pattern); show the virtio interrupt's line of
# /proc/interrupts and the vsock device's negotiated features; then power off (PSCI SYSTEM_OFF: skiff exits 0).
# A failure prints "skiff-arm64: FAIL ...", which the test looks for.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
echo "skiff-arm64-linux: user space up, $(grep -c ^processor /proc/cpuinfo) cpus, $(uname -r)"
if [ -f /etc/skiff-modules ]; then
	while read -r m; do
		insmod "/lib/modules/$m" || echo "skiff-arm64: FAIL insmod $m"
	done </etc/skiff-modules
fi
bytes=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^skiff_vsock_bytes=//p')
if [ -n "$bytes" ]; then
	start=$(date +%s)
	if vsock-tool connect 2:5000 --send "$bytes" --recv "$bytes" --order both --shut-wr \
		--seed 1 --peer-seed 2 --timeout 120; then
		echo "skiff-arm64-linux: vsock $bytes bytes each way in $(($(date +%s) - start)) s"
	else
		echo "skiff-arm64: FAIL guest vsock-tool status $?"
	fi
fi
grep -i virtio /proc/interrupts
# the features the driver negotiated, bit 0 first (MRG_RXBUF is bit 4)
for d in /sys/bus/virtio/devices/*; do
	[ "$(cat "$d/device")" = 0x0013 ] && echo "skiff-arm64-linux: vsock features $(cat "$d/features")"
done
poweroff -f
