# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154 # $tool and $case come from the sourcing script
# Shared by the skiff-linux test scripts (sourced, bash): the host side of a guest's
# transfer both ways and its checks. The caller sets $tool (the host's vsock-tool) and
# $case, and defines fail MESSAGE (records a failure of the current case).
#
# The guest connects to two host listeners: <uds>_5000 (the guest sends, seed 33) and
# <uds>_5001 (the host sends, seed 22), so no side waits for the other to listen. Its
# connects wait up to 30 s, not the kernel's 2 s: under emulation on a loaded machine a
# connect was seen answered after 3.07 s.

# skl_listen DIR MIB TIMEOUT: both listeners on DIR/v.sock_500{0,1} (TIMEOUT seconds in
# all, boot included); returns once both listen.
skl_listen() {
	local d=$1 mib=$2 limit=$3
	"$tool" listen "uds:$d/v.sock_5000" --recv "${mib}M" --peer-seed 33 --timeout "$limit" >"$d/h-recv" 2>&1 &
	"$tool" listen "uds:$d/v.sock_5001" --send "${mib}M" --seed 22 --timeout "$limit" >"$d/h-send" 2>&1 &
	for _ in $(seq 100); do
		grep -q LISTENING "$d/h-recv" && grep -q LISTENING "$d/h-send" && break
		sleep 0.1
	done
}

# skl_guest_transfer MIB: the guest's shell lines for both directions at once, ending
# with SKIFF-RESULT rc=N (0 when both succeeded).
skl_guest_transfer() {
	cat <<EOF
vsock-tool connect 2:5000 --send $1M --seed 33 --connect-timeout 30000 --timeout 100 &
vsock-tool connect 2:5001 --recv $1M --peer-seed 22 --connect-timeout 30000 --timeout 100
b=\$?
wait \$!
echo SKIFF-RESULT rc=\$((\$? + b))
EOF
}

# skl_reap: the listeners finish with the guest's data; 10 s after the guest, they are
# killed.
skl_reap() {
	for _ in $(seq 50); do
		[ -z "$(jobs -pr)" ] && break
		sleep 0.2
	done
	# shellcheck disable=SC2046 # one word per job
	kill $(jobs -pr) 2>/dev/null
	wait
}

# The FNV-1a of the stream in vsock-tool's ok line of FILE (field FIELD), if any.
skl_fnv() { sed -n "/^VSOCK-TOOL status=ok /s/.* $2=\([^ ]*\).*/\1/p" "$1" | grep -vx 0000000000000000 | head -n1; }

# skl_check DIR RC: skiff (status RC) ended by the guest's reboot, the guest's result 0,
# a console (DIR/console.txt) without Oops, BUG, WARNING, a panic or a failed insmod, and
# both ends of each direction agree on the data.
skl_check() {
	local d=$1 rc=$2 con=$1/console.txt
	grep -q 'VM ended (reboot)' "$d/skiff" || fail "skiff exit $rc: $(tail -n 2 "$d/skiff" | tr '\n' ' ')"
	grep -qx 'SKIFF-RESULT rc=0' "$d/console.txt" || fail "guest result: $(grep SKIFF-RESULT "$d/console.txt" || echo none)"
	grep -E 'Oops|BUG|WARNING|[Pp]anic|Call Trace|init: insmod' "$con" | sed 's/^/  console: /' |
		grep . && fail "the guest console shows the lines above"
	[ -n "$(skl_fnv "$d/h-recv" recv_fnv)" ] && [ "$(skl_fnv "$d/h-recv" recv_fnv)" = "$(skl_fnv "$d/console.txt" send_fnv)" ] ||
		fail "guest to host: $(grep -h 'VSOCK-TOOL status' "$d/h-recv" || echo 'no host result')"
	[ -n "$(skl_fnv "$d/h-send" send_fnv)" ] && [ "$(skl_fnv "$d/h-send" send_fnv)" = "$(skl_fnv "$d/console.txt" recv_fnv)" ] ||
		fail "host to guest: $(grep -h 'VSOCK-TOOL status' "$d/h-send" || echo 'no host result')"
}

# skl_guest_alive: the guest's shell lines that start its heartbeat, a SKIFF-ALIVE line on
# the console at once and then every 10 s from a timer (its uptime); the script ends with
# "kill $skiff_alive". The first beat comes at once so that a guest that stops within its
# first 10 s is caught too (CI of 2026-12-03: sid stopped 1-10 s into the script, before
# any beat, and the test waited for its 400 s limit).
skl_guest_alive() {
	cat <<'EOF'
(while :; do echo "SKIFF-ALIVE $(cut -d' ' -f1 /proc/uptime) s"; sleep 10; done) &
skiff_alive=$!
EOF
}

