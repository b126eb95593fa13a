#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The main job, from a fresh Debian 12 machine: install what is needed, build skiff
# and a guest kernel, boot a Linux guest, move data over vsock through skiff's
# virtio-vsock device both ways, and print what happened.
#
# Where KVM is hardware virtualization (VT-x/AMD-V), the guest is x86-64 Linux booted
# by skiff itself (virtio-mmio transport). Where it is not (nested PVM KVM, no KVM),
# ring-0 guest code cannot run at useful speed, so the same device is served to a
# user-mode Linux guest over vhost-user by skiff-vsock. SKIFF_DEMO_VMM=skiff|uml
# forces one. SKIFF_DEMO_MIB sets the transfer size each way (default 64).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
mib=${SKIFF_DEMO_MIB:-64}
port_g2h=5000 # guest connects to host port 5000 (host listens on <uds>_5000)
port_h2g=6000 # host CONNECTs to guest port 6000
variant=${SKIFF_DEMO_VARIANT:-patched}

say() { printf 'demo: %s\n' "$*"; }

bash scripts/setup.sh >/dev/null
say "building skiff (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

vmm=${SKIFF_DEMO_VMM:-}
if [ -z "$vmm" ]; then
	if [ -e /sys/module/kvm_intel ] || [ -e /sys/module/kvm_amd ]; then
		vmm=skiff
	else
		vmm=uml
		say "KVM here is not hardware virtualization ($(ls /sys/module | grep -m1 '^kvm_' || echo 'no kvm')): using a user-mode Linux guest with the same device (skiff-vsock)"
	fi
fi
arch=um
[ "$vmm" = skiff ] && arch=x86_64
say "building the $variant $arch guest kernel (cached after the first run)"
bash scripts/build-kernels.sh --variant "$variant" --arch "$arch" >/dev/null
kernel=$(bash scripts/build-kernels.sh --print-path "$variant" "$arch")

work=$(mktemp -d /tmp/skiff-demo.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
uds=$work/v.sock
tool=build/tests/guest-programs/vsock-tool
[ -x "$tool" ] || tool=$(find build -name vsock-tool -type f -perm -u+x | head -n1)

# The guest: receive $mib MiB from the host on port 6000 while sending $mib MiB to
# host port 5000; vsock-tool checks every byte against a seeded pattern.
guest_run="vsock-tool listen $port_h2g --recv ${mib}M --seed 11 --peer-seed 22 &
l=\$!
vsock-tool connect 2:$port_g2h --send ${mib}M --seed 33 --timeout 120
a=\$?
wait \$l
b=\$?
echo SKIFF-RESULT rc=\$((a + b))"
bash scripts/build-initramfs.sh -o "$work/initrd.cpio.gz" --bin "$tool" >/dev/null

# Host side: a listener for the guest-initiated connection.
"$tool" listen "uds:${uds}_$port_g2h" --recv "${mib}M" --peer-seed 33 --timeout 120 \
	>"$work/host-recv.log" 2>&1 &
pids+=($!)

if [ "$vmm" = uml ]; then
	build/vhost_user/skiff-vsock --socket "$work/vu.sock" --cid 3 --uds "$uds" \
		--mrg-rxbuf on 2>"$work/skiff-vsock.log" &
	pids+=($!)
	for _ in $(seq 100); do [ -S "$work/vu.sock" ] && break; sleep 0.05; done
	bash scripts/guest-run.sh uml --kernel "$kernel" --initrd "$work/initrd.cpio.gz" \
		--run "$guest_run" --vsock "$work/vu.sock" --timeout 300 \
		>"$work/console.log" 2>&1 &
	guest=$!
else
	build/vmm/skiff run --kernel "$kernel" --initrd "$work/initrd.cpio.gz" \
		--mem 256M --console "file:$work/console.log" \
		--cmdline "console=ttyS0 quiet reboot=k panic=-1 skiff.run64=$(printf '%s' "$guest_run" | base64 -w0)" \
		--vsock "cid=3,uds=$uds,mrg-rxbuf=on" 2>"$work/skiff-vsock.log" &
	guest=$!
fi

# Host side: connect to the guest's listener and send $mib MiB. Until the guest listens,
# the guest answers the device's REQUEST with RST and the device closes our socket
# without "OK": retry that (and only that) for up to a minute.
t0=$(date +%s.%N)
for _ in $(seq 300); do
	"$tool" connect "uds:$uds:$port_h2g" --send "${mib}M" --seed 22 --timeout 120 \
		>"$work/host-send.log" 2>&1 && break
	grep -q 'where=handshake\|where=connect' "$work/host-send.log" || break
	kill -0 "$guest" 2>/dev/null || break
	sleep 0.2
done
rc=0
wait "$guest" || rc=$?
wait "${pids[0]}" || rc=1
t1=$(date +%s.%N)
if [ "$vmm" = uml ]; then
	kill -TERM "${pids[1]}" 2>/dev/null || true
	wait "${pids[1]}" 2>/dev/null || true
fi

say "guest console (vsock-tool results):"
grep -E 'VSOCK-TOOL |SKIFF-RESULT' "$work/console.log" | sed 's/^/  guest: /' || true
say "host side:"
sed 's/^/  host: /' "$work/host-recv.log" "$work/host-send.log" | grep 'VSOCK-TOOL' || true
say "device:"
grep -E 'counters|conns_open|listening' "$work/skiff-vsock.log" | sed 's/^/  /' || true
rate() { # the MB/s of the first VSOCK-TOOL line in $1 that matches $2, from sent= and elapsed_ns=
	sed -n "/$2/{s/.* sent=\([0-9]*\) .*elapsed_ns=\([0-9]*\).*/\1 \2/p;q}" "$1" |
		awk '{ if ($2 > 0) printf "%.0f MB/s", $1 / ($2 / 1e3); else print "?" }'
}
say "guest to host: $(rate "$work/console.log" 'mode=connect') (guest sender's clock); host to guest: $(rate "$work/host-send.log" 'mode=connect') (host sender's clock)"
say "moved ${mib} MiB each way in $(printf '%.2f' "$(echo "$t1 - $t0" | bc)") s (wall, including guest shutdown)"
if [ "$rc" = 0 ] && grep -q 'status=ok' "$work/host-recv.log"; then
	say "OK: every byte checked on both sides"
else
	say "FAILED (guest rc $rc); logs: console, skiff-vsock, host-recv, host-send in $work"
	trap - EXIT
	exit 1
fi
