/* SPDX-License-Identifier: MIT */
/*
 * Freestanding helpers for tiny guests: MMIO, the skiff debug device,
 * strings, the command line ("key=value key=value"), checksums.
 */
#ifndef GUEST_H
#define GUEST_H

#include <stddef.h>
#include <stdint.h>

#include "skiff/tiny_guest_abi.h"

static inline void mmio_write32(uint64_t addr, uint32_t v)
{
	*(volatile uint32_t *)addr = v;
}

static inline uint32_t mmio_read32(uint64_t addr)
{
	return *(volatile uint32_t *)addr;
}

static inline void mmio_write64(uint64_t addr, uint64_t v)
{
	*(volatile uint64_t *)addr = v;
}

static inline void mb(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline void barrier(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

void guest_putc(char c);
void guest_puts(const char *s);
void guest_putu(uint64_t v);
void guest_report(unsigned int slot, uint64_t value);
__attribute__((noreturn)) void guest_exit(uint32_t code);
__attribute__((noreturn)) void guest_panic(const char *why);

/* cmdline_get() - the number after "key=" in @cmdline, or @def when absent. */
uint64_t cmdline_get(const char *cmdline, const char *key, uint64_t def);

/* The test data stream: byte i of every transfer (the host test computes the same). */
static inline uint8_t pattern_byte(uint64_t i)
{
	return (uint8_t)((i * 7) ^ (i >> 8) ^ (i >> 17) ^ 0x5a);
}

/* FNV-1a 64-bit, continued from @h (start with FNV_INIT). */
#define FNV_INIT 0xcbf29ce484222325ull
static inline uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif /* GUEST_H */