# skl_watch PID CONSOLE ERRFILE: wait for skiff (PID, a child: "timeout ... skiff run" in the
# background) and return its exit status. ERRFILE gets a line appended: skiff's stderr must
# be opened in append mode on it too (2>>), or skiff's own last message overwrites it. When the guest has started its heartbeat
# (skl_guest_alive) and then its console stays silent for 60 s, the guest has stopped
# altogether: its own timer no longer runs. (No vsock device fault can do that: the console
# is another device and the heartbeat no vsock work.) That is the hang QEMU's SVM fault
# leaves when the guest does not triple-fault (docs/test-host.md); skiff is stopped (SIGTERM)
# there and then, not at the test's time limit, and ERRFILE says so (skl_emulator_fault).
skl_watch() {
	local pid=$1 con=$2 err=$3 size last=-1 since=$SECONDS rc=0
	while kill -0 "$pid" 2>/dev/null; do
		size=$(stat -c %s "$con" 2>/dev/null || echo 0)
		if [ "$size" != "$last" ]; then
			last=$size since=$SECONDS
		elif [ $((SECONDS - since)) -ge 60 ] && grep -q '^SKIFF-ALIVE ' "$con"; then
			echo "skl_watch: the guest stopped: its console silent for 60 s though it writes a line every 10 s (last: $(grep -a '^SKIFF-ALIVE ' "$con" | tail -n 1 | tr -d '\r'))" >>"$err"
			kill -TERM "$pid" 2>/dev/null
			break
		fi
		sleep 1
	done
	wait "$pid" || rc=$?
	return $rc
}

# skl_emulator_fault ERRFILE: the signature of QEMU's SVM fault in skiff's messages, if any
# ("a triple fault", "a stopped guest"); nothing otherwise.
skl_emulator_fault() {
	grep -qs 'VM ended (triple-fault)' "$1" && echo "a triple fault" && return
	grep -qs '^skl_watch: the guest stopped' "$1" && echo "a stopped guest"
	return 0
}

# skl_show_failure DIR: the last console lines, skiff's messages and, when the test asked
# for them (SKIFF_STATS=DIR/stats), skiff's counters that are not 0, on one line.
skl_show_failure() {
	echo "$(basename "$0" .sh): FAIL: $case: last console lines:"
	grep -v -e '^$' -e '^SKIFF-ALIVE ' "$1/console.txt" | tail -n 25 | sed 's/^/  | /'
	grep '^SKIFF-ALIVE ' "$1/console.txt" | tail -n 1 | sed 's/^/  | (the last heartbeat) /'
	sed 's/^/  skiff: /' "$1/skiff"
	[ -s "$1/stats" ] && echo "  stats: $(grep -v -E '=(0|0x0)$' "$1/stats" | tr '\n' ' ')"
	return 0
}

# skl_stock_prepare WHO BUILD INITRD: outside the emulated host (it sees the machine's root
# read-only), fetch the stock kernels (scripts/stock-kernels.sh; SKIFF_STOCK_SUITES picks
# suites), make a work directory under BUILD (removed at exit) and cd into it, and write
# $w/kernels: per kernel "SUITE RELEASE VMLINUZ INITRD PACKAGES...", INITRD being the test
# initramfs with the kernel's modules appended. Exits 1 without INITRD, 77 (skip) when
# the kernels cannot be fetched; WHO names the test in those messages.
skl_stock_prepare() {
	local who=$1 build=$2 initrd=$3 s kernels suite rel dir sel=()
	[ -s "$initrd" ] || {
		echo "$who: FAIL: no initramfs $initrd (build target skiff-initramfs)"
		exit 1
	}
	for s in ${SKIFF_STOCK_SUITES:-}; do sel+=(--suite "$s"); done
	if ! kernels=$(bash "$repo/scripts/stock-kernels.sh" "${sel[@]}"); then
		echo "$who: SKIP: scripts/stock-kernels.sh could not provide the stock kernels (above)"
		exit 77
	fi
	w=$(mktemp -d "$build/skiff-linux.XXXXXX")
	# shellcheck disable=SC2064 # $w now
	trap "rm -rf '$w'" EXIT
	cd "$w" || exit 1
	while read -r suite rel dir; do
		cat "$initrd" "$dir/modules.cpio.gz" >"$w/initrd-$suite"
		echo "$suite $rel $dir/vmlinuz $w/initrd-$suite $(cat "$dir/package")" >>"$w/kernels"
	done <<<"$kernels"
}
