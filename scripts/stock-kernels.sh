#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Debian's stock amd64 kernels as skiff guests (issue 21): the kernels the suites in
# scripts/stock-kernels.pins ship (bookworm, trixie, sid), each with the modules a guest
# needs for skiff's vsock device, which Debian builds as modules. Nothing is compiled.
# Prints one line per kernel: "SUITE RELEASE DIR", where DIR holds
#   vmlinuz          the package's kernel
#   modules.cpio.gz  a cpio archive to append to the test initramfs (scripts/
#                    build-initramfs.sh; Linux unpacks concatenated archives in turn):
#                    /lib/modules/RELEASE/*.ko (decompressed) and /etc/skiff/modules, their
#                    paths in load order, which the guest's /init (tests/guest-programs/
#                    init.sh) insmods before anything else: vsock, vmw_vsock_virtio_transport
#                    (with vmw_vsock_virtio_transport_common), virtio_mmio and whatever their
#                    .modinfo "depends=" names (virtio, virtio_ring, ... unless built in)
#   modules          the same list, one file name a line
#   package          the pinned PACKAGE=VERSION words
#
# Usage: stock-kernels.sh [--suite SUITE]...     fetch (once) and print the pinned kernels
#        stock-kernels.sh --update-pins          move the pins to what the suites carry today
#   --suite SUITE   only this suite's kernel (repeatable)
#   --pins FILE     another pins file (default scripts/stock-kernels.pins)
#
# apt, without touching the machine's own lists (scripts/lib/private-apt.sh): the suites
# and their -security suites, under CACHE/stock-kernels/apt; `apt-get download
# PACKAGE=VERSION` then `dpkg -x`. The package
# lists (about 30 MB) are fetched only when a kernel is missing from the cache, then kept.
# --update-pins picks, per suite, the newest linux-image-amd64 of the suite and its
# -security suite, and the versioned packages it depends on that hold the kernel.
# Cache: CACHE/stock-kernels/SUITE_RELEASE_VERSION/ (CACHE: $SKIFF_CACHE, default
# ~/.cache/skiff, as in build-kernels.sh), one builder at a time (flock). Each apt step is
# bounded (300 s); a failure names the package and the command that fixes it. A suite
# drops old versions (sid within days): a pin it no longer carries fails with the advice
# to run --update-pins. Exit 0, or 1 with a reason.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${SKIFF_CACHE:-${XDG_CACHE_HOME:-${HOME:-$repo}/.cache}/skiff}
pins=$repo/scripts/stock-kernels.pins
top=$cache/stock-kernels
aptdir=$top/apt
# What a guest needs for skiff's device; dependencies come from each module's .modinfo.
want_modules=(vsock vmw_vsock_virtio_transport_common vmw_vsock_virtio_transport virtio_mmio)

die() {
	echo "stock-kernels.sh: error: $*" >&2
	exit 1
}
usage() {
	sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

update=0
suites=()
while [ $# -gt 0 ]; do
	case $1 in
	--update-pins) update=1 ;;
	--suite)
		[ -n "${2:-}" ] || usage
		suites+=("$2")
		shift
		;;
	--pins)
		[ -n "${2:-}" ] || usage
		pins=$2
		shift
		;;
	*) usage ;;
	esac
	shift
done

[ -r "$pins" ] || die "no pins file $pins"

. "$repo/scripts/lib/private-apt.sh"
srcs=()
for s in bookworm trixie sid; do
	srcs+=("deb [signed-by=$papt_keyring] $papt_mirror $s main")
	[ $s = sid ] || srcs+=("deb [signed-by=$papt_keyring] $papt_security $s-security main")
done
papt_init "$aptdir" stock-kernels.sh "${srcs[@]}"

# The first Depends: field of `apt-cache show` (reading all of it: no SIGPIPE).
depends() { awk '/^Depends: / && !done { sub(/^Depends: /, ""); print; done = 1 }'; }

