#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Check that every patch of one group of the feature series (GROUP-*.patch
# in series/series, e.g. rx-batch or dgram; "mrg" for the unprefixed mergeable RX
# patches 0001-0005) builds on its own: for k = 1 .. N,
# apply the test-only series, the feature series up to the group's first
# patch, and the group's patches 1 .. k, then compile net/vmw_vsock/ (make
# W=1; any warning in a vsock file fails the step) for um, x86_64 and arm64
# (cross-compiled with aarch64-linux-gnu-gcc) with the patched kernels' configs.
#
# Needs the unpacked source and the patched configs that
# scripts/build-kernels.sh leaves in $SKIFF_CACHE (default ~/.cache/skiff):
# kernels/src/<version>/ and kernels/out/patched/<arch>/config.
#
# Usage: build-each.sh GROUP [WORKDIR]   (WORKDIR default: a new directory in
#        /tmp, removed at the end; about 1 min per patch and arch on 2 CPUs)
# Exit status: 0 every step built without warnings, 1 a step failed (named,
# with the compiler output), 2 missing source or configs.
# SKIFF_BUILD_EACH_ARCHES: the arches to build (default "um x86_64 arm64").
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: build-each.sh GROUP [WORKDIR]" >&2; exit 2; }
group=$1
shift

here=$(cd "$(dirname "$0")" && pwd)
gkp=$(cd "$here/.." && pwd)
repo=$(cd "$gkp/.." && pwd)
cache=${SKIFF_CACHE:-${XDG_CACHE_HOME:-${HOME:-$repo}/.cache}/skiff}
jobs=${SKIFF_JOBS:-2}

src=
for d in "$cache"/kernels/src/*/; do
	[ -f "$d/Makefile" ] && src=${d%/}
done
[ -n "$src" ] || { echo "build-each: no source in $cache/kernels/src (run scripts/build-kernels.sh)" >&2; exit 2; }
arches=${SKIFF_BUILD_EACH_ARCHES:-um x86_64 arm64}
# make_arch A: the make variables that build for arch A
make_arch() {
	case $1 in
	arm64) echo "ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-" ;;
	*) echo "ARCH=$1" ;;
	esac
}
for a in $arches; do
	[ -f "$cache/kernels/out/patched/$a/config" ] ||
		{ echo "build-each: no $cache/kernels/out/patched/$a/config (run scripts/build-kernels.sh)" >&2; exit 2; }
done

list() { # list DIR: the patches its series file names, in order
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1/series" | while read -r p; do echo "$1/$p"; done
}

# The mergeable RX series has no group prefix (0001-0005-*.patch): group "mrg".
pat="/$group-"
[ "$group" = mrg ] && pat='/[0-9][0-9][0-9][0-9]-'
first=$(list "$gkp/series" | grep -n -- "$pat" | head -n 1 | cut -d: -f1)
[ -n "$first" ] || { echo "build-each: no $group patch in the series" >&2; exit 1; }
mapfile -t base < <(list "$gkp/test-only"; list "$gkp/series" | head -n "$((first - 1))")
mapfile -t grp < <(list "$gkp/series" | grep -- "$pat")
[ ${#grp[@]} -gt 0 ] || { echo "build-each: no $group patch in the series" >&2; exit 1; }

if [ $# -ge 1 ]; then
	work=$1
	mkdir -p "$work"
else
	work=$(mktemp -d /tmp/build-each.XXXXXX)
	trap 'rm -rf "$work"' EXIT
fi
tree=$work/tree
rm -rf "$tree"
cp -al "$src" "$tree"

apply() { # apply PATCH: into $tree, breaking the hard links of what it touches
	local f
	for f in $(sed -n -e 's#^+++ [^/]*/\([^\t ]*\).*#\1#p' "$1"); do
		[ -f "$tree/$f" ] || continue
		cp "$tree/$f" "$tree/$f.tmp"
		mv -f "$tree/$f.tmp" "$tree/$f"
	done
	patch -d "$tree" -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch -s <"$1"
}

for p in "${base[@]}"; do
	apply "$p"
done
for a in $arches; do
	mkdir -p "$work/build-$a"
	cp "$cache/kernels/out/patched/$a/config" "$work/build-$a/.config"
	# shellcheck disable=SC2046 # make_arch gives one or two words
	make -s -C "$tree" O="$work/build-$a" $(make_arch "$a") olddefconfig >/dev/null
done

status=0
k=0
for p in "${grp[@]}"; do
	k=$((k + 1))
	apply "$p"
	for a in $arches; do
		log=$work/build-$a/step-$k.log
		# Recompile the directory from scratch: each step must build by itself.
		rm -f "$work/build-$a"/net/vmw_vsock/*.o
		# shellcheck disable=SC2046
		if make -C "$tree" O="$work/build-$a" $(make_arch "$a") -j"$jobs" W=1 \
			net/vmw_vsock/ >"$log" 2>&1 &&
			! grep -qE '(net/vmw_vsock|include/(linux|net)/.*vsock).*(warning|error):' "$log"; then
			echo "build-each: 1..$k ($(basename "$p")) $a: ok"
		else
			echo "build-each: 1..$k ($(basename "$p")) $a: FAILED" >&2
			grep -E '(warning|error)' "$log" | grep -v 'kernel-offsets' >&2 || tail -20 "$log" >&2
			status=1
		fi
	done
done
[ "$status" -eq 0 ] && echo "build-each: PASS (${#grp[@]} patches x $arches)"
exit "$status"
