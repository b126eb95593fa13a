// SPDX-License-Identifier: MIT
/* Polled split virtqueue, driver side (see virtq.h). */
#include "virtq.h"

#include "guest.h"
#include "virtio_mmio_regs.h"

static void reg_write(uint32_t off, uint32_t v)
{
	mmio_write32(SKIFF_VIRTIO_MMIO_GPA + off, v);
}

static uint32_t reg_read(uint32_t off)
{
	return mmio_read32(SKIFF_VIRTIO_MMIO_GPA + off);
}

int vq_setup(struct vq *q, uint16_t index, uint16_t num, void *area, bool event_idx)
{
	uint64_t base = (uint64_t)area;

	reg_write(VM_QUEUE_SEL, index);
	if (reg_read(VM_QUEUE_READY))
		return -1;
	if (reg_read(VM_QUEUE_NUM_MAX) < num)
		return -2;
	memset(area, 0, 3 * 4096);
	q->index = index;
	q->num = num;
	q->desc = (struct vq_desc *)base;
	q->avail = (volatile struct vq_avail *)(base + 4096);
	q->used = (volatile struct vq_used *)(base + 8192);
	q->avail_idx = q->kicked_idx = q->last_used = 0;
	q->event_idx = event_idx;
	q->kicks = 0;
	reg_write(VM_QUEUE_NUM, num);
	reg_write(VM_QUEUE_DESC_LO, (uint32_t)base);
	reg_write(VM_QUEUE_DESC_HI, (uint32_t)(base >> 32));
	reg_write(VM_QUEUE_DRIVER_LO, (uint32_t)(base + 4096));
	reg_write(VM_QUEUE_DRIVER_HI, (uint32_t)((base + 4096) >> 32));
	reg_write(VM_QUEUE_DEVICE_LO, (uint32_t)(base + 8192));
	reg_write(VM_QUEUE_DEVICE_HI, (uint32_t)((base + 8192) >> 32));
	reg_write(VM_QUEUE_READY, 1);
	return reg_read(VM_QUEUE_READY) == 1 ? 0 : -3;
}

void vq_push(struct vq *q, uint16_t head)
{
	q->avail->ring[q->avail_idx & (q->num - 1)] = head;
	q->avail_idx++;
}

/* virtio 1.2 2.7.10: notify when the new entries crossed avail_event. */
static bool need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

void vq_publish(struct vq *q)
{
	uint16_t old = q->kicked_idx, new_idx = q->avail_idx;
	bool kick;

	if (old == new_idx)
		return;
	barrier(); /* ring entries before idx (x86 keeps store order) */
	q->avail->idx = new_idx;
	mb(); /* idx store before the load of the device's suppression state */
	if (q->event_idx) {
		uint16_t ev = *(volatile uint16_t *)&q->used->ring[q->num];

		kick = need_event(ev, new_idx, old);
	} else {
		kick = !(q->used->flags & VQ_USED_F_NO_NOTIFY);
	}
	q->kicked_idx = new_idx;
	if (kick) {
		reg_write(VM_QUEUE_NOTIFY, q->index);
		q->kicks++;
	}
}

bool vq_pop(struct vq *q, uint32_t *id, uint32_t *len)
{
	volatile struct vq_used_elem *e;

	if (q->used->idx == q->last_used)
		return false;
	barrier(); /* idx before the element (x86 keeps load order) */
	e = &q->used->ring[q->last_used & (q->num - 1)];
	*id = e->id;
	*len = e->len;
	q->last_used++;
	return true;
}

void vq_want_interrupts(struct vq *q)
{
	if (q->event_idx)
		*(volatile uint16_t *)&q->avail->ring[q->num] = q->last_used;
	else
		q->avail->flags = 0;
}
