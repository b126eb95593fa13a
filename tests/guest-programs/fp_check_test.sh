#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# FP/SIMD state of guest processes on UML (issue 15; guest-kernel-patches/host-support):
# boot the UML kernel with the initramfs and run fp-check in the guest (3 processes x
# 400 rounds: every vector register the CPU has, through sched_yield(), page faults and
# a signal handler that clobbers them; the signal frame is checked against the x86-64
# layout; a tracer reads and writes a stopped child's registers). Also checks that the kernel printed the FP state size it found at boot and
# that its signal frames carry an XSAVE image of exactly that size (when the host has
# XSAVE), and prints the host's own CPUID figure next to it.
# Usage: fp_check_test.sh INITRAMFS HOST_FP_CHECK [VARIANT | --kernel FILE]
#   HOST_FP_CHECK: fp-check built for the host (only --xsave-size is run there)
# Exit 0 pass, 1 fail, 77 skipped (kernel not built: run scripts/build-kernels.sh).
set -euo pipefail
initrd=$1 host_tool=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${3:-}" = --kernel ]; then
	kernel=$4
else
	variant=${3:-baseline}
	if ! kernel=$("$repo/scripts/build-kernels.sh" --print-path "$variant" um); then
		echo "fp_check_test: SKIP: no $variant um kernel ($kernel); run scripts/build-kernels.sh"
		exit 77
	fi
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
"$repo/scripts/guest-run.sh" uml --kernel "$kernel" --initrd "$initrd" --timeout 120 \
	--run 'dmesg | grep "Host FP register state" || true
fp-check --procs 3 --rounds 400' >"$out" 2>&1
rc=$?
set -e
cat "$out"
fail() {
	echo "fp_check_test: FAIL: $*"
	exit 1
}
grep -q '^FP-CHECK status=ok ' "$out" || fail "fp-check did not pass in the guest"
[ $rc = 0 ] || fail "guest-run.sh exit $rc"
[ "$(grep -c '^FP-CHECK-PROC ' "$out")" = 3 ] || fail "expected 3 FP-CHECK-PROC lines"
size=$(sed -n 's/.*Host FP register state: \([0-9]*\) bytes.*/\1/p' "$out" | head -n1)
[ -n "$size" ] || fail "no 'Host FP register state' line from the kernel"
cpuid=$("$host_tool" --xsave-size | sed -n 's/^FP-CHECK-XSAVE cpuid_size=//p')
echo "fp_check_test: guest kernel FP state $size bytes; host CPUID 0xD XSAVE size ${cpuid:-?}"
if [ "${cpuid:-0}" != 0 ]; then
	# An XSAVE host: every signal frame must hold the kernel's whole XSAVE image.
	bad=$(grep '^FP-CHECK-PROC ' "$out" | grep -v " frame_xstate=$size\$" || true)
	[ -z "$bad" ] || fail "signal frames do not carry the $size-byte XSAVE image: $bad"
fi
echo "fp_check_test: pass"
