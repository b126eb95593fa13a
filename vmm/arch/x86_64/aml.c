// SPDX-License-Identifier: MIT
/*
 * AML encoder, see aml.h. Grammar and opcodes: ACPI 6.0 section 20.2
 * (AML Grammar Definition); resource descriptors: section 6.4.
 */
#include <errno.h>
#include <string.h>

#include "aml.h"
#include "le_bytes.h"

/* Opcodes (20.3, AML Byte Stream Byte Values). */
#define AML_ZERO_OP 0x00
#define AML_ONE_OP 0x01
#define AML_NAME_OP 0x08
#define AML_BYTE_PREFIX 0x0a
#define AML_WORD_PREFIX 0x0b
#define AML_DWORD_PREFIX 0x0c
#define AML_STRING_PREFIX 0x0d
#define AML_QWORD_PREFIX 0x0e
#define AML_SCOPE_OP 0x10
#define AML_BUFFER_OP 0x11
#define AML_PACKAGE_OP 0x12
#define AML_EXT_OP_PREFIX 0x5b
#define AML_DEVICE_OP 0x82 /* after AML_EXT_OP_PREFIX */
#define AML_ROOT_CHAR '\\'

/* Resource descriptors (6.4.2, 6.4.3). */
#define RES_END_TAG 0x79 /* small item, name 0xf, length 1 */
#define RES_MEMORY32_FIXED 0x86 /* large item 0x06 */
#define RES_MEMORY32_FIXED_LEN 9
#define RES_EXT_IRQ 0x89 /* large item 0x09 */
#define RES_EXT_IRQ_LEN 6 /* flags, table length, one interrupt number */
#define RES_EXT_IRQ_CONSUMER (1u << 0)
#define RES_EXT_IRQ_EDGE (1u << 1)
#define RES_EXT_IRQ_ACTIVE_LOW (1u << 2)

#define PKG_LENGTH_MAX ((1u << 28) - 1) /* 4 bytes: 4 + 8 + 8 + 8 bits */

void aml_init(struct aml *a, uint8_t *buf, size_t cap)
{
	*a = (struct aml){ .buf = buf, .cap = cap };
}

int aml_finish(const struct aml *a, size_t *len)
{
	if (a->overflow)
		return -ENOSPC;
	*len = a->len;
	return 0;
}

/* Room for @n more bytes? Sets the sticky overflow flag when not. */
static bool room(struct aml *a, size_t n)
{
	if (a->overflow || n > a->cap - a->len)
		a->overflow = true;
	return !a->overflow;
}

static void put(struct aml *a, const void *p, size_t n)
{
	if (!room(a, n))
		return;
	memcpy(a->buf + a->len, p, n);
	a->len += n;
}

static void byte(struct aml *a, uint8_t b)
{
	put(a, &b, 1);
}

/*
 * A NameSeg (20.2.2): a lead character A-Z or '_', then A-Z, 0-9 or '_',
 * four in all, padded with '_'. A malformed name becomes "____" rather than
 * bytes the OS would reject, and the caller's tests catch it; skiff's names
 * are constants.
 */
static void name_seg(struct aml *a, const char *seg)
{
	char s[4] = { '_', '_', '_', '_' };
	size_t i, n = strlen(seg);

	for (i = 0; i < n && i < 4; i++) {
		char c = seg[i];

		if ((c >= 'A' && c <= 'Z') || c == '_' || (i && c >= '0' && c <= '9'))
			s[i] = c;
	}
	put(a, s, 4);
}

/* A NameString of one segment, rooted when it starts with '\'. */
static void name_string(struct aml *a, const char *path)
{
	if (path[0] == AML_ROOT_CHAR) {
		byte(a, AML_ROOT_CHAR);
		path++;
	}
	name_seg(a, path);
}

void aml_name(struct aml *a, const char *seg)
{
	byte(a, AML_NAME_OP);
	name_string(a, seg);
}

/* The integer encoding of @v into @out (at most 9 bytes); returns its length. */
static size_t integer_bytes(uint8_t *out, uint64_t v)
{
	if (v <= 1) {
		out[0] = v ? AML_ONE_OP : AML_ZERO_OP;
		return 1;
	}
	if (v <= UINT8_MAX) {
		out[0] = AML_BYTE_PREFIX;
		out[1] = (uint8_t)v;
		return 2;
	}
	if (v <= UINT16_MAX) {
		out[0] = AML_WORD_PREFIX;
		le_put16(out + 1, (uint16_t)v);
		return 3;
	}
	if (v <= UINT32_MAX) {
		out[0] = AML_DWORD_PREFIX;
		le_put32(out + 1, (uint32_t)v);
		return 5;
	}
	out[0] = AML_QWORD_PREFIX;
	le_put64(out + 1, v);
	return 9;
}

