// SPDX-License-Identifier: MIT
#include "virtqueue.h"

#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

/* Indirect tables longer than this are refused (bounds the walk). */
#define VQ_MAX_INDIRECT VQ_MAX_SIZE

static inline uint16_t load16(const uint16_t *p)
{
	return le16toh(__atomic_load_n(p, __ATOMIC_RELAXED));
}

static inline void store16(uint16_t *p, uint16_t v)
{
	__atomic_store_n(p, htole16(v), __ATOMIC_RELAXED);
}

static uint16_t *used_event_ptr(const struct vq *vq)
{
	return &vq->avail->ring[vq->num];
}

static uint16_t *avail_event_ptr(const struct vq *vq)
{
	return (uint16_t *)&vq->used->ring[vq->num];
}

int vq_setup(struct vq *vq, const struct guest_mem *gm, const struct vsock_vring_config *cfg,
	     uint64_t features)
{
	uint16_t num = cfg->num;

	memset(vq, 0, sizeof(*vq));
	if (!num || num > VQ_MAX_SIZE || (num & (num - 1)))
		return -EINVAL;
	if ((cfg->desc_gpa & 15) || (cfg->avail_gpa & 1) || (cfg->used_gpa & 3))
		return -EINVAL;
	vq->desc = gm_ptr(gm, cfg->desc_gpa, 16ull * num);
	vq->avail = gm_ptr(gm, cfg->avail_gpa, 6ull + 2ull * num);
	vq->used = gm_ptr(gm, cfg->used_gpa, 6ull + 8ull * num);
	if (!vq->desc || !vq->avail || !vq->used) {
		memset(vq, 0, sizeof(*vq));
		return -EINVAL;
	}
	vq->num = num;
	vq->gm = gm;
	vq->event_idx = features & (1ull << VIRTIO_RING_F_EVENT_IDX);
	vq->indirect = features & (1ull << VIRTIO_RING_F_INDIRECT_DESC);
	vq->last_avail = cfg->last_avail_idx;
	vq->used_idx = load16(&vq->used->idx);
	vq->signalled_used = vq->used_idx;
	return 0;
}

/* Read one descriptor once, field by field, into host byte order. */
static void read_desc(const struct vring_desc *t, uint32_t i, struct vring_desc *d)
{
	const volatile struct vring_desc *s = &t[i];

	d->addr = le64toh(s->addr);
	d->len = le32toh(s->len);
	d->flags = le16toh(s->flags);
	d->next = le16toh(s->next);
}

static int walk_chain(struct vq *vq, struct vq_chain *c)
{
	const struct vring_desc *table = vq->desc;
	uint32_t tsize = vq->num, idx = c->head, hops = 0, max_hops = vq->num;
	uint64_t out_len = 0, in_len = 0;
	unsigned int n = 0;
	bool in_indirect = false;
	struct vring_desc d;
	int ret;

	c->n_out = c->n_in = 0;
	c->out_len = c->in_len = 0;
	for (;;) {
		if (idx >= tsize || ++hops > max_hops)
			return -EINVAL;
		read_desc(table, idx, &d);
		if (d.flags & VRING_DESC_F_INDIRECT) {
			if (!vq->indirect || in_indirect || (d.flags & VRING_DESC_F_NEXT) ||
			    !d.len || d.len % sizeof(struct vring_desc) ||
			    d.len / sizeof(struct vring_desc) > VQ_MAX_INDIRECT)
				return -EINVAL;
			table = gm_ptr(vq->gm, d.addr, d.len);
			if (!table || ((uintptr_t)table & 7))
				return -EINVAL;
			tsize = d.len / sizeof(struct vring_desc);
			max_hops = tsize;
			hops = 0;
			idx = 0;
			in_indirect = true;
			continue;
		}
		ret = gm_map(vq->gm, d.addr, d.len, c->iov, c->cap, &n);
		if (ret == -ENOBUFS)
			return -E2BIG;
		if (ret)
			return -EINVAL;
		if (d.flags & VRING_DESC_F_WRITE) {
			in_len += d.len;
		} else {
			if (in_len || c->n_in)
				return -EINVAL; /* readable after writable */
			out_len += d.len;
			c->n_out = n;
		}
		c->n_in = n - c->n_out;
		if (out_len > UINT32_MAX || in_len > UINT32_MAX)
			return -EINVAL;
		if (!(d.flags & VRING_DESC_F_NEXT))
			break;
		idx = d.next;
	}
	c->out_len = out_len;
	c->in_len = in_len;
	return 0;
}

