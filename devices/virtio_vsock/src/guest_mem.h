/* SPDX-License-Identifier: MIT */
/*
 * Guest memory: the one place where a guest-physical address becomes a host
 * pointer. Every other file goes through gm_map() or gm_ptr().
 */
#ifndef SKIFF_VSOCK_GUEST_MEM_H
#define SKIFF_VSOCK_GUEST_MEM_H

#include <stdint.h>
#include <sys/uio.h>

#include "skiff/vsock_dev.h"

struct guest_mem {
	unsigned int n;
	struct vsock_mem_region r[VSOCK_MAX_MEM_REGIONS];
};

/*
 * gm_set() - validate and copy a region table into @gm.
 * Regions must have a non-zero size, must not wrap in GPA space (gpa + size
 * fits in 64 bits) nor in host space, and must not overlap each other.
 * Return: 0; -EINVAL otherwise (@gm untouched).
 */
int gm_set(struct guest_mem *gm, const struct vsock_mem_region *regions, unsigned int n);

/*
 * gm_map() - translate [gpa, gpa + len) into host iovecs.
 * A range that crosses from one region into a region that starts exactly
 * where the first ends is split into one iovec per region. Appends to
 * @iov[*n] and advances *n; never writes beyond @iov[cap - 1].
 * len == 0 appends nothing and succeeds.
 * Return: 0; -EFAULT when any byte of the range lies outside guest memory or
 * gpa + len overflows; -ENOBUFS when more than cap - *n iovecs are needed
 * (*n is then left unchanged).
 */
int gm_map(const struct guest_mem *gm, uint64_t gpa, uint64_t len, struct iovec *iov,
	   unsigned int cap, unsigned int *n);

/*
 * gm_ptr() - host pointer for [gpa, gpa + len), which must lie within a
 * single region (used for the rings, which the device reads in place).
 * Return: the pointer, or NULL when the range is not inside one region,
 * overflows, or len is 0.
 */
void *gm_ptr(const struct guest_mem *gm, uint64_t gpa, uint64_t len);

#endif
