#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run vsock_uring_test in a user-mode Linux guest (ctest label guest-uml), or in an x86-64
# guest booted by skiff (label skiff-linux, on a host with hardware-virtualization KVM:
# tests/skiff-linux/host_run.sh runs this script in the emulated host).
#
# Usage: run_guest.sh --variant patched|baseline --bin VSOCK_URING_TEST
#                     [--kernel LINUX] [--skiff-vsock BIN | --skiff BIN] [-- test args...]
#   --variant V        patched: the test must pass. baseline: it must fail exactly as its
#                      header documents (the hint cases fail, the Unix/TCP cases pass, the
#                      ping-pong costs about 2 receive calls per message); anything else,
#                      including an unexpected pass, is a failure of this check
#   --kernel LINUX     default: scripts/build-kernels.sh --print-path VARIANT um
#   --skiff-vsock BIN  run through skiff-vsock (vhost-user) against a host echo peer
#                      (uds_echo.py) instead of vsock loopback inside the guest
#   --skiff BIN        boot the x86-64 kernel under skiff BIN (guest-run.sh skiff, seccomp
#                      kill) with its in-process virtio-mmio vsock device (cid=3, the
#                      hybrid socket under $TMPDIR, which must be a file system that holds
#                      Unix sockets), against the same host echo peer; the device checks of
#                      --skiff-vsock apply. Also checked: skiff's device counters
#                      (SKIFF_STATS: RX and TX packets, VIRTIO_VSOCK_F_MRG_RXBUF negotiated
#                      as offered) and the console (no WARNING, BUG, Oops, panic, Call Trace)
# MRG_RXBUF is offered to the patched kernel, not to the baseline (device modes).
# Exit: 0 as expected, 1 not as expected (a guest that dies, guest-run.sh 123/124/125, at
# once, with guest-run.sh's reason and console tail), 77 skipped (no kernel built, no
# busybox).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
variant= bin= kernel= skiff_vsock= skiff=
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--variant) variant=${2:-} && shift ;;
	--bin) bin=${2:-} && shift ;;
	--kernel) kernel=${2:-} && shift ;;
	--skiff-vsock) skiff_vsock=${2:-} && shift ;;
	--skiff) skiff=${2:-} && shift ;;
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
[ -z "$skiff" ] || [ -z "$skiff_vsock" ] || { echo "run_guest.sh: --skiff or --skiff-vsock, not both" >&2 && exit 2; }
[ -z "$skiff" ] || [ -x "$skiff" ] || { echo "run_guest.sh: --skiff $skiff is not executable" >&2 && exit 2; }
kind=uml arch=um mem=128
[ -z "$skiff" ] || kind=skiff arch=x86_64 mem=256
mrg=$([ "$variant" = patched ] && echo on || echo off)