bool vq_has_avail(const struct vq *vq)
{
	if (!vq->num)
		return false;
	if (vq->broken)
		return true;
	return le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE)) != vq->last_avail;
}

uint16_t vq_avail_count(const struct vq *vq)
{
	uint16_t n;

	if (!vq->num || vq->broken)
		return 0;
	n = (uint16_t)(le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE)) -
		       vq->last_avail);
	return n > vq->num ? vq->num : n;
}

int vq_pop(struct vq *vq, struct vq_chain *c)
{
	uint16_t avail_idx, head;
	int ret;

	if (!vq->num || vq->broken)
		return -EIO;
	avail_idx = le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
	if (avail_idx == vq->last_avail)
		return 0;
	if ((uint16_t)(avail_idx - vq->last_avail) > vq->num)
		goto broken;
	head = load16(&vq->avail->ring[vq->last_avail & (vq->num - 1)]);
	if (head >= vq->num)
		goto broken;
	vq->last_avail++;
	c->head = head;
	ret = walk_chain(vq, c);
	if (ret) {
		c->n_out = c->n_in = 0;
		c->out_len = c->in_len = 0;
		return ret;
	}
	return 1;
broken:
	vq->broken = true;
	return -EIO;
}

void vq_push_batch(struct vq *vq, const struct vring_used_elem *e, unsigned int n)
{
	unsigned int i;

	if (!vq->num || !n)
		return;
	for (i = 0; i < n; i++) {
		struct vring_used_elem *u =
			&vq->used->ring[(uint16_t)(vq->used_idx + i) & (vq->num - 1)];

		__atomic_store_n(&u->id, htole32(e[i].id), __ATOMIC_RELAXED);
		__atomic_store_n(&u->len, htole32(e[i].len), __ATOMIC_RELAXED);
	}
	vq->used_idx += n;
	__atomic_store_n(&vq->used->idx, htole16(vq->used_idx), __ATOMIC_RELEASE);
}

void vq_push(struct vq *vq, uint16_t head, uint32_t len)
{
	struct vring_used_elem e = { .id = head, .len = len };

	vq_push_batch(vq, &e, 1);
}

bool vq_need_notify(struct vq *vq)
{
	uint16_t old = vq->signalled_used, new_idx = vq->used_idx;
	bool valid = vq->signalled_valid;

	if (!vq->num)
		return false;
	/* Order the used idx store before reading the driver's suppression state. */
	atomic_thread_fence(memory_order_seq_cst);
	if (old == new_idx)
		return false;
	vq->signalled_used = new_idx;
	vq->signalled_valid = true;
	if (!vq->event_idx)
		return !(load16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
	if (!valid)
		return true;
	return vring_need_event(load16(used_event_ptr(vq)), new_idx, old);
}

bool vq_enable_notify(struct vq *vq)
{
	if (!vq->num)
		return false;
	if (vq->event_idx)
		store16(avail_event_ptr(vq), vq->last_avail);
	else
		store16(&vq->used->flags, 0);
	atomic_thread_fence(memory_order_seq_cst);
	return vq_has_avail(vq);
}

void vq_disable_notify(struct vq *vq)
{
	if (vq->num && !vq->event_idx)
		store16(&vq->used->flags, VRING_USED_F_NO_NOTIFY);
}
