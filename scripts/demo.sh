#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The main job, from a fresh Debian 12 machine: install what is needed, build skiff
# and a guest kernel, boot a Linux guest, move data over vsock through skiff's
# virtio-vsock device both ways, and print what happened.
#
# The guest is the x86-64 Linux kernel booted by skiff itself, with skiff's in-process
# virtio-vsock device on virtio-mmio offering mergeable RX buffers (the demo checks that the
# guest negotiated them). Where this machine's KVM is hardware virtualization (VT-x/AMD-V),
# skiff runs here. Where it is not (nested PVM KVM, no KVM: guest user space cannot run),
# skiff runs inside an emulated x86-64 host with KVM (scripts/test-host.sh: QEMU TCG with
# AMD SVM; real hardware-virtualization semantics at emulation speed, which the demo says).
# SKIFF_DEMO_VMM=skiff|skiff-emulated|uml forces one: skiff (refused without hardware KVM),
# skiff-emulated, or uml: a user-mode Linux guest with the same device served over
# vhost-user by skiff-vsock (no virtualization needed);
# SKIFF_DEMO_VARIANT=baseline|patched picks the guest kernel (default patched),
# SKIFF_DEMO_MIB=N the transfer size each way (default 64), SKIFF_DEMO_KERNEL=FILE another
# guest kernel (a UML binary, or an x86-64 bzImage/vmlinux for skiff) instead of the cached one.
#
# It fails fast: a guest that dies or panics ends the demo within seconds with the reason
# and the console's last lines; transfer figures are printed only for data that arrived
# and was checked. Exit status 0 only if every byte was checked on both sides.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
mib=${SKIFF_DEMO_MIB:-64}
variant=${SKIFF_DEMO_VARIANT:-patched}
port_g2h=5000 # guest connects to host port 5000 (host listens on <uds>_5000)
port_h2g=6000 # host CONNECTs to guest port 6000
timeout_s=180 # the whole transfer, both ways

say() { printf 'demo: %s\n' "$*"; }
die() {
	printf 'demo: error: %s\n' "$*" >&2
	exit 2
}

bash scripts/machine-info.sh
[[ $mib =~ ^[1-9][0-9]{0,3}$ ]] && [ "$mib" -le 4096 ] ||
	die "SKIFF_DEMO_MIB='$mib': want a whole number of MiB, 1 to 4096 (the transfer must finish within ${timeout_s} s)"
[ -z "${SKIFF_DEMO_KERNEL:-}" ] || [ -r "$SKIFF_DEMO_KERNEL" ] ||
	die "SKIFF_DEMO_KERNEL='$SKIFF_DEMO_KERNEL' is not a readable file"
case $variant in baseline | patched) ;; *) die "SKIFF_DEMO_VARIANT='$variant': want baseline or patched" ;; esac
kvm=$(bash scripts/machine-info.sh --kvm)
vmm=${SKIFF_DEMO_VMM:-}
case $vmm in
'')
	if [ "$kvm" = hardware ]; then
		vmm=skiff
	else
		vmm=skiff-emulated
		say "KVM here is not hardware virtualization (/dev/kvm: $kvm): skiff runs in an emulated x86-64 host with KVM (SKIFF_DEMO_VMM=uml: a user-mode Linux guest instead)"
	fi
	;;
uml) ;;
skiff-emulated) ;;
skiff)
	[ "$kvm" = hardware ] || die "SKIFF_DEMO_VMM=skiff needs hardware KVM (VT-x/AMD-V); /dev/kvm here is '$kvm', which cannot run Linux user space (see docs/machines.md): use SKIFF_DEMO_VMM=skiff-emulated (skiff in an emulated host with KVM, slow), uml, or leave it unset"
	;;
*) die "SKIFF_DEMO_VMM='$vmm': want skiff, skiff-emulated or uml" ;;
esac

# skiff-emulated: everything is prepared here, then this script runs again as
# SKIFF_DEMO_VMM=skiff inside the emulated host (SKIFF_DEMO_PREPARED skips the preparation).
prepared=${SKIFF_DEMO_PREPARED:-0}
if [ "$prepared" = 1 ]; then
	say "virtualization here is emulated (QEMU TCG with AMD SVM, scripts/test-host.sh): the speeds below are the emulator's, not this machine's"
