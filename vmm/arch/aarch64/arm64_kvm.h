/* SPDX-License-Identifier: MIT */
/*
 * arm64 KVM internals shared by the files of arch/aarch64 that make KVM calls
 * (arm64.c: the arch interface; arm64_vgic.c: the in-kernel GICv3;
 * arm64_vcpu.c: vCPU init and registers). Linux Documentation/virt/kvm/
 * api.rst and devices/arm-vgic-v3.rst.
 */
#ifndef SKIFF_ARM64_KVM_H
#define SKIFF_ARM64_KVM_H

#include <stdint.h>

#include "arm64_layout.h"
#include "vm.h"

/* INTIDs 0-31 are SGIs and PPIs; SPI n is INTID 32 + n. */
#define ARM64_GIC_NR_PRIVATE 32u
/*
 * Interrupts the distributor implements, private ones included (a multiple
 * of 32, at least 64): SPIs 0-95 hold the UART (SPI 1) and every
 * virtio-mmio slot (SPIs 16-47).
 */
#define ARM64_GIC_NR_IRQS 128u

/* The DTB's slot after kernel and initrd (booting.rst allows up to 2 MiB). */
#define ARM64_DTB_SLOT (64ull << 10)

/*
 * arm64_vgic_create() - KVM_CREATE_DEVICE(KVM_DEV_TYPE_ARM_VGIC_V3) with the
 * distributor at ARM64_GICD_BASE, the redistributor region at
 * ARM64_GICR_BASE and ARM64_GIC_NR_IRQS interrupts; the device fd goes to
 * vm->irqchip_fd. Before the vCPUs exist.
 * Return: 0; -ENODEV when the host has no GICv3 emulation (a GICv2-only
 * host); -errno of the ioctls.
 */
int arm64_vgic_create(struct vm *vm);

/*
 * arm64_vgic_init() - KVM_DEV_ARM_VGIC_CTRL_INIT, once every vCPU exists
 * (the redistributors are sized by them) and before any runs.
 * Return: 0; -errno of the ioctl.
 */
int arm64_vgic_init(struct vm *vm);

/*
 * arm64_spi_irq_line() - the KVM_IRQ_LINE "irq" value of SPI @spi (api.rst,
 * KVM_IRQ_LINE on arm64: type in bits 24-27, INTID in bits 0-15).
 */
unsigned int arm64_spi_irq_line(unsigned int spi);

#endif /* SKIFF_ARM64_KVM_H */
