#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Boot one test guest (a kernel from build-kernels.sh, an initramfs from
# build-initramfs.sh), stream its console to stdout, and exit with the status the guest's
# /init reported (SKIFF-RESULT rc=N).
#
# Usage: guest-run.sh uml|qemu|skiff [options] [-- extra...]
#   --kernel FILE     default: build-kernels.sh --print-path VARIANT (um|x86_64)
#   --variant V       baseline (default) or patched
#   --initrd FILE     required
#   --run CMD         shell script for /init (passed as skiff.run64=base64)
#   --append ARGS     more kernel command line (e.g. skiff.ctl=PORT); $SKIFF_GUEST_CMDLINE
#                     goes last, after the tests' own (e.g. "loglevel=7" shows every kernel
#                     message of a boot that the default "quiet" hides)
#   --vsock SOCK      attach a vhost-user vsock device served on the Unix socket SOCK:
#                     uml: virtio_uml.device=SOCK:19
#                     qemu: -chardev socket,path=SOCK -device vhost-user-vsock-device
#                     skiff: SOCK is skiff run's --vsock value, the in-process device
#                     (cid=N,uds=PATH[,mrg-rxbuf=on|off][,rx-threads=N])
#   --skiff BIN       skiff: the skiff binary (default $SKIFF_BIN, else build/vmm/skiff)
#   --mem MIB         guest RAM (default 256)
#   --smp N           qemu, skiff: N vCPUs, 1..4 (default 1; QEMU: multi-threaded TCG, a
#                     host thread each)
#   --timeout S       kill the guest after S seconds (default 120); exit 124
#   --grace S         after a fatal line on the console (below), give the guest S more
#                     seconds to print the rest (its backtrace) or end, then kill it
#                     (default 2)
#   --log FILE        also write the console to FILE
#   -- extra...       uml: more kernel command line words; qemu: more QEMU arguments;
#                     skiff: more `skiff run` options (e.g. --seccomp log)
# Exit status: the guest's rc; 123 the guest died: a fatal line on its console (a kernel
# panic, "Attempted to kill init", an Oops or other die() line, "kernel BUG at"), or the
# guest's process was killed by a signal (UML aborts after a panic: SIGABRT; but a UML
# that aborts after its kernel halted keeps the guest's rc, with a warning); 124 timeout;
# 125 the guest ended without a SKIFF-RESULT line (bad arguments, an early exit). With
# several SKIFF-RESULT lines (control mode) the first non-zero rc wins; a fatal line wins
# over any rc. A guest that prints a fatal line is killed --grace seconds later if it has
# not ended by then (a panicked UML may hang; panic=-1 may reboot), so a dead guest ends
# the run within seconds, not at --timeout.
# Messages (stderr): one verdict line "guest-run.sh: KIND guest ...": "rc=N, S s", "died:
# LINE (...)", "died: killed by SIGNAME (...)", "timed out after S s", "ended (...) without
# a SKIFF-RESULT line"; for 123, 124 and 125 the last 20 console lines follow it. On
# SIGTERM, SIGINT or SIGHUP it kills the guest and exits 143 ("killed: ... got a signal").
# Fatal patterns (fatal_re below): "Kernel panic - not syncing", x86 die() lines
# ("...: 0000 [#1] ...") and "kernel BUG at" anywhere in a line (kernel messages can
# follow guest output on one console line); "Oops" only at a line's start (after a
# printk timestamp, if any).
#
# UML notes: guest RAM is a file in $TMPDIR (set here to /dev/shm when writable, else
# /tmp; it must allow mmap and be big enough), shared with vhost-user back ends by fd;
# UML's per-instance directory goes to a temporary uml_dir=; `poweroff -f` ends the
# process (reboot -f re-executes it: a reboot test sees two boots in one run).
# QEMU notes: -M microvm TCG, RAM from memory-backend-memfd share=on (vhost-user needs
# shared memory); no ACPI, so QEMU adds virtio_mmio.device= to the command line;
# virtio-mmio.force-legacy=false: microvm's default is the legacy (version 1) transport,
# without VIRTIO_F_VERSION_1, which a vhost-user vsock back end need not accept;
# `poweroff -f` only halts a microvm, so the guest uses `reboot -f` and QEMU runs with
# -no-reboot; reboot=t (triple fault: a microvm has no other reset path) and panic=-1
# turn a reboot or a panic into an exit; no_timer_check: under TCG on a loaded host the
# IO-APIC timer check can fail and panic the boot. Multi-threaded TCG: a host thread per
# vCPU, named "CPU N/TCG" (debug-threads), so benchmarks can read each one's CPU time.
# skiff notes: `skiff run` on this machine's /dev/kvm, which must be hardware virtualization
# for Linux to reach user space (scripts/test-host.sh runs a command where it is); seccomp
# in its default kill mode; the environment passes through (SKIFF_STATS=FILE: the device
# counters at exit). The guest leaves by `poweroff -f` (skiff.halt=poweroff: ACPI, skiff
# exits 0). A guest reboot ends skiff with status 65: it is started again with the same
# arguments, a new process with a new device (host connections of the old one end), so a
# reboot test sees two boots in one run, as with UML; at most 4 boots in all.
# no_timer_check as for QEMU: in an emulated host on a loaded machine the x86 kernel's
# IO-APIC timer check failed ("MP-BIOS bug: 8254 timer not connected to IO-APIC", then a
# panic) in 1 of 6 skiff boots of the io_uring selftest on 2026-12-02.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
die() {
	echo "guest-run.sh: error: $*" >&2
	exit 2
}
usage() {
	sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

[ $# -ge 1 ] || usage
kind=$1
shift
case $kind in uml | qemu | skiff) ;; *) usage ;; esac

