#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A stand-in for a guest that dies, for the tests of how scripts/guest-run.sh and the
# harnesses report a dead guest (tests/support/guest_watch_test.py). Pass it as the UML
# kernel (guest-run.sh uml --kernel fake-guest.sh), or put it first in PATH under the name
# qemu-system-x86_64. What it does, from SKIFF_FAKE_GUEST:
#   panic-hang  print a few boot lines, a panic ("Attempted to kill init") with a trace,
#               then hang, with a helper process, as a panicked UML can
#   panic-abort the same panic, then die by SIGABRT at once (what UML's panic does)
#   oops-hang   an x86 Oops and its trace, then hang
#   abort       a host-side complaint, then SIGABRT without any panic line
#   halt-abort  SKIFF-RESULT rc=0, SKIFF-END and "reboot: System halted", then SIGABRT
#               (UML's exit path aborting after an orderly halt)
#   halt-abort-rc  the same with SKIFF-RESULT rc=1
#   exit        boot lines, then exit 0 without a SKIFF-RESULT line
#   hang        print a boot line and hang (only the timeout ends it)
#   ok          print SKIFF-RESULT rc=0 and exit 0 (the healthy case)
#   peer-client-panic
#               for tests/peer/peer_test.py: the guest whose script (skiff.run64= among
#               the arguments) runs vsock_test --mode=server says its control socket
#               listens and hangs; any other guest panics and hangs
set -u
boot() {
	echo "Linux version 6.1.0-fake (skiff test stand-in)"
	echo "Run /init as init process"
}
panic() {
	echo "userspace - ptrace set fp regs failed, errno = 14"
	echo "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b"
	echo "CPU: 0 PID: 1 Comm: init Not tainted 6.1.0-fake"
	echo "Call Trace:"
	echo " <TASK>"
	echo " dump_stack_lvl+0x44/0x5c"
	echo " panic+0x118/0x2ed"
}
hang() {
	sleep 1000 &
	wait
}
script() {
	local a
	for a in "$@"; do
		[[ $a == skiff.run64=* ]] && printf '%s' "${a#skiff.run64=}" | base64 -d
	done
}
case ${SKIFF_FAKE_GUEST:-} in
peer-client-panic)
	boot
	if script "$@" | grep -q -- '--mode=server'; then
		echo "Control socket listening on 0.0.0.0:1234"
	else
		panic
	fi
	hang
	;;
panic-hang) boot && panic && hang ;;
panic-abort) boot && panic && kill -ABRT $$ ;;
halt-abort | halt-abort-rc)
	boot
	echo "SKIFF-RESULT step=1 rc=$([ "$SKIFF_FAKE_GUEST" = halt-abort ] && echo 0 || echo 1)"
	echo "SKIFF-END"
	echo "reboot: System halted"
	kill -ABRT $$
	;;
oops-hang)
	boot
	echo "BUG: kernel NULL pointer dereference, address: 0000000000000008"
	echo "Oops: 0002 [#1] PREEMPT SMP NOPTI"
	echo "RIP: 0010:virtio_transport_recv_pkt+0x52/0x7c0"
	hang
	;;
abort) boot && echo "start_userspace : expected SIGSTOP, got status = 139" && kill -ABRT $$ ;;
exit) boot ;;
hang) boot && hang ;;
ok) boot && echo "SKIFF-RESULT rc=0" ;;
*)
	echo "fake-guest.sh: SKIFF_FAKE_GUEST=${SKIFF_FAKE_GUEST:-} is not a mode (see the header)" >&2
	exit 2
	;;
esac
