#!/usr/bin/env bash
# Install every Debian package skiff needs to build, test and build guest kernels.
# Idempotent: packages already present are left alone. Debian 12 (bookworm) is the target.
set -euo pipefail

PKGS=(
	# build
	build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
	check libseccomp-dev libfdt-dev liburing-dev
	# ThreadSanitizer's runtime (scripts/test.sh's TSan stage; gcc 12 pulls it
	# in already, named here because the stage needs it)
	libtsan2
	# guest kernels and initramfs
	bc bison flex libelf-dev libssl-dev cpio xz-utils rsync busybox-static
	linux-source-6.1
	# guests and peers
	qemu-system-x86 iproute2
	# tooling used by scripts and tests
	python3 jq
	# iasl: independent disassembly of the VMM's ACPI tables (vmm_acpi test)
	acpica-tools
	# dtc: the device tree round trip of the arm64 DTB builder (vmm_fdt test)
	device-tree-compiler
	# arm64 (issue 19): the cross build (cmake/toolchain-aarch64.cmake) and the
	# emulated arm64 host of the aarch64 label (tests/aarch64/). Multiarch
	# :arm64 packages only where they can sit beside the amd64 ones
	# (Multi-Arch: same): libfdt-dev and busybox-static cannot, so the build
	# links libfdt1:arm64's libfdt.so.1 (cmake/FindFDT.cmake, the shared
	# headers come from libfdt-dev) and the test fetches busybox-static:arm64
	# into its cache with apt-get download.
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross libseccomp-dev:arm64 libfdt1:arm64
	qemu-system-arm
	# the unit and device tests built for arm64, run under user-mode emulation
	# (tests/aarch64/user_tests.sh): Check for arm64 (Multi-Arch: same) and qemu-aarch64
	check:arm64 qemu-user
)

die() {
	echo "setup.sh: $*" >&2
	exit 1
}

if [ ! -r /etc/debian_version ]; then
	die "this script supports Debian 12 only (no /etc/debian_version); install the equivalent of: ${PKGS[*]}"
fi

# The :arm64 packages need the architecture in dpkg before apt-get update.
need_arch=0
case " ${PKGS[*]} " in
*:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 || need_arch=1 ;;
esac

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "setup.sh: all ${#PKGS[@]} packages present"
	exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
	SUDO=sudo
fi

if [ "$need_arch" = 1 ]; then
	echo "setup.sh: adding the arm64 architecture to dpkg (multiarch, for the cross build)"
	$SUDO dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed"
fi
echo "setup.sh: installing ${missing[*]}"
# apt's and debconf's chatter goes to a log, shown only when something fails.
log=$(mktemp /tmp/skiff-setup.XXXXXX.log)
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq >"$log" 2>&1; then
	tail -n 20 "$log" >&2
	die "apt-get update failed (log $log); check the network and /etc/apt/sources.list"
fi
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
	tail -n 20 "$log" >&2
	die "apt-get install failed for: ${missing[*]} (log $log)"
fi
rm -f "$log"
echo "setup.sh: done"
