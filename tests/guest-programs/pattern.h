/* SPDX-License-Identifier: MIT */
/*
 * The deterministic byte pattern and checksum shared by the guest test programs and
 * the host side of the end-to-end tests (include this header, or reimplement the two
 * formulas below; tests/guest-programs/pattern.py does so in Python).
 *
 * Pattern: the stream with seed S is a sequence of little-endian 64-bit words;
 * word k (bytes 8k .. 8k+7 of the stream) is mix64(S * 0x9e3779b97f4a7c15 + k), where
 * mix64 is the splitmix64 finaliser. Byte i of the stream is therefore
 * (word(i / 8) >> (8 * (i % 8))) & 0xff. Any offset can be produced without the bytes
 * before it, so a receiver checks each chunk where it lands.
 *
 * Checksum: 64-bit FNV-1a over the bytes (offset basis 0xcbf29ce484222325, prime
 * 0x100000001b3).
 */
#ifndef SKIFF_GUEST_PATTERN_H
#define SKIFF_GUEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SKIFF_FNV_INIT 0xcbf29ce484222325ULL

static inline uint64_t skiff_pattern_word(uint64_t seed, uint64_t k)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ULL + k;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Fill buf[0..len) with stream bytes [offset, offset + len) of the pattern for seed. */
static inline void skiff_pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t offset)
{
	size_t i = 0;

	while (i < len) {
		uint64_t pos = offset + i;
		uint64_t w = skiff_pattern_word(seed, pos / 8);
		unsigned int b = (unsigned int)(pos % 8);

		if (b == 0 && len - i >= 8) {
			uint8_t le[8];

			for (unsigned int j = 0; j < 8; j++)
				le[j] = (uint8_t)(w >> (8 * j));
			memcpy(buf + i, le, 8);
			i += 8;
			continue;
		}
		for (; b < 8 && i < len; b++, i++)
			buf[i] = (uint8_t)(w >> (8 * b));
	}
}

/* Continue a 64-bit FNV-1a checksum (start from SKIFF_FNV_INIT) over buf[0..len). */
static inline uint64_t skiff_fnv1a(uint64_t h, const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		h ^= buf[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#endif /* SKIFF_GUEST_PATTERN_H */
