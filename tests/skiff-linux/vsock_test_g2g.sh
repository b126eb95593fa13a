#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Linux's own vsock_test between two guests of one skiff process (issue 21, ctest
# skiff-linux-vsock-test): the server in guest CID 3, the client in guest CID 4, every
# test's traffic routed guest to guest by skiff's device (devices/virtio_vsock/src/
# router.c), no host socket in between. Two pairings:
#   newest  Debian's newest pinned stock kernel (scripts/stock-kernels.pins, sid 7.2 today)
#           with the vsock_test of the same version (scripts/stock-vsock-test.sh); its
#           own vsock modules; mrg-rxbuf off (no stock kernel knows it); noxsave
#           (stock_kernels_test.sh says why)
#   6.1     skiff's patched 6.1 kernel with 6.1's vsock_test (scripts/build-kernels.sh);
#           mrg-rxbuf on
# vsock_test's control channel is TCP, and skiff guests have no network device: each
# guest runs tests/guest-programs/ctl-relay, which carries that one TCP connection over a
# vsock stream on port 9000 of the same device (server guest: vsock 9000 -> its loopback
# TCP 9000; client guest: loopback TCP 9000 -> vsock 3:9000), so it never shares vsock_test's
# test port (1234).
# vsock_test stops at its first failing test: the pair then runs again, with fresh guests
# and --skip for every test that already has a result, until each test has one (at most
# 5 runs per pairing). A test passes when both ends printed its "N - name...ok". A test
# listed in NOT_APPLICABLE below is run and reported with its reason but does not fail the
# run; any other failure does, as does an Oops, BUG or WARNING on either console. A table
# of every test per pairing at the end. Runs on a host with hardware-virtualization KVM,
# emulated where the machine has none (scripts/test-host.sh).
#
# Usage: vsock_test_g2g.sh BUILD_DIR INITRAMFS [PAIRING...]   (default: newest 6.1)
# Exit 0 pass, 1 fail, 77 skipped (neither pairing's kernel or vsock_test could be had),
# or host_run.sh's 123/124/125.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

# "PAIRING ID reason": tests that cannot apply between two guests on a virtio transport.
NOT_APPLICABLE=''

if [ "${1:-}" != --inner ]; then
	build=$(cd "$1" && pwd) initrd=$(realpath "$2")
	shift 2
	pairings=("$@")
	[ ${#pairings[@]} -gt 0 ] || pairings=(newest 6.1)
	# shellcheck source=tests/skiff-linux/lib.sh
	. "$repo/tests/skiff-linux/lib.sh"
	last=$(grep -v '^#' "$repo/scripts/stock-kernels.pins" | grep . | tail -n1 | cut -d' ' -f1)
	SKIFF_STOCK_SUITES=$last skl_stock_prepare vsock_test_g2g "$build" "$initrd"
	vt_cpio() { # VSOCK_TEST OUT: a cpio archive with /bin/vsock_test, to append
		printf 'dir /bin 755 0 0\nfile /bin/vsock_test %s 755 0 0\n' "$1" >"$w/vt.spec"
		python3 "$repo/scripts/mkcpio.py" "$w/vt.spec" - | gzip -6 -n >"$2"
	}
	vt_count() { "$1" --list | grep -c '^[0-9]'; } # the tests a vsock_test binary has
	: >"$w/pairings"
	for p in "${pairings[@]}"; do
		case $p in
		newest)
			if ! vt=$(bash "$repo/scripts/stock-vsock-test.sh"); then
				echo "vsock_test_g2g: SKIP newest: scripts/stock-vsock-test.sh failed (above)"
				continue
			fi
			read -r _ rel kernel kinitrd pkgs <<<"$(tail -n1 "$w/kernels")"
			vt_cpio "${vt#* }" "$w/vt-newest.cpio.gz"
			cat "$kinitrd" "$w/vt-newest.cpio.gz" >"$w/initrd-newest"
			echo "newest $kernel $w/initrd-newest off noxsave $(vt_count "${vt#* }") stock $rel ($pkgs), vsock_test ${vt%% *}" >>"$w/pairings"
			;;
		6.1)
			if ! kernel=$(bash "$repo/scripts/build-kernels.sh" --print-path patched x86_64 2>/dev/null) ||
				! vt=$(bash "$repo/scripts/build-kernels.sh" --print-path patched tools vsock_test 2>/dev/null); then
				echo "vsock_test_g2g: SKIP 6.1: no patched x86_64 kernel or its vsock_test (scripts/build-kernels.sh)"
				continue
			fi
			vt_cpio "$vt" "$w/vt-61.cpio.gz"
			cat "$initrd" "$w/vt-61.cpio.gz" >"$w/initrd-61"
			echo "6.1 $kernel $w/initrd-61 on - $(vt_count "$vt") skiff's patched 6.1, its vsock_test" >>"$w/pairings"
			;;
		*)
			echo "vsock_test_g2g: unknown pairing $p (newest, 6.1)" >&2
			exit 2
			;;
		esac
	done
	[ -s "$w/pairings" ] || exit 77
	set +e
	bash "$repo/tests/skiff-linux/host_run.sh" 1500 -- \
		bash "$repo/tests/skiff-linux/vsock_test_g2g.sh" --inner "$build" "$w/pairings"
	exit $?
