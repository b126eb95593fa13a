#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job, from a fresh Debian 12 machine: install, build, boot a guest,
# move data over vsock through skiff's device, print what happened.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
echo "demo.sh: no guest can be booted yet: the VMM (issue 4) and the guest kernels (issue 7) have not landed."
