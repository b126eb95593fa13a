/* SPDX-License-Identifier: MIT */
/*
 * What the generic VMM needs from an architecture. x86-64 implements it in
 * arch/x86_64/, arm64 in arch/aarch64/ (device tree, 16550 on MMIO, GICv3);
 * CMake compiles the one of the target.
 * All calls return 0 or -errno and run on the control thread during
 * skiff_vm_start(), except arch_handle_internal_error() (vCPU thread).
 */
#ifndef SKIFF_ARCH_H
#define SKIFF_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm;
struct vcpu;

/* arch_vm_init() - interrupt controllers, timers, arch quirks; before RAM is added. */
int arch_vm_init(struct vm *vm);

/*
 * arch_add_legacy_devices() - platform devices on the buses: the UART
 * (x86: 8250 at port 0x3f8, IRQ 4), reset/debug-exit ports.
 */
int arch_add_legacy_devices(struct vm *vm);

/*
 * The interrupt of the virtio-mmio vsock device as KVM_IRQFD's gsi: x86 an
 * IOAPIC input; arm64 an SPI number (INTID - 32, KVM's default routing).
 */
unsigned int arch_virtio_mmio_irq(void);

/* The guest physical address of the virtio-mmio vsock device's registers. */
uint64_t arch_virtio_mmio_gpa(void);

/* The guest physical address of RAM's first byte (x86 0, arm64 2 GiB). */
uint64_t arch_ram_base(void);

/*
 * arch_linux_cmdline() - the command line a Linux guest gets when the user
 * gives none; arch_virtio_mmio_on_cmdline() - whether the vsock device may
 * be appended as "virtio_mmio.device=" for a kernel that will not find it in
 * the firmware tables (x86: with acpi=off; arm64 never: the device tree
 * always describes it).
 */
const char *arch_linux_cmdline(void);
bool arch_virtio_mmio_on_cmdline(void);

/* arch_probe_kernel() - -ENOEXEC unless the header bytes look like a kernel of @kind. */
int arch_probe_kernel(const uint8_t *head, size_t len, int kind);

/*
 * arch_load_guest() - put the kernel (or tiny guest), initrd, command line and
 * platform tables (boot_params/e820, MP table, page tables, GDT) in RAM and
 * fill vm->boot. @cmdline is the final command line.
 */
int arch_load_guest(struct vm *vm, const uint8_t *kernel, size_t kernel_len, const uint8_t *initrd,
		    size_t initrd_len, const char *cmdline);

/*
 * arch_vcpu_init() - x86: CPUID, MSRs, LAPIC, FPU; arm64: KVM_ARM_VCPU_INIT
 * (secondaries powered off). For vCPU 0 the boot registers.
 */
int arch_vcpu_init(struct vm *vm, struct vcpu *vcpu);

/*
 * arch_vcpus_created() - after every vCPU exists and before any runs (arm64:
 * the GIC's KVM_DEV_ARM_VGIC_CTRL_INIT, which sizes the redistributors by
 * the vCPUs). Return: 0 or -errno.
 */
int arch_vcpus_created(struct vm *vm);

/*
 * arch_handle_internal_error() - KVM_EXIT_INTERNAL_ERROR on @vcpu. Return:
 * true when handled and the vCPU may run on (x86: int3 emulation failure,
 * answered by injecting #BP); false after writing a message to @msg.
 */
bool arch_handle_internal_error(struct vcpu *vcpu, char *msg, size_t msg_len);

/*
 * arch_handle_exit() - an exit reason the generic loop does not know
 * (arm64: KVM_EXIT_ARM_NISV). Return: true when handled and the vCPU may
 * run on; false after writing a message to @msg (the VM ends, guest error).
 */
bool arch_handle_exit(struct vcpu *vcpu, char *msg, size_t msg_len);

/* arch_describe_vcpu() - "rip=0x... cs=..." (arm64: "pc=0x... pstate=...") for messages. */
void arch_describe_vcpu(struct vcpu *vcpu, char *buf, size_t len);

#endif /* SKIFF_ARCH_H */