else
	say "set-up (scripts/setup.sh)"
	setup_log=$(mktemp /tmp/skiff-demo-setup.XXXXXX.log)
	bash scripts/setup.sh >"$setup_log" 2>&1 || {
		tail -n 20 "$setup_log" >&2
		die "set-up failed (log $setup_log)"
	}
	rm -f "$setup_log"
	say "building skiff (build/)"
	# An existing build directory reconfigures itself when a CMakeLists.txt changed.
	[ -f build/CMakeCache.txt ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j"$(nproc)" >/dev/null
fi
arch=um
[ "$vmm" = uml ] || arch=x86_64
if [ -n "${SKIFF_DEMO_KERNEL:-}" ]; then
	[ -r "$SKIFF_DEMO_KERNEL" ] || die "SKIFF_DEMO_KERNEL='$SKIFF_DEMO_KERNEL' is not a readable file"
	say "guest kernel: $SKIFF_DEMO_KERNEL (SKIFF_DEMO_KERNEL)"
elif [ "$prepared" != 1 ]; then
	say "building the $variant $arch guest kernel (cached after the first run)"
	bash scripts/build-kernels.sh --variant "$variant" --arch "$arch" >/dev/null
fi
if [ "$vmm" = skiff-emulated ]; then
	# The initramfs is packed here: under emulation every process start is slow.
	bash scripts/build-initramfs.sh -o build/demo-initrd.cpio.gz --bin build/tests/guest-programs/vsock-tool >/dev/null
	say "starting the emulated x86-64 host (scripts/test-host.sh; its kernel is fetched once)"
	exec bash scripts/test-host.sh --emulated --timeout $((timeout_s + 120)) -- \
		env SKIFF_DEMO_VMM=skiff SKIFF_DEMO_PREPARED=1 bash scripts/demo.sh
fi
kernel=${SKIFF_DEMO_KERNEL:-$(bash scripts/build-kernels.sh --print-path "$variant" "$arch")}

work=$(mktemp -d /tmp/skiff-demo.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
uds=$work/v.sock
tool=build/tests/guest-programs/vsock-tool
[ -x "$tool" ] || die "$tool was not built"
: >"$work/console.log"

# The guest: receive $mib MiB from the host on port 6000 while sending $mib MiB to
# host port 5000; vsock-tool checks every byte against a seeded pattern.
guest_run="for f in /sys/bus/virtio/devices/*; do
	[ \"\$(cat \$f/device)\" = 0x0013 ] && echo VSOCK-FEATURES \$(cat \$f/features)
done
vsock-tool listen $port_h2g --recv ${mib}M --seed 11 --peer-seed 22 &
l=\$!
vsock-tool connect 2:$port_g2h --send ${mib}M --seed 33 --connect-timeout 30000 --timeout 120
a=\$?
wait \$l
b=\$?
exit \$((a + b))"
if [ "$prepared" = 1 ]; then
	cp build/demo-initrd.cpio.gz "$work/initrd.cpio.gz"
else
	bash scripts/build-initramfs.sh -o "$work/initrd.cpio.gz" --bin "$tool" >/dev/null
fi

# Host side: a listener for the guest-initiated connection.
"$tool" listen "uds:${uds}_$port_g2h" --recv "${mib}M" --peer-seed 33 --timeout "$timeout_s" \
	>"$work/host-recv.log" 2>&1 &
recv_pid=$!
pids+=("$recv_pid")

dev_pid=''
if [ "$vmm" = uml ]; then
	build/vhost_user/skiff-vsock --socket "$work/vu.sock" --cid 3 --uds "$uds" \
		--mrg-rxbuf on 2>"$work/device.log" &
	dev_pid=$!
	pids+=("$dev_pid")
	for _ in $(seq 100); do
		[ -S "$work/vu.sock" ] && break
		kill -0 "$dev_pid" 2>/dev/null || break
		sleep 0.05
	done
	[ -S "$work/vu.sock" ] || {
		cat "$work/device.log" >&2
		die "skiff-vsock did not start (log above)"
	}
	bash scripts/guest-run.sh uml --kernel "$kernel" --initrd "$work/initrd.cpio.gz" \
		--run "$guest_run" --vsock "$work/vu.sock" --timeout "$timeout_s" \
		>"$work/console.log" 2>"$work/runner.log" &
	guest=$!
else
	SKIFF_STATS=$work/stats build/vmm/skiff run --kernel "$kernel" --initrd "$work/initrd.cpio.gz" \
		--mem 256M --console "file:$work/console.log" \
		--cmdline "console=ttyS0 quiet reboot=k panic=-1 no_timer_check skiff.run64=$(printf '%s' "$guest_run" | base64 -w0)" \
		--vsock "cid=3,uds=$uds,mrg-rxbuf=on" 2>"$work/device.log" &
	guest=$!
fi
pids+=("$guest")

# Host side: connect to the guest's listener and send $mib MiB. Until the guest listens,
# the guest answers the device's REQUEST with RST and the device closes our socket
# without "OK": retry that (and only that) while the guest lives.
send_loop() {
	local i
	for i in $(seq 600); do
		"$tool" connect "uds:$uds:$port_h2g" --send "${mib}M" --seed 22 --timeout "$timeout_s" \
			>"$work/host-send.log" 2>&1 && return 0
		grep -q 'where=handshake\|where=connect' "$work/host-send.log" || return 1
		sleep 0.2
	done
	return 1
}
t0=$(date +%s.%N)
send_loop &
send_pid=$!
pids+=("$send_pid")

# Watch the three: the guest ending (for whatever reason) or a panic on its console ends
# the wait within seconds; the host sides get 5 s after the guest is gone to finish.
panic_re='Kernel panic|Attempted to kill init|BUG: |Oops|general protection fault|emulation failure|ptrace set fp regs failed'
reason='' guest_gone_at=''
deadline=$(($(date +%s) + timeout_s + 30))
while :; do
	if [ -z "$guest_gone_at" ] && ! kill -0 "$guest" 2>/dev/null; then
		guest_gone_at=$(date +%s)
	fi
	if [ -z "$reason" ] && grep -qE "$panic_re" "$work/console.log" "$work/device.log" 2>/dev/null; then
		reason="the guest failed: $(grep -hE "$panic_re" "$work/console.log" "$work/device.log" | head -n1)"
		kill "$guest" 2>/dev/null || true
		[ -n "$guest_gone_at" ] || guest_gone_at=$(date +%s)
	fi
	host_busy=0
	kill -0 "$recv_pid" 2>/dev/null && host_busy=1
	kill -0 "$send_pid" 2>/dev/null && host_busy=1
	if [ -n "$guest_gone_at" ] && [ $host_busy = 0 ]; then break; fi
	if [ -n "$guest_gone_at" ] && [ $(($(date +%s) - guest_gone_at)) -ge 5 ]; then
		[ -n "$reason" ] || reason="the guest ended while the host side was still waiting for data"
		break
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		reason="timed out after ${timeout_s} s"
		break
	fi
	sleep 0.2
done
t1=$(date +%s.%N)
for p in "$recv_pid" "$send_pid" "$guest"; do kill "$p" 2>/dev/null || true; done
guest_status=0
wait "$guest" 2>/dev/null || guest_status=$?
if [ -n "$dev_pid" ]; then
	kill -TERM "$dev_pid" 2>/dev/null || true
	wait "$dev_pid" 2>/dev/null || true
fi
wait 2>/dev/null || true

# A serial console (skiff's ttyS0) ends its lines with \r\n.
guest_rc=$(tr -d '\r' <"$work/console.log" | sed -n 's/^SKIFF-RESULT .*rc=\([^ ]*\)$/\1/p' | head -n1)
host_recv_ok=0 host_send_ok=0 guest_recv_ok=0 guest_send_ok=0
grep -q 'VSOCK-TOOL status=ok' "$work/host-recv.log" 2>/dev/null && host_recv_ok=1
grep -q 'VSOCK-TOOL status=ok' "$work/host-send.log" 2>/dev/null && host_send_ok=1
grep -q 'VSOCK-TOOL status=ok mode=listen' "$work/console.log" && guest_recv_ok=1
grep -q 'VSOCK-TOOL status=ok mode=connect' "$work/console.log" && guest_send_ok=1

say "guest console (vsock-tool results):"
grep -E 'VSOCK-TOOL |SKIFF-RESULT' "$work/console.log" | sed 's/^/  guest: /' || echo "  guest: (none)"
say "host side:"
grep -h 'VSOCK-TOOL' "$work/host-recv.log" "$work/host-send.log" 2>/dev/null | sed 's/^/  host: /' || echo "  host: (none)"
say "device:"
grep -E 'counters|conns_open|listening|error|refus' "$work/device.log" | sed 's/^/  /' ||
	echo "  (the device printed no message: nothing went wrong)"
mrg_ok=1
if [ "$vmm" = skiff ]; then
	# Counters skiff wrote at exit (SKIFF_STATS), and the features the guest's driver
	# accepted as its sysfs shows them (one 0/1 per bit; bit 4 is VIRTIO_VSOCK_F_MRG_RXBUF).
	grep -E '^vsock_(rx|tx)_(pkts|bytes)=|^vsock_conns_(opened|refused)=|^vsock_(malformed|dropped)_pkts=' \
		"$work/stats" 2>/dev/null | paste -sd' ' | sed 's/^/  counters: /'
	grep -qE '^vsock_conns_refused=[1-9]' "$work/stats" 2>/dev/null &&
		echo "  (refused connections are the host sender's tries before the guest listened: it retries)"
	feat=$(tr -d '\r' <"$work/console.log" | sed -n 's/^VSOCK-FEATURES //p' | head -n1)
	if [ "${feat:4:1}" = 1 ]; then
		say "the guest negotiated mergeable RX buffers (VIRTIO_VSOCK_F_MRG_RXBUF; features ${feat:0:8}...)"
	elif [ "$variant" = baseline ] || [ -n "${SKIFF_DEMO_KERNEL:-}" ]; then
		say "the guest did not negotiate mergeable RX buffers (features '${feat:-none}'; expected of a kernel without the series)"
	else
		mrg_ok=0
		reason="the guest did not negotiate VIRTIO_VSOCK_F_MRG_RXBUF (features '${feat:-none}')"
	fi
fi

# rate LOG MODE: MB/s of the status=ok VSOCK-TOOL line of that mode (sent= over elapsed_ns=).
rate() {
	sed -n "/VSOCK-TOOL status=ok mode=$2/{s/.* sent=\([0-9]*\) .*elapsed_ns=\([0-9]*\).*/\1 \2/p;q}" "$1" |
		awk '{ if ($2 > 0) printf "%.0f MB/s", $1 / ($2 / 1e3) }'
}
if [ $guest_send_ok = 1 ] && [ $host_recv_ok = 1 ]; then
	say "guest to host: ${mib} MiB checked, $(rate "$work/console.log" connect) (guest sender's clock)"
fi
if [ $host_send_ok = 1 ] && [ $guest_recv_ok = 1 ]; then
	say "host to guest: ${mib} MiB checked, $(rate "$work/host-send.log" connect) (host sender's clock)"
fi
if [ -z "$reason" ] && [ "$guest_rc" = 0 ] && [ $host_recv_ok = 1 ] && [ $host_send_ok = 1 ] && [ $mrg_ok = 1 ]; then
	say "moved ${mib} MiB each way in $(printf '%.2f' "$(echo "$t1 - $t0" | bc)") s (wall, from the guest's start to its shutdown)"
	say "OK: every byte checked on both sides"
	rm -rf "$work"
	exit 0
fi
[ -n "$reason" ] || reason="guest result rc=${guest_rc:-none} (runner status $guest_status), host receive ok=$host_recv_ok, host send ok=$host_send_ok"
say "FAILED: $reason"
say "last console lines:"
grep -v '^$' "$work/console.log" | tail -n 15 | sed 's/^/  | /'
if [ -s "$work/device.log" ]; then
	say "last device lines:"
	tail -n 5 "$work/device.log" | sed 's/^/  | /'
fi
[ -s "$work/runner.log" ] && sed 's/^/  runner: /' "$work/runner.log"
say "logs kept in $work"
exit 1
