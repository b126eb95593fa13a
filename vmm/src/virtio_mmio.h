/* SPDX-License-Identifier: MIT */
/*
 * virtio-mmio (version 2, virtio 1.2 section 4.2) transport for the vsock
 * device model: registers on the MMIO bus, QueueNotify through ioeventfd,
 * interrupts through irqfd.
 */
#ifndef SKIFF_VIRTIO_MMIO_H
#define SKIFF_VIRTIO_MMIO_H

#include <stdint.h>

#include "libskiff.h"

struct vm;
struct virtio_mmio;

/*
 * virtio_mmio_vsock_create() - create the vsock device (vsock_dev_create()),
 * give it all guest RAM, claim [base, base + 4 KiB) on the MMIO bus, register
 * one ioeventfd per queue (datamatch on the queue index) and an irqfd on @irq.
 * Needs the in-kernel irqchip and the memory slot in place.
 * Return: 0; -ENOTSUP without the device library; -errno from the device,
 * eventfd(2) or the KVM ioctls.
 */
int virtio_mmio_vsock_create(struct vm *vm, uint64_t base, unsigned int irq,
			     struct virtio_mmio **out);

/* virtio_mmio_destroy() - unregister, reset and destroy the device, close fds. NULL: no-op. */
void virtio_mmio_destroy(struct virtio_mmio *vm_dev);

/* virtio_mmio_counters() - transport and device counters into @out (vsock_* fields). */
void virtio_mmio_counters(struct virtio_mmio *vm_dev, struct skiff_counters *out);

#endif /* SKIFF_VIRTIO_MMIO_H */