void aml_integer(struct aml *a, uint64_t v)
{
	uint8_t b[9];

	put(a, b, integer_bytes(b, v));
}

void aml_string(struct aml *a, const char *s)
{
	byte(a, AML_STRING_PREFIX);
	put(a, s, strlen(s) + 1);
}

static aml_mark open_at(struct aml *a, bool buffer)
{
	return (aml_mark){ .body = a->len, .buffer = buffer };
}

aml_mark aml_open_scope(struct aml *a, const char *path)
{
	aml_mark m;

	byte(a, AML_SCOPE_OP);
	m = open_at(a, false);
	name_string(a, path);
	return m;
}

aml_mark aml_open_device(struct aml *a, const char *seg)
{
	aml_mark m;

	byte(a, AML_EXT_OP_PREFIX);
	byte(a, AML_DEVICE_OP);
	m = open_at(a, false);
	name_seg(a, seg);
	return m;
}

aml_mark aml_open_package(struct aml *a, uint8_t n)
{
	aml_mark m;

	byte(a, AML_PACKAGE_OP);
	m = open_at(a, false);
	byte(a, n); /* NumElements */
	return m;
}

aml_mark aml_open_resources(struct aml *a)
{
	byte(a, AML_BUFFER_OP);
	return open_at(a, true);
}

/*
 * PkgLength (20.2.4) for @len bytes that follow it, into @out; returns its
 * size, 1-4 bytes. The encoded value counts the PkgLength's own bytes. One
 * byte holds 6 bits; longer forms hold 4 bits in the lead byte (whose top
 * two bits give the count of bytes that follow) and 8 in each next byte.
 * @len is at most PKG_LENGTH_MAX - 4.
 */
static size_t pkg_length(uint8_t *out, size_t len)
{
	size_t n, total, i;

	for (n = 1; n <= 4; n++) {
		total = len + n;
		if (n == 1 ? total < 0x40 : total < (1u << (4 + 8 * (n - 1))))
			break;
	}
	if (n == 1) {
		out[0] = (uint8_t)total;
		return 1;
	}
	out[0] = (uint8_t)((n - 1) << 6 | (total & 0xf));
	for (i = 1; i < n; i++)
		out[i] = (uint8_t)(total >> (4 + 8 * (i - 1)));
	return n;
}

void aml_close(struct aml *a, aml_mark m)
{
	uint8_t prefix[4 + 9];
	size_t n, body;

	if (m.buffer) {
		byte(a, RES_END_TAG);
		byte(a, 0); /* checksum 0: "treat as correctly summed" */
	}
	if (a->overflow)
		return;
	body = a->len - m.body;
	if (body > PKG_LENGTH_MAX - sizeof(prefix)) {
		a->overflow = true;
		return;
	}
	if (m.buffer) {
		uint8_t size[9];
		size_t k = integer_bytes(size, body); /* BufferSize */

		n = pkg_length(prefix, body + k);
		memcpy(prefix + n, size, k);
		n += k;
	} else {
		n = pkg_length(prefix, body);
	}
	if (!room(a, n))
		return;
	memmove(a->buf + m.body + n, a->buf + m.body, body);
	memcpy(a->buf + m.body, prefix, n);
	a->len += n;
}

void aml_memory32_fixed(struct aml *a, uint32_t base, uint32_t len)
{
	uint8_t d[3 + RES_MEMORY32_FIXED_LEN];

	d[0] = RES_MEMORY32_FIXED;
	le_put16(d + 1, RES_MEMORY32_FIXED_LEN);
	d[3] = 1; /* read/write */
	le_put32(d + 4, base);
	le_put32(d + 8, len);
	put(a, d, sizeof(d));
}

void aml_interrupt(struct aml *a, uint32_t gsi, bool level, bool active_low)
{
	uint8_t d[3 + RES_EXT_IRQ_LEN];

	d[0] = RES_EXT_IRQ;
	le_put16(d + 1, RES_EXT_IRQ_LEN);
	/* consumer; exclusive (bit 3 clear); not wake capable (bit 4 clear) */
	d[3] = (uint8_t)(RES_EXT_IRQ_CONSUMER | (level ? 0 : RES_EXT_IRQ_EDGE) |
			 (active_low ? RES_EXT_IRQ_ACTIVE_LOW : 0));
	d[4] = 1; /* interrupt table length */
	le_put32(d + 5, gsi);
	put(a, d, sizeof(d));
}
