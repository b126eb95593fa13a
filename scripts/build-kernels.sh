#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build skiff's guest kernels from Debian's linux-source-6.1, side by side:
#
#   variant  baseline  host-support + test-only patches (guest-kernel-patches/host-support/series,
#                      guest-kernel-patches/test-only/series)
#            patched   baseline's + feature series       (guest-kernel-patches/series/series)
#   arch     x86_64    bzImage + vmlinux (skiff's VMM, QEMU microvm)
#            um        user-mode Linux binary "linux" (virtio_uml, vhost-user)
#            arm64     Image (skiff's VMM on arm64 KVM; cross-built with aarch64-linux-gnu-gcc)
#
# Configs: `make tinyconfig`, then the fragments guest-kernel-patches/configs/common.config
# and <arch>.config merged on top (scripts/kconfig/merge_config.sh) and olddefconfig; every
# fragment line is checked against the final .config.
#
# Layout under $SKIFF_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/skiff, shared by every
# checkout of the tree: entries are keyed by content, so clones and CI reuse them), kernels/:
#   src/<srcver>/             the unpacked, untouched tarball (one per source version)
#   tree/<variant>/           that tree hard-linked (cp -al), plus the variant's patches;
#                             files a patch touches (now or before) get private copies
#   build/<variant>-<arch>/   O= build directory, make log in build.log
#   out/<variant>/<arch>/     results: bzImage vmlinux config (x86_64), linux config (um),
#                             Image config (arm64)
#   out/<variant>/tools/      vsock_test: the kernel's tools/testing/vsock, static
#
# Cache: each <variant>-<arch> build is keyed by the linux-source-6.1 dpkg version, the gcc
# version (the cross gcc's for arm64), the config fragments, the patch files of that variant and this script's recipe
# version. A warm run only hashes and returns. A changed patch rebuilds only the variants
# that apply it, incrementally (make decides what to recompile). A new source or compiler
# version starts that build directory from scratch.
#
# Environment: SKIFF_CACHE, SKIFF_JOBS (make -j, default 2), SKIFF_LINUX_TARBALL,
# SKIFF_PATCHES (the guest-kernel-patches directory; for testing the pipeline itself).
#
# Usage:
#   build-kernels.sh [--variant V]... [--arch A]... [-j N]
#   build-kernels.sh --print-path VARIANT ARCH [FILE]   FILE: bzImage (x86_64 default),
#                                                       vmlinux, linux (um default),
#                                                       Image (arm64 default), config;
#                                                       ARCH tools: FILE vsock_test
#   build-kernels.sh --print-out                        the out/ directory
# --print-path prints the path and exits 0 if the file exists, else prints it and exits 1.
# Exit status: 0 built or up to date, 1 error (a patch that does not apply is named, with
# patch's reason), 2 usage.
set -euo pipefail

RECIPE=1 # bump when this script changes what it builds
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${SKIFF_CACHE:-${XDG_CACHE_HOME:-${HOME:-$repo}/.cache}/skiff}
kdir=$cache/kernels
gkp=${SKIFF_PATCHES:-$repo/guest-kernel-patches}
tarball=${SKIFF_LINUX_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
jobs=${SKIFF_JOBS:-2}
all_variants=(baseline patched)
all_arches=(x86_64 um arm64)

say() { echo "build-kernels.sh: $*"; }
die() {
	echo "build-kernels.sh: error: $*" >&2
	exit 1
}
usage() {
	sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

default_file() {
	case $1 in
	um) echo linux ;;
	arm64) echo Image ;;
	tools) echo vsock_test ;;
	*) echo bzImage ;;
	esac
}

valid() { # valid WORD LIST...
	local w=$1
	shift
	for x in "$@"; do [ "$x" = "$w" ] && return 0; done
	return 1
}

