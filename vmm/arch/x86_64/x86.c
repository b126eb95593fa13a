// SPDX-License-Identifier: MIT
/*
 * x86-64 side of the arch interface (src/arch.h): in-kernel irqchip and PIT,
 * legacy ports (COM1, i8042 reset), boot image dispatch, and the answer to
 * KVM emulation failures.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "acpi.h"
#include "arch.h"
#include "debug_dev.h"
#include "serial.h"
#include "skiff/tiny_guest_abi.h"
#include "x86.h"

#define TSS_ADDR 0xfffbd000ul /* 3 pages below the BIOS, as KVM documents */
#define IDENTITY_MAP_ADDR 0xfffbc000ull
#define X86_VEC_BP 3
#define X86_VEC_MF 16
#define X87_FSW_ES 0x80 /* error summary: an unmasked x87 exception is pending */

/*
 * GSI routing of a PC: GSI n goes to IOAPIC pin n and, for n < 16, to the
 * 8259 pair, except that GSI 0 (where KVM's PIT fires) goes to IOAPIC pin 2
 * and GSI 2 (the cascade) nowhere. This is the "ISA IRQ 0 -> GSI 2"
 * override that the MADT (acpi.c) and the MP table (mptable.c) describe;
 * KVM's default table would put the PIT on pin 0 instead.
 */
static int set_gsi_routing(struct vm *vm)
{
	enum { NR_PIC = 15, NR_IOAPIC = X86_IOAPIC_PINS - 1 }; /* both without GSI 2 */
	struct kvm_irq_routing_entry *e;
	struct kvm_irq_routing *r;
	unsigned int gsi, n = 0;
	int ret = 0;

	r = calloc(1, sizeof(*r) + (NR_PIC + NR_IOAPIC) * sizeof(*e));
	if (!r)
		return -ENOMEM;
	e = r->entries;
	for (gsi = 0; gsi < X86_IOAPIC_PINS; gsi++) {
		if (gsi == 2)
			continue;
		e[n].gsi = gsi;
		e[n].type = KVM_IRQ_ROUTING_IRQCHIP;
		e[n].u.irqchip.irqchip = KVM_IRQCHIP_IOAPIC;
		e[n].u.irqchip.pin = gsi ? gsi : 2;
		n++;
		if (gsi >= 16)
			continue;
		e[n].gsi = gsi;
		e[n].type = KVM_IRQ_ROUTING_IRQCHIP;
		e[n].u.irqchip.irqchip = gsi < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE;
		e[n].u.irqchip.pin = gsi & 7;
		n++;
	}
	r->nr = n;
	if (n != NR_PIC + NR_IOAPIC)
		ret = -EINVAL;
	else if (ioctl(vm->vm_fd, KVM_SET_GSI_ROUTING, r) < 0)
		ret = -errno;
	free(r);
	return ret;
}

int arch_vm_init(struct vm *vm)
{
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	uint64_t idmap = IDENTITY_MAP_ADDR;
	int err;

	/* Needed by VMX for real mode; other implementations ignore or refuse it. */
	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, TSS_ADDR) < 0 && errno != ENOTTY && errno != EINVAL)
		return -errno;
	if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap) < 0 && errno != ENOTTY &&
	    errno != EINVAL)
		return -errno;
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		return -errno;
	err = set_gsi_routing(vm);
	if (err)
		return err;
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0)
		return -errno;
	return 0;
}

/* i8042 keyboard controller: only what Linux uses to reset (command 0xfe on port 0x64). */
static void i8042_pio(void *opaque, uint64_t off, uint8_t *data, uint32_t len, bool is_write)
{
	struct vm *vm = opaque;

	if (!is_write) {
		memset(data, 0, len); /* status: output and input buffers empty */
		return;
	}
	if (off == 4 && data[0] == 0xfe)
		vm_end(vm, SKIFF_EXIT_REBOOT, 0, -1, 0, "guest reset through the i8042");
}

int arch_add_legacy_devices(struct vm *vm)
{
	int err;

	err = serial_create(vm, X86_IRQ_COM1, vm->console_in, &vm->serial);
	if (err)
		return err;
	err = serial_add_pio(vm->serial, 0x3f8);
	if (err)
		return err;
	err = bus_add(&vm->pio_bus, 0x60, 5, i8042_pio, vm);
	if (err)
		return err;
	err = x86_acpi_pm_add(vm);
	if (err)
		return err;
	return debug_dev_add(vm);
}

