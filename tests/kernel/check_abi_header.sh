#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The experimental virtio-vsock ABI (feature bits DGRAM and MRG_RXBUF, struct
# virtio_vsock_mrg_hdr) is defined in one header shared by the device and the
# guest kernel. Check that the copy the guest kernel series adds as
# include/uapi/linux/virtio_vsock_ext.h is byte for byte the device's
# devices/virtio_vsock/include/skiff/virtio_vsock_ext.h, that exactly one patch
# of guest-kernel-patches/series/series adds it, and that no patch changes it.
#
# Usage: check_abi_header.sh REPO [HEADER]
#   HEADER defaults to the device's header; the test suite passes a tampered
#   copy to check that a difference is caught.
# Exit status: 0 identical, 1 any difference or malformed series.
set -eu

repo=$1
hdr=${2:-$repo/devices/virtio_vsock/include/skiff/virtio_vsock_ext.h}
dir=$repo/guest-kernel-patches/series
target=include/uapi/linux/virtio_vsock_ext.h

fail() {
	echo "check_abi_header: FAIL: $*" >&2
	exit 1
}

[ -f "$hdr" ] || fail "no header $hdr"
[ -f "$dir/series" ] || fail "no $dir/series"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

adders=0
for p in $(sed -e 's/#.*//' "$dir/series"); do
	f=$dir/$p
	[ -f "$f" ] || fail "series lists $p, which does not exist"
	if grep -q "^--- a/$target\$" "$f"; then
		fail "$p modifies $target; change the shared header and regenerate patch 1 instead"
	fi
	grep -q "^+++ b/$target\$" "$f" || continue
	adders=$((adders + 1))
	# The new-file diff: "--- /dev/null", "+++ b/TARGET", one hunk
	# "@@ -0,0 +1,N @@", then N lines starting with '+'.
	awk -v t="$target" '
		prev == "--- /dev/null" && $0 == "+++ b/" t { infile = 1; next }
		{ prev = $0 }
		infile && !hunk {
			if (match($0, /^@@ -0,0 \+1,[0-9]+ @@/)) {
				want = substr($0, 12) + 0
				hunk = 1
				next
			}
			bad = "no new-file hunk"
			exit
		}
		infile && hunk {
			if (substr($0, 1, 1) == "+") {
				print substr($0, 2)
				got++
				if (got == want)
					exit
				next
			}
			exit
		}
		END {
			if (bad == "" && !infile)
				bad = "not added as a new file"
			if (bad == "" && got != want)
				bad = "hunk has " got " lines, header says " want
			if (bad != "") {
				print bad > "/dev/stderr"
				exit 1
			}
		}' "$f" >"$tmp/from-patch.h" || fail "cannot extract $target from $p"
	if ! cmp -s "$hdr" "$tmp/from-patch.h"; then
		diff -u "$hdr" "$tmp/from-patch.h" >&2 || true
		fail "$p adds a $target that differs from $hdr"
	fi
	echo "check_abi_header: $p adds $target identical to $hdr ($(wc -c <"$hdr") bytes)"
done

[ "$adders" -eq 1 ] || fail "$adders patches add $target, expected exactly 1"
echo "check_abi_header: PASS"
