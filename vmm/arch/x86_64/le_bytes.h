/* SPDX-License-Identifier: MIT */
/*
 * Little-endian loads and stores at any alignment, for the byte layouts x86
 * firmware and boot structures use (boot_params and the setup header,
 * Documentation/x86/boot.rst; ACPI tables, ACPI 6.4 section 5.2).
 */
#ifndef SKIFF_X86_LE_BYTES_H
#define SKIFF_X86_LE_BYTES_H

#include <stdint.h>

static inline uint16_t le_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le_get32(const uint8_t *p)
{
	return (uint32_t)le_get16(p) | (uint32_t)le_get16(p + 2) << 16;
}

static inline void le_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void le_put32(uint8_t *p, uint32_t v)
{
	le_put16(p, (uint16_t)v);
	le_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void le_put64(uint8_t *p, uint64_t v)
{
	le_put32(p, (uint32_t)v);
	le_put32(p + 4, (uint32_t)(v >> 32));
}

#endif
