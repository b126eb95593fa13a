#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build the initramfs of skiff's test guests (UML and x86-64; same file for both):
# busybox-static with all its applets in /bin, the guest test programs in /bin, and
# tests/guest-programs/init.sh as /init (its header documents the kernel command line
# parameters skiff.run64=, skiff.ctl=, skiff.hostfs=, skiff.halt= and the console
# markers SKIFF-BEGIN / SKIFF-STEP / SKIFF-RESULT / SKIFF-END). Kernel modules for a stock
# kernel: --file X.ko:/lib/modules/... plus --file LIST:/etc/skiff/modules (the paths, in
# load order; /init insmods them first), or a second cpio archive appended to this one
# (scripts/stock-kernels.sh makes one per kernel).
#
# Usage: build-initramfs.sh -o OUTPUT [--bin FILE]... [--file SRC:DEST]... [--run CMD]
#   -o OUTPUT         the cpio "newc" archive; gzip-compressed if OUTPUT ends in .gz
#   --bin FILE        put the static executable FILE in /bin (repeatable). Without any
#                     --bin, the programs of tests/guest-programs/ are compiled here with
#                     gcc -static into $SKIFF_CACHE/guest-programs (default <repo>/.cache)
#   --file SRC:DEST   any other file (mode kept; parent directories are created)
#   --run CMD         the default script /init runs (/etc/skiff/run); skiff.run64= on the
#                     kernel command line overrides it
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${SKIFF_CACHE:-$repo/.cache}
busybox=${SKIFF_BUSYBOX:-/bin/busybox}
gp=$repo/tests/guest-programs

die() {
	echo "build-initramfs.sh: error: $*" >&2
	exit 1
}
usage() {
	sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

out='' run='' have_bins=0
bins=()
files=()
while [ $# -gt 0 ]; do
	case $1 in
	-o | --output)
		out=${2:-}
		shift
		;;
	--bin)
		[ -n "${2:-}" ] || usage
		bins+=("$2")
		have_bins=1
		shift
		;;
	--file)
		[[ ${2:-} == *:* ]] || usage
		files+=("$2")
		shift
		;;
	--run)
		run=${2-}
		shift
		;;
	*) usage ;;
	esac
	shift
done
[ -n "$out" ] || usage

[ -x "$busybox" ] || die "$busybox is missing: run scripts/setup.sh (package busybox-static)"
is_dynamic() { readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter'; }
is_dynamic "$busybox" &&
	die "$busybox is dynamically linked; install busybox-static"

# Without --bin: compile the guest programs here (each tests/guest-programs/*.c is one
# program), the same flags the CMake build uses.
if [ $have_bins = 0 ]; then
	bdir=$cache/guest-programs
	mkdir -p "$bdir"
	for src in "$gp"/*.c; do
		p=$bdir/$(basename "$src" .c)
		if [ ! -x "$p" ] || [ -n "$(find "$gp" -newer "$p" -name '*.[ch]')" ]; then
			gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -static -pthread \
				-o "$p.tmp" "$src" || die "compiling $src failed"
			mv "$p.tmp" "$p"
		fi
		bins+=("$p")
	done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
spec=$work/spec
{
	for d in /bin /dev /etc /etc/skiff /proc /sys /tmp /host /root; do
		echo "dir $d 0755 0 0"
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "nod /dev/null 0666 0 0 c 1 3"
	echo "file /bin/busybox $busybox 0755 0 0"
	for a in $("$busybox" --list); do
		[ "$a" = busybox ] || echo "slink /bin/$a busybox 0777 0 0"
	done
	for b in "${bins[@]}"; do
		[ -f "$b" ] || die "--bin $b: no such file"
		is_dynamic "$b" &&
			die "--bin $b is dynamically linked; guest programs must be static"
		echo "file /bin/$(basename "$b") $(realpath "$b") 0755 0 0"
	done
	declare -A made=()
	for f in "${files[@]}"; do
		s=${f%%:*} d=${f#*:}
		[ -f "$s" ] || die "--file $s: no such file"
		p=$(dirname "$d")
		parts=()
		while [ "$p" != / ] && [ "$p" != . ]; do
			parts=("$p" "${parts[@]}")
			p=$(dirname "$p")
		done
		for p in "${parts[@]}"; do
			[ -n "${made[$p]:-}" ] || echo "dir $p 0755 0 0"
			made[$p]=1
		done
		echo "file $d $(realpath "$s") $(stat -c %a "$s") 0 0"
	done
	echo "file /init $gp/init.sh 0755 0 0"
	if [ -n "$run" ]; then
		printf '%s\n' "$run" >"$work/run"
		echo "file /etc/skiff/run $work/run 0644 0 0"
	fi
} >"$spec"

mkdir -p "$(dirname "$out")"
if [[ $out == *.gz ]]; then
	python3 "$repo/scripts/mkcpio.py" "$spec" - | gzip -6 -n >"$out.tmp"
else
	python3 "$repo/scripts/mkcpio.py" "$spec" "$out.tmp"
fi
mv "$out.tmp" "$out"
echo "build-initramfs.sh: $out ($(stat -c %s "$out") bytes; /bin: busybox $(for b in "${bins[@]}"; do printf '%s ' "$(basename "$b")"; done))"
