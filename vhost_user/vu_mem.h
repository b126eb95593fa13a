/* SPDX-License-Identifier: MIT */
/* Guest memory shared by the frontend: mapping a SET_MEM_TABLE, translation. */
#ifndef SKIFF_VU_MEM_H
#define SKIFF_VU_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "skiff/vsock_dev.h"
#include "vu_proto.h"

/*
 * Most guest memory a frontend may share, all regions together (1 TiB):
 * each region is mapped whole (MAP_NORESERVE, so only address space), and
 * a frontend must not make us reserve the process's address space.
 */
#define VU_MAX_MEM_BYTES (1ull << 40)

struct vu_mem_map {
	uint64_t gpa; /* guest physical start */
	uint64_t size; /* bytes */
	uint64_t uaddr; /* frontend user address of gpa */
	void *map_base; /* what mmap(2) returned */
	size_t map_len; /* what was mapped */
	void *hva; /* where gpa is in this process */
	int guard; /* its slot in the SIGBUS guard table (vu_mem.c) */
};

struct vu_mem {
	struct vu_mem_map maps[VU_MAX_REGIONS];
	unsigned int n;
};

/*
 * vu_mem_guard_init() - install the process's SIGBUS handler that makes a
 * fault on a mapped guest region survivable (see vu_mem.c): the region is
 * replaced by zero pages and its fault fd written. Idempotent; call it
 * before any thread is filtered (rt_sigaction). A handler installed before
 * is called for faults outside guest memory.
 * Return: 0; -errno from sigaction(2).
 */
int vu_mem_guard_init(void);

/* vu_mem_guard_faults() - guest-memory SIGBUS faults survived, process-wide. */
uint64_t vu_mem_guard_faults(void);

/*
 * vu_mem_map_table() - check and map the regions of a SET_MEM_TABLE into
 * @out (which must be empty). @fds: one per region, consumed (closed) in
 * all cases. Checks: 1..VU_MAX_REGIONS regions, non-zero sizes, at most
 * VU_MAX_MEM_BYTES in all, no wrap-around of gpa/uaddr/mmap_offset + size,
 * no overlap between regions in GPA space nor in frontend address space,
 * each fd a regular file open read-write (vu_fd_check(VU_FD_MEM)) at least
 * mmap_offset + size long. A file that shrinks later faults on access; the
 * guard then writes 1 to @fault_fd (an eventfd) for this table's owner.
 * Return: 0; -EINVAL for a bad table or fd; -E2BIG when the regions total
 * more than VU_MAX_MEM_BYTES; -ENOSPC when the guard table is full;
 * -errno from fstat(2)/mmap(2). On error nothing stays mapped.
 */
int vu_mem_map_table(const struct vu_mem_table *t, int *fds, unsigned int nfds, int fault_fd,
		     struct vu_mem *out);

/* vu_mem_unmap() - unmap everything in @m and empty it. */
void vu_mem_unmap(struct vu_mem *m);

/*
 * vu_mem_uaddr_to_gpa() - translate a frontend user address.
 * Return: 0 and *@gpa; -EFAULT when no region holds @uaddr.
 */
int vu_mem_uaddr_to_gpa(const struct vu_mem *m, uint64_t uaddr, uint64_t *gpa);

/* vu_mem_regions() - the table as device regions; returns the count. */
unsigned int vu_mem_regions(const struct vu_mem *m, struct vsock_mem_region *out);

#endif /* SKIFF_VU_MEM_H */
