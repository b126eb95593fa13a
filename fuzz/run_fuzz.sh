#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run one libFuzzer harness for ctest (see fuzz/CMakeLists.txt, README.md).
#   run_fuzz.sh fuzz   <binary> <corpus dir> <seconds> <max_len> <artifact dir>
#   run_fuzz.sh replay <binary> <corpus dir> 0         <max_len> <artifact dir>
# "fuzz" works on a scratch copy of the corpus (the tree is never written);
# "replay" runs every corpus input once. Exit status: libFuzzer's (non-zero
# on a crash, leak, UBSan report, timeout or out-of-memory); the input that
# failed is kept under <artifact dir>.
set -euo pipefail
mode=$1 bin=$2 corpus=$3 secs=$4 max_len=$5 art=$6

mkdir -p "$art"
work=$(mktemp -d "${TMPDIR:-/tmp}/skiff-fuzz-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
if [ -d "$corpus" ]; then
	cp -r "$corpus/." "$work/corpus/"
fi

# The harnesses' Unix sockets go here too, so that nothing is left behind
# even when a harness dies.
export TMPDIR=$work
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
args=(-timeout=10 -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1
	-artifact_prefix="$art/" "$work/corpus")
if [ "$mode" = replay ]; then
	args=(-runs=0 "${args[@]}")
else
	args=(-max_total_time="$secs" "${args[@]}")
fi
# The code under test logs every rejected guest or frontend request (to
# stderr, rate-limited per connection); leave those lines out of the log
# so that ctest keeps libFuzzer's and the sanitizers' output.
set +e
"$bin" "${args[@]}" 2>&1 | grep -Ev '^skiff(-vsock)?: |^#[0-9]+[[:space:]]+(NEW|REDUCE)|NEW_FUNC'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
	echo "run_fuzz.sh: $(basename "$bin") failed (status $status); inputs in $art" >&2
fi
exit "$status"
