#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The emulated x86-64 host of scripts/test-host.sh: Debian's packaged kernel (no kernel
# build) and a small busybox initramfs holding the modules it needs, cached by package
# version. Prints the cache directory, which holds:
#   vmlinuz       the package's kernel
#   base.cpio.gz  busybox-static and the modules (uncompressed .ko, to be loaded in the
#                 order of /modules/order); test-host.sh appends its /init per run:
#                 kvm-amd (KVM on QEMU's emulated AMD SVM with nested paging), virtio_pci,
#                 9pnet_virtio and 9p (the machine's root and work directory over virtio-9p)
#   package       "<package> <version>"
#
# Usage: test-host-image.sh [--package NAME]
#   --package NAME  the linux-image package (default: the one Debian's linux-image-amd64
#                   depends on, e.g. linux-image-6.1.0-57-amd64); $SKIFF_TEST_HOST_PACKAGE too
# Cache: $SKIFF_CACHE/test-host/<package>_<version>/ (SKIFF_CACHE as in build-kernels.sh,
# default ~/.cache/skiff), one builder at a time (flock). A download is bounded (120 s) and
# its failure names the package and the command that fixes it. Exit 0, or 1 with a reason.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${SKIFF_CACHE:-${XDG_CACHE_HOME:-${HOME:-$repo}/.cache}/skiff}
pkg=${SKIFF_TEST_HOST_PACKAGE:-}
busybox=${SKIFF_BUSYBOX:-/bin/busybox}
# The modules the host needs; their dependencies are added from each .ko's modinfo.
want_modules=(kvm-amd virtio_pci 9pnet_virtio 9p)

die() {
	echo "test-host-image.sh: error: $*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--package)
		pkg=${2:-}
		shift
		;;
	*) die "unknown argument '$1' (usage: test-host-image.sh [--package NAME])" ;;
	esac
	shift
done

command -v apt-cache >/dev/null || die "apt-cache not found: the emulated host's kernel comes from Debian's package archive (Debian 12 only)"
if [ -z "$pkg" ]; then
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n1)
	[ -n "$pkg" ] || die "cannot tell which kernel package linux-image-amd64 depends on; run 'sudo apt-get update' (or name one with --package)"
fi
ver=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')
[ -n "$ver" ] && [ "$ver" != '(none)' ] ||
	die "package $pkg is not known to apt; run 'sudo apt-get update' (or name another with --package)"
dir=$cache/test-host/${pkg}_$ver
if [ -s "$dir/base.cpio.gz" ] && [ -s "$dir/vmlinuz" ]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$cache/test-host"
exec 9>"$cache/test-host/.lock"
flock -w 600 9 || die "another test-host-image.sh held $cache/test-host/.lock for 10 minutes"
if [ -s "$dir/base.cpio.gz" ] && [ -s "$dir/vmlinuz" ]; then
	echo "$dir"
	exit 0
fi
[ -x "$busybox" ] || die "$busybox not found; run 'sudo apt-get install busybox-static' (or scripts/setup.sh)"
tmp=$(mktemp -d "$cache/test-host/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "test-host-image.sh: fetching $pkg $ver (about 70 MB, once)" >&2
if ! (cd "$tmp" && timeout 120 apt-get download "$pkg=$ver") >"$tmp/apt.log" 2>&1; then
	tail -n 5 "$tmp/apt.log" >&2
	die "downloading $pkg $ver failed; fix with 'sudo apt-get update && (cd /tmp && apt-get download $pkg=$ver)' and check the network"
fi
timeout 120 dpkg -x "$tmp"/"$pkg"_*.deb "$tmp/x" || die "dpkg -x of $pkg $ver failed"
kver=${pkg#linux-image-}
mdir=$tmp/x/lib/modules/$kver
[ -d "$mdir" ] || die "$pkg has no lib/modules/$kver"

# Modules in load order: each after what its .modinfo "depends=" names.
declare -A seen=()
order=()
mod_path() { find "$mdir/kernel" \( -name "$1.ko" -o -name "${1//-/_}.ko" -o -name "${1//_/-}.ko" \) -print -quit; }
add_module() {
	local name=$1 f deps d
	[ -z "${seen[$name]:-}" ] || return 0
	seen[$name]=1
	f=$(mod_path "$name")
	[ -n "$f" ] || die "$pkg has no module $name (.ko; compressed modules are not handled)"
	deps=$(tr '\0' '\n' <"$f" | sed -n 's/^depends=//p' | head -n1)
	for d in ${deps//,/ }; do add_module "$d"; done
	order+=("$f")
}
for m in "${want_modules[@]}"; do add_module "$m"; done

spec=$tmp/spec
{
	echo "dir /bin 755 0 0"
	echo "dir /modules 755 0 0"
	echo "dir /proc 755 0 0"
	echo "dir /sys 755 0 0"
	echo "dir /dev 755 0 0"
	echo "dir /newroot 755 0 0"
	echo "dir /io 755 0 0"
	echo "file /bin/busybox $busybox 755 0 0"
	for f in "${order[@]}"; do
		echo "file /modules/$(basename "$f") $f 644 0 0"
		basename "$f" >>"$tmp/order"
	done
	echo "file /modules/order $tmp/order 644 0 0"
} >"$spec"
python3 "$repo/scripts/mkcpio.py" "$spec" - | gzip -1 >"$tmp/base.cpio.gz"
mkdir -p "$tmp/out"
cp "$tmp/x/boot/vmlinuz-$kver" "$tmp/out/vmlinuz"
mv "$tmp/base.cpio.gz" "$tmp/out/"
cp "$tmp/order" "$tmp/out/modules"
echo "$pkg $ver" >"$tmp/out/package"
rm -rf "$dir"
mv "$tmp/out" "$dir"
echo "$dir"
