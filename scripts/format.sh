#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# clang-format every C file of the project in place (style: .clang-format).
# With --check, change nothing and exit 1 if any file would change (ctest unit-clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(-i)
[ "${1:-}" = --check ] && mode=(--dry-run -Werror)
# Not formatted: the kernel series, and virtio_vsock_ext.h, which is byte for byte the
# guest kernel's uapi header <linux/virtio_vsock_ext.h> (kernel style; tests/kernel
# checks that the two are identical).
git ls-files '*.c' '*.h' | grep -v -e '^guest-kernel-patches/' \
	-e '^devices/virtio_vsock/include/skiff/virtio_vsock_ext\.h$' | xargs -r clang-format "${mode[@]}"
