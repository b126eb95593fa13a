#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Boot test of the guest pipeline, no vsock device needed: boot the baseline kernel
# (UML or QEMU microvm) with the initramfs through scripts/guest-run.sh and, inside the
# guest, run vsock-tool over AF_VSOCK loopback (CID 1): 8 connections x 2 MiB to a
# listener, SEQPACKET both ways, and ECONNRESET for a port nobody listens on.
# Usage: guest_boot_test.sh uml|qemu INITRAMFS [VARIANT]
# Exit 0 pass, 1 fail, 77 skipped (kernel not built: run scripts/build-kernels.sh).
set -euo pipefail
kind=$1 initrd=$2 variant=${3:-baseline}
repo=$(cd "$(dirname "$0")/../.." && pwd)
arch=x86_64
[ "$kind" = uml ] && arch=um
if ! kernel=$("$repo/scripts/build-kernels.sh" --print-path "$variant" "$arch"); then
	echo "guest_boot_test: SKIP: no $variant $arch kernel ($kernel); run scripts/build-kernels.sh"
	exit 77
fi

# The listener's first line is read from a FIFO: the connector starts once it listens.
guest_script='set -e
listen_then() { # listen_then "LISTEN ARGS" "CONNECT ARGS"
	rm -f /tmp/l; mkfifo /tmp/l
	vsock-tool listen $1 >/tmp/l &
	pid=$!
	exec 3</tmp/l
	read -r first <&3
	echo "$first"
	vsock-tool connect $2
	cat <&3
	exec 3<&-
	wait $pid
}
listen_then "1234 --conns 8 --recv 2M --peer-seed 7" "1:1234 --conns 8 --send 2M --seed 7"
listen_then "1235 --type seqpacket --send 200 --recv 200 --seed 3 --peer-seed 4 --msg-sizes 8,1,4096,65536,100" \
	"1:1235 --type seqpacket --send 200 --recv 200 --seed 4 --peer-seed 3 --msg-sizes 8,1,4096,65536,100 --shut-wr"
vsock-tool connect 1:1299 --expect-error ECONNRESET'

out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
"$repo/scripts/guest-run.sh" "$kind" --kernel "$kernel" --initrd "$initrd" --timeout 300 \
	--run "$guest_script" >"$out" 2>&1
rc=$?
set -e
cat "$out"
fail() {
	echo "guest_boot_test: FAIL: $*"
	exit 1
}
# 123 died (panic, abort), 124 timed out, 125 no result: guest-run.sh's verdict says why.
[ $rc = 0 ] || fail "guest-run.sh exit $rc: $(grep -m1 '^guest-run\.sh: [a-z]* guest ' "$out" || echo 'no verdict')"
mapfile -t res < <(grep '^VSOCK-TOOL ' "$out")
[ ${#res[@]} = 5 ] || fail "expected 5 VSOCK-TOOL lines, got ${#res[@]}"
for l in "${res[@]}"; do
	[[ $l == "VSOCK-TOOL status=ok "* ]] || fail "not ok: $l"
done
val() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
# Stream: what the 8 connectors sent is what the listener received (XOR of FNV-1a).
# Lines: stream connector, stream listener, seqpacket connector, listener, ECONNRESET.
[ "$(val send_fnv "${res[0]}")" = "$(val recv_fnv "${res[1]}")" ] || fail "stream checksums differ"
[ "$(val received "${res[1]}")" = $((8 * 2 * 1024 * 1024)) ] || fail "stream byte count"
[ "$(val msgs_received "${res[2]}")" = 200 ] && [ "$(val msgs_received "${res[3]}")" = 200 ] ||
	fail "seqpacket message counts"
[ "$(val got "${res[4]}")" = ECONNRESET ] || fail "no ECONNRESET for a closed port"
echo "guest_boot_test: $kind $variant: all passed"
