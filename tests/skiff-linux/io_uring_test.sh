#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The io_uring receive-hint selftest (tests/guest-programs/io_uring/) on skiff's own path,
# run inside the host tests/skiff-linux/host_run.sh gives it: run_guest.sh --skiff boots
# the patched x86-64 kernel (the selftest must pass: the msg_inq hint, one receive call per
# message), then the baseline (it must fail exactly as vsock_uring_test.c's header says),
# each in one skiff guest: loopback cases, then ping-pongs through skiff's in-process
# device against the host echo peer; device counters and console checked.
#
# Usage: io_uring_test.sh SKIFF VSOCK_URING_TEST [MESSAGES]   (MESSAGES default 200: one
#        ping-pong message costs about 20 ms in an emulated host)
# Exit: 0 both as expected, 1 otherwise, 77 skipped (run_guest.sh: no kernel).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
skiff=${1:?usage: io_uring_test.sh SKIFF VSOCK_URING_TEST [MESSAGES]}
bin=${2:?usage: io_uring_test.sh SKIFF VSOCK_URING_TEST [MESSAGES]}
messages=${3:-200}
rc=0
for v in patched baseline; do
	t0=$EPOCHREALTIME
	echo "io_uring_test: $v kernel, $(date -u +%T)"
	bash "$here/../guest-programs/io_uring/run_guest.sh" --variant "$v" --bin "$bin" --skiff "$skiff" \
		-- --messages "$messages"
	r=$?
	echo "io_uring_test: $v: exit $r, $(echo "$EPOCHREALTIME - $t0" | bc) s wall (emulation speed if emulated)"
	[ $r = 77 ] && exit 77
	[ $r = 0 ] || rc=1
done
[ $rc = 0 ] && echo "io_uring_test: PASS" || echo "io_uring_test: FAIL"
exit $rc