fi

set +e
build=$2 list=$3
skiff=$build/vmm/skiff
[ -s "$list" ] || {
	echo "vsock_test_g2g: FAIL: no pairing list at $list"
	exit 1
}
bash "$repo/scripts/machine-info.sh" --kvm | grep -qx hardware || {
	echo "vsock_test_g2g: FAIL: /dev/kvm here is not hardware virtualization"
	exit 1
}
failed=0
table=$(mktemp /tmp/skiff-vt-table.XXXXXX)
cmdline() { # EXTRA SCRIPT
	printf 'console=ttyS0 quiet reboot=k panic=-1 no_timer_check skiff.halt=poweroff%s skiff.run64=%s' \
		"${1:+ $1}" "$(printf '%s' "$2" | base64 -w0)"
}
# The guests' scripts. SKIP holds --skip options.
server_script() {
	cat <<EOF
vsock_test --mode=server --control-port=9000 --peer-cid=4 $1 >/tmp/vt.out 2>&1 &
vt=\$!
ctl-relay vsock-to-tcp 9000 127.0.0.1:9000 --timeout 400 >/tmp/relay.out 2>&1 &
wait \$vt
rc=\$?
sed 's/^/VT: /' /tmp/vt.out
sed 's/^/RELAY: /' /tmp/relay.out
echo VT-RC=\$rc
echo SKIFF-RESULT rc=\$rc
EOF
}
client_script() {
	cat <<EOF
ctl-relay tcp-to-vsock 9000 3:9000 --timeout 400 >/tmp/relay.out 2>&1 &
i=0
until grep -q 'CTL-RELAY listening' /tmp/relay.out; do
	i=\$((i + 1)); [ \$i -lt 300 ] || break; sleep 0.1
done
vsock_test --mode=client --control-host=127.0.0.1 --control-port=9000 --peer-cid=3 $1 >/tmp/vt.out 2>&1
rc=\$?
sed 's/^/VT: /' /tmp/vt.out
sed 's/^/RELAY: /' /tmp/relay.out
echo VT-RC=\$rc
echo SKIFF-RESULT rc=\$rc
EOF
}