unsigned int arch_virtio_mmio_irq(void)
{
	return X86_IRQ_VIRTIO;
}

uint64_t arch_virtio_mmio_gpa(void)
{
	return SKIFF_VIRTIO_MMIO_GPA;
}

uint64_t arch_ram_base(void)
{
	return 0;
}

/*
 * no_timer_check: Linux's boot check that the 8254 timer ticks through the
 * IO-APIC (check_timer(), arch/x86/kernel/apic/io_apic.c) counts ticks
 * against a busy-wait; a vCPU that loses its host CPU during that wait (a
 * loaded host; an emulated one always) fails it, and the guest panics with
 * "MP-BIOS bug: 8254 timer not connected to IO-APIC". KVM's in-kernel PIT
 * and IO-APIC are wired as the check wants, so it only adds that failure.
 */
const char *arch_linux_cmdline(void)
{
	return "console=ttyS0 reboot=k panic=-1 no_timer_check";
}

/* The DSDT describes the device; a kernel told acpi=off needs the command line. */
bool arch_virtio_mmio_on_cmdline(void)
{
	return true;
}

int arch_vcpus_created(struct vm *vm)
{
	return 0;
}

bool arch_handle_exit(struct vcpu *vcpu, char *msg, size_t msg_len)
{
	snprintf(msg, msg_len, "unhandled KVM exit reason %u", vcpu->run->exit_reason);
	return false;
}

int arch_probe_kernel(const uint8_t *head, size_t len, int kind)
{
	if (kind == SKIFF_KERNEL_TINY)
		return elf_probe_x86(head, len);
	return x86_linux_probe(head, len);
}

int arch_load_guest(struct vm *vm, const uint8_t *kernel, size_t kernel_len, const uint8_t *initrd,
		    size_t initrd_len, const char *cmdline)
{
	const struct x86_acpi_virtio_mmio vsock = {
		.base = SKIFF_VIRTIO_MMIO_GPA,
		.size = SKIFF_VIRTIO_MMIO_SIZE,
		.gsi = X86_IRQ_VIRTIO, /* arch_virtio_mmio_irq() */
	};
	uint64_t rsdp;
	uint8_t *zp_rsdp;
	unsigned int i;
	int err;

	if (vm->cfg.kernel_kind == SKIFF_KERNEL_TINY)
		return x86_tiny_load(&vm->mem, kernel, kernel_len, cmdline, &vm->boot);
	err = x86_linux_load(&vm->mem, kernel, kernel_len, initrd, initrd_len, cmdline, &vm->boot);
	if (err)
		return err;
	/* Both: the MP table for kernels without ACPI (or acpi=off), ACPI for the rest. */
	err = x86_write_mptable(&vm->mem, vm->cfg.nr_vcpus);
	if (err)
		return err;
	err = x86_write_acpi(&vm->mem, vm->cfg.nr_vcpus, &vsock, vm->cfg.has_vsock ? 1 : 0, &rsdp);
	if (err)
		return err;
	zp_rsdp = guest_mem_ptr(&vm->mem, X86_ZERO_PAGE_GPA + ZP_ACPI_RSDP_ADDR, 8);
	if (!zp_rsdp)
		return -EFAULT;
	for (i = 0; i < 8; i++)
		zp_rsdp[i] = (uint8_t)(rsdp >> (8 * i));
	return 0;
}

