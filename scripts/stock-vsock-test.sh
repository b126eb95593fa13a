#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The newest vsock_test Debian ships (issue 21): Linux's tools/testing/vsock/vsock_test
# from the linux-source package of the newest stock kernel pinned in
# scripts/stock-kernels.pins (its last line: sid today), the same upstream version and
# Debian revision as that kernel, built static for the test guests. Nothing else of the
# tree is built: `make headers` (the tree's own uapi headers, so the program sees the
# socket options and ioctls of its kernel, not the machine's 6.1 headers), then
# `make vsock_test` in tools/testing/vsock with -static.
# Prints "VERSION PATH" (e.g. "7.2.13-1 /root/.cache/skiff/stock-kernels/vsock_test_7.2.13-1/
# vsock_test").
#
# Usage: stock-vsock-test.sh [--suite SUITE]   (default: the last pinned suite)
# apt as in scripts/stock-kernels.sh (scripts/lib/private-apt.sh, its lists under
# CACHE/stock-kernels/apt); the package is about 165 MB, fetched once; the unpacked
# tree lives only while building (about 1 min on 2 cores).
# Cache: CACHE/stock-kernels/vsock_test_VERSION/ (CACHE: $SKIFF_CACHE, default
# ~/.cache/skiff), keyed by the version and this script's recipe; one builder at a time.
# Exit 0, or 1 with a reason.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${SKIFF_CACHE:-${XDG_CACHE_HOME:-${HOME:-$repo}/.cache}/skiff}
pins=$repo/scripts/stock-kernels.pins
top=$cache/stock-kernels
recipe=1 # bump when the build below changes

die() {
	echo "stock-vsock-test.sh: error: $*" >&2
	exit 1
}
suite=''
case ${1:-} in
'') ;;
--suite) suite=${2:?--suite needs a suite} ;;
*)
	sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac

if [ -n "$suite" ]; then
	line=$(awk -v s="$suite" '$1 == s' "$pins" | tail -n1)
else
	line=$(grep -v '^#' "$pins" | grep . | tail -n1)
fi
[ -n "$line" ] || die "no pinned kernel${suite:+ for suite $suite} in $pins"
read -r s rel pkg _ <<<"$line"
ver=${pkg#*=}
# 7.2.13+deb14-amd64 -> 7.2
series=$(printf '%s' "$rel" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')
[ -n "$series" ] || die "cannot tell the source series of $rel ($s)"
src_pkg=linux-source-$series=$ver
dir=$top/vsock_test_$ver
key="$recipe $src_pkg $(gcc -dumpfullversion)"

if [ -x "$dir/vsock_test" ] && [ "$(cat "$dir/key" 2>/dev/null)" = "$key" ]; then
	echo "$ver $dir/vsock_test"
	exit 0
fi
mkdir -p "$top"
exec 9>"$top/.lock-vsock-test"
flock -w 900 9 || die "another stock-vsock-test.sh held $top/.lock-vsock-test for 15 minutes"
if [ -x "$dir/vsock_test" ] && [ "$(cat "$dir/key" 2>/dev/null)" = "$key" ]; then
	echo "$ver $dir/vsock_test"
	exit 0
fi

. "$repo/scripts/lib/private-apt.sh"
srcs=()
for x in bookworm trixie sid; do
	srcs+=("deb [signed-by=$papt_keyring] $papt_mirror $x main")
	[ $x = sid ] || srcs+=("deb [signed-by=$papt_keyring] $papt_security $x-security main")
done
papt_init "$top/apt" stock-vsock-test.sh "${srcs[@]}"

tmp=$(mktemp -d "$top/.tmp-vsock-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "stock-vsock-test.sh: fetching $src_pkg ($s; about 165 MB, once) and building vsock_test" >&2
papt_download "$tmp" "$src_pkg" ||
	die "downloading $src_pkg failed; if $s no longer carries it, run 'scripts/stock-kernels.sh --update-pins' and commit scripts/stock-kernels.pins; else check the network to $papt_mirror"
timeout 300 dpkg -x "$tmp"/linux-source-*.deb "$tmp/x" || die "dpkg -x of $src_pkg failed"
tarball=$(ls "$tmp"/x/usr/src/linux-source-"$series".tar.* 2>/dev/null | head -n1)
[ -n "$tarball" ] || die "$src_pkg holds no /usr/src/linux-source-$series.tar.*"
t=linux-source-$series
# Only what `make headers` and the test program need.
timeout 600 tar -xf "$tarball" -C "$tmp" --wildcards "$t/Makefile" "$t/Kbuild" "$t/scripts/*" \
	"$t/include/uapi/*" "$t/arch/x86/include/uapi/*" "$t/arch/x86/entry/syscalls/*" \
	"$t/arch/x86/Makefile*" "$t/arch/x86/tools/*" "$t/usr/*" "$t/tools/include/*" \
	"$t/tools/testing/vsock/*" || die "unpacking $tarball failed"
rm -rf "$tmp/x"
timeout 600 make -C "$tmp/$t" ARCH=x86 headers >"$tmp/build.log" 2>&1 || {
	tail -n 20 "$tmp/build.log" >&2
	die "make headers in $t failed (log above)"
}
timeout 600 make -C "$tmp/$t/tools/testing/vsock" vsock_test LDFLAGS=-static >>"$tmp/build.log" 2>&1 || {
	tail -n 20 "$tmp/build.log" >&2
	die "building $t's tools/testing/vsock/vsock_test failed (log above)"
}
rm -rf "$dir"
mkdir -p "$dir"
cp "$tmp/$t/tools/testing/vsock/vsock_test" "$dir/vsock_test"
cp "$tmp/build.log" "$dir/build.log"
echo "$key" >"$dir/key"
echo "$ver $dir/vsock_test"
