#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The emulator of scripts/test-host.sh: QEMU 10.0 from Debian's bookworm-backports, unpacked
# into the cache (nothing installed system-wide; the machine's own qemu-system-x86 stays
# what the other tests use). Prints the path of its qemu-system-x86_64.
#
# Why not bookworm's QEMU 7.2: 10.0 is the newer TCG, as fast here, and failed less in the
# loops of 2026-12-02 (0 of 58 runs against 3 of about 57 with 7.2, both at load average
# 5-10 while other work ran). It is not free of the SVM problem that made those runs fail: a
# nested page fault that interrupts VMRUN's event injection saves the L1 host's RIP as the
# guest's, and the guest triple-faults or loops in #PF (docs/test-host.md, "Emulator problems
# found", has the trace and what else the runner does about it).
#
# Usage: test-host-qemu.sh
# Environment: SKIFF_TEST_HOST_QEMU=PATH uses that binary instead (e.g. /usr/bin/
# qemu-system-x86_64 to reproduce the problem above), printed as it is.
# The packages (qemu-system-x86, qemu-system-common, qemu-system-data, seabios) are pinned
# below; bookworm-backports keeps only its newest version, so when a pin is gone the newest
# one is taken, with a warning to update the pin. Their libraries are those of bookworm's
# own qemu-system-x86 (scripts/setup.sh installs it); a missing one is named.
# Cache: CACHE/test-host/qemu_VERSION/ (CACHE: $SKIFF_CACHE, default ~/.cache/skiff), one
# fetch at a time (flock); the private apt lists in CACHE/test-host/apt.
# Exit 0, or 1 with a reason.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${SKIFF_CACHE:-${XDG_CACHE_HOME:-${HOME:-$repo}/.cache}/skiff}
top=$cache/test-host
qemu_pin=1:10.0.2+ds-2+deb13u1~bpo12+1
seabios_pin=1.16.3-2~bpo12+1

die() {
	echo "test-host-qemu.sh: error: $*" >&2
	exit 1
}
[ $# = 0 ] || {
	sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}
if [ -n "${SKIFF_TEST_HOST_QEMU:-}" ]; then
	[ -x "$SKIFF_TEST_HOST_QEMU" ] || die "SKIFF_TEST_HOST_QEMU=$SKIFF_TEST_HOST_QEMU is not an executable"
	echo "$SKIFF_TEST_HOST_QEMU"
	exit 0
fi

# A cached unpack is ready when its binary runs.
ready() { [ -x "$1/usr/bin/qemu-system-x86_64" ] && "$1/usr/bin/qemu-system-x86_64" --version >/dev/null 2>&1; }
dir=$top/qemu_${qemu_pin//[:~]/_}
if ready "$dir"; then
	echo "$dir/usr/bin/qemu-system-x86_64"
	exit 0
fi
mkdir -p "$top"
exec 9>"$top/.qemu.lock"
flock -w 600 9 || die "another test-host-qemu.sh held $top/.qemu.lock for 10 minutes"

. "$repo/scripts/lib/private-apt.sh"
papt_init "$top/apt" test-host-qemu.sh "deb [signed-by=$papt_keyring] $papt_mirror bookworm-backports main"
# The pinned version, else (a newer backport replaced it) the newest there.
pick() { # PACKAGE PIN
	if apt-cache "${papt_opts[@]}" madison "$1" | awk -F' *[|] *' '{print $2}' | grep -qxF "$2"; then
		echo "$1=$2"
		return
	fi
	papt_lists force
	if apt-cache "${papt_opts[@]}" madison "$1" | awk -F' *[|] *' '{print $2}' | grep -qxF "$2"; then
		echo "$1=$2"
		return
	fi
	local v
	v=$(apt-cache "${papt_opts[@]}" madison "$1" | awk -F' *[|] *' 'NR == 1 {print $2}')
	[ -n "$v" ] || die "bookworm-backports has no $1"
	echo "test-host-qemu.sh: warning: bookworm-backports no longer has $1 $2; using $v (update the pin in $0)" >&2
	echo "$1=$v"
}
papt_lists
q=$(pick qemu-system-x86 "$qemu_pin")
ver=${q#*=}
dir=$top/qemu_${ver//[:~]/_}
if ! ready "$dir"; then
	pkgs=("$q" "qemu-system-common=$ver" "qemu-system-data=$ver" "$(pick seabios "$seabios_pin")")
	tmp=$(mktemp -d "$top/.qemu.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "test-host-qemu.sh: fetching ${pkgs[*]} from bookworm-backports (about 15 MB, once)" >&2
	papt_download "$tmp" "${pkgs[@]}" || die "downloading ${pkgs[*]} failed"
	for p in "$tmp"/*.deb; do
		timeout 300 dpkg -x "$p" "$tmp/x" || die "dpkg -x $(basename "$p") failed"
	done
	missing=$(ldd "$tmp/x/usr/bin/qemu-system-x86_64" | awk '/not found/ {print $1}' | tr '\n' ' ')
	[ -z "$missing" ] || die "QEMU $ver needs libraries this machine lacks: $missing(scripts/setup.sh installs qemu-system-x86, which brings them)"
	# QEMU finds its firmware and option ROMs relative to its binary (../share/qemu).
	ready "$tmp/x" || die "the unpacked $tmp/x/usr/bin/qemu-system-x86_64 does not run"
	rm -rf "$dir"
	mv "$tmp/x" "$dir"
fi
echo "$dir/usr/bin/qemu-system-x86_64"
