#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: MIT
# /init of the emulated arm64 host (tests/aarch64/run.sh): run skiff's cases,
# print "skiff-case NAME status=N" for each, power the emulator off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp

if [ -c /dev/kvm ]; then
	echo "skiff-arm64: /dev/kvm present"
else
	echo "skiff-arm64: FAIL no /dev/kvm in the emulated host"
fi

# run_case NAME ARGS...: skiff run ARGS, its console and messages on ours
run_case() {
	name=$1
	shift
	start=$(date +%s)
	skiff run "$@" --console stdio </dev/null 2>&1
	rc=$?
	echo "skiff-case $name status=$rc seconds=$(($(date +%s) - start))"
}

run_case smp-poweroff --kernel /guests/smp-poweroff.img --cpus 2 --mem 64M
run_case reset --kernel /guests/reset.img --mem 64M
run_case nisv --kernel /guests/nisv.img --mem 64M
run_case not-an-image --kernel /init --mem 64M
# 3 MiB of initrd after a kernel at the start of 4 MiB of RAM: no room for the DTB
dd if=/dev/zero of=/tmp/big.initrd bs=1M count=3 2>/dev/null
run_case initrd-too-big --kernel /guests/reset.img --initrd /tmp/big.initrd --mem 4M
# Debian's arm64 kernel as skiff's guest, to user space on 2 vCPUs and PSCI SYSTEM_OFF
run_case linux-poweroff --kernel /guests/linux.img --initrd /guests/linux-initrd.gz \
	--mem 256M --cpus 2 --cmdline "console=ttyS0 earlycon panic=-1"

poweroff -f
