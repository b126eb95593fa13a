#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Boot one test guest (a kernel from build-kernels.sh, an initramfs from
# build-initramfs.sh), stream its console to stdout, and exit with the status the guest's
# /init reported (SKIFF-RESULT rc=N).
#
# Usage: guest-run.sh uml|qemu [options] [-- extra...]
#   --kernel FILE     default: build-kernels.sh --print-path VARIANT (um|x86_64)
#   --variant V       baseline (default) or patched
#   --initrd FILE     required
#   --run CMD         shell script for /init (passed as skiff.run64=base64)
#   --append ARGS     more kernel command line (e.g. skiff.ctl=PORT)
#   --vsock SOCK      attach a vhost-user vsock device served on the Unix socket SOCK:
#                     uml: virtio_uml.device=SOCK:19
#                     qemu: -chardev socket,path=SOCK -device vhost-user-vsock-device
#   --mem MIB         guest RAM (default 256)
#   --smp N           qemu: N vCPUs, 1..4 (default 1; multi-threaded TCG, a host thread each)
#   --timeout S       kill the guest after S seconds (default 120); exit 124
#   --log FILE        also write the console to FILE
#   -- extra...       uml: more kernel command line words; qemu: more QEMU arguments
# Exit status: the guest's rc; 124 timeout; 125 the guest ended without a SKIFF-RESULT
# (crash, panic, bad arguments). With several SKIFF-RESULT lines (control mode) the
# first non-zero rc wins.
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
case $kind in uml | qemu) ;; *) usage ;; esac

kernel='' variant=baseline initrd='' run='' append='' vsock='' mem=256 timeout=120 log='' smp=1
extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=${2:-} && shift ;;
	--variant) variant=${2:-} && shift ;;
	--initrd) initrd=${2:-} && shift ;;
	--run) run=${2-} && shift ;;
	--append) append=${2-} && shift ;;
	--vsock) vsock=${2:-} && shift ;;
	--mem) mem=${2:-} && shift ;;
	--smp) smp=${2:-} && shift ;;
	--timeout) timeout=${2:-} && shift ;;
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
[[ $mem =~ ^[0-9]+$ ]] && [[ $timeout =~ ^[0-9]+$ ]] && [[ $smp =~ ^[1-4]$ ]] || usage
[ "$smp" = 1 ] || [ "$kind" = qemu ] || die "--smp $smp: user-mode Linux is uniprocessor"
if [ -z "$kernel" ]; then
	arch=x86_64
	[ $kind = uml ] && arch=um
	kernel=$("$repo/scripts/build-kernels.sh" --print-path "$variant" "$arch") ||
		die "no $variant $arch kernel at $kernel: run scripts/build-kernels.sh"
fi
[ -r "$kernel" ] || die "kernel $kernel is not readable"

cmdline="quiet $append"
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
esac

t0=$(date +%s.%N)
set +e
timeout -k 5 "$timeout" "${cmd[@]}" </dev/null 2>&1 | sed -u 's/\r$//' | tee "$tmp/console" "${log:-/dev/null}"
st=${PIPESTATUS[0]}
set -e
secs=$(echo "$(date +%s.%N) - $t0" | bc)
rc=$(sed -n 's/^SKIFF-RESULT .*rc=\([^ ]*\)$/\1/p' "$tmp/console" | awk '$1 != "0" { print; exit } END { if (NR) print "0" }' | head -n1)
if [ "$st" = 124 ] || [ "$st" = 137 ]; then
	echo "guest-run.sh: $kind guest timed out after ${timeout} s" >&2
	exit 124
fi
if [ -z "$rc" ]; then
	echo "guest-run.sh: $kind guest ended (status $st) without a SKIFF-RESULT line" >&2
	exit 125
fi
[[ $rc =~ ^[0-9]+$ ]] || rc=1
echo "guest-run.sh: $kind guest rc=$rc, $(printf '%.2f' "$secs") s" >&2
exit "$rc"
