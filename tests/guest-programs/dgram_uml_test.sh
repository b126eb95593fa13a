#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SOCK_DGRAM over AF_VSOCK in a UML guest, no vsock device needed (issue 18;
# guest-kernel-patches/series/README-dgram.md): boot the VARIANT UML kernel with the
# initramfs and run `vsock-dgram VARIANT` over the loopback transport (CID 1).
#   patched   sendto, auto-bind, connect+send, the sender's address from recvfrom,
#             MSG_PEEK, MSG_TRUNC, 64 KiB and EMSGSIZE, poll, a datagram to an unbound
#             port (dropped, counted, no reply), SO_RCVBUF drops (received + dropped =
#             sent, loopback counter = socket's sk_drops), stream and datagram sockets
#             on one port, 8 concurrent senders (sendto and connect+send; every byte,
#             order and source port checked; received + dropped = sent)
#   baseline  plain 6.1 has no datagram transport besides VMCI:
#             socket(AF_VSOCK, SOCK_DGRAM) fails with ENODEV; streams still open
# Usage: dgram_uml_test.sh INITRAMFS VARIANT [--kernel FILE]
# Exit 0 pass, 1 fail, 77 skipped (kernel not built: run scripts/build-kernels.sh).
set -euo pipefail
initrd=$1 variant=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
case $variant in
patched)
	cases='sendto sendto-autobind connect-send peek-trunc max-size-and-emsgsize poll
		no-socket-no-reply rcvbuf-drop stream-and-dgram-same-port many-senders'
	;;
baseline) cases='baseline-no-dgram baseline-stream-opens' ;;
*)
	echo "usage: dgram_uml_test.sh INITRAMFS patched|baseline [--kernel FILE]" >&2
	exit 2
	;;
esac
if [ "${3:-}" = --kernel ]; then
	kernel=$4
elif ! kernel=$("$repo/scripts/build-kernels.sh" --print-path "$variant" um); then
	echo "dgram_uml_test: SKIP: no $variant um kernel ($kernel); run scripts/build-kernels.sh"
	exit 77
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
"$repo/scripts/guest-run.sh" uml --kernel "$kernel" --initrd "$initrd" --timeout 120 \
	--run "vsock-dgram $variant" >"$out" 2>&1
rc=$?
set -e
cat "$out"
fail() {
	echo "dgram_uml_test: FAIL ($variant): $*"
	exit 1
}
for c in $cases; do
	grep -q "^DGRAM-CASE $c ok" "$out" || fail "case $c did not pass"
done
grep -q '^DGRAM status=ok failures=0$' "$out" || fail "vsock-dgram did not report status=ok"
[ $rc = 0 ] || fail "guest-run.sh exit $rc"
echo "dgram_uml_test: pass ($variant, $(echo $cases | wc -w) cases)"