# --update-pins: per suite, the newest linux-image-amd64 of SUITE and SUITE-security.
if [ $update = 1 ]; then
	papt_lists force
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	sed -n '/^#/p' "$pins" | grep -v '^# Pinned ' >"$out"
	echo "# Pinned $(date -u +%F)." >>"$out"
	for s in bookworm trixie sid; do
		best=''
		while read -r v; do
			if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
		done < <(apt-cache "${papt_opts[@]}" madison linux-image-amd64 |
			awk -F' *[|] *' -v s="$s" '$3 ~ (" " s "(-security)?/main ") {print $2}')
		[ -n "$best" ] || die "the $s lists hold no linux-image-amd64"
		img=$(apt-cache "${papt_opts[@]}" show "linux-image-amd64=$best" | depends |
			tr ',' '\n' | sed -n 's/^ *\(linux-image-[0-9][^ ]*-amd64\) (= \(.*\))$/\1=\2/p' | head -n1)
		[ -n "$img" ] || die "linux-image-amd64 $best ($s) depends on no linux-image-*-amd64"
		rel=${img%%=*}
		rel=${rel#linux-image-}
		# Since 7.x the image package is empty and depends on the packages with the files.
		parts=$(apt-cache "${papt_opts[@]}" show "$img" | depends | tr ',' '\n' |
			sed -n "s/^ *\(linux-\(binary\|modules\)-$(printf '%s' "$rel" | sed 's/[.]/\\./g')\) (= \(.*\))$/\1=\3/p" | tr '\n' ' ')
		echo "$s $rel ${parts:-$img}" | sed 's/ *$//' >>"$out"
		echo "stock-kernels.sh: $s: $rel (${parts:-$img})" >&2
	done
	cat "$out" >"$pins"
	echo "stock-kernels.sh: wrote $pins; commit it" >&2
	exit 0
fi

tmp=''
trap 'rm -rf "$tmp"' EXIT

# One pinned kernel into the cache (when missing); prints "SUITE RELEASE DIR".
fetch() {
	local suite=$1 rel=$2 ver dir p pkgs=("${@:3}") vmlinuz moddir
	ver=${pkgs[0]#*=}
	dir=$top/${suite}_${rel}_$ver
	if [ ! -s "$dir/modules.cpio.gz" ] || [ ! -s "$dir/vmlinuz" ]; then
		exec 9>"$top/.lock"
		flock -w 900 9 || die "another stock-kernels.sh held $top/.lock for 15 minutes"
	fi
	if [ -s "$dir/modules.cpio.gz" ] && [ -s "$dir/vmlinuz" ]; then
		echo "$suite $rel $dir"
		return 0
	fi
	tmp=$(mktemp -d "$top/.tmp.XXXXXX")
	echo "stock-kernels.sh: fetching $suite's ${pkgs[*]} (about 110 MB, once)" >&2
	papt_download "$tmp" "${pkgs[@]}" || {
		rm -rf "$tmp"
		die "downloading ${pkgs[*]} ($suite) failed; if $suite no longer carries that version, run 'scripts/stock-kernels.sh --update-pins' and commit scripts/stock-kernels.pins; else check the network to $papt_mirror"
	}
	for p in "$tmp"/*.deb; do
		timeout 300 dpkg -x "$p" "$tmp/x" || die "dpkg -x $(basename "$p") failed"
	done
	vmlinuz='' moddir=''
	for p in "$tmp/x/boot/vmlinuz-$rel" "$tmp/x/usr/lib/modules/$rel/vmlinuz"; do
		[ -f "$p" ] && vmlinuz=$p
	done
	for p in "$tmp/x/lib/modules/$rel" "$tmp/x/usr/lib/modules/$rel"; do
		[ -d "$p/kernel" ] && moddir=$p
	done
	[ -n "$vmlinuz" ] || die "${pkgs[*]} hold no vmlinuz for $rel"
	[ -n "$moddir" ] || die "${pkgs[*]} hold no modules directory for $rel"
	python3 "$repo/scripts/kmod-order.py" "$moddir" "$tmp/ko" "${want_modules[@]}" >"$tmp/modules" ||
		die "resolving the vsock modules of $rel failed"
	{
		for d in /lib /lib/modules "/lib/modules/$rel" /etc /etc/skiff; do echo "dir $d 755 0 0"; done
		while read -r m; do echo "file /lib/modules/$rel/$m $tmp/ko/$m 644 0 0"; done <"$tmp/modules"
		sed "s|^|/lib/modules/$rel/|" "$tmp/modules" >"$tmp/load"
		echo "file /etc/skiff/modules $tmp/load 644 0 0"
	} >"$tmp/spec"
	mkdir -p "$tmp/out"
	python3 "$repo/scripts/mkcpio.py" "$tmp/spec" - | gzip -6 -n >"$tmp/out/modules.cpio.gz"
	cp "$vmlinuz" "$tmp/out/vmlinuz"
	cp "$tmp/modules" "$tmp/out/modules"
	echo "${pkgs[*]}" >"$tmp/out/package"
	rm -rf "$dir"
	mv "$tmp/out" "$dir"
	rm -rf "$tmp"
	echo "$suite $rel $dir"
}

n=0
while read -r suite rel rest; do
	case $suite in '' | '#'*) continue ;; esac
	if [ ${#suites[@]} -gt 0 ] && ! printf '%s\n' "${suites[@]}" | grep -qx "$suite"; then continue; fi
	# shellcheck disable=SC2086 # one word per package
	fetch "$suite" "$rel" $rest
	n=$((n + 1))
done <"$pins"
[ $n -gt 0 ] || die "no pinned kernel for suite(s) ${suites[*]:-any} in $pins"
