#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Guest to guest on skiff's own path (ctest skiff-linux-g2g): one `skiff run` boots two
# patched x86-64 guests (`--vm`), CID 3 and CID 4, each with the test initramfs and its
# in-process virtio-mmio vsock device with mrg-rxbuf=on; their devices route to each other
# by CID (devices/virtio_vsock/src/router.c), no host socket in between. Guest 3 listens on
# port 5000 (vsock-tool listen), guest 4 connects to 3:5000; MIB MiB go each way at once,
# every byte checked by the receiving vsock-tool (the pattern of the sender's seed), and
# the FNV-1a summaries of both consoles must agree (3's send = 4's receive and the other
# way round). Guest 4 first waits for 3's listener: guest 3 opens a second listener on
# port 5001 once port 5000 listens, and guest 4 retries connecting to 3:5001 (a connect
# to a port nobody listens on is refused at once) every 0.1 s, at most 60 s. Both guests
# power off (skiff.halt=poweroff), so skiff exits 0. Also checked: VIRTIO_VSOCK_F_MRG_RXBUF
# negotiated on both, both consoles clean (no Oops, BUG, WARNING, panic, Call Trace), each
# VM's device counters (SKIFF_STATS, keys vm1./vm2.) show packets both ways. seccomp in its
# default kill mode. Runs on a host with hardware-virtualization KVM, emulated where the
# machine has none (scripts/test-host.sh).
#
# Usage: g2g_test.sh BUILD_DIR INITRAMFS [MIB]   (MIB default 4)
# Exit 0 pass, 1 fail, 77 skipped (no patched x86_64 kernel: run scripts/build-kernels.sh),
# or test-host.sh's 123/124/125 (the emulated host died, timed out, could not start).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

if [ "${1:-}" != --inner ]; then
	build=$(cd "$1" && pwd) initrd=$(realpath "$2") mib=${3:-4}
	[ -s "$initrd" ] || {
		echo "g2g_test: FAIL: no initramfs $initrd (build target skiff-initramfs)"
		exit 1
	}
	exec bash "$repo/tests/skiff-linux/host_run.sh" 290 --kernel patched -- \
		bash "$repo/tests/skiff-linux/g2g_test.sh" --inner "$build" "$initrd" "$mib"
fi

set +e
build=$2 initrd=$3 mib=$4
skiff=$build/vmm/skiff
failed=0
fail() {
	echo "g2g_test: FAIL: $*"
	failed=1
}
bash "$repo/scripts/machine-info.sh" --kvm | grep -qx hardware || {
	echo "g2g_test: FAIL: /dev/kvm here is not hardware virtualization"
	exit 1
}

kernel=$(bash "$repo/scripts/build-kernels.sh" --print-path patched x86_64)
d=$(mktemp -d /tmp/skiff-g2g.XXXXXX)
features='for f in /sys/bus/virtio/devices/*; do
	[ "$(cat $f/device)" = 0x0013 ] && echo VSOCK-FEATURES $(cat $f/features)
done'
# Guest 3: the data listener; once it listens, the readiness listener on 5001 (one accept).
guest3="$features
{ vsock-tool listen 5000 --send ${mib}M --seed 33 --recv ${mib}M --peer-seed 44 --shut-wr --timeout 120
  echo \$? >/tmp/rc; } 2>&1 | while IFS= read -r l; do
	echo \"\$l\"
	case \$l in VSOCK-TOOL-LISTENING*) vsock-tool listen 5001 --timeout 120 >/dev/null 2>&1 & ;; esac
done
exit \$(cat /tmp/rc)"
# Guest 4: wait until guest 3 listens (refused connects return at once), then the data.
guest4="$features
i=0
until vsock-tool connect 3:5001 --connect-timeout 10000 --timeout 20 >/dev/null 2>&1; do
	i=\$((i + 1))
	[ \$i -lt 600 ] || { echo 'g2g: guest 3 never listened'; exit 1; }
	sleep 0.1
done
echo G2G-READY after \$i retries
vsock-tool connect 3:5000 --send ${mib}M --seed 44 --recv ${mib}M --peer-seed 33 --shut-wr \
	--connect-timeout 30000 --timeout 120"
