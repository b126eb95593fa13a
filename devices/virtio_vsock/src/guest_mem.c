// SPDX-License-Identifier: MIT
#include "guest_mem.h"

#include <errno.h>
#include <string.h>

int gm_set(struct guest_mem *gm, const struct vsock_mem_region *regions, unsigned int n)
{
	unsigned int i, j;

	if (n > VSOCK_MAX_MEM_REGIONS || (n && !regions))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const struct vsock_mem_region *a = &regions[i];

		if (!a->size || !a->hva || a->gpa + a->size < a->gpa ||
		    (uintptr_t)a->hva + a->size < (uintptr_t)a->hva)
			return -EINVAL;
		/* gpa + size may be exactly 2^64 only if it wrapped to 0. */
		if (a->gpa + a->size == 0)
			return -EINVAL;
		for (j = 0; j < i; j++) {
			const struct vsock_mem_region *b = &regions[j];

			if (a->gpa < b->gpa + b->size && b->gpa < a->gpa + a->size)
				return -EINVAL;
		}
	}
	gm->n = n;
	if (n)
		memcpy(gm->r, regions, n * sizeof(*regions));
	return 0;
}

static const struct vsock_mem_region *find_region(const struct guest_mem *gm, uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < gm->n; i++) {
		const struct vsock_mem_region *r = &gm->r[i];

		if (gpa >= r->gpa && gpa - r->gpa < r->size)
			return r;
	}
	return NULL;
}

int gm_map(const struct guest_mem *gm, uint64_t gpa, uint64_t len, struct iovec *iov,
	   unsigned int cap, unsigned int *n)
{
	unsigned int k = *n;

	if (gpa + len < gpa)
		return -EFAULT;
	while (len) {
		const struct vsock_mem_region *r = find_region(gm, gpa);
		uint64_t off, chunk;

		if (!r)
			return -EFAULT;
		if (k >= cap)
			return -ENOBUFS;
		off = gpa - r->gpa;
		chunk = r->size - off;
		if (chunk > len)
			chunk = len;
		iov[k].iov_base = (char *)r->hva + off;
		iov[k].iov_len = chunk;
		k++;
		gpa += chunk;
		len -= chunk;
	}
	*n = k;
	return 0;
}

void *gm_ptr(const struct guest_mem *gm, uint64_t gpa, uint64_t len)
{
	const struct vsock_mem_region *r;

	if (!len || gpa + len < gpa)
		return NULL;
	r = find_region(gm, gpa);
	if (!r || len > r->size - (gpa - r->gpa))
		return NULL;
	return (char *)r->hva + (gpa - r->gpa);
}
