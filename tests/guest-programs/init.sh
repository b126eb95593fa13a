#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of skiff's test guests (UML and x86-64), packed by scripts/build-initramfs.sh.
#
# Kernel command line parameters it reads (all optional):
#   skiff.run64=B64     base64 of a shell script to run (overrides the built-in one,
#                       /etc/skiff/run, from build-initramfs.sh --run)
#   skiff.ctl=PORT      control mode: repeatedly fetch a script from the host
#                       (vsock CID 2, PORT) with `vsock-tool fetch` and run it; an empty
#                       script ends the loop. One boot, many test steps.
#   skiff.hostfs=DIR    UML only: mount host directory DIR on /host (hostfs)
#   skiff.halt=poweroff|reboot   how to leave at the end (default: poweroff on UML,
#                       reboot on anything else, e.g. QEMU with -no-reboot)
#   skiff.alive=S       a heartbeat: "SKIFF-ALIVE <uptime> s" on the console at once and
#                       then every S seconds from a timer, so that the host can tell a
#                       guest that stopped running from a quiet one (guest_watch.py)
# Kernel modules: /etc/skiff/modules, when present, lists .ko files (one path a line, in
# load order) that are insmod'ed first, before networking and the tests: a stock kernel's
# vsock and virtio_mmio modules (scripts/stock-kernels.sh appends them as a second cpio
# archive). A module that fails to load is named ("init: insmod PATH failed") and the
# rest still load.
# Console protocol (each marker on a line of its own):
#   SKIFF-BEGIN
#   SKIFF-STEP n                   (control mode, before step n)
#   SKIFF-RESULT rc=N              (control mode: SKIFF-RESULT step=n rc=N)
#   SKIFF-END
PATH=/bin
export PATH
set -f
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
if [ -f /etc/skiff/modules ]; then
	for m in $(cat /etc/skiff/modules); do
		insmod "$m" || echo "init: insmod $m failed"
	done
fi
mkdir -p /dev/shm /tmp /host
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
ip link set lo up 2>/dev/null

run='' ctl='' hostfs='' halt='' alive=''
for w in $(cat /proc/cmdline); do
	case $w in
	skiff.run64=*) run=$(echo "${w#skiff.run64=}" | base64 -d) ;;
	skiff.ctl=*) ctl=${w#skiff.ctl=} ;;
	skiff.hostfs=*) hostfs=${w#skiff.hostfs=} ;;
	skiff.halt=*) halt=${w#skiff.halt=} ;;
	skiff.alive=*) alive=${w#skiff.alive=} ;;
	esac
done
case $alive in
'' | *[!0-9]*) ;;
*) [ "$alive" -gt 0 ] && (while :; do echo "SKIFF-ALIVE $(cut -d' ' -f1 /proc/uptime) s"; sleep "$alive"; done) & ;;
esac
uml=0
grep -q 'User Mode Linux' /proc/cpuinfo && uml=1
if [ -z "$halt" ]; then
	if [ $uml = 1 ]; then halt=poweroff; else halt=reboot; fi
fi
if [ -n "$hostfs" ]; then
	mount -t hostfs -o "$hostfs" none /host || echo "init: cannot mount hostfs $hostfs"
fi
cd /tmp || echo "init: no /tmp"

echo "SKIFF-BEGIN"
if [ -n "$ctl" ]; then
	step=0
	while :; do
		# 30 s, not the kernel's 2 s: an emulated host under load can stall the answer.
		if ! vsock-tool fetch "2:$ctl" --connect-timeout 30000 >/tmp/step.sh; then
			echo "SKIFF-RESULT step=$((step + 1)) rc=fetch-failed"
			break
		fi
		[ -s /tmp/step.sh ] || break
		step=$((step + 1))
		echo "SKIFF-STEP $step"
		sh /tmp/step.sh
		echo "SKIFF-RESULT step=$step rc=$?"
	done
else
	if [ -z "$run" ] && [ -f /etc/skiff/run ]; then
		run=$(cat /etc/skiff/run)
	fi
	if [ -z "$run" ]; then
		run='echo "init: no command (skiff.run64= or build-initramfs.sh --run)"; uname -a'
	fi
	sh -c "$run"
	echo "SKIFF-RESULT rc=$?"
fi
echo "SKIFF-END"
"$halt" -f
echo "init: $halt -f failed"
while :; do sleep 3600; done
