#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# clang-format every C file of the project in place (style: .clang-format).
# With --check, change nothing and exit 1 if any file would change.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(-i)
[ "${1:-}" = --check ] && mode=(--dry-run -Werror)
git ls-files '*.c' '*.h' | grep -v '^guest-kernel-patches/' | xargs -r clang-format "${mode[@]}"
