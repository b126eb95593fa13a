# SPDX-License-Identifier: MIT
# Debian 12's libfdt-dev ships no pkg-config file: find the header and library by hand.
# Defines FDT_FOUND and the imported target FDT::fdt.
find_path(FDT_INCLUDE_DIR NAMES libfdt.h)
# libfdt-dev is not Multi-Arch: same, so a cross build (cmake/toolchain-aarch64.cmake)
# has only the runtime libfdt1:arm64: link its versioned name then.
find_library(FDT_LIBRARY NAMES fdt libfdt.so.1)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(FDT REQUIRED_VARS FDT_LIBRARY FDT_INCLUDE_DIR)
if(FDT_FOUND AND NOT TARGET FDT::fdt)
	add_library(FDT::fdt UNKNOWN IMPORTED)
	set_target_properties(FDT::fdt PROPERTIES
		IMPORTED_LOCATION "${FDT_LIBRARY}"
		INTERFACE_INCLUDE_DIRECTORIES "${FDT_INCLUDE_DIR}")
endif()
mark_as_advanced(FDT_INCLUDE_DIR FDT_LIBRARY)