variants=()
arches=()
while [ $# -gt 0 ]; do
	case $1 in
	--print-path)
		[ $# -ge 3 ] || usage
		valid "$2" "${all_variants[@]}" || die "unknown variant '$2' (${all_variants[*]})"
		valid "$3" "${all_arches[@]}" tools || die "unknown arch '$3' (${all_arches[*]})"
		f=${4:-$(default_file "$3")}
		p=$kdir/out/$2/$3/$f
		echo "$p"
		[ -e "$p" ]
		exit
		;;
	--print-out)
		echo "$kdir/out"
		exit 0
		;;
	--variant)
		valid "${2:-}" "${all_variants[@]}" || die "unknown variant '${2:-}'"
		variants+=("$2")
		shift
		;;
	--arch)
		valid "${2:-}" "${all_arches[@]}" || die "unknown arch '${2:-}'"
		arches+=("$2")
		shift
		;;
	-j)
		jobs=${2:-}
		shift
		;;
	-j*) jobs=${1#-j} ;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift
done
[ ${#variants[@]} -gt 0 ] || variants=("${all_variants[@]}")
[ ${#arches[@]} -gt 0 ] || arches=("${all_arches[@]}")
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "bad -j '$jobs'"

for t in make gcc bc bison flex cpio xz sha256sum patch; do
	command -v "$t" >/dev/null || die "'$t' is missing: run scripts/setup.sh"
done
[ -r "$tarball" ] || die "$tarball is missing: run scripts/setup.sh (package linux-source-6.1)"
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) ||
	srcver=tarball-$(stat -c %s-%Y "$tarball")
gccver=$(gcc --version | head -n1)
cross=aarch64-linux-gnu-
for a in "${arches[@]}"; do
	[ "$a" = arm64 ] || continue
	command -v "${cross}gcc" >/dev/null ||
		die "'${cross}gcc' is missing (arm64 kernels): run scripts/setup.sh, or pass --arch x86_64 --arch um"
done

mkdir -p "$kdir"
# One builder at a time per cache (ctest runs and helpers may start this concurrently).
exec 9>"$kdir/.lock"
if ! flock -n 9; then
	say "waiting for another build-kernels.sh using $kdir"
	flock 9
fi

# --- source ---------------------------------------------------------------------------
src=$kdir/src/$srcver
if [ ! -e "$src/.skiff-unpacked" ]; then
	say "unpacking $tarball ($srcver) into $src"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -xJf "$tarball" -C "$src.tmp" --strip-components=1
	touch "$src.tmp/.skiff-unpacked"
	mv "$src.tmp" "$src"
fi

# --- patch series ---------------------------------------------------------------------
# series_files DIR: the patch paths listed in DIR/series, in order.
series_files() {
	local dir=$1 line
	[ -f "$dir/series" ] || return 0
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%%#*}
		line=$(echo "$line" | xargs)
		[ -n "$line" ] || continue
		[ -f "$dir/$line" ] || die "$dir/series lists '$line', which does not exist"
		echo "$dir/$line"
	done <"$dir/series"
}

variant_patches() { # variant -> patch paths in apply order
	series_files "$gkp/host-support"
	series_files "$gkp/test-only"
	[ "$1" = patched ] && series_files "$gkp/series"
	return 0
}

# touched_files PATCH...: the paths (p1) each patch reads or writes.
touched_files() {
	[ $# -gt 0 ] || return 0
	sed -n -e 's#^\(---\|+++\) [^/]*/\([^\t ]*\).*#\2#p' "$@" | grep -v '^dev/null$' | sort -u
}

# prepare_tree VARIANT: tree/<variant> = pristine source + the variant's patches.
prepare_tree() {
	local v=$1 tree=$kdir/tree/$1 key list p f out patches=()
	list=$(variant_patches "$v") || exit 1
	[ -z "$list" ] || mapfile -t patches <<<"$list"
	key=$( (
		echo "src $srcver"
		for p in "${patches[@]}"; do
			echo "patch ${p#"$gkp"/} $(sha256sum <"$p" | cut -d' ' -f1)"
		done
	) | sha256sum | cut -d' ' -f1)
	tree_key=$key
	[ -e "$tree/.skiff-tree-key" ] && [ "$(cat "$tree/.skiff-tree-key")" = "$key" ] && return 0

	say "$v: preparing source tree (${#patches[@]} patches)"
	rm -rf "$tree.new"
	mkdir -p "$kdir/tree"
	cp -al "$src" "$tree.new"
	rm -f "$tree.new/.skiff-unpacked"
	# Every file a patch touches, now or in the previous series, gets a private copy with
	# a fresh mtime: the pristine tree stays untouched and make rebuilds what depends on it.
	{
		touched_files "${patches[@]}"
		if [ -f "$tree/.skiff-touched" ]; then cat "$tree/.skiff-touched"; fi
	} | sort -u >"$tree.new/.skiff-touched"
	while IFS= read -r f; do
		[ -f "$tree.new/$f" ] || continue
		cp "$tree.new/$f" "$tree.new/$f.skiff-tmp"
		mv -f "$tree.new/$f.skiff-tmp" "$tree.new/$f"
	done <"$tree.new/.skiff-touched"
	touched_files "${patches[@]}" >"$tree.new/.skiff-touched"
	for p in "${patches[@]}"; do
		if ! out=$(patch -d "$tree.new" -p1 --batch --forward --fuzz=0 --dry-run <"$p" 2>&1); then
			echo "build-kernels.sh: error: patch ${p#"$gkp"/} does not apply to linux-source-6.1 $srcver ($v):" >&2
			echo "$out" | sed 's/^/    /' >&2
			rm -rf "$tree.new"
			exit 1
		fi
		patch -d "$tree.new" -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch -s <"$p" ||
			die "patch ${p#"$gkp"/} failed after a clean dry run"
		say "$v: applied ${p#"$gkp"/}"
	done
	echo "$key" >"$tree.new/.skiff-tree-key"
	rm -rf "$tree"
	mv "$tree.new" "$tree"
}

# --- configure and build one variant/arch --------------------------------------------
# check_config O FRAGMENT...: every CONFIG_ line of the fragments holds in O/.config.
check_config() {
	local o=$1 frag line sym bad=0
	shift
	for frag in "$@"; do
		while IFS= read -r line; do
			if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)= ]]; then
				sym=${BASH_REMATCH[1]}
				grep -qxF "$line" "$o/.config" || {
					echo "  ${frag##*/}: wanted '$line', got '$(grep -E "^(# )?${sym}[= ]" "$o/.config" || echo "$sym absent")'" >&2
					bad=1
				}
			elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set ]]; then
				sym=${BASH_REMATCH[1]}
				grep -q "^$sym=" "$o/.config" && {
					echo "  ${frag##*/}: wanted '$sym' unset, got '$(grep "^$sym=" "$o/.config")'" >&2
					bad=1
				}
			fi
		done <"$frag"
	done
	return $bad
}

build_one() {
	local v=$1 a=$2 o=$kdir/build/$1-$2 out=$kdir/out/$1/$2 karch key base t0 files f
	local frags=("$gkp/configs/common.config" "$gkp/configs/$a.config")
	for f in "${frags[@]}"; do [ -f "$f" ] || die "missing config fragment $f"; done
	local cc_ver=$gccver mkx=()
	karch=$a
	case $a in
	x86_64) files=(arch/x86/boot/bzImage vmlinux) ;;
	um) files=(linux) ;;
	arm64)
		files=(arch/arm64/boot/Image)
		mkx=(CROSS_COMPILE="$cross")
		cc_ver=$("${cross}gcc" --version | head -n1)
		;;
	esac
	base=$(printf 'recipe %s\nsrc %s\ngcc %s\narch %s\n' "$RECIPE" "$srcver" "$cc_ver" "$a" | sha256sum | cut -d' ' -f1)
	key=$( (
		echo "$base $tree_key"
		cat "${frags[@]}"
	) | sha256sum | cut -d' ' -f1)
	if [ -e "$out/.skiff-build-key" ] && [ "$(cat "$out/.skiff-build-key")" = "$key" ]; then
		say "$v/$a: up to date"
		return 0
	fi
	# A new source version, compiler or recipe: start from an empty build directory.
	if [ ! -e "$o/.skiff-base-key" ] || [ "$(cat "$o/.skiff-base-key")" != "$base" ]; then
		rm -rf "$o"
	fi
	mkdir -p "$o"
	echo "$base" >"$o/.skiff-base-key"
	t0=$(date +%s)
	say "$v/$a: building (make -j$jobs, log $o/build.log)"
	local mk=(make -C "$kdir/tree/$v" O="$o" ARCH="$karch" "${mkx[@]}" -j"$jobs")
	if ! {
		"${mk[@]}" tinyconfig &&
			KCONFIG_CONFIG="$o/.config" "$kdir/tree/$v/scripts/kconfig/merge_config.sh" \
				-m -O "$o" "$o/.config" "${frags[@]}" &&
			"${mk[@]}" olddefconfig
	} >"$o/build.log" 2>&1; then
		tail -n 30 "$o/build.log" >&2
		die "$v/$a: configuration failed (log $o/build.log)"
	fi
	check_config "$o" "${frags[@]}" ||
		die "$v/$a: the config fragments do not hold after olddefconfig (see above; log $o/build.log)"
	if ! "${mk[@]}" "${files[@]##*/}" >>"$o/build.log" 2>&1; then
		grep -E 'error|Error' "$o/build.log" | head -n 20 >&2 || true
		tail -n 20 "$o/build.log" >&2
		die "$v/$a: build failed (log $o/build.log)"
	fi
	rm -rf "$out"
	mkdir -p "$out"
	for f in "${files[@]}"; do cp "$o/$f" "$out/"; done
	cp "$o/.config" "$out/config"
	echo "$key" >"$out/.skiff-build-key"
	say "$v/$a: built in $(($(date +%s) - t0)) s"
}

