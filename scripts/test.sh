#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite, from a fresh Debian 12 machine:
#   prints one line about the machine (scripts/machine-info.sh), installs packages
#   (scripts/setup.sh), builds, builds the guest kernels (cached), runs every ctest
#   label, then builds with ASan+UBSan and runs the unit and device labels again,
#   then builds with ThreadSanitizer and runs the unit, device and vmm labels again
#   (build-tsan/, tsan.supp), then the libFuzzer harnesses (fuzz/README.md: clang,
#   build-fuzz/, label "fuzz").
# Every stage runs even when an earlier one failed (a stage that others need, such as
# the build, skips its dependents with a message); the summary at the end lists each
# stage's result and the exit status is 1 if any failed.
# Extra arguments go to the first ctest run (e.g. scripts/test.sh -L device).
# SKIFF_SKIP_ASAN=1 skips the sanitizer pass, SKIFF_SKIP_TSAN=1 the TSan pass,
# SKIFF_SKIP_FUZZ=1 the fuzz stage.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
results=()
failed=0

step() { printf '\n== %s\n' "$*"; }
# stage NAME CMD...: run one stage, record its result; returns its status.
stage() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	"$@"
	rc=$?
	if [ $rc -eq 0 ]; then
		results+=("ok      $name ($(($(date +%s) - t0)) s)")
	else
		results+=("FAILED  $name (status $rc, $(($(date +%s) - t0)) s)")
		failed=1
	fi
	return $rc
}
skip() {
	results+=("skipped $1 ($2)")
	echo "test.sh: skipping $1: $2"
}

bash scripts/machine-info.sh
t_all=$(date +%s)

step "set-up"
if ! stage set-up bash scripts/setup.sh; then
	echo "test.sh: set-up failed: nothing can be built" >&2
	printf '%s\n' "${results[@]}"
	exit 1
fi

build_main() {
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		cmake --build build -j"$jobs"
}
step "build (build/)"
if stage build build_main; then
	# Guest kernels for the guest-uml/guest-qemu/peer/linux-kvm labels (cached: seconds
	# when warm). If they fail the guest tests fail too, each saying why.
	step "guest kernels (scripts/build-kernels.sh)"
	stage guest-kernels bash scripts/build-kernels.sh
	step "tests (all labels)"
	stage "ctest (all labels)" ctest --test-dir build --output-on-failure --no-tests=error "$@"
else
	skip "ctest (all labels)" "the build failed"
fi

asan() {
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSKIFF_SANITIZE=ON \
		-DSKIFF_BUILD_BENCH=OFF >/dev/null &&
		cmake --build build-asan -j"$jobs" &&
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
			ctest --test-dir build-asan -L '^(unit|device)$' --output-on-failure --no-tests=error
}
if [ "${SKIFF_SKIP_ASAN:-0}" != 1 ]; then
	step "ASan+UBSan build (build-asan/): unit and device labels"
	stage "ASan+UBSan unit+device" asan
else
	skip "ASan+UBSan unit+device" "SKIFF_SKIP_ASAN=1"
fi

# ThreadSanitizer (-DSKIFF_SANITIZE=thread): the first report ends its process
# (exit 66, or a seccomp kill when a filtered thread reports: see sandbox/README.md).
# The kernel-* tests (label unit) run scripts over the patch series and headers,
# no program of the build: TSan has nothing to check there, so they are left out.
tsan() {
	echo "test.sh: TSan stage: kernel-* tests left out (scripts over sources, no compiled code)"
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKIFF_SANITIZE=thread \
		-DSKIFF_BUILD_BENCH=OFF >/dev/null &&
		cmake --build build-tsan -j"$jobs" &&
		TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tsan.supp" \
			ctest --test-dir build-tsan -L '^(unit|device|vmm)$' -E '^kernel-' -j2 \
			--output-on-failure --no-tests=error
}
if [ "${SKIFF_SKIP_TSAN:-0}" != 1 ]; then
	step "TSan build (build-tsan/): unit, device and vmm labels"
	stage "TSan unit+device+vmm" tsan
else
	skip "TSan unit+device+vmm" "SKIFF_SKIP_TSAN=1"
fi

fuzz() {
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DSKIFF_FUZZ=ON -DSKIFF_BUILD_TESTS=OFF -DSKIFF_BUILD_BENCH=OFF >/dev/null &&
		cmake --build build-fuzz -j"$jobs" &&
		ctest --test-dir build-fuzz -L '^fuzz$' -j2 --output-on-failure --no-tests=error
}
if [ "${SKIFF_SKIP_FUZZ:-0}" != 1 ]; then
	step "fuzz (build-fuzz/, clang libFuzzer + ASan/UBSan): label fuzz"
	stage "fuzz" fuzz
else
	skip fuzz "SKIFF_SKIP_FUZZ=1"
fi

step "summary ($(($(date +%s) - t_all)) s, $root)"
bash scripts/machine-info.sh
printf '  %s\n' "${results[@]}"
if [ $failed -ne 0 ]; then
	echo "test.sh: FAILED (see the stages marked FAILED above)"
	exit 1
fi
echo "test.sh: all passed"
