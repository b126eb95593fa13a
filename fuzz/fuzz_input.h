/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the libFuzzer harnesses: a reader that consumes the fuzz
 * input front to back (running dry yields zeros, never an error, so every
 * input is a valid program), a scratch directory for Unix sockets, and a
 * check that aborts with a message (a failed invariant is a finding, like a
 * sanitizer report).
 */
#ifndef SKIFF_FUZZ_INPUT_H
#define SKIFF_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
	const uint8_t *p;
	size_t len, off;
};

static inline void fz_init(struct fz *f, const uint8_t *p, size_t len)
{
	f->p = p;
	f->len = len;
	f->off = 0;
}

static inline size_t fz_left(const struct fz *f)
{
	return f->len - f->off;
}

/* Copy @n bytes (zero-padded past the end); returns how many were real. */
static inline size_t fz_bytes(struct fz *f, void *dst, size_t n)
{
	size_t k = fz_left(f) < n ? fz_left(f) : n;

	memcpy(dst, f->p + f->off, k);
	memset((uint8_t *)dst + k, 0, n - k);
	f->off += k;
	return k;
}

static inline uint8_t fz_u8(struct fz *f)
{
	uint8_t v;

	fz_bytes(f, &v, 1);
	return v;
}

static inline uint16_t fz_u16(struct fz *f)
{
	uint8_t b[2];

	fz_bytes(f, b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t fz_u32(struct fz *f)
{
	return (uint32_t)fz_u16(f) | (uint32_t)fz_u16(f) << 16;
}

static inline uint64_t fz_u64(struct fz *f)
{
	return (uint64_t)fz_u32(f) | (uint64_t)fz_u32(f) << 32;
}

#define FZ_CHECK(cond)                                                                          \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
				__LINE__);                                                      \
			abort();                                                                \
		}                                                                               \
	} while (0)

/*
 * fz_scratch_dir() - a private directory under $TMPDIR (or /tmp) for the
 * harness's Unix sockets, removed with everything in it at exit. Same path
 * for the life of the process. Aborts when it cannot be made.
 */
const char *fz_scratch_dir(void);

/* fz_count_fds() - how many fds the process has open (entries of /proc/self/fd). */
unsigned int fz_count_fds(void);

#endif /* SKIFF_FUZZ_INPUT_H */
