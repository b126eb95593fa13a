#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Datagrams on skiff's own path (ctest label skiff-linux, issue 18): the patched x86-64
# kernel booted by skiff with its in-process device offering VIRTIO_VSOCK_F_DGRAM, in the
# emulated host where this machine has no hardware-virtualization KVM (host_run.sh).
# tests/uml/dgram/dgram_e2e.py --vmm skiff --mode host runs the same cases as its UML
# guest-uml-dgram-host tests (guest to host from 1 B to 64 KiB, each echoed with sendto(),
# the host's first datagram through the gateway, too big, MSG_PEEK|MSG_TRUNC, an unbound
# host port, a host socket that does not read) and checks skiff's dgram counters
# (SKIFF_STATS) against what the run did.
#
# Usage: dgram_test.sh BUILD_DIR MRG
#   MRG on|off (skiff's mrg-rxbuf=)
# Exit 0 pass, 1 fail, 77 skipped (no patched x86_64 kernel: run scripts/build-kernels.sh;
# or SKIFF_SKIP_GUESTS), or host_run.sh's 123/124/125.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

[ $# -eq 2 ] || {
	sed -n '13,14p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
build=$(cd "$1" && pwd) mrg=$2
initrd=$build/tests/guest-programs/initramfs.cpio.gz
[ -s "$initrd" ] || {
	echo "dgram_test: FAIL: no initramfs $initrd (build target skiff-initramfs)"
	exit 1
}
exec bash "$repo/tests/skiff-linux/host_run.sh" 360 --kernel patched -- \
	python3 "$repo/tests/uml/dgram/dgram_e2e.py" --vmm skiff --skiff "$build/vmm/skiff" \
	--initrd "$initrd" --mode host --mrg "$mrg"
