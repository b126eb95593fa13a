#!/bin/sh
# SPDX-License-Identifier: MIT
# lib_ab.sh: is the device library of NEW slower than OLD's? (issue 17)
#
# Builds bench/vsock_bench twice, once against each revision's device library
# (devices/virtio_vsock) and simulated driver (tests/support), then runs the two
# binaries alternately, one vsock_bench process per run (--device-only, one
# round), over a matrix of cases, and prints per case the throughput ratio
# new/old and the CPU ns/KiB of each with 95 % intervals and a verdict
# (bench/lib_ab.py), ending with a Markdown table.
#
# Usage: bench/lib_ab.sh [options] [OLD [NEW]]
#   OLD       git revision (default: the merge-base of HEAD and main)
#   NEW       git revision, or a directory holding a checkout of this repository
#             (a worktree: its files as they are, uncommitted changes included)
#             (default: HEAD)
#   --pairs N        old/new pairs per case (default 8: the full matrix takes
#                    about 5 minutes)
#   --duration S     measured seconds per run (0.5); --warmup S before it (0.15)
#   --cases LIST     comma-separated vsock_bench --case strings DIR:STREAMS:PAYLOAD:MRG
#                    (default: g2h and h2g x 256, 4096, 65536 B x MRG 0/1 x 1 and 8
#                    streams: 24 cases)
#   --smoke          1 pair, 2 cases, 0.05 s runs: checks that it works, measures nothing
#   --old-bin FILE, --new-bin FILE
#                    use this vsock_bench instead of building that side
#   --bench-src FILE the vsock_bench.c built on both sides (default: the one next to
#                    this script, so both sides run the same harness and it has --case)
#   --work DIR       build and run directory (default: a new temporary directory,
#                    removed at the end unless --keep)
#   --md FILE        also write the header and the Markdown table to FILE
#   --jobs N         build parallelism (2)
#
# Method. Each revision is exported with `git archive` (a directory: its tracked and
# untracked, not ignored, files are copied), the harness bench/vsock_bench.c is
# replaced by --bench-src, and only the vsock_bench target is built (RelWithDebInfo,
# -DSKIFF_BUILD_TESTS=OFF, so without test hooks; -DSKIFF_TEST_SKIFF_LINUX=OFF). When
# OLD and NEW are the same commit it is built once. Then, for each pair and each case,
# one old run and one new run back to back; which goes first alternates from case to
# case and from pair to pair, so a slow drift of the machine's load does not favour
# either side. A run is a fresh process: set-up, --warmup, then --duration measured;
# its GB/s is payload bytes moved in the window, its CPU ns/KiB the CPU time (user +
# system, all threads, getrusage) of the process in the window per KiB moved. A
# pair's ratio is new/old of those two runs. lib_ab.py gives the median of the
# pairs' ratios with a percentile-bootstrap 95 % interval, and a verdict per case:
# "better"/"worse" when the interval lies wholly above/below 1 (for CPU: below/above),
# else "within noise". The figures are from whatever machine this runs on; the
# header says how many cores and the load average; on a shared machine compare old
# and new within one run only. Run OLD against itself (lib_ab.sh main main) to see
# the machine's noise floor.
#
# Exit status: 0 when every case produced at least one good pair, 1 otherwise, 2 on
# usage errors. The raw runs are in WORK/raw.tsv (kept with --keep).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
pairs=8
duration=0.5
warmup=0.15
cases=""
smoke=0
old_bin=""
new_bin=""
bench_src="$here/vsock_bench.c"
work=""
keep=0
md=""
jobs=2

usage() {
	sed -n '/^# Usage:/,/^# *--jobs/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

need() {
	[ $# -ge 2 ] || usage
}

while [ $# -gt 0 ]; do
	case $1 in
	--pairs) need "$@"; pairs=$2; shift 2 ;;
	--duration) need "$@"; duration=$2; shift 2 ;;
	--warmup) need "$@"; warmup=$2; shift 2 ;;
	--cases) need "$@"; cases=$2; shift 2 ;;
	--smoke) smoke=1; shift ;;
	--old-bin) need "$@"; old_bin=$2; shift 2 ;;
	--new-bin) need "$@"; new_bin=$2; shift 2 ;;
	--bench-src) need "$@"; bench_src=$2; shift 2 ;;
	--work) need "$@"; work=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--md) need "$@"; md=$2; shift 2 ;;
	--jobs) need "$@"; jobs=$2; shift 2 ;;
	-h | --help) usage ;;
	--) shift; break ;;
	-*) echo "lib_ab.sh: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -le 2 ] || usage
