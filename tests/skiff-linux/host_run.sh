#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run a guest test driver on a host with hardware-virtualization KVM (ctest label
# skiff-linux): scripts/test-host.sh runs it directly where this machine's /dev/kvm is
# VT-x/AMD-V, else in the emulated host, inside a fresh work directory under the current
# one (the driver's files and Unix sockets go to $TMPDIR, which test-host.sh sets to /tmp).
#
# Usage: host_run.sh TIMEOUT [--cpus N] -- DRIVER [ARGS...]
#   TIMEOUT   test-host.sh --timeout: the emulated host's boot and the driver, in seconds;
#             its boot may take 120 s (test-host.sh --boot-timeout; its default 60 s was
#             too short on this 2-core machine at a load average of 20)
#   --cpus N  the emulated host's vCPUs (test-host.sh's default 2 if left out)
# Exit: the driver's status; 77 skipped when scripts/build-kernels.sh has not built both
# x86_64 kernels; test-host.sh's 123/124/125 (the emulated host died, timed out, could
# not start).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

timeout_s=${1:?usage: host_run.sh TIMEOUT [--cpus N] -- DRIVER [ARGS...]}
shift
host_args=(--timeout "$timeout_s" --boot-timeout 120)
if [ "${1:-}" = --cpus ]; then
	host_args+=(--cpus "${2:?--cpus N}")
	shift 2
fi
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "usage: host_run.sh TIMEOUT [--cpus N] -- DRIVER [ARGS...]" >&2 && exit 2; }

for v in patched baseline; do
	if ! bash "$repo/scripts/build-kernels.sh" --print-path "$v" x86_64 >/dev/null 2>&1; then
		echo "host_run.sh: SKIP: no $v x86_64 kernel; run scripts/build-kernels.sh"
		exit 77
	fi
done
# Python through pyenv's shim (a shell script) costs seconds per start in an emulated host:
# the interpreter's own directory goes first on PATH (test-host.sh passes it through).
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ]; then
	PATH="$(dirname "$py"):$PATH"
	export PATH
fi
w=$(mktemp -d "$PWD/skiff-linux.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w"
set +e
bash "$repo/scripts/test-host.sh" --work "$w" "${host_args[@]}" -- "$@"
