#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run a guest test driver on a host with hardware-virtualization KVM (ctest label
# skiff-linux): scripts/test-host.sh runs it directly where this machine's /dev/kvm is
# VT-x/AMD-V, else in the emulated host, inside a fresh work directory under the current
# one (the driver's files and Unix sockets go to $TMPDIR, which test-host.sh sets to /tmp).
# Every skiff-linux test enters the emulated host through here.
#
# Usage: host_run.sh TIMEOUT [--cpus N] [--boot-timeout S] [--kernel VARIANT]... -- DRIVER [ARGS...]
#   TIMEOUT         test-host.sh --timeout: the emulated host's boot and the driver, seconds
#   --cpus N        the emulated host's vCPUs (test-host.sh's default 2 if left out)
#   --boot-timeout S  test-host.sh's (its default 150 s covers a load average of 20 on
#                   2 cores; a longer one only for a host that boots more)
#   --kernel V      the driver needs scripts/build-kernels.sh's V (patched|baseline) x86_64
#                   kernel: skip (77) without it; repeatable
# Exit: the driver's status; 77 skipped (a kernel missing); test-host.sh's 123/124/125
# (the emulated host died, timed out, could not start). In an emulated host, a run in which
# a skiff VM or the emulated host itself triple-faulted, a guest stopped running (its
# heartbeat gone), the host's kernel recursed out of its stack in its exception entry, or
# the host stopped with a wake-up lost, runs once more (RETRY line; QEMU's problem, see below), within what is left of TIMEOUT.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
usage() {
	sed -n '10p' "$0" | sed 's/^# //' >&2
	exit 2
}

[ $# -gt 0 ] || usage
timeout_s=$1
host_args=(--timeout "$1")
shift
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	case $1 in
	--cpus | --boot-timeout) [ $# -ge 2 ] || usage && host_args+=("$1" "$2") && shift 2 ;;
	--kernel)
		[ $# -ge 2 ] || usage
		if ! bash "$repo/scripts/build-kernels.sh" --print-path "$2" x86_64 >/dev/null 2>&1; then
			echo "host_run.sh: SKIP: no $2 x86_64 kernel; run scripts/build-kernels.sh"
			exit 77
		fi
		shift 2
		;;
	*) usage ;;
	esac
done
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || usage
# Python through pyenv's shim (a shell script) costs seconds per start in an emulated host
# (42 s once, against 4-7 s for the interpreter): the interpreter's own directory goes first
# on PATH (test-host.sh passes it through).
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ]; then
	PATH="$(dirname "$py"):$PATH"
	export PATH
fi
w=$(mktemp -d "$PWD/skiff-linux.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w"
set +e
bash "${SKIFF_TEST_HOST_SH:-$repo/scripts/test-host.sh}" --work "$w" "${host_args[@]}" -- "$@" 2>&1 | tee "$w/.out"
rc=${PIPESTATUS[0]}
# QEMU's SVM emulation now and then corrupts a guest that takes a nested page fault during
# event injection: it triple-faults (docs/test-host.md, "Emulator problems found", has the
# trace). The same emulator, rarely, takes down the emulated host itself: a triple fault
# of the host kernel (test-host.sh: "the emulated host triple-faulted"), or QEMU ending with
# no exit status from the host. Neither is a result of the test: in an emulated host only, a
# failed run that shows one of them runs once more, said so, within what is left of
# TIMEOUT; the second run's result stands. On hardware a triple fault is a failure like any
# other, and any other failure (a panic, a hang, a wrong byte) is never retried.
# The same for an emulated host that stopped (test-host.sh's "the emulated host stopped",
# with its vCPU samples) where one vCPU is halted with interrupts enabled in every sample
# while its LAPIC holds an interrupt in the IRR: the emulator lost that vCPU's wake-up (seen
# 2026-12-02: both vCPUs in native_safe_halt, IF=1, the timer's vector 236 pending in the
# IRR for 120 s). No command can cause that on a working CPU.
# And for a guest that stopped running altogether (tests/support/guest_watch.py: its console
# silent for 60 s though its heartbeat prints a line every 10 s from a timer): the hang the
# same SVM fault leaves when the guest does not triple-fault.
# And for the emulated host's own kernel dying of exception recursion in its entry code
# ("BUG: TASK stack guard page was hit", RIP in error_entry, while a skiff vCPU thread sat
# in KVM_RUN): emulated CPU state corrupted across a VMRUN/#VMEXIT (seen in CI 2026-12-03
# and beside /dev/kvm VMs, docs/test-host.md). Any other panic of the host stands.
emulator_fault='ended \(triple-fault\)|test-host.sh: the emulated host triple-faulted|test-host.sh: QEMU ended \(status [0-9]+\) without|guest_watch: the guest stopped'
lost_wakeup() {
	local cpu all halted
	grep -q '^test-host.sh: the emulated host stopped' "$1" || return 1
	for cpu in $(sed -n 's/^ *vCPU \([0-9]*\) LAPIC: .* IRR [0-9].*/\1/p' "$1"); do
		all=$(grep -c "sample [0-9]*: vCPU $cpu: " "$1")
		halted=$(grep -c "sample [0-9]*: vCPU $cpu: .* IF=1 .*HLT=1" "$1")
		[ "$all" -gt 0 ] && [ "$all" = "$halted" ] && return 0
	done
	return 1
}
entry_recursion() {
	grep -q '^test-host.sh: the emulated host failed: .*BUG: TASK stack guard page was hit' "$1" &&
		grep -qE 'RIP: 0010:(error_entry|asm_exc_[a-z_]+)\+' "$1"
}
left=$((timeout_s - SECONDS))
why=''
if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ "$(bash "$repo/scripts/machine-info.sh" --kvm)" != hardware ]; then
	if grep -qE "$emulator_fault" "$w/.out"; then
		why=$(grep -m1 -oE "$emulator_fault" "$w/.out")
	elif entry_recursion "$w/.out"; then
		why="the emulated host's kernel overflowed its stack in its exception entry (error_entry)"
	elif lost_wakeup "$w/.out"; then
		why="the emulated host stopped with an interrupt pending on a halted vCPU, a lost wake-up"
	fi
fi
if [ -n "$why" ]; then
	if [ "$left" -lt 60 ]; then
		echo "host_run.sh: an emulator fault (docs/test-host.md), but only $left s of $timeout_s are left: no retry"
		exit "$rc"
	fi
	echo "host_run.sh: RETRY: $why (QEMU's emulation," \
		"docs/test-host.md); running the test once more within the $left s left, and its result stands"
	rm -f "$w/.out"
	host_args[1]=$left
	bash "${SKIFF_TEST_HOST_SH:-$repo/scripts/test-host.sh}" --work "$w" "${host_args[@]}" -- "$@"
	rc=$?
fi
exit "$rc"