kernel='' variant=baseline initrd='' run='' append='' vsock='' mem=256 timeout=120 log='' smp=1 grace=2
skiff=${SKIFF_BIN:-$repo/build/vmm/skiff}
extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=${2:-} && shift ;;
	--variant) variant=${2:-} && shift ;;
	--initrd) initrd=${2:-} && shift ;;
	--run) run=${2-} && shift ;;
	--append) append=${2-} && shift ;;
	--vsock) vsock=${2:-} && shift ;;
	--skiff) skiff=${2:-} && shift ;;
	--mem) mem=${2:-} && shift ;;
	--smp) smp=${2:-} && shift ;;
	--timeout) timeout=${2:-} && shift ;;
	--grace) grace=${2:-} && shift ;;
	--log) log=${2:-} && shift ;;
	--)
		shift
		extra=("$@")
		break
		;;
	*) usage ;;
	esac
	shift
done
[ -n "$initrd" ] && [ -r "$initrd" ] || die "--initrd FILE is required and must be readable"
[[ $mem =~ ^[0-9]+$ ]] && [[ $timeout =~ ^[0-9]+$ ]] && [[ $grace =~ ^[0-9]+$ ]] && [[ $smp =~ ^[1-4]$ ]] || usage
[ "$smp" = 1 ] || [ "$kind" != uml ] || die "--smp $smp: user-mode Linux is uniprocessor"
if [ -z "$kernel" ]; then
	arch=x86_64
	[ $kind = uml ] && arch=um
	kernel=$("$repo/scripts/build-kernels.sh" --print-path "$variant" "$arch") ||
		die "no $variant $arch kernel at $kernel: run scripts/build-kernels.sh"
fi
[ -r "$kernel" ] || die "kernel $kernel is not readable"

