/* SPDX-License-Identifier: MIT */
/*
 * What the generic VMM needs from an architecture. x86-64 implements it in
 * arch/x86_64/; aarch64 (device tree, PL011, GIC) will add its own.
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

/* The IRQ (IOAPIC input) of the virtio-mmio vsock device. */
unsigned int arch_virtio_mmio_irq(void);

/* arch_probe_kernel() - -ENOEXEC unless the header bytes look like a kernel of @kind. */
int arch_probe_kernel(const uint8_t *head, size_t len, int kind);

/*
 * arch_load_guest() - put the kernel (or tiny guest), initrd, command line and
 * platform tables (boot_params/e820, MP table, page tables, GDT) in RAM and
 * fill vm->boot. @cmdline is the final command line.
 */
int arch_load_guest(struct vm *vm, const uint8_t *kernel, size_t kernel_len, const uint8_t *initrd,
		    size_t initrd_len, const char *cmdline);

/* arch_vcpu_init() - CPUID, MSRs, LAPIC, FPU; and for vCPU 0 the boot registers. */
int arch_vcpu_init(struct vm *vm, struct vcpu *vcpu);

/*
 * arch_handle_internal_error() - KVM_EXIT_INTERNAL_ERROR on @vcpu. Return:
 * true when handled and the vCPU may run on (x86: int3 emulation failure,
 * answered by injecting #BP); false after writing a message to @msg.
 */
bool arch_handle_internal_error(struct vcpu *vcpu, char *msg, size_t msg_len);

/* arch_describe_vcpu() - "rip=0x... cs=..." for messages. */
void arch_describe_vcpu(struct vcpu *vcpu, char *buf, size_t len);

#endif /* SKIFF_ARCH_H */
