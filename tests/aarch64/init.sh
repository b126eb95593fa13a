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
# Linux guests on 2 vCPUs with the vsock device (the driver binds through the
# DTB): /vsock-bytes (default 16M) each way to vsock-tool on the device's uds,
# every byte checked, then PSCI SYSTEM_OFF. The guest prints the features its
# driver negotiated (sysfs, bit 0 first): "skiff-features NAME BITS".
bytes=$(cat /vsock-bytes)
# run_linux NAME KERNEL INITRD MRG: one guest and its host side
run_linux() {
	name=$1
	rm -f /tmp/v.sock /tmp/v.sock_5000 /tmp/case.out /tmp/case.rc
	vsock-tool listen uds:/tmp/v.sock_5000 --send "$bytes" --recv "$bytes" --order both --shut-wr \
		--seed 2 --peer-seed 1 --timeout 150 >/tmp/host.out 2>&1 &
	host_pid=$!
	for _ in $(seq 50); do
		grep -q VSOCK-TOOL-LISTENING /tmp/host.out && break
		sleep 0.1
	done
	start=$(date +%s)
	{
		skiff run --kernel "$2" --initrd "$3" --mem 256M --cpus 2 \
			--vsock "cid=3,uds=/tmp/v.sock,mrg-rxbuf=$4" --console stdio \
			--cmdline "console=ttyS0 earlycon panic=-1 skiff_vsock_bytes=$bytes" </dev/null
		echo $? >/tmp/case.rc
	} 2>&1 | tee /tmp/case.out
	echo "skiff-case $name status=$(cat /tmp/case.rc) seconds=$(($(date +%s) - start))"
	echo "skiff-features $name $(tr -d '\r' </tmp/case.out | sed -n 's/^skiff-arm64-linux: vsock features //p')"
	# the guest has powered off: the host side is done or never will be
	(sleep 20 && kill "$host_pid" 2>/dev/null) &
	wait "$host_pid"
	echo "skiff-case host-$name status=$?"
	cat /tmp/host.out
}

# Debian's arm64 kernel (vsock as modules): the device offers MRG_RXBUF, the
# stock driver does not know the bit and declines it.
run_linux stock-mrg-on /guests/linux.img /guests/linux-initrd.gz on
# skiff's own 6.1 kernels (scripts/build-kernels.sh --arch arm64): the baseline
# declines MRG_RXBUF too; the patched one runs without and with it.
run_linux baseline-mrg-on /guests/baseline.img /guests/own-initrd.gz on
run_linux patched-mrg-off /guests/patched.img /guests/own-initrd.gz off
run_linux patched-mrg-on /guests/patched.img /guests/own-initrd.gz on

poweroff -f
