#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run a command on an x86-64 host with hardware-virtualization KVM: this machine itself when
# its /dev/kvm is VT-x/AMD-V (scripts/machine-info.sh --kvm prints "hardware"), otherwise an
# emulated host: QEMU TCG (scripts/test-host-qemu.sh: QEMU 10 from bookworm-backports) with
# AMD SVM and nested paging (-cpu EPYC,+svm,+npt), booting
# Debian's packaged kernel with kvm-amd (scripts/test-host-image.sh fetches it through apt
# and caches it by package version). There, /dev/kvm has hardware semantics: skiff's guests
# run ring 0 and user space, slowly (emulation speed, not the machine's).
#
# Usage: test-host.sh [options] [--] COMMAND [ARGS...]
#   --work DIR         the writable directory (default: the current directory); the command
#                      runs in the current directory, which should be inside DIR
#   --timeout S        the command's limit, boot included (default 600); then exit 124
#   --boot-timeout S   the emulated host must be ready within S seconds (default 150: about
#                      10 s idle, 60 s seen at load 12 on 2 cores)
#   --mem MIB          the emulated host's memory (default 2048)
#   --cpus N           its vCPUs (default 2)
#   --stall-timeout S  see exit status 123 (default 120)
#   --console FILE     keep its console log there (default: shown only on failure)
#   --emulated | --direct   force one way ($SKIFF_TEST_HOST=emulated|direct too); --direct
#                      where the KVM is not hardware runs the command anyway
#
# How the emulated host sees the machine (same paths, binaries, libraries, Python, kernels
# and test programs as outside, nothing copied): the machine's root over virtio-9p,
# read-only; this source tree again at its own path, read-only, and the work directory at its
# own path, writable (result files are
# written straight to it); fresh /proc, /sys, /dev (with /dev/kvm), /dev/pts, and tmpfs on
# /tmp, /dev/shm and /run. Unix sockets cannot live on 9p: TMPDIR is /tmp (tmpfs), so a
# command that puts its sockets under $TMPDIR works. The environment is passed through
# (TMPDIR=/tmp, and SKIFF_EMULATED_HOST=1 says where it runs). The command's stdout and stderr are streamed to this script's; its exit
# status is this script's. The boot is scripts/test-host-init.sh (console markers there).
#
# Exit status: the command's, or
#   123  the emulated host died, panicked, or stopped: no process snapshot from it for
#        --stall-timeout seconds (default 120; it writes one every 5 s, and takes about
#        25 s for it at load 20 on 2 cores). Reported at once with the console tail, the
#        last snapshot, and each vCPU's instruction pointer and LAPIC (QEMU's monitor)
#   124  timed out (nothing is left running: QEMU's process group is killed); the emulated
#        host's last process snapshot (state and kernel wait channel of every task) is shown
#   125  the emulated host could not be set up (reason and console tail shown)
#   2    bad usage or a missing prerequisite (named, with the command that installs it)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$PWD timeout_s=600 boot_s=150 stall_s=120 mem=2048 cpus=2 console='' mode=${SKIFF_TEST_HOST:-auto}

say() { printf 'test-host.sh: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 2
}
usage() {
	sed -n '11,24p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--work) work=${2:?} && shift ;;
	--timeout) timeout_s=${2:?} && shift ;;
	--boot-timeout) boot_s=${2:?} && shift ;;
	--mem) mem=${2:?} && shift ;;
	--cpus) cpus=${2:?} && shift ;;
	--stall-timeout) stall_s=${2:?} && shift ;;
	--console) console=${2:?} && shift ;;
	--emulated) mode=emulated ;;
	--direct) mode=direct ;;
	--) shift && break ;;
	-*) usage ;;
	*) break ;;
	esac
	shift
done
[ $# -gt 0 ] || usage
for n in "$timeout_s" "$boot_s" "$stall_s" "$mem" "$cpus"; do
	[[ $n =~ ^[1-9][0-9]{0,5}$ ]] || die "'$n' is not a whole positive number"
done
work=$(cd "$work" && pwd) || die "--work: no directory '$work'"
case $mode in
auto) [ "$(bash "$repo/scripts/machine-info.sh" --kvm)" = hardware ] && mode=direct || mode=emulated ;;
direct | emulated) ;;
*) die "SKIFF_TEST_HOST='$mode': want emulated or direct" ;;
esac

if [ "$mode" = direct ]; then
	exec timeout --kill-after=5 "$timeout_s" "$@"
fi

# QEMU 10 from bookworm-backports, not the machine's 7.2 (scripts/test-host-qemu.sh says why).
qemu=$(bash "$repo/scripts/test-host-qemu.sh") || exit 125
img=$(bash "$repo/scripts/test-host-image.sh") || exit 125
# Emulated vCPUs crawl when the machine is busy (timer interrupts reach a halted vCPU
# late, a spinning vCPU waits for a descheduled one): at load 20 on 2 cores a run took
# 5-10 times as long as idle. Say so up front, so that a timeout explains itself.
read -r load _ </proc/loadavg
if [ "${load%%.*}" -ge "$(nproc)" ]; then
	say "note: load average $load on $(nproc) CPUs: the emulated host will be several times slower than on an idle machine"