cmdline="quiet $append${SKIFF_GUEST_CMDLINE:+ $SKIFF_GUEST_CMDLINE}"
[ -n "$run" ] && cmdline+=" skiff.run64=$(printf '%s' "$run" | base64 -w0)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $kind in
uml)
	[ -x "$kernel" ] || die "UML kernel $kernel is not executable"
	if [ -z "${TMPDIR:-}" ]; then
		if [ -w /dev/shm ]; then export TMPDIR=/dev/shm; else export TMPDIR=/tmp; fi
	fi
	read -ra words <<<"$cmdline"
	cmd=("$kernel" "mem=${mem}M" "initrd=$initrd" "uml_dir=$tmp" "umid=skiff-$$" "${words[@]}")
	[ -n "$vsock" ] && cmd+=("virtio_uml.device=$vsock:19")
	cmd+=("${extra[@]}")
	;;
qemu)
	command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run scripts/setup.sh"
	cmd=(qemu-system-x86_64 -M microvm,acpi=off,memory-backend=mem -m "${mem}M"
		-object "memory-backend-memfd,id=mem,size=${mem}M,share=on"
		-cpu max -smp "$smp" -accel tcg,thread=multi -name skiff,debug-threads=on -nographic -no-reboot -nodefaults -serial stdio
		-global virtio-mmio.force-legacy=false
		-kernel "$kernel" -initrd "$initrd" -append "console=ttyS0 reboot=t panic=-1 no_timer_check $cmdline")
	[ -n "$vsock" ] && cmd+=(-chardev "socket,id=skiffvsock,path=$vsock"
		-device vhost-user-vsock-device,chardev=skiffvsock)
	cmd+=("${extra[@]}")
	;;
skiff)
	[ -x "$skiff" ] || die "skiff binary $skiff is not executable (--skiff BIN or SKIFF_BIN)"
	run_skiff=("$skiff" run --kernel "$kernel" --initrd "$initrd" --mem "${mem}M" --cpus "$smp"
		--console stdio --cmdline "console=ttyS0 reboot=k panic=-1 no_timer_check skiff.halt=poweroff $cmdline")
	[ -n "$vsock" ] && run_skiff+=(--vsock "$vsock")
	run_skiff+=("${extra[@]}")
	# Status 65: the guest rebooted; boot it again (a new process), at most 4 boots.
	# shellcheck disable=SC2016 # expanded by the inner bash
	cmd=(bash -c 'for b in 1 2 3 4; do "$@"; st=$?; [ $st = 65 ] && [ $b -lt 4 ] || exit $st; done' skiff-boots
		"${run_skiff[@]}")
	;;
esac

# A dead guest ends the run at once. The guest runs in the background under timeout(1),
# which makes itself the leader of a new process group (UML's helper processes are in it
# too): killing that group kills the whole guest. Its console comes through a FIFO and is
# read here line by line; the first fatal line starts the grace period.
fatal_re='Kernel panic - not syncing|[0-9a-f]{4} \[#[0-9]+\]|kernel BUG at |^(\[ *[0-9]+\.[0-9]+\] )?Oops'
grace_us=$((grace * 1000000))
now_us() { echo "${EPOCHREALTIME/./}"; }
gpid=''
kill_guest() {
	[ -n "$gpid" ] || return 0
	kill -KILL -- "-$gpid" 2>/dev/null || kill -KILL "$gpid" 2>/dev/null || true
}
trap 'kill_guest; rm -rf "$tmp"' EXIT
trap 'kill_guest; echo "guest-run.sh: $kind guest killed: guest-run.sh got a signal" >&4; exit 143' TERM INT HUP
mkfifo "$tmp/fifo"
: >"$tmp/console"
[ -z "$log" ] || : >"$log"
t0=$(now_us)
# bash's job notices ("Killed", "Aborted") go to its stderr: away while the guest runs, the
# verdict below says what happened.
exec 4>&2 2>/dev/null
emit() { # a console line: to stdout, the console file, --log
	printf '%s\n' "$1"
	printf '%s\n' "$1" >>"$tmp/console"
	[ -z "$log" ] || printf '%s\n' "$1" >>"$log"
}
timeout -k 5 "$timeout" "${cmd[@]}" </dev/null >"$tmp/fifo" 2>&1 4>&- &
gpid=$!
exec 3<"$tmp/fifo"
set +e
dead='' killed='' pending=''
while :; do
	if [ -n "$dead" ]; then
		left=$((dead_us + grace_us - $(now_us)))
		if [ "$left" -le 0 ]; then
			kill_guest
			killed=1
			break
		fi
		IFS= read -r -t "$((left / 1000000)).$(printf '%06d' $((left % 1000000)))" -u 3 line
	else
		IFS= read -r -u 3 line
	fi
	r=$?
	if [ $r -gt 128 ]; then
		pending+=$line # the grace period ended (checked above) inside this line
		continue
	fi
	line=$pending$line
	pending=''
	[ $r = 0 ] || [ -n "$line" ] || break
	line=${line%$'\r'}
	emit "$line"
	if [ -z "$dead" ] && [[ $line =~ $fatal_re ]]; then
		dead=$line
		dead_us=$(now_us)
	fi
	[ $r = 0 ] || break
