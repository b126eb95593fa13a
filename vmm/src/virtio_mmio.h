/* SPDX-License-Identifier: MIT */
/*
 * virtio-mmio (version 2, virtio 1.2 section 4.2) transport for the vsock
 * device model: registers on the MMIO bus, QueueNotify through ioeventfd,
 * interrupts through irqfd.
 */
#ifndef SKIFF_VIRTIO_MMIO_H
#define SKIFF_VIRTIO_MMIO_H

#include <stdbool.h>
#include <stdint.h>

#include "libskiff.h"

/* Register offsets in the 4 KiB window, virtio 1.2 table 4.1. */
#define VMMIO_MAGIC 0x000
#define VMMIO_VERSION 0x004
#define VMMIO_DEVICE_ID 0x008
#define VMMIO_VENDOR_ID 0x00c
#define VMMIO_DEV_FEATURES 0x010
#define VMMIO_DEV_FEATURES_SEL 0x014
#define VMMIO_DRV_FEATURES 0x020
#define VMMIO_DRV_FEATURES_SEL 0x024
#define VMMIO_QUEUE_SEL 0x030
#define VMMIO_QUEUE_NUM_MAX 0x034
#define VMMIO_QUEUE_NUM 0x038
#define VMMIO_QUEUE_READY 0x044
#define VMMIO_QUEUE_NOTIFY 0x050
#define VMMIO_INT_STATUS 0x060
#define VMMIO_INT_ACK 0x064
#define VMMIO_STATUS 0x070
#define VMMIO_QUEUE_DESC_LO 0x080
#define VMMIO_QUEUE_DESC_HI 0x084
#define VMMIO_QUEUE_DRIVER_LO 0x090
#define VMMIO_QUEUE_DRIVER_HI 0x094
#define VMMIO_QUEUE_DEVICE_LO 0x0a0
#define VMMIO_QUEUE_DEVICE_HI 0x0a4
#define VMMIO_SHM_SEL 0x0ac
#define VMMIO_SHM_LEN_LO 0x0b0
#define VMMIO_SHM_LEN_HI 0x0b4
#define VMMIO_SHM_BASE_LO 0x0b8
#define VMMIO_SHM_BASE_HI 0x0bc
#define VMMIO_CONFIG_GEN 0x0fc
#define VMMIO_CONFIG 0x100

#define VMMIO_MAGIC_VALUE 0x74726976 /* "virt" */

struct vm;
struct virtio_mmio;

/*
 * virtio_mmio_vsock_create() - create the vsock device (vsock_dev_create()),
 * give it all guest RAM, claim [base, base + 4 KiB) on the MMIO bus, register
 * one ioeventfd per queue (datamatch on the queue index) and an irqfd on @irq.
 * Needs the in-kernel irqchip and the memory slot in place. With vm->vm_fd < 0
 * (no KVM VM: the virtio-mmio fuzzer) the eventfds are created but not wired
 * to KVM; whoever drives the bus reads them.
 * Return: 0; -ENOTSUP without the device library; -errno from the device,
 * eventfd(2) or the KVM ioctls.
 */
int virtio_mmio_vsock_create(struct vm *vm, uint64_t base, unsigned int irq,
			     struct virtio_mmio **out);

/* virtio_mmio_destroy() - unregister, reset and destroy the device, close fds. NULL: no-op. */
void virtio_mmio_destroy(struct virtio_mmio *vm_dev);

/*
 * virtio_mmio_started() - whether the device's threads run: DRIVER_OK started
 * them (vsock_dev_start()) and no reset has stopped them since.
 */
bool virtio_mmio_started(struct virtio_mmio *vm_dev);

/* virtio_mmio_counters() - transport and device counters into @out (vsock_* fields). */
void virtio_mmio_counters(struct virtio_mmio *vm_dev, struct skiff_counters *out);

#endif /* SKIFF_VIRTIO_MMIO_H */
