#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# host_run.sh's retry rule, without an emulated host (ctest unit-host-run-retry): a fake
# test-host.sh (SKIFF_TEST_HOST_SH) plays one failure on its first call and succeeds on
# the second; the test checks that exactly the emulator's faults are run again (where
# /dev/kvm is not hardware virtualization), that every other failure stands, and that the
# retry gets only what is left of the time limit.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cd "$t"
cat >fake.sh <<'FAKE'
#!/usr/bin/env bash
# Args: --work W --timeout S -- CMD...; the first call prints $FAKE_LINE and exits
# $FAKE_RC, later calls exit 0; every call appends its --timeout to calls.
n=$(cat "$FAKE_DIR/calls" 2>/dev/null | wc -l)
echo "$4" >>"$FAKE_DIR/calls"
if [ "$n" = 0 ]; then
	echo "$FAKE_LINE" >&2
	exit "$FAKE_RC"
fi
echo "second run ok"
FAKE
hw=$(bash "$repo/scripts/machine-info.sh" --kvm)
fails=0
# case NAME RC LINE EXPECT_CALLS EXPECT_RC
case_() {
	rm -f calls
	out=$(FAKE_DIR=$t FAKE_RC=$2 FAKE_LINE=$3 SKIFF_TEST_HOST_SH=$t/fake.sh \
		bash "$repo/tests/skiff-linux/host_run.sh" 300 -- true 2>&1)
	rc=$?
	calls=$(wc -l <calls)
	if [ "$calls" != "$4" ] || [ "$rc" != "$5" ]; then
		echo "FAIL $1: $calls calls (want $4), exit $rc (want $5); output:"
		echo "$out" | sed 's/^/  | /'
		fails=$((fails + 1))
		return
	fi
	if [ "$calls" = 2 ]; then
		second=$(sed -n 2p calls)
		if [ "$second" -gt 300 ] || [ "$second" -lt 240 ] || ! grep -q 'RETRY' <<<"$out"; then
			echo "FAIL $1: the retry had --timeout $second (want <= 300, the time left) or no RETRY line"
			fails=$((fails + 1))
			return
		fi
	fi
	echo "ok   $1 ($calls calls, exit $rc)"
}
if [ "$hw" = hardware ]; then
	case_ "host triple fault on hardware: no retry" 123 \
		"test-host.sh: the emulated host triple-faulted (QEMU ended, status 0)" 1 123
else
	case_ "emulated host triple fault: retried" 123 \
		"test-host.sh: the emulated host triple-faulted (QEMU ended, status 0) (75.7 s after QEMU started)" 2 0
	case_ "QEMU ended silently: retried" 123 \
		"test-host.sh: QEMU ended (status 0) without the command's exit status" 2 0
	case_ "a skiff VM's triple fault: retried" 1 \
		"skiff: vm0 ended (triple-fault): triple fault on vCPU 0 (RIP 0xffffffff81000000)" 2 0
	case_ "a guest that stopped (heartbeat gone): retried" 1 \
		"FAIL skiff guest: guest_watch: the guest stopped: its console silent for 60 s though it writes a line every 10 s (last: SKIFF-ALIVE 41.20 s)" 2 0
	guard='test-host.sh: the emulated host failed: [   80.875543] BUG: TASK stack guard page was hit at 0000000050d84d48 (stack is 00000000ce94d715..0000000020adb81a)
 (85.6 s after QEMU started); console tail:
  | [   80.939593] RIP: 0010:error_entry+0x1e/0x130
  | [   80.939593] Kernel panic - not syncing: Fatal exception in interrupt'
	case_ "host stack recursion in error_entry: retried" 123 "$guard" 2 0
	case_ "host stack overflow elsewhere: not retried" 123 \
		"${guard/error_entry+0x1e/vsock_recv+0x1e}" 1 123
	stopped='test-host.sh: the emulated host stopped: no process snapshot from it for 120 s (358.1 s after QEMU started); console tail:
test-host.sh: its vCPUs (QEMU monitor):
  sample 0: vCPU 0: RIP=ffffffff81a592eb native_safe_halt+0xb IF=1 CPL=0 HLT=1
  sample 0: vCPU 1: RIP=ffffffff81a592eb native_safe_halt+0xb IF=1 CPL=0 HLT=1
  sample 1: vCPU 0: RIP=ffffffff81a592eb native_safe_halt+0xb IF=1 CPL=0 HLT=1
  sample 1: vCPU 1: RIP=ffffffff81a592eb native_safe_halt+0xb IF=1 CPL=0 HLT=1'
	case_ "host stopped, a halted vCPU with an interrupt pending: retried" 123 "$stopped
  vCPU 0 LAPIC: LVTT 0x000000ec one-shot Fixed (vec 236) ISR (none) IRR 236 251
  vCPU 1 LAPIC: LVTT 0x000000ec one-shot Fixed (vec 236) ISR (none) IRR (none)" 2 0
	case_ "host stopped, halted vCPUs, nothing pending: not retried" 123 "$stopped
  vCPU 0 LAPIC: LVTT 0x000000ec one-shot Fixed (vec 236) ISR (none) IRR (none)
  vCPU 1 LAPIC: LVTT 0x000000ec one-shot Fixed (vec 236) ISR (none) IRR (none)" 1 123
	case_ "host stopped, the vCPU with a pending interrupt running: not retried" 123 "${stopped/sample 1: vCPU 0: RIP=ffffffff81a592eb native_safe_halt+0xb IF=1 CPL=0 HLT=1/sample 1: vCPU 0: RIP=ffffffff81000000 spin+0x0 IF=1 CPL=0 HLT=0}
  vCPU 0 LAPIC: LVTT 0x000000ec one-shot Fixed (vec 236) ISR (none) IRR 236" 1 123
fi
case_ "host kernel panic: not retried" 123 \
	"test-host.sh: the emulated host failed: Kernel panic - not syncing" 1 123
case_ "test failure: not retried" 1 "stock_kernels_test: 4 MiB: byte 17 differs" 1 1
case_ "timeout: not retried" 124 "test-host.sh: timed out after 300 s" 1 124
case_ "success: one call" 0 "fine" 1 0
[ "$fails" = 0 ] || exit 1
