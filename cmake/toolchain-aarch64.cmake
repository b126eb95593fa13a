# SPDX-License-Identifier: MIT
# Cross build for arm64 (issue 19) with Debian's cross compiler and the
# multiarch :arm64 development packages scripts/setup.sh installs
# (gcc-aarch64-linux-gnu, libseccomp-dev:arm64, libfdt-dev:arm64, check:arm64):
#
#   cmake -S . -B build-aarch64 -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
#
# Libraries and headers come from the multiarch directories
# (/usr/lib/aarch64-linux-gnu, /usr/include/aarch64-linux-gnu), found by
# pkg-config through PKG_CONFIG_LIBDIR and by find_library() through
# CMAKE_LIBRARY_ARCHITECTURE; nothing of the build machine's own
# x86-64 libraries is linked.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)

# No sysroot: Debian's multiarch layout puts the arm64 libraries beside the
# build machine's, in /usr/lib/aarch64-linux-gnu, which find_library()
# searches first because of CMAKE_LIBRARY_ARCHITECTURE; the headers these
# packages share (seccomp.h, libfdt.h, check.h) are the same for every
# architecture.

# Debian's multiarch .pc files; the build machine's are never consulted.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
