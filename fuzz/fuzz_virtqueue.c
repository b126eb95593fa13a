// SPDX-License-Identifier: MIT
/*
 * Harness: split virtqueue descriptor chain walking (devices/virtio_vsock/
 * src/virtqueue.c, guest_mem.c) on guest memory built from the input.
 *
 * Guest memory: three regions, each its own heap block so ASan sees any
 * access past a region's end: R0 [0x0, 0x1000), R1 [0x1000, 0x2000) right
 * after it (ranges crossing the boundary are split into two iovecs) and R2
 * [0x8000, 0x8400) after a hole. The queue lives in R0: avail ring at 0x0,
 * descriptor table at 0x110, used ring at 0xa00 (the ring the driver
 * writes first, so that short inputs already describe chains).
 *
 * Input: byte 0 = features (bit 0 EVENT_IDX, bit 1 INDIRECT_DESC) and queue
 * size (bits 2-4: log2, 1..128); byte 1 = iovec capacity (1..16); byte 2 =
 * last_avail_idx; byte 3 = pops to try; the rest fills R0, R1, R2 in order.
 *
 * Checked besides ASan/UBSan: a popped chain's iovecs lie inside guest
 * memory, there are at most cap of them, and their lengths add up to
 * out_len/in_len; the head of every chain is < num.
 */
#include <errno.h>

#include "fuzz_input.h"
#include "guest_mem.h"
#include "virtqueue.h"

#define R_N 3
static const uint64_t r_gpa[R_N] = { 0x0, 0x1000, 0x8000 };
static const uint64_t r_size[R_N] = { 0x1000, 0x1000, 0x400 };

static uint8_t *hva[R_N];

static bool iov_inside(const struct iovec *v)
{
	unsigned int i;

	for (i = 0; i < R_N; i++) {
		uint8_t *b = v->iov_base;

		if (b >= hva[i] && b + v->iov_len <= hva[i] + r_size[i] && v->iov_len)
			return true;
	}
	return false;
}

static void check_chain(const struct vq_chain *c)
{
	uint64_t out = 0, in = 0;
	unsigned int i;
	volatile uint8_t sink = 0;

	FZ_CHECK(c->n_out + c->n_in <= c->cap);
	for (i = 0; i < c->n_out + c->n_in; i++) {
		const struct iovec *v = &c->iov[i];

		FZ_CHECK(iov_inside(v));
		if (i < c->n_out) {
			out += v->iov_len;
			sink ^= ((const uint8_t *)v->iov_base)[v->iov_len - 1];
		} else {
			in += v->iov_len;
			((uint8_t *)v->iov_base)[v->iov_len - 1] = 0x5a;
		}
	}
	(void)sink;
	FZ_CHECK(out == c->out_len);
	FZ_CHECK(in == c->in_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vsock_mem_region regs[R_N];
	struct vsock_vring_config cfg = { 0 };
	struct guest_mem gm;
	struct iovec iov[16];
	struct vq_chain c;
	struct vq vq;
	unsigned int i, cap, pops;
	uint64_t features = 0;
	uint8_t flags;
	struct fz f;

	fz_init(&f, data, size);
	flags = fz_u8(&f);
	cap = fz_u8(&f) % 16 + 1;
	cfg.last_avail_idx = fz_u8(&f);
	pops = fz_u8(&f);
	if (flags & 1)
		features |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (flags & 2)
		features |= 1ull << VIRTIO_RING_F_INDIRECT_DESC;
	cfg.num = (uint16_t)(1u << ((flags >> 2) & 7));
	cfg.desc_gpa = 0x110;
	cfg.avail_gpa = 0x0;
	cfg.used_gpa = 0xa00;
	cfg.kick_fd = cfg.call_fd = -1;

	for (i = 0; i < R_N; i++) {
		hva[i] = malloc(r_size[i]);
		if (!hva[i])
			abort();
		fz_bytes(&f, hva[i], r_size[i]);
		regs[i] = (struct vsock_mem_region){ r_gpa[i], r_size[i], hva[i] };
	}
	FZ_CHECK(gm_set(&gm, regs, R_N) == 0);
	FZ_CHECK(vq_setup(&vq, &gm, &cfg, features) == 0);

	vq_disable_notify(&vq);
	for (i = 0; i <= pops; i++) {
		int r;

		memset(&c, 0, sizeof(c));
		c.iov = iov;
		c.cap = cap;
		r = vq_pop(&vq, &c);
		if (r == 0) {
			if (!vq_enable_notify(&vq))
				break;
			continue;
		}
		if (r == -EIO) {
			FZ_CHECK(vq_has_avail(&vq));
			break;
		}
		FZ_CHECK(r == 1 || r == -EINVAL || r == -E2BIG);
		FZ_CHECK(c.head < vq.num);
		if (r == 1)
			check_chain(&c);
		else
			FZ_CHECK(!c.n_out && !c.n_in && !c.out_len && !c.in_len);
		vq_push(&vq, c.head, r == 1 ? c.in_len : 0);
		(void)vq_need_notify(&vq);
	}
	for (i = 0; i < R_N; i++)
		free(hva[i]);
	return 0;
}