old=${1:-}
new=${2:-HEAD}

if [ "$smoke" = 1 ]; then
	pairs=1
	duration=0.05
	warmup=0.02
	[ -n "$cases" ] || cases="g2h:1:4096:1,h2g:8:4096:0"
fi
if [ -z "$cases" ]; then
	for d in g2h h2g; do
		for st in 1 8; do
			for pl in 256 4096 65536; do
				for m in 1 0; do
					cases="$cases${cases:+,}$d:$st:$pl:$m"
				done
			done
		done
	done
fi
case $pairs in '' | *[!0-9]* | 0) echo "lib_ab.sh: --pairs wants a positive integer" >&2; exit 2 ;; esac
for tool in jq python3; do
	command -v $tool >/dev/null || { echo "lib_ab.sh: needs $tool" >&2; exit 2; }
done

# The repository the revisions are looked up in: the one this script is in.
repo=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) || repo=""

if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/lib_ab.XXXXXX")
	made_work=1
else
	mkdir -p "$work"
	made_work=0
fi
cleanup() {
	if [ "$keep" = 0 ]; then
		if [ "$made_work" = 1 ]; then
			rm -rf "$work"
		else
			rm -rf "$work/src-old" "$work/src-new" "$work/build-old" "$work/build-new" "$work/runs"
		fi
	else
		echo "lib_ab.sh: kept $work" >&2
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# describe SPEC: prints "label<TAB>key"; key identifies the source (a commit
# id, or "dir:" and the path), label is what the report shows.
describe() {
	if [ -d "$1" ]; then
		d=$(cd "$1" && pwd)
		h=$(git -C "$d" rev-parse --short HEAD 2>/dev/null || echo "?")
		if [ -n "$(git -C "$d" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
			h="$h + uncommitted changes"
		fi
		printf '%s (%s)\tdir:%s\n' "$d" "$h" "$d"
	else
		[ -n "$repo" ] || { echo "lib_ab.sh: $here is not in a git checkout" >&2; exit 2; }
		sha=$(git -C "$repo" rev-parse --verify --quiet "$1^{commit}") ||
			{ echo "lib_ab.sh: $1: no such revision in $repo" >&2; exit 2; }
		printf '%s (%s)\t%s\n' "$1" "$(git -C "$repo" rev-parse --short "$sha")" "$sha"
	fi
}

# export KEY DEST: the source tree of KEY into DEST, with the common harness.
export_src() {
	rm -rf "$2"
	mkdir -p "$2"
	case $1 in
	dir:*)
		d=${1#dir:}
		(cd "$d" && git ls-files -z --cached --others --exclude-standard |
			tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$2"
		;;
	*) git -C "$repo" archive "$1" | tar -xf - -C "$2" ;;
	esac
	[ -f "$2/bench/vsock_bench.c" ] || { echo "lib_ab.sh: $2 has no bench/vsock_bench.c" >&2; exit 1; }
	cp "$bench_src" "$2/bench/vsock_bench.c"
}

# build SRC BUILD: prints the path of the vsock_bench built from SRC.
build() {
	log="$2.log"
	echo "lib_ab.sh: building $2 (log: $log)" >&2
	if ! { cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DSKIFF_TEST_SKIFF_LINUX=OFF -DSKIFF_TEST_HOOKS=OFF -DSKIFF_BUILD_BENCH=ON &&
		cmake --build "$2" -j"$jobs" --target vsock_bench; } >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		echo "lib_ab.sh: build of $1 failed" >&2
		exit 1
	fi
	echo "$2/bench/vsock_bench"
}

if [ -z "$old" ] && [ -z "$old_bin" ]; then
	[ -n "$repo" ] || { echo "lib_ab.sh: give OLD: not in a git checkout" >&2; exit 2; }
	old=$(git -C "$repo" merge-base HEAD main) ||
		{ echo "lib_ab.sh: no merge-base of HEAD and main; give OLD" >&2; exit 2; }
fi

old_key=""
if [ -n "$old_bin" ]; then
	old_label="$old_bin"
else
	t=$(describe "$old")
	old_label=${t%%"	"*}
	old_key=${t#*"	"}
fi
if [ -n "$new_bin" ]; then
	new_label="$new_bin"
else
	t=$(describe "$new")
	new_label=${t%%"	"*}
	new_key=${t#*"	"}
fi

if [ -z "$old_bin" ]; then
	export_src "$old_key" "$work/src-old"
	old_bin=$(build "$work/src-old" "$work/build-old")
fi
if [ -z "$new_bin" ]; then
	if [ "$new_key" = "$old_key" ] && [ -n "$old_key" ]; then
		new_bin=$old_bin # the same commit: one build serves both sides
	else
		export_src "$new_key" "$work/src-new"
		new_bin=$(build "$work/src-new" "$work/build-new")
	fi
fi
for b in "$old_bin" "$new_bin"; do
	[ -x "$b" ] || { echo "lib_ab.sh: $b is not an executable" >&2; exit 2; }
	"$b" --help 2>&1 | grep -q -- --case ||
		{ echo "lib_ab.sh: $b has no --case option (build it from --bench-src)" >&2; exit 2; }
done

ncases=$(echo "$cases" | tr ',' '\n' | grep -c .)
est=$(awk -v p="$pairs" -v n="$ncases" -v d="$duration" -v w="$warmup" \
	'BEGIN { printf "%.0f", p * n * 2 * (d + w + 0.1) }')
echo "lib_ab.sh: $pairs pair(s) x $ncases case(s), about $est s" >&2

mkdir -p "$work/runs"
raw="$work/raw.tsv"
printf '# case\tpair\tside\tgbps\tcpu_ns_per_kib\tok\n' >"$raw"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$(date +%s)

# run_one CASE PAIR SIDE: one vsock_bench process, one line of raw.tsv.
run_one() {
	if [ "$3" = old ]; then bin=$old_bin; else bin=$new_bin; fi
	j="$work/runs/$(echo "$1" | tr ':' '_').$2.$3.json"
	rm -f "$j"
	if "$bin" --case "$1" --device-only --reps 1 --duration "$duration" --warmup "$warmup" \
		--json "$j" >"$j.out" 2>&1 && [ -s "$j" ]; then
		line=$(jq -r '.results[0] | [.gbps, .cpu_ns_per_kib, (if .ok then 1 else 0 end)] | @tsv' "$j") ||
			line="0	0	0"
	else
		echo "lib_ab.sh: $3 run of $1 (pair $2) failed:" >&2
		tail -n 3 "$j.out" >&2
		line="0	0	0"
	fi
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$line" >>"$raw"
}

p=0
while [ "$p" -lt "$pairs" ]; do
	i=0
	for c in $(echo "$cases" | tr ',' ' '); do
		if [ $(((p + i) % 2)) = 0 ]; then
			run_one "$c" "$p" old
			run_one "$c" "$p" new
		else
			run_one "$c" "$p" new
			run_one "$c" "$p" old
		fi
		i=$((i + 1))
	done
	p=$((p + 1))
	echo "lib_ab.sh: pair $p/$pairs done, $(($(date +%s) - t0)) s" >&2
done

load1=$(cut -d' ' -f1-3 /proc/loadavg)
header="## vsock_bench, old vs new device library (bench/lib_ab.sh)

old: $old_label; new: $new_label.
$pairs pair(s) per case, one vsock_bench --device-only process per run, ${warmup} s warm-up
then ${duration} s measured, old and new alternating; started $started, took $(($(date +%s) - t0)) s.
Measured on a shared $(nproc)-core machine (other jobs running): load average $load0 at the
start, $load1 at the end. Ratios are new/old, medians over the pairs with 95 % bootstrap
intervals; CPU ns/KiB is the whole process's CPU time (user + system) per KiB moved."
if [ "$smoke" = 1 ]; then
	header="$header
SMOKE RUN: 1 pair of 0.05 s runs; the figures mean nothing."
fi
set -- "$raw" --header "$header"
[ -z "$md" ] || set -- "$@" --md "$md"
python3 "$here/lib_ab.py" "$@"
