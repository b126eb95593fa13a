// SPDX-License-Identifier: MIT
/*
 * Harness: the host-side "CONNECT <port>\n" line parser,
 * uds_parse_connect() (devices/virtio_vsock/src/host_uds.c), the way the
 * control thread uses it (dev_ctl.c handle_pending()): bytes arrive in
 * reads of any size into a 32-byte buffer (DEV_CONNECT_LINE_MAX) and the
 * whole buffer is parsed again after each read.
 *
 * Input: byte 0 = read sizes seed, byte 1 = the parser's max (0: 32), then
 * the bytes a host client writes.
 *
 * Checked besides ASan/UBSan, against a plain reference parser of the
 * grammar "CONNECT" SP 1*10DIGIT LF with a value <= 2^32 - 1:
 * 0 only for a line the reference accepts, with the same port and consumed
 * = line length <= bytes given; -EAGAIN only for a valid prefix shorter
 * than max; the result of the last read does not depend on how the bytes
 * were split into reads.
 */
#include <errno.h>

#include "fuzz_input.h"
#include "host_uds.h"

#define LINE_MAX_BYTES 32u

/* Reference: 0 line ok, 1 valid prefix so far, -1 malformed. */
static int reference(const char *b, size_t len, size_t max, uint32_t *port, size_t *used)
{
	static const char kw[] = "CONNECT ";
	unsigned long long v = 0;
	size_t i, digits = 0, lim = len < max ? len : max;

	for (i = 0; i < lim; i++) {
		if (i < 8) {
			if (b[i] != kw[i])
				return -1;
		} else if (b[i] == '\n') {
			if (!digits)
				return -1;
			*port = (uint32_t)v;
			*used = i + 1;
			return 0;
		} else if (b[i] >= '0' && b[i] <= '9' && digits < 10) {
			digits++;
			v = v * 10 + (unsigned long long)(b[i] - '0');
			if (v > 0xffffffffull)
				return -1;
		} else {
			return -1;
		}
	}
	return len >= max ? -1 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[LINE_MAX_BYTES];
	unsigned int seed, len = 0;
	uint32_t port = 0, rport = 0;
	size_t max, used = 0, rused = 0, off;
	int ret = -EAGAIN, ref;
	struct fz f;

	fz_init(&f, data, size);
	seed = fz_u8(&f);
	max = fz_u8(&f) % (LINE_MAX_BYTES + 1);
	if (!max)
		max = LINE_MAX_BYTES;
	off = f.off;

	/* Whole input at once, any length (the parser must not read past len). */
	{
		size_t n = size - off;
		char *whole = malloc(n ? n : 1);

		memcpy(whole, data + off, n);
		ret = uds_parse_connect(whole, n, max, &port, &used);
		ref = reference(whole, n, max, &rport, &rused);
		free(whole);
		if (ref == 0) {
			FZ_CHECK(ret == 0 && port == rport && used == rused && used <= n);
		} else if (ref == 1) {
			FZ_CHECK(ret == -EAGAIN);
		} else {
			FZ_CHECK(ret == -EINVAL);
		}
	}

	/* As handle_pending(): reads into the fixed buffer, parse after each. */
	ret = -EAGAIN;
	while (ret == -EAGAIN && len < max && f.off < size) {
		size_t want = (seed % 7) + 1, room = max - len;

		seed = seed * 33 + 7;
		if (want > room)
			want = room;
		len += (unsigned int)fz_bytes(&f, buf + len, want);
		ret = uds_parse_connect(buf, len, max, &port, &used);
	}
	ref = reference(buf, len, max, &rport, &rused);
	if (ret == 0)
		FZ_CHECK(ref == 0 && port == rport && used == rused && used <= len);
	else if (ret == -EAGAIN)
		FZ_CHECK(ref == 1 && len < max);
	else
		FZ_CHECK(ret == -EINVAL && ref == -1);
	return 0;
}