/* Instruction bytes at the guest's rip, through its page tables. */
static int fetch_insn(struct vcpu *vcpu, uint64_t rip, uint8_t *buf, size_t len)
{
	struct kvm_translation tr = { .linear_address = rip };
	const uint8_t *p;

	if (ioctl(vcpu->fd, KVM_TRANSLATE, &tr) < 0 || !tr.valid)
		return -EFAULT;
	p = guest_mem_ptr(&vcpu->vm->mem, tr.physical_address, len);
	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

/*
 * Step over an instruction of @len bytes that KVM could not emulate and,
 * for @vector >= 0, deliver that exception (no error code) as if the
 * instruction had raised it: int3 -> #BP (3), after the instruction;
 * fwait with a pending x87 exception -> #MF (16). #MF is a fault, so its
 * RIP stays on the fwait (@len 0): the handler clears the exception and the
 * fwait is executed again.
 */
static bool step_and_inject(struct vcpu *vcpu, struct kvm_regs *regs, unsigned int len, int vector)
{
	struct kvm_vcpu_events ev;

	regs->rip += len;
	if (len && ioctl(vcpu->fd, KVM_SET_REGS, regs) < 0)
		return false;
	if (vector < 0)
		return true;
	if (ioctl(vcpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
		return false;
	ev.exception.injected = 1;
	ev.exception.nr = (uint8_t)vector;
	ev.exception.has_error_code = 0;
	ev.exception.error_code = 0;
	ev.flags = 0;
	return ioctl(vcpu->fd, KVM_SET_VCPU_EVENTS, &ev) == 0;
}

/*
 * fwait (0x9b; Linux runs it in fpu__drop() on every task exit): it only
 * waits for the x87 unit and reports a pending unmasked x87 exception. The
 * x87 state is whatever KVM_GET_FPU says: FSW.ES (bit 7) set means an
 * unmasked exception is pending, which fwait reports as #MF (Intel SDM
 * vol. 2, FWAIT; vol. 1, 8.5 "x87 FPU exception handling"); otherwise it
 * is a no-op. CR0.NE=0 (legacy FERR# reporting) is not modelled: long-mode
 * Linux always sets NE.
 */
static bool answer_fwait(struct vcpu *vcpu, struct kvm_regs *regs)
{
	struct kvm_fpu fpu;

	if (ioctl(vcpu->fd, KVM_GET_FPU, &fpu) < 0)
		return false;
	if (fpu.fsw & X87_FSW_ES)
		return step_and_inject(vcpu, regs, 0, X86_VEC_MF);
	return step_and_inject(vcpu, regs, 1, -1);
}

bool arch_handle_internal_error(struct vcpu *vcpu, char *msg, size_t msg_len)
{
	struct kvm_run *run = vcpu->run;
	struct kvm_regs regs;
	uint8_t insn[15];
	size_t n = 0, i, off;

	if (run->internal.suberror != KVM_INTERNAL_ERROR_EMULATION) {
		snprintf(msg, msg_len, "KVM internal error, suberror %u", run->internal.suberror);
		return false;
	}
	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0) {
		snprintf(msg, msg_len, "emulation failure; KVM_GET_REGS: %s", strerror(errno));
		return false;
	}
	if (run->emulation_failure.ndata >= 3 &&
	    (run->emulation_failure.flags & KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES)) {
		n = run->emulation_failure.insn_size;
		if (n > sizeof(insn))
			n = sizeof(insn);
		memcpy(insn, run->emulation_failure.insn_bytes, n);
	}
	if (!n && !fetch_insn(vcpu, regs.rip, insn, sizeof(insn)))
		n = sizeof(insn);
	if (n && insn[0] == 0xcc && step_and_inject(vcpu, &regs, 1, X86_VEC_BP)) {
		atomic_fetch_add_explicit(&vcpu->vm->int3_injected, 1, memory_order_relaxed);
		return true;
	}
	if (n && insn[0] == 0x9b && answer_fwait(vcpu, &regs)) {
		atomic_fetch_add_explicit(&vcpu->vm->fwait_handled, 1, memory_order_relaxed);
		return true;
	}

	off = (size_t)snprintf(msg, msg_len, "emulation failure at rip 0x%llx, instruction bytes:",
			       (unsigned long long)regs.rip);
	for (i = 0; i < n && off < msg_len; i++)
		off += (size_t)snprintf(msg + off, msg_len - off, " %02x", insn[i]);
	if (!n && off < msg_len)
		snprintf(msg + off, msg_len - off, " (unreadable)");
	return false;
}

void arch_describe_vcpu(struct vcpu *vcpu, char *buf, size_t len)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;

	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0 ||
	    ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0) {
		snprintf(buf, len, "registers unavailable");
		return;
	}
	snprintf(buf, len, "rip=0x%llx rsp=0x%llx cs=0x%x cr0=0x%llx cr2=0x%llx cr3=0x%llx",
		 (unsigned long long)regs.rip, (unsigned long long)regs.rsp, sregs.cs.selector,
		 (unsigned long long)sregs.cr0, (unsigned long long)sregs.cr2,
		 (unsigned long long)sregs.cr3);
}
