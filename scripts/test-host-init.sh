#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of the emulated x86-64 host of scripts/test-host.sh (busybox sh, appended to the
# cached base.cpio.gz of scripts/test-host-image.sh on each run).
#
# Loads the modules in /modules/order (KVM on the emulated AMD SVM, virtio-pci, 9p),
# mounts the machine's root read-only (9p tag "root", cache=loose: nothing outside changes
# it during a run) on /newroot, the run's I/O directory (tag "io") on /newroot/run/test-host
# and the writable work directory (tag "work", cache=mmap) at its own path; fresh /proc,
# /sys, /dev (devtmpfs: /dev/kvm), /dev/pts, tmpfs /tmp, /dev/shm and /run. Then it runs
# /run/test-host/cmd (written by test-host.sh: cd, environment, the command) chrooted there,
# stdout and stderr to /run/test-host/stdout and stderr, and powers off.
# Every 5 s a watcher writes /run/test-host/ps (replaced whole): the host's uptime and
# load, then every process with its state, kernel wait channel and command line;
# test-host.sh takes a stale file for a host that stopped (its timers or CPUs stuck) and
# shows the last one when a command hangs.
# Console markers (ttyS0, each on a line of its own):
#   SKIFF-TEST-HOST ready           modules loaded, /dev/kvm present, filesystems mounted
#   SKIFF-TEST-HOST rc=N            the command's exit status
#   SKIFF-TEST-HOST error=WHAT      the host could not be set up (WHAT says what failed)
PATH=/bin
export PATH
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
	echo "SKIFF-TEST-HOST error=$*"
	poweroff -f
	sleep 10
}

while read -r m; do
	insmod "/modules/$m" || fail "insmod-$m"
done </modules/order
[ -c /dev/kvm ] || fail "no-dev-kvm"

p9='trans=virtio,version=9p2000.L,msize=262144'
mount -t 9p -o "$p9,cache=mmap" io /io || fail "mount-io"
work=$(sed -n 's/^work=//p' /io/config)
repo=$(sed -n 's/^repo=//p' /io/config)
mount -t 9p -o "$p9,cache=loose,ro" root /newroot || fail "mount-root"
r=/newroot
mount -t proc proc $r/proc || fail "mount-proc"
mount -t sysfs sysfs $r/sys || fail "mount-sys"
mount -t devtmpfs devtmpfs $r/dev || fail "mount-dev"
mkdir -p $r/dev/pts $r/dev/shm
mount -t devpts devpts $r/dev/pts
mount -t tmpfs tmpfs $r/dev/shm || fail "mount-dev-shm"
mount -t tmpfs tmpfs $r/tmp || fail "mount-tmp"
chmod 1777 $r/tmp $r/dev/shm
mount -t tmpfs tmpfs $r/run || fail "mount-run"
mkdir -p $r/run/test-host
mount --bind /io $r/run/test-host || fail "mount-io-bind"
# The source tree again at its own path (read-only), then the work directory: either may
# lie under /tmp or /run, which the tmpfs mounts above hide (a clone in /tmp, say).
if [ -n "$repo" ]; then
	mkdir -p "$r$repo" 2>/dev/null
	mount -t 9p -o "$p9,cache=loose,ro" repo "$r$repo" || fail "mount-repo"
fi
if [ -n "$work" ]; then
	mkdir -p "$r$work" 2>/dev/null
	mount -t 9p -o "$p9,cache=mmap" work "$r$work" || fail "mount-work"
fi

snapshot() { # shell builtins only, but one tr per process: cheap even on a crawling host
	read -r up _ </proc/uptime
	read -r l1 l5 l15 nr _ </proc/loadavg
	echo "uptime $up s, load $l1 $l5 $l15 $nr"
	echo "   pid    tid S wchan                  command"
	for p in /proc/[0-9]*; do
		read -r s <"$p/stat" 2>/dev/null || continue
		st=${s##*) } && st=${st%% *}
		cmd=''
		# Kernel threads (no executable) only when in uninterruptible sleep.
		[ -e "$p/exe" ] && cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
		[ -n "$cmd" ] || [ "$st" = D ] || continue
		for t in "$p"/task/[0-9]*; do
			read -r s <"$t/stat" 2>/dev/null || continue
			st=${s##*) } && st=${st%% *}
			comm=${s#*(} && comm=${comm%)*}
			w=''
			read -r w <"$t/wchan" 2>/dev/null
			printf '%6s %6s %s %-22s %.120s (%s)\n' "${p#/proc/}" "${t##*/}" "$st" "${w:-?}" \
				"${cmd:-[$comm]}" "$comm"
		done
	done
}
while :; do
	snapshot >/io/ps.new 2>/dev/null && mv /io/ps.new /io/ps
	sleep 5
done &
# One idle KVM VM for the host's whole life, before any command runs: VMs starting and
# ending then patch no kernel text (scripts/test-host-keeper.py says why). Up to 60 s.
if [ -n "$repo" ] && [ -x $r/usr/bin/python3 ]; then
	chroot $r /usr/bin/python3 "$repo/scripts/test-host-keeper.py" /run/test-host/keeper \
		</dev/null >/dev/null 2>/io/keeper.err &
	i=0
	while [ ! -s /io/keeper ] && [ $i -lt 600 ] && [ ! -s /io/keeper.err ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -s /io/keeper ] || echo "SKIFF-TEST-HOST warning=no-idle-vm $(head -c 200 /io/keeper.err)"
fi
# Once per image (test-host.sh asks): the kernel's text symbols, for naming stuck vCPUs.
if grep -qx 'kallsyms=1' /io/config; then
	grep ' [tT] ' /proc/kallsyms >/io/kallsyms.part && mv /io/kallsyms.part /io/kallsyms &
fi
echo "SKIFF-TEST-HOST ready"
chroot $r /bin/sh /run/test-host/cmd </dev/null >/io/stdout 2>/io/stderr
rc=$?
echo "$rc" >/io/status
sync
echo "SKIFF-TEST-HOST rc=$rc"
poweroff -f
sleep 10
