/* SPDX-License-Identifier: MIT */
/* virtio-mmio version 2 register offsets (virtio 1.2 section 4.2.2) and status bits. */
#ifndef GUEST_VIRTIO_MMIO_REGS_H
#define GUEST_VIRTIO_MMIO_REGS_H

#define VM_MAGIC 0x000
#define VM_VERSION 0x004
#define VM_DEVICE_ID 0x008
#define VM_DEV_FEATURES 0x010
#define VM_DEV_FEATURES_SEL 0x014
#define VM_DRV_FEATURES 0x020
#define VM_DRV_FEATURES_SEL 0x024
#define VM_QUEUE_SEL 0x030
#define VM_QUEUE_NUM_MAX 0x034
#define VM_QUEUE_NUM 0x038
#define VM_QUEUE_READY 0x044
#define VM_QUEUE_NOTIFY 0x050
#define VM_INT_STATUS 0x060
#define VM_INT_ACK 0x064
#define VM_STATUS 0x070
#define VM_QUEUE_DESC_LO 0x080
#define VM_QUEUE_DESC_HI 0x084
#define VM_QUEUE_DRIVER_LO 0x090
#define VM_QUEUE_DRIVER_HI 0x094
#define VM_QUEUE_DEVICE_LO 0x0a0
#define VM_QUEUE_DEVICE_HI 0x0a4
#define VM_CONFIG 0x100

#define VS_ACKNOWLEDGE 1
#define VS_DRIVER 2
#define VS_DRIVER_OK 4
#define VS_FEATURES_OK 8
#define VS_NEEDS_RESET 0x40
#define VS_FAILED 0x80

#endif /* GUEST_VIRTIO_MMIO_REGS_H */
