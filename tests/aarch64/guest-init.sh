#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: MIT
# /init of the arm64 Linux guest that skiff boots inside the emulated host
# (tests/aarch64/run.sh, case linux-poweroff): say that user space runs and
# on how many CPUs (vCPU 1 came up through PSCI CPU_ON), then power off
# (PSCI SYSTEM_OFF: skiff exits 0).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
echo "skiff-arm64-linux: user space up, $(grep -c ^processor /proc/cpuinfo) cpus, $(uname -r)"
poweroff -f
