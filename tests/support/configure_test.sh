#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The build options the root README lists must configure (ctest configure-*): configures
# this source tree into a scratch directory with the given options, generation included;
# fails with CMake's own error when they do not. No compilation.
# Usage: configure_test.sh SOURCE_DIR [CMAKE_OPTION...]
set -euo pipefail
src=${1:?usage: configure_test.sh SOURCE_DIR [CMAKE_OPTION...]}
shift
d=$(mktemp -d /tmp/skiff-configure.XXXXXX)
trap 'rm -rf "$d"' EXIT
if ! out=$(cmake -S "$src" -B "$d" "$@" 2>&1); then
	printf '%s\n' "$out" | tail -20
	echo "configure_test: FAIL: cmake $* does not configure"
	exit 1
fi
echo "configure_test: OK: cmake $*"