if [ -z "$kernel" ]; then
	if ! kernel=$("$repo/scripts/build-kernels.sh" --print-path "$variant" $arch 2>/dev/null); then
		echo "run_guest.sh: SKIP: no $variant $arch kernel (run scripts/build-kernels.sh)"
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
run_args=("$kind" --kernel "$kernel" --initrd "$work/initrd.cpio" --mem "$mem" --timeout 300)
if [ -n "$skiff_vsock$skiff" ]; then
	port=9100
	mkfifo "$work/echo.out"
	python3 "$here/uds_echo.py" "$work/h.sock_$port" --timeout 300 >"$work/echo.out" 2>"$work/echo.err" &
	pids+=($!)
	# The echo peer announces readiness by a line, skiff-vsock by its socket. 60 s: Python
	# starts slowly in an emulated host on a busy machine.
	exec 3<"$work/echo.out"
	read -r -t 60 line <&3 || true
	[[ ${line:-} == UDS-ECHO-LISTENING* ]] ||
		{ echo "run_guest.sh: echo peer did not start: $(cat "$work/echo.err")" && exit 1; }
	if [ -n "$skiff" ]; then
		run_args+=(--skiff "$skiff" --vsock "cid=3,uds=$work/h.sock,mrg-rxbuf=$mrg")
		export SKIFF_STATS=$work/stats
	else
		"$skiff_vsock" --socket "$work/vu.sock" --cid 3 --uds "$work/h.sock" \
			--mrg-rxbuf "$mrg" 2>"$work/skiff-vsock.log" &
		pids+=($!)
		for _ in $(seq 300); do
			[ -S "$work/vu.sock" ] && break
			sleep 0.1
		done
		[ -S "$work/vu.sock" ] || { echo "run_guest.sh: skiff-vsock did not start" && exit 1; }
		run_args+=(--vsock "$work/vu.sock")
	fi
	cmd="vsock_uring_test --peer-cid 2 --port $port ${args[*]}"
	if [ -n "$skiff" ]; then
		# Both runs in one boot: loopback (the hint cases, on the kernel skiff booted), then
		# through skiff's device; and the features the driver negotiated, as sysfs shows them
		# (skiff's counters are read after the guest has reset the device).
		cmd="for f in /sys/bus/virtio/devices/*; do
	[ \"\$(cat \$f/device)\" = 0x0013 ] && echo VSOCK-FEATURES \$(cat \$f/features)
done
vsock_uring_test ${args[*]}; a=\$?
$cmd; exit \$((a | \$?))"
	fi
fi

set +e
# With --skiff the console is shown as it comes ("  | " lines): in an emulated host a run
# that hits its time limit is killed with its files, so this is where it stopped.
"$repo/scripts/guest-run.sh" "${run_args[@]}" --run "$cmd" --log "$work/console" 2>"$work/guest-run.err" |
	{ if [ -n "$skiff" ]; then sed -u 's/^/  | /'; else cat >/dev/null; fi; }
rc=${PIPESTATUS[0]}
set -e
sed -i 's/\r$//' "$work/console" # a serial console's line ends
runs=$([ -n "$skiff" ] && echo 2 || echo 1)
sed -n '/^# vsock_uring_test/,/^# summary/p' "$work/console"
echo "run_guest.sh: guest rc=$rc ($(grep -m1 '^guest-run.sh: ' "$work/guest-run.err" || echo 'no verdict'))"
# 123 died (panic, abort), 124 timed out, 125 no result: no selftest verdict to check.
if [ $rc -ge 123 ] && [ $rc -le 125 ]; then
	echo "run_guest.sh: FAIL: the guest did not finish the selftest:"
	cat "$work/guest-run.err"
	exit 1
fi
if [ -n "$skiff" ]; then
	# The device's counters (written by skiff at exit) and the guest console.
	bad=0
	counters=$(grep '^vsock_' "$work/stats" 2>/dev/null | tr '\n' ' ')
	if ! [[ $counters =~ vsock_rx_pkts=[1-9] && $counters =~ vsock_tx_pkts=[1-9] ]]; then
		echo "run_guest.sh: FAIL: skiff's device counters show no traffic: ${counters:-no stats file}"
		bad=1
	fi
	# sysfs: one 0/1 character per feature bit, bit 0 first.
	feat=$(sed -n 's/^VSOCK-FEATURES //p' "$work/console" | head -n1)
	if [ -z "$feat" ] || [ "${feat:4:1}" != "$([ "$mrg" = on ] && echo 1 || echo 0)" ]; then
		echo "run_guest.sh: FAIL: negotiated features ${feat:-none}: VIRTIO_VSOCK_F_MRG_RXBUF (bit 4) not as offered (mrg-rxbuf=$mrg)"
		bad=1
	fi
	if grep -E 'Oops|BUG|WARNING|[Pp]anic|Call Trace' "$work/console" | sed 's/^/  console: /' | grep .; then
		echo "run_guest.sh: FAIL: the guest console shows the lines above"
		bad=1
	fi
	echo "run_guest.sh: skiff device counters: $counters"
	[ $bad = 0 ] || exit 1
fi

if [ "$variant" = patched ]; then
	# One summary per run (two with --skiff: loopback, then the device), each with no failure.
	[ $rc = 0 ] && [ "$(grep -c '^# summary .*fail=0' "$work/console")" = "$runs" ] &&
		! grep -q '^# summary .*fail=[1-9]' "$work/console" && exit 0
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
# The ping-pongs run (and fail) once per run, the loopback-only cases once.
for t in "${expect_fail[@]}"; do
	want=1
	[[ $t == pingpong_* ]] && want=$runs
	[ "$(grep -Ec "^not ok [0-9]+ $t:" "$work/console")" = "$want" ] ||
		{ echo "run_guest.sh: baseline: $t was expected to fail (in each of $want run(s))" && ok=0; }
done
# The speculative retry: about two receive calls per message, in each run.
if ! awk -v runs="$runs" '/^metric test=pingpong_recv /{ for (i = 1; i <= NF; i++) if ($i ~ /^calls_per_msg=/) {
		split($i, kv, "="); if (kv[2] >= 1.9 && kv[2] <= 2.1) f++ } } END { exit f != runs }' \
	"$work/console"; then
	echo "run_guest.sh: baseline: pingpong_recv calls_per_msg not about 2"
	ok=0
fi
[ $ok = 1 ] && echo "run_guest.sh: baseline failed as documented" && exit 0
exit 1