fi
state=$(mktemp -d /tmp/skiff-test-host.XXXXXX)
mkdir "$state/io"
qpid='' tails=()
cleanup() {
	# QEMU runs in its own session: kill its whole process group, then our tails.
	[ -z "$qpid" ] || kill -KILL -- "-$qpid" 2>/dev/null || true
	for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The command script: environment (minus what describes this shell), cwd, the command.
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
	while IFS= read -r -d '' kv; do
		k=${kv%%=*}
		[[ $k =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
		case $k in PWD | OLDPWD | SHLVL | _ | TMPDIR) continue ;; esac
		printf 'export %s=%s\n' "$k" "$(q "${kv#*=}")"
	done < <(env -0)
	echo "export TMPDIR=/tmp SKIFF_EMULATED_HOST=1"
	echo "cd $(q "$PWD") || exit 126"
	printf 'exec'
	for a in "$@"; do printf ' %s' "$(q "$a")"; done
	echo
} >"$state/io/cmd"
printf 'work=%s\nrepo=%s\n' "$work" "$repo" >"$state/io/config"
# Debian's package has no real System.map, and the host boots with nokaslr: its text
# symbols, written once by the host (/proc/kallsyms), are kept with the image, so that a
# stopped host's vCPUs can be named by function.
[ -s "$img/kallsyms" ] || echo "kallsyms=1" >>"$state/io/config"
: >"$state/io/stdout"
: >"$state/io/stderr"
printf 'slink /bin/sh busybox 777 0 0\nfile /init %s 755 0 0\n' "$repo/scripts/test-host-init.sh" >"$state/init.spec"
python3 "$repo/scripts/mkcpio.py" "$state/init.spec" - | gzip -1 >"$state/init.cpio.gz"
cat "$img/base.cpio.gz" "$state/init.cpio.gz" >"$state/host.cpio.gz"
[ -n "$console" ] || console=$state/console.log
: >"$console"

fsdev() { # TAG PATH [OPTIONS]: a virtio-9p share
	printf -- '-fsdev local,id=%s,path=%s,security_model=none,multidevs=remap%s -device virtio-9p-pci,fsdev=%s,mount_tag=%s ' \
		"$1" "$2" "${3:+,$3}" "$1" "$1"
}
[[ $work != *,* && $state != *,* && $repo != *,* ]] ||
	die "QEMU cannot share a path with a comma (--work '$work', the tree '$repo')"
t0=$(date +%s.%N)
# shellcheck disable=SC2046 # fsdev prints whole words
setsid "$qemu" -accel tcg,thread=multi -cpu EPYC,+svm,+npt -smp "$cpus" -m "$mem" \
	-nodefaults -no-reboot -display none -monitor "unix:$state/monitor,server=on,wait=off" \
	-d cpu_reset -D "$state/qemu-reset.log" \
	-serial "file:$console" \
	-kernel "$img/vmlinuz" -initrd "$state/host.cpio.gz" \
	-append "console=ttyS0 nokaslr panic=-1" \
	$(fsdev root / readonly=on) $(fsdev repo "$repo" readonly=on) $(fsdev work "$work") \
	$(fsdev io "$state/io") \
	</dev/null >"$state/qemu.log" 2>&1 &
qpid=$!
tail -n +1 -F --pid="$qpid" "$state/io/stdout" 2>/dev/null &
tails+=($!)
tail -n +1 -F --pid="$qpid" "$state/io/stderr" >&2 2>/dev/null &
tails+=($!)

panic_re='Kernel panic|BUG: |Oops|general protection fault|Attempted to kill init'
vcpus() { # the vCPUs from QEMU's human monitor: 3 samples of RIP, IF and HLT; LAPIC ISR/IRR
	python3 - "$state/monitor" "$img/kallsyms" "$cpus" <<-'PY' 2>/dev/null || true
		import re, socket, sys, time
		s = socket.socket(socket.AF_UNIX)
		s.settimeout(3)
		s.connect(sys.argv[1])
		def cmd(c):
		    s.sendall(c.encode() + b"\n")
		    out, end = b"", time.monotonic() + 2
		    while time.monotonic() < end:
		        try:
		            b = s.recv(65536)
		        except socket.timeout:
		            break
		        if not b:
		            break
		        out += b
		        if out.rstrip().endswith(b"(qemu)") and len(out) > 200:
		            break
		    return out.decode(errors="replace")
		syms = []
		try:
		    with open(sys.argv[2]) as f:
		        syms = sorted((int(w[0], 16), w[2]) for w in (ln.split() for ln in f)
		                      if len(w) >= 3 and w[1] in ("t", "T"))
		except (OSError, ValueError):
		    pass
		def name(rip):
		    best = None
		    for a, n in syms:
		        if a > rip:
		            break
		        best = (a, n)
		    return f" {best[1]}+{rip - best[0]:#x}" if best and rip - best[0] < 1 << 20 else ""
		cmd("")
		for i in range(3):
		    out = cmd("info registers -a")
		    for cpu, rip, rfl, cpl, hlt in re.findall(
		            r"CPU#(\d+).*?RIP=(\w+) RFL=(\w+).*?CPL=(\d).*?HLT=(\d)", out, re.S):
		        ifl = (int(rfl, 16) >> 9) & 1
		        print(f"  sample {i}: vCPU {cpu}: RIP={rip}{name(int(rip, 16))} IF={ifl} CPL={cpl} HLT={hlt}")
		    time.sleep(0.5)
		for cpu in range(int(sys.argv[3])):
		    out = cmd(f"info lapic {cpu}")
		    regs = " ".join(" ".join(ln.split()) for ln in out.splitlines()
		                    if re.match(r"\s*(ISR|IRR|LVTT|Timer)\b", ln))
		    print(f"  vCPU {cpu} LAPIC: {regs}")
	PY
}
report() { # STATUS REASON: say why, show the console tail, exit STATUS
	say "$2 ($(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s after QEMU started); console tail:"
	grep -v '^\s*$' "$console" | tail -n 20 | sed 's/^/  | /' >&2
	grep -v 'TCG doesn.t support\|^\s*$' "$state/qemu.log" | tail -n 5 | sed 's/^/  qemu: /' >&2 || true
	if [ "$1" != 125 ] && [ -s "$state/io/ps" ]; then
		say "the emulated host's last process snapshot ($(($(date +%s) - $(stat -c %Y "$state/io/ps"))) s old):"
		sed 's/^/  ps: /' "$state/io/ps" >&2
	fi
	if [ "$1" != 125 ] && kill -0 "$qpid" 2>/dev/null; then
		say "its vCPUs (QEMU monitor):"
		vcpus >&2
	fi
	exit "$1"
}
start=$(date +%s)
ready=0
while :; do
	now=$(date +%s)
	if [ $ready = 0 ] && grep -q '^SKIFF-TEST-HOST ready' "$console"; then ready=1; fi
	if grep -q '^SKIFF-TEST-HOST rc=' "$console"; then break; fi
	if grep -q '^SKIFF-TEST-HOST error=' "$console"; then
		report 125 "the emulated host could not be set up: $(sed -n 's/^SKIFF-TEST-HOST error=//p' "$console" | head -n1)"
	fi
	if grep -qE "$panic_re" "$console"; then
		sleep 1 # the rest of the oops
		report 123 "the emulated host failed: $(grep -m1 -E "$panic_re" "$console")"
	fi
	if ! kill -0 "$qpid" 2>/dev/null; then
		# It may have printed the status and powered off since the check above.
		grep -q '^SKIFF-TEST-HOST rc=' "$console" && break
		wait "$qpid" 2>/dev/null
		qrc=$?
		# -no-reboot: a reset of the emulated host (a triple fault: QEMU's -d cpu_reset
		# log says "Triple fault" before the reset's register dump) ends QEMU with 0.
		if grep -q 'Triple fault' "$state/qemu-reset.log" 2>/dev/null; then
			# (-no-reboot turns the reset into a shutdown: QEMU dumps no register state
			# after the line, so there is none to show.)
			report 123 "the emulated host triple-faulted (QEMU ended, status $qrc)"
		fi
		report 123 "QEMU ended (status $qrc) without the command's exit status"
	fi
	if [ $ready = 0 ] && [ $((now - start)) -ge "$boot_s" ]; then
		report 125 "the emulated host was not ready within $boot_s s"
	fi
	[ $((now - start)) -lt "$timeout_s" ] || report 124 "timed out after $timeout_s s"
	if [ $ready = 1 ] && [ $((now - start)) -ge $((boot_s + stall_s)) ]; then
		seen=$(stat -c %Y "$state/io/ps" 2>/dev/null || echo "$start")
		[ $((now - seen)) -lt "$stall_s" ] ||
			report 123 "the emulated host stopped: no process snapshot from it for $((now - seen)) s"
	fi
	sleep 0.2
done
rc=$(sed -n 's/^SKIFF-TEST-HOST rc=\([0-9]*\).*/\1/p' "$console" | head -n1)
if [ -s "$state/io/kallsyms" ] && [ ! -s "$img/kallsyms" ]; then
	cp "$state/io/kallsyms" "$img/kallsyms.$$" && mv "$img/kallsyms.$$" "$img/kallsyms" || true
fi
# The host powers off right after the marker; give it 10 s, then kill it.
for _ in $(seq 50); do
	kill -0 "$qpid" 2>/dev/null || break
	sleep 0.2
done
kill -KILL -- "-$qpid" 2>/dev/null || true
wait "$qpid" 2>/dev/null || true
qpid=''
for p in "${tails[@]}"; do wait "$p" 2>/dev/null || true; done
tails=()
exit "${rc:-125}"