while read -r name kernel initrd mrg extra ntests what; do
	[ "$extra" = - ] && extra=''
	d=$(mktemp -d /tmp/skiff-vt.XXXXXX)
	declare -A result=() title=() note=()
	attempt=0
	t0=$(date +%s)
	while [ $attempt -lt 5 ]; do
		attempt=$((attempt + 1))
		skip=''
		for id in "${!result[@]}"; do skip="$skip --skip=$id"; done
		a=$d/a$attempt
		mkdir -p "$a"
		SKIFF_STATS=$a/stats timeout -k 5 300 "$skiff" run \
			--kernel "$kernel" --initrd "$initrd" --mem 256M --console "file:$a/c3" \
			--cmdline "$(cmdline "$extra" "$(server_script "$skip")")" \
			--vsock "cid=3,uds=$a/a.sock,mrg-rxbuf=$mrg" \
			--vm --kernel "$kernel" --initrd "$initrd" --mem 256M --console "file:$a/c4" \
			--cmdline "$(cmdline "$extra" "$(client_script "$skip")")" \
			--vsock "cid=4,uds=$a/b.sock,mrg-rxbuf=$mrg" 2>"$a/skiff"
		rc=$?
		tr -d '\r' <"$a/c3" >"$a/c3.txt" 2>/dev/null
		tr -d '\r' <"$a/c4" >"$a/c4.txt" 2>/dev/null
		# Per side, "ID ok|fail TITLE" for each test it started: a test's output runs from its
		# "N - name..." line to the next test's; it passed when that output ends in "ok"
		# (vsock_test may print a note first, as "G2H Transport detected...", then "ok" on
		# a line of its own). Files, not process substitutions: the emulated host has no
		# /dev/fd.
		for g in 3 4; do
			sed -n 's/^VT: //p' "$a/c$g.txt" | awk '
				# ID<tab>ok|fail<tab>TITLE<tab>NOTE: NOTE is what the test printed before
				# its "ok" (vsock_test says so when a setup cannot test what it should).
				function flush() {
					if (id != "")
						printf "%s\t%s\t%s\t%s\n", id, (last ~ /ok$/ ? "ok" : "fail"), title,
							(note != last ? note : "")
				}
				/^[0-9]+ - / {
					flush(); id = $1; title = $0; sub(/^[0-9]+ - /, "", title)
					sub(/\.\.\..*/, "", title); last = $0
					note = substr($0, index($0, "...") + 3); if (note == "ok") note = ""
					next
				}
				/^All tests have been executed/ { flush(); id = ""; next }
				id != "" && NF { last = $0 }
				END { flush() }' >"$a/r$g"
		done
		progress=0
		while IFS=$'\t' read -r id st t n; do
			title[$id]=$t
			[ -n "${result[$id]:-}" ] && continue
			if [ "$st" = ok ] && grep -q "^$id	ok	" "$a/r3"; then
				result[$id]=PASS
				# A note from either side ("Setup unsupported: ...") goes in the table.
				n3=$(awk -F'\t' -v i="$id" '$1 == i { print $4 }' "$a/r3")
				note[$id]=${n:-$n3}
			else
				result[$id]=FAIL
				sed -n '/^VT: /s/^VT: //p' "$a/c4.txt" | sed -n "/^$id - /,\$p" | head -n 8 >"$d/why-$id"
				echo "  server:" >>"$d/why-$id"
				sed -n '/^VT: /s/^VT: //p' "$a/c3.txt" | sed -n "/^$id - /,\$p" | head -n 8 >>"$d/why-$id"
			fi
			progress=1
		done <"$a/r4"
		for g in 3 4; do
			grep -E 'Kernel panic - not syncing|kernel BUG at |[0-9a-f]{4} \[#[0-9]+\]|^(\[ *[0-9]+\.[0-9]+\] )?(Oops|WARNING:)|Call Trace:' "$a/c$g.txt" |
				sed "s/^/  console $g: /" | grep . &&
				{
					echo "vsock_test_g2g: FAIL: $name: attempt $attempt: guest $g's console shows the lines above"
					failed=1
				}
		done
		grep -qx 'VT-RC=0' "$a/c4.txt" && grep -qx 'VT-RC=0' "$a/c3.txt" && break
		if [ $progress = 0 ]; then
			echo "vsock_test_g2g: FAIL: $name: attempt $attempt (skiff exit $rc) gave no test result; its consoles and skiff:"
			for g in 3 4; do grep -v '^$' "$a/c$g.txt" | tail -n 25 | sed "s/^/  | c$g: /"; done
			sed 's/^/  skiff: /' "$a/skiff"
			failed=1
			break
		fi
	done
	t=$(($(date +%s) - t0))
	pass=0 fail=0 na=0
	for id in $(printf '%s\n' "${!result[@]}" | sort -n); do
		r=${result[$id]} why=''
		if [ "$r" = FAIL ]; then
			why=$(printf '%s\n' "$NOT_APPLICABLE" | awk -v p="$name" -v i="$id" '$1 == p && $2 == i { $1 = $2 = ""; sub(/^ +/, ""); print }')
			if [ -n "$why" ]; then
				r=N/A na=$((na + 1))
			else
				fail=$((fail + 1))
				echo "vsock_test_g2g: FAIL: $name: $id - ${title[$id]}; client then server output:"
				sed 's/^/  | /' "$d/why-$id"
			fi
		else
			pass=$((pass + 1))
		fi
		[ "$r" = PASS ] && [ -n "${note[$id]:-}" ] && why="vsock_test's note: ${note[$id]}"
		printf '%s\t%s\t%s - %s%s\n' "$name" "$r" "$id" "${title[$id]}" "${why:+ ($why)}" >>"$table"
	done
	total=$ntests
	if [ $((pass + fail + na)) != "$ntests" ]; then
		echo "vsock_test_g2g: FAIL: $name: $((pass + fail + na)) of $ntests tests have a result"
		failed=1
	fi
	[ $fail = 0 ] || failed=1
	echo "vsock_test_g2g: $name ($what): $pass passed, $fail failed, $na not applicable of $total, in $attempt run(s), $t s"
	rm -rf "$d"
	unset result title note
done <"$list"
echo "vsock_test_g2g: results (pairing, result, test):"
sed 's/^/  /' "$table"
rm -f "$table"
[ $failed = 0 ] && echo "vsock_test_g2g: PASS" && exit 0
exit 1
