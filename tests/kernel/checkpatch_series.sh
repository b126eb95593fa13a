#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run the kernel's scripts/checkpatch.pl --strict on every patch listed in
# guest-kernel-patches/host-support/series and guest-kernel-patches/series/series;
# each must report 0 errors, 0 warnings and 0 checks.
#
# Which checkpatch.pl: the unpacked linux-source-6.1 tree that
# scripts/build-kernels.sh keeps in its cache ($SKIFF_CACHE, default
# ~/.cache/skiff, directory kernels/src/<version>/) if there is one; otherwise a
# partial unpack of the tarball into WORKDIR (scripts/, include/ and the
# top-level files checkpatch.pl looks for, about 10 s; kept for later runs and
# redone when the tarball changes).
#
# Usage: checkpatch_series.sh REPO WORKDIR [SERIES_DIR]
#   SERIES_DIR holds a series file and its patches (default: both directories
#   above); the test suite points it at a bad patch too. An empty or missing
#   series fails.
# Exit status: 0 every patch clean, 1 a patch has findings, 2 no kernel source.
set -eu

repo=$1
work=$2
cache=${SKIFF_CACHE:-${XDG_CACHE_HOME:-${HOME:-$repo}/.cache}/skiff}
tarball=${SKIFF_LINUX_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
if [ $# -ge 3 ]; then
	dirs=("$3")
else
	dirs=("$repo/guest-kernel-patches/host-support" "$repo/guest-kernel-patches/series")
fi

root=
for d in "$cache"/kernels/src/*/; do
	[ -f "$d/scripts/checkpatch.pl" ] && [ -f "$d/MAINTAINERS" ] && root=${d%/}
done

if [ -z "$root" ]; then
	if [ ! -r "$tarball" ]; then
		echo "checkpatch_series: no kernel source: neither $cache/kernels/src/* nor $tarball (run scripts/setup.sh)" >&2
		exit 2
	fi
	root=$work/linux-checkpatch
	stamp=$(stat -c '%s %Y' "$tarball")
	if [ "$(cat "$root/.skiff-stamp" 2>/dev/null)" != "$stamp" ]; then
		rm -rf "$root" "$root.tmp"
		mkdir -p "$root.tmp"
		top=linux-source-6.1
		tar -xf "$tarball" -C "$root.tmp" --strip-components=1 \
			"$top/scripts" "$top/include" "$top/COPYING" "$top/CREDITS" \
			"$top/Kbuild" "$top/MAINTAINERS" "$top/Makefile" "$top/README"
		# checkpatch.pl only tests that these exist to recognise a tree.
		for d in Documentation arch drivers fs init ipc kernel lib; do
			mkdir -p "$root.tmp/$d"
		done
		echo "$stamp" >"$root.tmp/.skiff-stamp"
		mv "$root.tmp" "$root"
	fi
fi
echo "checkpatch_series: using $root/scripts/checkpatch.pl"

status=0
total=0
for dir in "${dirs[@]}"; do
	n=0
	for p in $(sed -e 's/#.*//' "$dir/series" 2>/dev/null); do
		n=$((n + 1))
		if out=$(cd "$root" &&
			perl scripts/checkpatch.pl --strict --no-color "$dir/$p" 2>&1); then
			rc=0
		else
			rc=$?
		fi
		summary=$(printf '%s\n' "$out" | grep '^total: ' || true)
		echo "checkpatch_series: ${dir##*/}/$p: $summary"
		case "$rc:$summary" in
		"0:total: 0 errors, 0 warnings, 0 checks,"*) ;;
		*)
			printf '%s\n' "$out" >&2
			status=1
			;;
		esac
	done
	[ "$n" -gt 0 ] || { echo "checkpatch_series: $dir/series is empty or missing" >&2; exit 1; }
	total=$((total + n))
done
[ "$status" -eq 0 ] && echo "checkpatch_series: PASS ($total patches)"
exit "$status"
