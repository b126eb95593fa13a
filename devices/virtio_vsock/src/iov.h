/* SPDX-License-Identifier: MIT */
/* Copy-once helpers over iovec arrays (guest buffers mapped by gm_map()). */
#ifndef SKIFF_VSOCK_IOV_H
#define SKIFF_VSOCK_IOV_H

#include <stddef.h>
#include <sys/uio.h>

/* iov_bytes() - total length of @n iovecs. */
size_t iov_bytes(const struct iovec *iov, unsigned int n);

/*
 * iov_read() - copy up to @len bytes starting @off bytes into the iovec
 * stream to @dst. Return: bytes copied (less than @len at the end of the
 * stream).
 */
size_t iov_read(const struct iovec *iov, unsigned int n, size_t off, void *dst, size_t len);

/* iov_write() - copy @len bytes from @src into the stream at @off. Return: bytes copied. */
size_t iov_write(const struct iovec *iov, unsigned int n, size_t off, const void *src, size_t len);

/*
 * iov_slice() - describe bytes [off, off + len) of a stream as a new iovec
 * array in @dst (at most @cap entries; no data is copied).
 * Return: number of entries written; the slice is shorter than @len when the
 * stream or @cap ends first (sum the result to know).
 */
unsigned int iov_slice(const struct iovec *iov, unsigned int n, size_t off, size_t len,
		       struct iovec *dst, unsigned int cap);

#endif