cmdline() { # $SKIFF_GUEST_CMDLINE last, as in scripts/guest-run.sh
	printf 'console=ttyS0 quiet reboot=k panic=-1 skiff.halt=poweroff skiff.run64=%s%s' \
		"$(printf '%s' "$1" | base64 -w0)" "${SKIFF_GUEST_CMDLINE:+ $SKIFF_GUEST_CMDLINE}"
}

t0=$(date +%s.%N)
rc=0
SKIFF_STATS=$d/stats timeout -k 5 150 "$skiff" run \
	--kernel "$kernel" --initrd "$initrd" --mem 256M --console "file:$d/c3" \
	--cmdline "$(cmdline "$guest3")" --vsock "cid=3,uds=$d/a.sock,mrg-rxbuf=on" \
	--vm --kernel "$kernel" --initrd "$initrd" --mem 256M --console "file:$d/c4" \
	--cmdline "$(cmdline "$guest4")" --vsock "cid=4,uds=$d/b.sock,mrg-rxbuf=on" \
	2>"$d/skiff" || rc=$?
t1=$(date +%s.%N)
tr -d '\r' <"$d/c3" >"$d/c3.txt" 2>/dev/null
tr -d '\r' <"$d/c4" >"$d/c4.txt" 2>/dev/null

[ $rc = 0 ] || fail "skiff exit $rc: $(tr '\n' ' ' <"$d/skiff")"
for g in 3 4; do
	c=$d/c$g.txt
	grep -qx 'SKIFF-RESULT rc=0' "$c" || fail "guest $g result: $(grep SKIFF-RESULT "$c" || echo none)"
	# scripts/guest-run.sh's fatal patterns, and kernel warnings (a command line that names
	# panic=, as SKIFF_GUEST_CMDLINE=loglevel=7 shows, is no failure).
	grep -E 'Kernel panic - not syncing|kernel BUG at |[0-9a-f]{4} \[#[0-9]+\]|^(\[ *[0-9]+\.[0-9]+\] )?(Oops|WARNING:)|Call Trace:' "$c" |
		sed "s/^/  console $g: /" |
		grep . && fail "guest $g's console shows the lines above"
	feat=$(sed -n 's/^VSOCK-FEATURES //p' "$c" | head -n1)
	[ "${feat:4:1}" = 1 ] || fail "guest $g: negotiated features '$feat': no VIRTIO_VSOCK_F_MRG_RXBUF (bit 4)"
done
# Both ends of each direction agree on the data (FNV-1a of the stream, status=ok lines).
fnv() { sed -n "/^VSOCK-TOOL status=ok /s/.* $2=\([^ ]*\).*/\1/p" "$1" | grep -vx 0000000000000000 | head -n1; }
a=$(fnv "$d/c3.txt" send_fnv) b=$(fnv "$d/c4.txt" recv_fnv)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "guest 3 to guest 4: send_fnv '$a', recv_fnv '$b'"
a=$(fnv "$d/c4.txt" send_fnv) b=$(fnv "$d/c3.txt" recv_fnv)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "guest 4 to guest 3: send_fnv '$a', recv_fnv '$b'"
for v in vm1 vm2; do
	grep -q "^$v.vsock_rx_pkts=[1-9]" "$d/stats" && grep -q "^$v.vsock_tx_pkts=[1-9]" "$d/stats" ||
		fail "$v's device counters show no traffic: $(grep "^$v.vsock_" "$d/stats" | tr '\n' ' ')"
done
printf 'g2g_test: patched kernels, cid 3 <-> cid 4, mrg-rxbuf=on: %s MiB each way, %s, %.1f s wall (both boots to power-off; emulation speed if emulated)\n' \
	"$mib" "$(grep -h G2G-READY "$d/c4.txt" | head -n1)" "$(echo "$t1 - $t0" | bc)"
grep -h '^vm[12]\.vsock_\(rx\|tx\)_pkts' "$d/stats" | tr '\n' ' ' | sed 's/^/g2g_test: counters: /;s/ $/\n/'
if [ $failed = 1 ]; then
	for g in 3 4; do
		echo "g2g_test: guest $g: last console lines:"
		grep -v '^$' "$d/c$g.txt" | tail -n 15 | sed 's/^/  | /'
	done
	sed 's/^/  skiff: /' "$d/skiff"
fi
rm -rf "$d"
[ $failed = 0 ] && echo "g2g_test: PASS" && exit 0
exit 1
