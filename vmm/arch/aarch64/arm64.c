// SPDX-License-Identifier: MIT
/*
 * arm64 side of the arch interface (src/arch.h): the GICv3 and the
 * non-decodable-abort capability at VM creation, the 16550 UART on MMIO,
 * the Image loader with its device tree, and the exits only arm64 has.
 * The memory map is arm64_layout.h's (vmm/README.md, "arm64").
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch.h"
#include "arm64_fdt.h"
#include "arm64_image.h"
#include "arm64_kvm.h"
#include "serial.h"

/*
 * A guest load/store that KVM cannot decode (no valid syndrome: load/store
 * pair, writeback, SIMD) to an address outside RAM comes to user space as
 * KVM_EXIT_ARM_NISV instead of failing KVM_RUN with ENOSYS (api.rst,
 * KVM_CAP_ARM_NISV_TO_USER), so skiff can name the address. Kernels before
 * 5.5 lack it: they keep the ENOSYS.
 */
static void enable_nisv(struct vm *vm)
{
	struct kvm_enable_cap cap = { .cap = KVM_CAP_ARM_NISV_TO_USER };

	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_ARM_NISV_TO_USER) > 0)
		ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap);
}

int arch_vm_init(struct vm *vm)
{
	enable_nisv(vm);
	return arm64_vgic_create(vm);
}

int arch_add_legacy_devices(struct vm *vm)
{
	int err;

	err = serial_create(vm, arm64_spi_irq_line(ARM64_UART_SPI), vm->console_in, &vm->serial);
	if (err)
		return err;
	return serial_add_mmio(vm->serial, ARM64_UART_BASE);
}

unsigned int arch_virtio_mmio_irq(void)
{
	return ARM64_VIRTIO_MMIO_SPI0; /* slot 0; KVM's default routing: gsi n = SPI n */
}

uint64_t arch_virtio_mmio_gpa(void)
{
	return ARM64_VIRTIO_MMIO_BASE;
}

uint64_t arch_ram_base(void)
{
	return ARM64_RAM_BASE;
}

/* The 8250 driver finds the UART through the device tree; earlycon through stdout-path. */
const char *arch_linux_cmdline(void)
{
	return "console=ttyS0 earlycon panic=-1";
}

bool arch_virtio_mmio_on_cmdline(void)
{
	return false;
}

int arch_probe_kernel(const uint8_t *head, size_t len, int kind)
{
	struct arm64_image img;

	if (kind == SKIFF_KERNEL_TINY)
		return -ENOEXEC; /* tiny guests are x86-64 CPL3 programs */
	return arm64_image_parse(head, len, &img, NULL, 0);
}

int arch_load_guest(struct vm *vm, const uint8_t *kernel, size_t kernel_len, const uint8_t *initrd,
		    size_t initrd_len, const char *cmdline)
{
	const struct arm64_ram ram = {
		.hva = vm->mem.hva,
		.base = vm->mem.base,
		.size = vm->mem.size,
	};
	const struct arm64_fdt_virtio vsock = {
		.base = ARM64_VIRTIO_MMIO_BASE,
		.size = ARM64_VIRTIO_MMIO_SIZE,
		.spi = ARM64_VIRTIO_MMIO_SPI0,
	};
	struct arm64_boot_layout lay;
	struct arm64_fdt_config cfg;
	char msg[sizeof(vm->exit.message)];
	size_t dtb_len;
	void *dtb;
	int err;

	err = arm64_boot_load(&ram, kernel, kernel_len, initrd, initrd_len, ARM64_DTB_SLOT, &lay,
			      msg, sizeof(msg));
	if (err)
		goto fail;
	arm64_fdt_config_platform(&cfg, vm->cfg.nr_vcpus);
	cfg.ram_base = vm->mem.base;
	cfg.ram_size = vm->mem.size;
	cfg.bootargs = cmdline;
	if (initrd_len) {
		cfg.has_initrd = true;
		cfg.initrd_start = lay.initrd_gpa;
		cfg.initrd_end = lay.initrd_end;
	}
	if (vm->cfg.has_vsock) {
		cfg.virtio = &vsock;
		cfg.nr_virtio = 1;
	}
	dtb = guest_mem_ptr(&vm->mem, lay.dtb_gpa, lay.dtb_max);
	if (!dtb) {
		err = -EFAULT; /* arm64_boot_plan() put the slot inside RAM */
		snprintf(msg, sizeof(msg), "DTB slot at 0x%llx outside RAM",
			 (unsigned long long)lay.dtb_gpa);
		goto fail;
	}
	err = arm64_fdt_build(&cfg, dtb, lay.dtb_max, &dtb_len, msg, sizeof(msg));
	if (err == -ENOSPC)
		err = -E2BIG; /* a configuration the map cannot hold: status 64 */
	if (err)
		goto fail;
	vm->boot.entry = lay.kernel_gpa;
	vm->boot.x0 = lay.dtb_gpa;
	return 0;
fail:
	/* The first vm_end() wins: the loader's message, with its remedy, is the VM's. */
	vm_end(vm, SKIFF_EXIT_VMM_ERROR, 0, -1, err, "%s", msg);
	return err;
}

int arch_vcpus_created(struct vm *vm)
{
	return arm64_vgic_init(vm);
}

bool arch_handle_internal_error(struct vcpu *vcpu, char *msg, size_t msg_len)
{
	snprintf(msg, msg_len, "KVM internal error, suberror %u", vcpu->run->internal.suberror);
	return false;
}

bool arch_handle_exit(struct vcpu *vcpu, char *msg, size_t msg_len)
{
	struct kvm_run *run = vcpu->run;

	if (run->exit_reason != KVM_EXIT_ARM_NISV) {
		snprintf(msg, msg_len, "unhandled KVM exit reason %u", run->exit_reason);
		return false;
	}
	snprintf(msg, msg_len,
		 "guest access to 0x%llx outside RAM that KVM cannot decode (ESR ISS 0x%llx): "
		 "devices take single loads and stores of 1-8 bytes, no pairs or writeback",
		 (unsigned long long)run->arm_nisv.fault_ipa,
		 (unsigned long long)run->arm_nisv.esr_iss);
	return false;
}
