#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite, from a fresh Debian 12 machine:
#   installs packages (scripts/setup.sh), builds, runs every ctest label, then
#   builds with ASan+UBSan and runs the unit and device labels again.
# Extra arguments go to the first ctest run (e.g. scripts/test.sh -L device).
# SKIFF_SKIP_ASAN=1 skips the sanitizer pass.
# Last, the libFuzzer harnesses (fuzz/README.md) are built with clang in
# build-fuzz/ and label "fuzz" runs each for about a minute;
# SKIFF_SKIP_FUZZ=1 skips that stage.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)

step() { printf '\n== %s\n' "$*"; }

step "set-up"
bash scripts/setup.sh

step "build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"

bash scripts/build-kernels.sh # guest kernels for guest-uml/guest-qemu (cached: seconds when warm)
step "tests (all labels)"
ctest --test-dir build --output-on-failure --no-tests=error "$@"

if [ "${SKIFF_SKIP_ASAN:-0}" != 1 ]; then
	step "ASan+UBSan build (build-asan/): unit and device labels"
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSKIFF_SANITIZE=ON \
		-DSKIFF_BUILD_BENCH=OFF >/dev/null
	cmake --build build-asan -j"$jobs"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir build-asan -L '^(unit|device)$' --output-on-failure --no-tests=error
fi

if [ "${SKIFF_SKIP_FUZZ:-0}" != 1 ]; then
	step "fuzz (build-fuzz/, clang libFuzzer + ASan/UBSan): label fuzz"
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DSKIFF_FUZZ=ON -DSKIFF_BUILD_TESTS=OFF -DSKIFF_BUILD_BENCH=OFF >/dev/null
	cmake --build build-fuzz -j"$jobs"
	ctest --test-dir build-fuzz -L '^fuzz$' -j2 --output-on-failure --no-tests=error
fi
echo "test.sh: all passed ($root)"
