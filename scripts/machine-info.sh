#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One line about the machine a log came from, printed first by test.sh and demo.sh:
#
#   machine: <vendor> <model>, <n> CPUs; XSAVE <bytes> B (XCR0 <mask>[, AVX-512][, AMX]);
#            /dev/kvm: hardware (kvm_intel|kvm_amd) | nested PVM (kvm_pvm) | <other> | none;
#            host kernel <release>
#
# The XSAVE size is CPUID leaf 0xD, sub-leaf 0, EBX: the bytes an XSAVE of every feature
# the host kernel enabled in XCR0 takes, which is what the host's ptrace requires for an
# NT_X86_XSTATE regset (user-mode Linux depends on it; guest-kernel-patches/README). It is
# read by a ten-line C program compiled on the spot; without a C compiler it says "?".
# --kvm prints only the /dev/kvm word (hardware|pvm|other|none) for scripts to branch on.
set -euo pipefail

kvm_kind() {
	if [ ! -e /dev/kvm ]; then
		echo none
	elif [ -e /sys/module/kvm_intel ] || [ -e /sys/module/kvm_amd ]; then
		echo hardware
	elif [ -e /sys/module/kvm_pvm ]; then
		echo pvm
	else
		echo other
	fi
}

if [ "${1:-}" = --kvm ]; then
	kvm_kind
	exit 0
fi

cpu_field() { sed -n "s/^$1[[:space:]]*: //p" /proc/cpuinfo | head -n1; }
vendor=$(cpu_field vendor_id)
model=$(cpu_field 'model name')
flags=" $(cpu_field flags) "

xsave='?'
if command -v cc >/dev/null 2>&1; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cat >"$tmp/x.c" <<'EOF'
#include <cpuid.h>
#include <stdio.h>
int main(void)
{
	unsigned int a, b, c, d, lo = 0, hi = 0;

	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d))
		return 1;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	printf("%u B (XCR0 %#llx", b, ((unsigned long long)hi << 32) | lo);
	return 0;
}
EOF
	if cc -O0 -o "$tmp/x" "$tmp/x.c" 2>/dev/null && out=$("$tmp/x" 2>/dev/null); then
		xsave=$out
		case $flags in *' avx512f '*) xsave+=", AVX-512" ;; esac
		case $flags in *' amx_tile '*) xsave+=", AMX" ;; esac
		xsave+=")"
	fi
fi

case $(kvm_kind) in
hardware) kvm="hardware ($(ls /sys/module | grep -m1 -E '^kvm_(intel|amd)$'))" ;;
pvm) kvm="nested PVM (kvm_pvm: ring 0 emulated, no guest user space)" ;;
other) kvm="present, not hardware ($(ls /sys/module | grep -E '^kvm_' | head -n1 || echo 'module unknown'))" ;;
none) kvm=none ;;
esac

echo "machine: ${vendor:-?} ${model:-?}, $(nproc) CPUs; XSAVE $xsave; /dev/kvm: $kvm; host kernel $(uname -r)"
