#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run vsock_uring_test in a user-mode Linux guest (ctest label guest-uml).
#
# Usage: run_guest.sh --variant patched|baseline --bin VSOCK_URING_TEST
#                     [--kernel LINUX] [--skiff-vsock BIN] [-- test args...]
#   --variant V        patched: the test must pass. baseline: it must fail exactly as its
#                      header documents (the hint cases fail, the Unix/TCP cases pass, the
#                      ping-pong costs about 2 receive calls per message); anything else,
#                      including an unexpected pass, is a failure of this check
#   --kernel LINUX     default: scripts/build-kernels.sh --print-path VARIANT um
#   --skiff-vsock BIN  run through skiff-vsock (vhost-user) against a host echo peer
#                      (uds_echo.py) instead of vsock loopback inside the guest
# Exit: 0 as expected, 1 not as expected (a guest that dies, guest-run.sh 123/124/125, at
# once, with guest-run.sh's reason and console tail), 77 skipped (no kernel built, no
# busybox).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
variant= bin= kernel= skiff_vsock=
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--variant) variant=${2:-} && shift ;;
	--bin) bin=${2:-} && shift ;;
	--kernel) kernel=${2:-} && shift ;;
	--skiff-vsock) skiff_vsock=${2:-} && shift ;;
	--)
		shift
		args=("$@")
		break
		;;
	*)
		sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
	shift
done
case $variant in patched | baseline) ;; *) echo "run_guest.sh: --variant patched|baseline" >&2 && exit 2 ;; esac
[ -x "$bin" ] || { echo "run_guest.sh: --bin $bin is not executable" >&2 && exit 2; }

if [ -z "$kernel" ]; then
	if ! kernel=$("$repo/scripts/build-kernels.sh" --print-path "$variant" um 2>/dev/null); then
		echo "run_guest.sh: SKIP: no $variant UML kernel (run scripts/build-kernels.sh)"
		exit 77
	fi
fi
[ -x /bin/busybox ] || { echo "run_guest.sh: SKIP: busybox-static missing" && exit 77; }

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

"$repo/scripts/build-initramfs.sh" -o "$work/initrd.cpio" --bin "$bin" >/dev/null
cmd="vsock_uring_test ${args[*]}"
run_args=(uml --kernel "$kernel" --initrd "$work/initrd.cpio" --mem 128 --timeout 300)
if [ -n "$skiff_vsock" ]; then
	port=9100
	"$skiff_vsock" --socket "$work/vu.sock" --cid 3 --uds "$work/h.sock" \
		--mrg-rxbuf "$([ "$variant" = patched ] && echo on || echo off)" 2>"$work/skiff-vsock.log" &
	pids+=($!)
	mkfifo "$work/echo.out"
	python3 "$here/uds_echo.py" "$work/h.sock_$port" --timeout 300 >"$work/echo.out" &
	pids+=($!)
	# Both announce readiness: the echo peer by a line, skiff-vsock by its socket.
	exec 3<"$work/echo.out"
	read -r -t 30 line <&3 || true
	[[ ${line:-} == UDS-ECHO-LISTENING* ]] || { echo "run_guest.sh: echo peer did not start" && exit 1; }
	for _ in $(seq 300); do
		[ -S "$work/vu.sock" ] && break
		sleep 0.1
	done
	[ -S "$work/vu.sock" ] || { echo "run_guest.sh: skiff-vsock did not start" && exit 1; }
	run_args+=(--vsock "$work/vu.sock")
	cmd="vsock_uring_test --peer-cid 2 --port $port ${args[*]}"
fi

set +e
"$repo/scripts/guest-run.sh" "${run_args[@]}" --run "$cmd" --log "$work/console" >/dev/null 2>"$work/guest-run.err"
rc=$?
set -e
sed -n '/^# vsock_uring_test/,/^# summary/p' "$work/console"
echo "run_guest.sh: guest rc=$rc"
# 123 died (panic, abort), 124 timed out, 125 no result: no selftest verdict to check.
if [ $rc -ge 123 ] && [ $rc -le 125 ]; then
	echo "run_guest.sh: FAIL: the guest did not finish the selftest:"
	cat "$work/guest-run.err"
	exit 1
fi

if [ "$variant" = patched ]; then
	[ $rc = 0 ] && grep -q '^# summary .*fail=0' "$work/console" && exit 0
	echo "run_guest.sh: FAIL: the selftest must pass on the patched kernel"
	exit 1
fi

# Baseline: the expected failure, and nothing else.
ok=1
[ $rc = 1 ] || { echo "run_guest.sh: baseline: guest rc $rc, want 1" && ok=0; }
grep -q '^# receive probe (test-only patch): present' "$work/console" ||
	{ echo "run_guest.sh: baseline: the test-only probe is missing" && ok=0; }
for t in unix_pingpong tcp_pingpong; do
	grep -Eq "^(ok|skip) [0-9]+ $t" "$work/console" ||
		{ echo "run_guest.sh: baseline: $t must pass" && ok=0; }
done
expect_fail=(pingpong_recv pingpong_recvmsg)
[ -z "$skiff_vsock" ] && expect_fail+=(stream_partial_read_recv stream_partial_read_recvmsg
	stream_eof_recv stream_eof_recvmsg stream_data_before_arm_recv stream_data_before_arm_recvmsg
	seqpacket_hint)
for t in "${expect_fail[@]}"; do
	grep -Eq "^not ok [0-9]+ $t:" "$work/console" ||
		{ echo "run_guest.sh: baseline: $t was expected to fail" && ok=0; }
done
# The speculative retry: about two receive calls per message.
if ! awk '/^metric test=pingpong_recv /{ for (i = 1; i <= NF; i++) if ($i ~ /^calls_per_msg=/) {
		split($i, kv, "="); if (kv[2] >= 1.9 && kv[2] <= 2.1) f = 1 } } END { exit !f }' \
	"$work/console"; then
	echo "run_guest.sh: baseline: pingpong_recv calls_per_msg not about 2"
	ok=0
fi
[ $ok = 1 ] && echo "run_guest.sh: baseline failed as documented" && exit 0
exit 1
