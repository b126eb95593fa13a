// SPDX-License-Identifier: MIT
/*
 * Guest memory from SET_MEM_TABLE (vhost-user.rst): each region comes with
 * an fd and an offset into it; we map [mmap_offset, mmap_offset + size) of
 * the fd shared and read-write. The device is only ever told GPAs. Caps:
 * VU_MAX_REGIONS regions, VU_MAX_MEM_BYTES in all.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vu_mem.h"

static int ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static int check_table(const struct vu_mem_table *t, unsigned int nfds)
{
	uint64_t total = 0;
	unsigned int i, j;

	if (t->nregions == 0 || t->nregions > VU_MAX_REGIONS || t->nregions != nfds)
		return -EINVAL;
	for (i = 0; i < t->nregions; i++) {
		const struct vu_mem_region *r = &t->regions[i];

		/* total stays <= VU_MAX_MEM_BYTES, so the sum cannot wrap */
		if (r->memory_size > VU_MAX_MEM_BYTES - total)
			return -E2BIG;
		total += r->memory_size;
		if (r->memory_size == 0 ||
		    r->guest_phys_addr + r->memory_size < r->guest_phys_addr ||
		    r->userspace_addr + r->memory_size < r->userspace_addr ||
		    r->mmap_offset + r->memory_size < r->mmap_offset)
			return -EINVAL;
		for (j = 0; j < i; j++) {
			const struct vu_mem_region *o = &t->regions[j];

			if (ranges_overlap(r->guest_phys_addr, r->memory_size, o->guest_phys_addr,
					   o->memory_size) ||
			    ranges_overlap(r->userspace_addr, r->memory_size, o->userspace_addr,
					   o->memory_size))
				return -EINVAL;
		}
	}
	return 0;
}

static int map_one(const struct vu_mem_region *r, int fd, struct vu_mem_map *out)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t off, delta;
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -errno;
	/* A short file would turn guest accesses into SIGBUS. */
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < r->mmap_offset + r->memory_size)
		return -EINVAL;
	off = r->mmap_offset & ~((uint64_t)page - 1);
	delta = r->mmap_offset - off;
	if (r->memory_size > SIZE_MAX - delta)
		return -EINVAL;
	p = mmap(NULL, (size_t)(r->memory_size + delta), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_NORESERVE, fd, (off_t)off);
	if (p == MAP_FAILED)
		return -errno;
	out->gpa = r->guest_phys_addr;
	out->size = r->memory_size;
	out->uaddr = r->userspace_addr;
	out->map_base = p;
	out->map_len = (size_t)(r->memory_size + delta);
	out->hva = (char *)p + delta;
	return 0;
}

int vu_mem_map_table(const struct vu_mem_table *t, int *fds, unsigned int nfds, struct vu_mem *out)
{
	unsigned int i;
	int ret;

	ret = check_table(t, nfds);
	if (ret)
		goto out_close;
	out->n = 0;
	for (i = 0; i < t->nregions; i++) {
		ret = map_one(&t->regions[i], fds[i], &out->maps[i]);
		if (ret) {
			vu_mem_unmap(out);
			goto out_close;
		}
		out->n = i + 1;
	}
out_close:
	for (i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
	return ret;
}

void vu_mem_unmap(struct vu_mem *m)
{
	unsigned int i;

	for (i = 0; i < m->n; i++)
		munmap(m->maps[i].map_base, m->maps[i].map_len);
	memset(m, 0, sizeof(*m));
}

int vu_mem_uaddr_to_gpa(const struct vu_mem *m, uint64_t uaddr, uint64_t *gpa)
{
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		const struct vu_mem_map *r = &m->maps[i];

		if (uaddr >= r->uaddr && uaddr - r->uaddr < r->size) {
			*gpa = r->gpa + (uaddr - r->uaddr);
			return 0;
		}
	}
	return -EFAULT;
}

unsigned int vu_mem_regions(const struct vu_mem *m, struct vsock_mem_region *out)
{
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		out[i].gpa = m->maps[i].gpa;
		out[i].size = m->maps[i].size;
		out[i].hva = m->maps[i].hva;
	}
	return m->n;
}
