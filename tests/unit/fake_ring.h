/* SPDX-License-Identifier: MIT */
/*
 * A driver-side split ring for unit tests: plain memory, no threads. Guest
 * memory is region 0 at RING_GPA (rings and buffers) plus two adjacent
 * regions at SPLIT_GPA so that buffers can straddle a region boundary.
 */
#ifndef SKIFF_TEST_FAKE_RING_H
#define SKIFF_TEST_FAKE_RING_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guest_mem.h"
#include "virtqueue.h"

#define RING_GPA 0x200000ull
#define RING_SIZE (1u << 20)
#define SPLIT_GPA 0x100000ull
#define SPLIT_HALF 0x10000u
#define QNUM 16u
#define DESC_GPA RING_GPA
#define AVAIL_GPA (RING_GPA + 0x1000)
#define USED_GPA (RING_GPA + 0x2000)
#define BUF_GPA (RING_GPA + 0x10000)

struct fake {
	struct guest_mem gm;
	uint8_t *ring_mem, *half_a, *half_b;
	struct vq vq;
	uint16_t avail_idx;
	struct iovec iov[64];
	struct vq_chain c;
};

static inline void *fake_hva(struct fake *f, uint64_t gpa)
{
	return gm_ptr(&f->gm, gpa, 1);
}

static inline struct vring_desc *fake_desc(struct fake *f)
{
	return fake_hva(f, DESC_GPA);
}

static inline void fake_init(struct fake *f, uint64_t features)
{
	struct vsock_mem_region r[3];
	struct vsock_vring_config cfg = { .num = QNUM,
					  .desc_gpa = DESC_GPA,
					  .avail_gpa = AVAIL_GPA,
					  .used_gpa = USED_GPA,
					  .kick_fd = -1,
					  .call_fd = -1 };

	memset(f, 0, sizeof(*f));
	f->ring_mem = aligned_alloc(4096, RING_SIZE);
	f->half_a = aligned_alloc(4096, SPLIT_HALF);
	f->half_b = aligned_alloc(4096, SPLIT_HALF);
	memset(f->ring_mem, 0, RING_SIZE);
	memset(f->half_a, 0, SPLIT_HALF);
	memset(f->half_b, 0, SPLIT_HALF);
	r[0] = (struct vsock_mem_region){ RING_GPA, RING_SIZE, f->ring_mem };
	r[1] = (struct vsock_mem_region){ SPLIT_GPA, SPLIT_HALF, f->half_a };
	r[2] = (struct vsock_mem_region){ SPLIT_GPA + SPLIT_HALF, SPLIT_HALF, f->half_b };
	if (gm_set(&f->gm, r, 3) || vq_setup(&f->vq, &f->gm, &cfg, features))
		abort();
	f->c.iov = f->iov;
	f->c.cap = 64;
}

static inline void fake_fini(struct fake *f)
{
	free(f->ring_mem);
	free(f->half_a);
	free(f->half_b);
}

static inline void fake_set_desc(struct fake *f, struct vring_desc *t, unsigned int i,
				 uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	(void)f;
	t[i].addr = addr;
	t[i].len = len;
	t[i].flags = flags;
	t[i].next = next;
}

static inline void fake_avail(struct fake *f, uint16_t head)
{
	struct vring_avail *a = fake_hva(f, AVAIL_GPA);

	a->ring[f->avail_idx % QNUM] = head;
	f->avail_idx++;
	__atomic_store_n(&a->idx, f->avail_idx, __ATOMIC_RELEASE);
}

static inline struct vring_used *fake_used(struct fake *f)
{
	return fake_hva(f, USED_GPA);
}

#endif