done
[ -z "$pending" ] || emit "${pending%$'\r'}"
exec 3<&-
wait "$gpid"
st=$?
exec 2>&4 4>&-
set -e
gpid=''
us=$(($(now_us) - t0))
secs=$(printf '%d.%02d' $((us / 1000000)) $((us % 1000000 / 10000)))
tail_console() {
	echo "guest-run.sh: --- last $1 console lines ---" >&2
	tail -n "$1" "$tmp/console" >&2
	echo "guest-run.sh: --- end of console ---" >&2
}
if [ -n "$dead" ]; then
	how="it ended by itself, status $st"
	[ -z "$killed" ] || how="killed ${grace} s after that line"
	echo "guest-run.sh: $kind guest died: $dead ($how; $secs s after start)" >&2
	tail_console 20
	exit 123
fi
if [ "$st" = 124 ] || { [ "$st" = 137 ] && [ "${secs%.*}" -ge "$timeout" ]; }; then
	echo "guest-run.sh: $kind guest timed out after ${timeout} s" >&2
	tail_console 20
	exit 124
fi
# UML's host process now and then aborts in its own exit path after the guest kernel
# halted (its last console line "reboot: System halted" or "reboot: Power down", no fatal
# line before it): seen 1 in about 50 runs on a loaded machine, in different tests, with
# every result already printed. Nothing the guest runs is left to go wrong then, so that
# one case keeps the guest's rc, with a warning; any other signal is a death.
halted_then_abort() {
	[ "$kind" = uml ] && [ "$st" = 134 ] &&
		tr -d '\r' <"$tmp/console" | awk 'NF { l = $0 } END { exit !(l ~ /^reboot: (System halted|Power down)$/) }'
}
if [ "$st" -gt 128 ] && halted_then_abort; then
	echo "guest-run.sh: warning: $kind ended by SIGABRT after the guest halted (UML's own exit path; the guest's results stand)" >&2
elif [ "$st" -gt 128 ]; then
	sig=$(kill -l $((st - 128)) 2>/dev/null || echo $((st - 128)))
	echo "guest-run.sh: $kind guest died: killed by SIG$sig (status $st, $secs s after start)" >&2
	tail_console 20
	exit 123
fi
rc=$(sed -n 's/^SKIFF-RESULT .*rc=\([^ ]*\)$/\1/p' "$tmp/console" | awk '$1 != "0" { print; exit } END { if (NR) print "0" }' | head -n1)
if [ -z "$rc" ]; then
	echo "guest-run.sh: $kind guest ended (status $st, after $secs s) without a SKIFF-RESULT line" >&2
	tail_console 20
	exit 125
fi
[[ $rc =~ ^[0-9]+$ ]] || rc=1
echo "guest-run.sh: $kind guest rc=$rc, $secs s" >&2
exit "$rc"
