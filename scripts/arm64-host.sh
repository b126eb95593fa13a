#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The emulated arm64 host of the aarch64 tests (issue 19): Debian bookworm's
# arm64 kernel (linux-image-6.1.0-N-arm64, KVM built in, so QEMU's
# "-M virt,virtualization=on" gives the guest a /dev/kvm) and busybox-static's
# arm64 binary for its initramfs. Nothing is compiled. Prints the directory
# that holds
#   Image      the kernel (bookworm's vmlinuz is an uncompressed Image; a gzip'd one is unpacked);
#              QEMU boots it and skiff can boot it as a guest too
#   busybox    the static arm64 busybox
#   ko/        the modules a guest of that kernel needs for skiff's vsock device
#              (Debian builds them as modules), decompressed: vsock,
#              vmw_vsock_virtio_transport(_common), virtio_mmio and what their
#              .modinfo "depends=" names (scripts/kmod-order.py)
#   modules    their file names in load order, one a line
#   package    the PACKAGE=VERSION words fetched
#
# Usage: arm64-host.sh [--refresh]
#   --refresh  fetch the newest kernel even when one is cached
#
# apt without touching the machine's own lists or architectures
# (scripts/lib/private-apt.sh, with APT::Architecture=arm64): bookworm and
# bookworm-security main under CACHE/arm64-host/apt, `apt-get download` then
# `dpkg -x`. The lists (about 30 MB) are fetched only when nothing is cached.
# Cache: CACHE/arm64-host/KERNELPKG_VERSION/ and the link CACHE/arm64-host/current
# (CACHE: $SKIFF_CACHE, default ~/.cache/skiff), one fetcher at a time (flock).
# Exit 0, or 1 with a reason.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${SKIFF_CACHE:-${XDG_CACHE_HOME:-${HOME:-$repo}/.cache}/skiff}
top=$cache/arm64-host
refresh=0

die() {
	echo "arm64-host.sh: error: $*" >&2
	exit 1
}

case ${1:-} in
"") ;;
--refresh) refresh=1 ;;
*)
	sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac

mkdir -p "$top"
exec 9>"$top/.lock"
flock 9

have() { [ -r "$1/Image" ] && [ -x "$1/busybox" ] && [ -s "$1/modules" ]; }
if [ "$refresh" = 0 ] && have "$top/current"; then
	readlink -f "$top/current"
	exit 0
fi

# shellcheck source=scripts/lib/private-apt.sh
. "$repo/scripts/lib/private-apt.sh"
papt_init "$top/apt" arm64-host.sh \
	"deb [arch=arm64 signed-by=$papt_keyring] $papt_mirror bookworm main" \
	"deb [arch=arm64 signed-by=$papt_keyring] $papt_security bookworm-security main"
papt_opts+=(-o APT::Architecture=arm64 -o APT::Architectures=arm64)
papt_lists "$([ "$refresh" = 1 ] && echo force)"

# linux-image-arm64 depends on the versioned package that holds the kernel.
img=$(apt-cache "${papt_opts[@]}" depends linux-image-arm64 |
	sed -n 's/^ *Depends: \(linux-image-[0-9.]*-[0-9]*-arm64\)\(:arm64\)\{0,1\}$/\1/p' | head -n 1)
[ -n "$img" ] || die "no linux-image-6.1.0-N-arm64 behind linux-image-arm64 in $top/apt; run with --refresh"
ver=$(apt-cache "${papt_opts[@]}" policy "$img" | sed -n 's/^ *Candidate: //p')
bbver=$(apt-cache "${papt_opts[@]}" policy busybox-static | sed -n 's/^ *Candidate: //p')
if [ -z "$ver" ] || [ -z "$bbver" ]; then
	die "no candidate version of $img or busybox-static"
fi

dir=$top/${img}_${ver//:/_}
if ! have "$dir"; then
	tmp=$(mktemp -d "$top/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "arm64-host.sh: fetching $img=$ver and busybox-static=$bbver (arm64)" >&2
	papt_download "$tmp" "$img=$ver" "busybox-static=$bbver" ||
		die "downloading $img=$ver busybox-static=$bbver failed; check the network to $papt_mirror, or run with --refresh"
	mkdir -p "$tmp/x"
	for deb in "$tmp"/*.deb; do
		dpkg -x "$deb" "$tmp/x"
	done
	vmlinuz=$(find "$tmp/x/boot" -name 'vmlinuz-*' -print -quit 2>/dev/null)
	[ -n "$vmlinuz" ] || die "$img has no /boot/vmlinuz-*"
	# bookworm's arm64 vmlinuz is the Image itself (with its EFI stub); older
	# kernels and other distributions gzip it.
	if gzip -t "$vmlinuz" 2>/dev/null; then
		zcat "$vmlinuz" >"$tmp/Image"
	else
		cp "$vmlinuz" "$tmp/Image"
	fi
	cp "$tmp/x/bin/busybox" "$tmp/busybox"
	moddir=$(find "$tmp/x/lib/modules" -mindepth 1 -maxdepth 1 -type d -print -quit 2>/dev/null)
	[ -n "$moddir" ] || die "$img has no /lib/modules/RELEASE"
	python3 "$repo/scripts/kmod-order.py" "$moddir" "$tmp/ko" \
		vsock vmw_vsock_virtio_transport_common vmw_vsock_virtio_transport virtio_mmio \
		>"$tmp/modules" || die "resolving the vsock modules of $img failed"
	echo "$img=$ver busybox-static=$bbver" >"$tmp/package"
	rm -rf "$dir"
	mkdir -p "$dir"
	mv "$tmp/Image" "$tmp/busybox" "$tmp/ko" "$tmp/modules" "$tmp/package" "$dir/"
fi
ln -sfn "$(basename "$dir")" "$top/current"
echo "$dir"
