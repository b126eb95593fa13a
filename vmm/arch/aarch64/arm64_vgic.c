// SPDX-License-Identifier: MIT
/*
 * The in-kernel GICv3 (Linux Documentation/virt/kvm/devices/arm-vgic-v3.rst):
 * created before the vCPUs, its regions placed by KVM_DEV_ARM_VGIC_GRP_ADDR,
 * its size by KVM_DEV_ARM_VGIC_GRP_NR_IRQS, initialized by
 * KVM_DEV_ARM_VGIC_CTRL_INIT once the vCPUs exist. KVM emulates the
 * distributor and redistributors in the kernel (no MMIO exits) and the arch
 * timer's PPIs go to it directly.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>

#include "arm64_kvm.h"

static int vgic_set(int fd, uint32_t group, uint64_t attr, const void *val)
{
	struct kvm_device_attr a = {
		.group = group,
		.attr = attr,
		.addr = (uint64_t)(uintptr_t)val,
	};

	return ioctl(fd, KVM_SET_DEVICE_ATTR, &a) < 0 ? -errno : 0;
}

int arm64_vgic_create(struct vm *vm)
{
	struct kvm_create_device dev = { .type = KVM_DEV_TYPE_ARM_VGIC_V3 };
	uint64_t gicd = ARM64_GICD_BASE, gicr = ARM64_GICR_BASE;
	uint32_t nr_irqs = ARM64_GIC_NR_IRQS;
	int err;

	if (ioctl(vm->vm_fd, KVM_CREATE_DEVICE, &dev) < 0)
		return errno == ENODEV || errno == ENXIO ? -ENODEV : -errno;
	vm->irqchip_fd = (int)dev.fd;
	err = vgic_set(vm->irqchip_fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST,
		       &gicd);
	if (!err)
		err = vgic_set(vm->irqchip_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
			       KVM_VGIC_V3_ADDR_TYPE_REDIST, &gicr);
	if (!err)
		err = vgic_set(vm->irqchip_fd, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &nr_irqs);
	return err;
}

int arm64_vgic_init(struct vm *vm)
{
	return vgic_set(vm->irqchip_fd, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT,
			NULL);
}

unsigned int arm64_spi_irq_line(unsigned int spi)
{
	return (KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT) | (ARM64_GIC_NR_PRIVATE + spi);
}
