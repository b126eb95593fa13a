// SPDX-License-Identifier: MIT
#include "iov.h"

#include <string.h>

size_t iov_bytes(const struct iovec *iov, unsigned int n)
{
	size_t t = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Find the entry holding stream offset @off; *skip gets the offset inside it. */
static unsigned int iov_seek(const struct iovec *iov, unsigned int n, size_t off, size_t *skip)
{
	unsigned int i = 0;

	while (i < n && off >= iov[i].iov_len) {
		off -= iov[i].iov_len;
		i++;
	}
	*skip = off;
	return i;
}

size_t iov_read(const struct iovec *iov, unsigned int n, size_t off, void *dst, size_t len)
{
	size_t skip, done = 0;
	unsigned int i = iov_seek(iov, n, off, &skip);

	for (; i < n && done < len; i++, skip = 0) {
		size_t c = iov[i].iov_len - skip;

		if (c > len - done)
			c = len - done;
		memcpy((char *)dst + done, (const char *)iov[i].iov_base + skip, c);
		done += c;
	}
	return done;
}

size_t iov_write(const struct iovec *iov, unsigned int n, size_t off, const void *src, size_t len)
{
	size_t skip, done = 0;
	unsigned int i = iov_seek(iov, n, off, &skip);

	for (; i < n && done < len; i++, skip = 0) {
		size_t c = iov[i].iov_len - skip;

		if (c > len - done)
			c = len - done;
		memcpy((char *)iov[i].iov_base + skip, (const char *)src + done, c);
		done += c;
	}
	return done;
}

unsigned int iov_slice(const struct iovec *iov, unsigned int n, size_t off, size_t len,
		       struct iovec *dst, unsigned int cap)
{
	size_t skip, done = 0;
	unsigned int k = 0, i = iov_seek(iov, n, off, &skip);

	for (; i < n && done < len && k < cap; i++, skip = 0) {
		size_t c = iov[i].iov_len - skip;

		if (!c)
			continue;
		if (c > len - done)
			c = len - done;
		dst[k].iov_base = (char *)iov[i].iov_base + skip;
		dst[k].iov_len = c;
		k++;
		done += c;
	}
	return k;
}
