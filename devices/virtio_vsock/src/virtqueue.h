/* SPDX-License-Identifier: MIT */
/*
 * Split virtqueue, device side (virtio 1.2 section 2.7).
 *
 * The rings live in guest memory and are read in place through pointers that
 * gm_ptr() checked once at set-up; every descriptor is copied into a local
 * before use. Ordering: the avail index is loaded with acquire semantics
 * before the ring entries it covers are read; the used index is stored with
 * release semantics after the used entries and the buffers they describe.
 *
 * Locking: none inside. One thread at a time may call the functions of one
 * queue; the caller holds whatever lock serialises that queue.
 */
#ifndef SKIFF_VSOCK_VIRTQUEUE_H
#define SKIFF_VSOCK_VIRTQUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "guest_mem.h"
#include "skiff/vsock_dev.h"

#define VRING_DESC_F_NEXT 1
#define VRING_DESC_F_WRITE 2
#define VRING_DESC_F_INDIRECT 4
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY 1

/* Largest queue size (virtio 1.2 2.7: queue size <= 32768). */
#define VQ_MAX_SIZE 32768u

struct vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vring_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* [num], then used_event */
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vring_used {
	uint16_t flags;
	uint16_t idx;
	struct vring_used_elem ring[]; /* [num], then avail_event (le16) */
};

struct vq {
	uint16_t num; /* 0: not configured */
	bool event_idx; /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool indirect; /* VIRTIO_RING_F_INDIRECT_DESC negotiated */
	bool broken; /* ring corrupt: stop using this queue until reset */
	bool signalled_valid; /* signalled_used holds a value */
	uint16_t last_avail; /* next avail ring slot to consume */
	uint16_t used_idx; /* next used ring slot to fill */
	uint16_t signalled_used; /* used_idx when we last decided on an interrupt */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	const struct guest_mem *gm;
};

/*
 * One descriptor chain as the device sees it: iov[0, n_out) readable
 * (driver to device), iov[n_out, n_out + n_in) writable. The caller
 * provides iov[cap].
 */
struct vq_chain {
	uint16_t head;
	unsigned int n_out, n_in;
	uint32_t out_len, in_len; /* bytes readable, writable */
	unsigned int cap;
	struct iovec *iov;
};

/*
 * vq_setup() - map queue @cfg of a device that negotiated @features.
 * Checks: num a power of two in [1, 32768]; desc 16-byte, avail 2-byte and
 * used 4-byte aligned; each ring inside one guest memory region. Resumes at
 * cfg->last_avail_idx and at the used index found in the used ring.
 * Return: 0; -EINVAL otherwise (@vq then unconfigured).
 */
int vq_setup(struct vq *vq, const struct guest_mem *gm, const struct vsock_vring_config *cfg,
	     uint64_t features);

/*
 * vq_pop() - take the next available descriptor chain into @c.
 * The chain is walked as virtio 1.2 2.7.5 says: readable descriptors before
 * writable ones, at most num hops (loops caught by that bound), next < num,
 * indirect tables (2.7.5.3) only when negotiated, of a non-zero length that
 * is a multiple of 16, within one region, not nested and not combined with
 * NEXT; the WRITE flag of an indirect descriptor is ignored. Every address
 * range goes through gm_map().
 * Return: 1 with @c filled; 0 when the avail ring is empty; -EIO when the
 * ring is broken (avail idx ran more than num ahead, or a head index >= num):
 * the queue is marked broken and returns -EIO until set up again;
 * -EINVAL (bad chain) or -E2BIG (more iovecs than c->cap): c->head is valid
 * and the caller must return the chain with vq_push(vq, c->head, 0).
 */
int vq_pop(struct vq *vq, struct vq_chain *c);

/* vq_has_avail() - whether vq_pop() would find a chain (or a broken ring). */
bool vq_has_avail(const struct vq *vq);

/*
 * vq_avail_count() - chains the driver made available that vq_pop() has not
 * taken yet: avail idx - last_avail, 0 on a broken or unconfigured queue,
 * at most num (a driver running further ahead breaks the ring at the pop).
 */
uint16_t vq_avail_count(const struct vq *vq);

/*
 * vq_push_batch() - publish @n used entries at once, in order, so that they
 * occupy contiguous used ring slots (a mergeable RX packet relies on that),
 * then store the used index (release). @n <= num.
 */
void vq_push_batch(struct vq *vq, const struct vring_used_elem *e, unsigned int n);

/* vq_push() - vq_push_batch() of one entry. */
void vq_push(struct vq *vq, uint16_t head, uint32_t len);

/*
 * vq_need_notify() - after pushes, whether the driver wants an interrupt:
 * with EVENT_IDX, whether used_event lies in the range of used indexes
 * published since the last call (virtio 1.2 2.7.10, vring_need_event());
 * otherwise unless the driver set VRING_AVAIL_F_NO_INTERRUPT. False when
 * nothing was published since the last call (or set-up); true for the first
 * publication after set-up (the driver's used_event may be stale then).
 */
bool vq_need_notify(struct vq *vq);

/*
 * vq_enable_notify() - ask the driver to kick when it adds buffers (writes
 * avail_event = last_avail with EVENT_IDX, clears NO_NOTIFY otherwise), then
 * re-check the ring after a full barrier.
 * Return: true when chains are already available (the caller should pop
 * them instead of sleeping).
 */
bool vq_enable_notify(struct vq *vq);

/* vq_disable_notify() - without EVENT_IDX, set NO_NOTIFY while we poll. */
void vq_disable_notify(struct vq *vq);

/*
 * vring_need_event() - virtio 1.2 2.7.10: true when @event_idx is in the
 * window (@old, @new_idx] of indexes, modulo 2^16.
 */
static inline bool vring_need_event(uint16_t event_idx, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event_idx - 1) < (uint16_t)(new_idx - old);
}

#endif