# build_tools VARIANT: the kernel's own vsock test program from the variant's tree, static,
# for the guests' initramfs (out/<variant>/tools/vsock_test).
build_tools() {
	local v=$1 src=$kdir/tree/$1/tools/testing/vsock out=$kdir/out/$1/tools key
	key=$(printf '%s\n%s\n%s\n' "$RECIPE" "$gccver" "$tree_key" | sha256sum | cut -d' ' -f1)
	if [ -e "$out/.skiff-build-key" ] && [ "$(cat "$out/.skiff-build-key")" = "$key" ]; then
		return 0
	fi
	rm -rf "$out"
	mkdir -p "$out"
	gcc -static -g -O2 -Wall -I"$src" -I"$src/../../include" -Wno-pointer-sign \
		-fno-strict-overflow -fno-strict-aliasing -fno-common -U_FORTIFY_SOURCE -D_GNU_SOURCE \
		-o "$out/vsock_test" "$src"/{vsock_test,timeout,control,util}.c >"$out/build.log" 2>&1 || {
		cat "$out/build.log" >&2
		die "$v: building tools/testing/vsock/vsock_test failed"
	}
	echo "$key" >"$out/.skiff-build-key"
	say "$v: built tools/testing/vsock/vsock_test"
}

t_start=$(date +%s)
for v in "${variants[@]}"; do
	prepare_tree "$v"
	build_tools "$v"
	for a in "${arches[@]}"; do
		build_one "$v" "$a"
	done
done
say "done in $(($(date +%s) - t_start)) s; outputs:"
for v in "${variants[@]}"; do
	for a in "${arches[@]}"; do
		for f in "$kdir/out/$v/$a"/*; do
			[ "${f##*/}" = config ] || echo "  $v $a $f"
		done
	done
	echo "  $v tools $kdir/out/$v/tools/vsock_test"
done
