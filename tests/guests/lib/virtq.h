/* SPDX-License-Identifier: MIT */
/*
 * Driver side of a split virtqueue (virtio 1.2 section 2.7), polled, for tiny
 * guests. Rings live in guest memory the caller provides (3 pages).
 */
#ifndef GUEST_VIRTQ_H
#define GUEST_VIRTQ_H

#include <stdbool.h>
#include <stdint.h>

#define VQ_DESC_F_NEXT 1
#define VQ_DESC_F_WRITE 2
#define VQ_AVAIL_F_NO_INTERRUPT 1
#define VQ_USED_F_NO_NOTIFY 1

struct vq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vq_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* num entries, then used_event */
};

struct vq_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vq_used {
	uint16_t flags;
	uint16_t idx;
	struct vq_used_elem ring[]; /* num entries, then avail_event */
};

struct vq {
	uint16_t index; /* queue index on the device */
	uint16_t num;
	struct vq_desc *desc;
	volatile struct vq_avail *avail;
	volatile struct vq_used *used;
	uint16_t avail_idx; /* next avail slot (shadow of avail->idx) */
	uint16_t kicked_idx; /* avail idx at the last notification decision */
	uint16_t last_used;
	bool event_idx;
	uint64_t kicks; /* QueueNotify writes */
};

/* vq_setup() - program queue @index with @num entries, rings in @area (3 pages). */
int vq_setup(struct vq *q, uint16_t index, uint16_t num, void *area, bool event_idx);

/* vq_push() - make descriptor chain @head available (not yet visible: vq_publish()). */
void vq_push(struct vq *q, uint16_t head);

/* vq_publish() - publish pushed entries, notify the device if it wants it. */
void vq_publish(struct vq *q);

/* vq_pop() - next used element; false when none. */
bool vq_pop(struct vq *q, uint32_t *id, uint32_t *len);

/* vq_want_interrupts() - ask for an interrupt at the next used entry (event idx or flags). */
void vq_want_interrupts(struct vq *q);

#endif /* GUEST_VIRTQ_H */
