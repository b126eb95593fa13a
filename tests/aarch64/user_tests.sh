#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ctest "aarch64" (issue 19): the unit and device tests, built for arm64 and run
# under user-mode emulation. Cross-configures the tree with the tests on
# (cmake/toolchain-aarch64.cmake; a cross build keeps only tests/unit and
# tests/device, see tests/CMakeLists.txt) in WORKDIR/build, with
# CMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64, so ctest runs every arm64 test
# binary through qemu-aarch64 (package qemu-user) on this machine's kernel: the
# device model's threads, sockets, eventfds and epoll are the real ones, only
# the CPU is emulated. Then runs the labels unit and device of that build, the
# label slow left out (device_slow alone takes about 3 minutes emulated; set
# SKIFF_ARM64_USER_SLOW=1 to run it too).
#
# Usage: user_tests.sh WORKDIR
# Exit: 0 pass, 1 fail (ctest's output of the failed tests), 77 skip (no cross
# compiler, qemu-aarch64 or check:arm64: scripts/setup.sh installs them).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || {
	echo "usage: $0 WORKDIR" >&2
	exit 2
}
work=$(mkdir -p "$1" && cd "$1" && pwd)

fail() {
	echo "aarch64-user: FAIL: $*" >&2
	exit 1
}
for tool in aarch64-linux-gnu-gcc qemu-aarch64 cmake ninja; do
	command -v "$tool" >/dev/null || {
		echo "aarch64-user: SKIP: $tool not found; scripts/setup.sh installs gcc-aarch64-linux-gnu and qemu-user"
		exit 77
	}
done
[ -e /usr/lib/aarch64-linux-gnu/pkgconfig/check.pc ] || {
	echo "aarch64-user: SKIP: check:arm64 missing; scripts/setup.sh installs it"
	exit 77
}

t0=$(date +%s)
cmake -S "$repo" -B "$work/build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/toolchain-aarch64.cmake" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKIFF_BUILD_TESTS=ON -DSKIFF_BUILD_BENCH=OFF \
	-DSKIFF_TEST_SKIFF_LINUX=OFF -DCMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64 \
	>"$work/cmake.log" 2>&1 || {
	tail -n 20 "$work/cmake.log" >&2
	fail "cross configure failed (log $work/cmake.log)"
}
ninja -C "$work/build" -j2 >"$work/ninja.log" 2>&1 || {
	grep -E 'error|FAILED' "$work/ninja.log" | head -n 20 >&2
	fail "cross build of the tests failed (log $work/ninja.log)"
}
t1=$(date +%s)
# Every test binary is arm64 (an x86-64 one would run natively and prove nothing).
n=0
while IFS= read -r -d '' f; do
	[ "$(od -An -tx1 -N4 "$f" | tr -d ' ')" = 7f454c46 ] || continue # a script
	[ "$(od -An -tx1 -j18 -N2 "$f" | tr -d ' ')" = b700 ] || fail "$f is not an arm64 ELF"
	n=$((n + 1))
done < <(find "$work/build/tests" -path '*/CMakeFiles' -prune -o -type f -perm -u+x -print0)
[ "$n" -gt 0 ] || fail "no test executable in $work/build/tests"

exclude=(-LE slow)
[ "${SKIFF_ARM64_USER_SLOW:-0}" = 1 ] && exclude=()
set +e
ctest --test-dir "$work/build" -L 'unit|device' "${exclude[@]}" -j2 --output-on-failure \
	--no-tests=error >"$work/ctest.log" 2>&1
rc=$?
set -e
t2=$(date +%s)
grep -E '^[0-9]+% tests passed|tests failed' "$work/ctest.log" || true
echo "aarch64-user: $n arm64 test executables; build $((t1 - t0)) s, tests $((t2 - t1)) s under qemu-aarch64"
if [ "$rc" -ne 0 ]; then
	grep -E 'Failed|\*\*\*|:[0-9]+:[EF]:' "$work/ctest.log" | head -n 40 >&2
	fail "ctest status $rc (log $work/ctest.log)"
fi
echo "aarch64-user: PASS"
