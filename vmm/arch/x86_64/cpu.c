// SPDX-License-Identifier: MIT
/*
 * vCPU set-up: CPUID (what KVM supports, with this vCPU's APIC id), LAPIC
 * LINT0/LINT1 wiring, FPU defaults, and the registers vCPU 0 starts with:
 * 64-bit mode at CPL0 for Linux (Documentation/x86/boot.rst, 64-bit boot
 * protocol: paging on, flat __BOOT_CS/__BOOT_DS, rsi = zero page), or at
 * CPL3 for tiny guests (skiff/tiny_guest_abi.h).
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch.h"
#include "skiff/tiny_guest_abi.h"
#include "x86.h"

#define CR0_PE 0x1ull
#define CR0_MP 0x2ull
#define CR0_ET 0x10ull
#define CR0_NE 0x20ull
#define CR0_WP 0x10000ull
#define CR0_PG 0x80000000ull
#define CR4_PAE 0x20ull
#define CR4_OSFXSR 0x200ull
#define CR4_OSXMMEXCPT 0x400ull
#define EFER_LME 0x100ull
#define EFER_LMA 0x400ull

#define APIC_LVT_LINT0 0x350
#define APIC_LVT_LINT1 0x360
#define APIC_MODE_NMI 0x4
#define APIC_MODE_EXTINT 0x7

static int setup_cpuid(struct vm *vm, struct vcpu *vcpu)
{
	struct kvm_cpuid2 *cpuid;
	unsigned int nent = 128, i;
	int err = 0;

	for (;;) {
		cpuid = calloc(1, sizeof(*cpuid) + nent * sizeof(cpuid->entries[0]));
		if (!cpuid)
			return -ENOMEM;
		cpuid->nent = nent;
		if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid) == 0)
			break;
		err = -errno;
		free(cpuid);
		if (err != -E2BIG || nent >= 4096)
			return err;
		nent *= 2;
	}
	for (i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];

		switch (e->function) {
		case 1:
			e->ebx = (e->ebx & 0x00ffffffu) | (vcpu->id << 24);
			e->ecx |= 1u << 31; /* running under a hypervisor */
			break;
		case 0xb:
		case 0x1f:
			e->edx = vcpu->id; /* x2APIC id */
			break;
		default:
			break;
		}
	}
	err = ioctl(vcpu->fd, KVM_SET_CPUID2, cpuid) < 0 ? -errno : 0;
	free(cpuid);
	return err;
}

static void set_lvt(struct kvm_lapic_state *la, unsigned int reg, uint32_t mode)
{
	uint32_t v;

	memcpy(&v, la->regs + reg, 4);
	v = (v & ~0x700u) | (mode << 8);
	memcpy(la->regs + reg, &v, 4);
}

static int setup_lapic(struct vcpu *vcpu)
{
	struct kvm_lapic_state la;

	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &la) < 0)
		return -errno;
	set_lvt(&la, APIC_LVT_LINT0, APIC_MODE_EXTINT);
	set_lvt(&la, APIC_LVT_LINT1, APIC_MODE_NMI);
	return ioctl(vcpu->fd, KVM_SET_LAPIC, &la) < 0 ? -errno : 0;
}

static void flat_seg(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->dpl = sel & 3;
	s->s = 1;
	s->g = 1;
	s->l = code ? 1 : 0;
	s->db = code ? 0 : 1;
}

static int setup_boot_regs(struct vm *vm, struct vcpu *vcpu)
{
	const struct boot_info *b = &vm->boot;
	uint64_t gdt = b->user_mode ? SKIFF_TINY_GDT_GPA : X86_BOOT_GDT_GPA;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	uint16_t csel = b->user_mode ? X86_SEL_UCODE : X86_SEL_KCODE;
	uint16_t dsel = b->user_mode ? X86_SEL_UDATA : X86_SEL_KDATA;

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	flat_seg(&sregs.cs, csel, 0xb, true);
	flat_seg(&sregs.ds, dsel, 0x3, false);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	memset(&sregs.tr, 0, sizeof(sregs.tr));
	sregs.tr.base = gdt + X86_TSS_OFFSET;
	sregs.tr.limit = 0x67;
	sregs.tr.selector = X86_SEL_TSS;
	sregs.tr.type = 0xb; /* busy 64-bit TSS */
	sregs.tr.present = 1;
	sregs.gdt.base = gdt;
	sregs.gdt.limit = X86_GDT_ENTRIES * 8 - 1;
	sregs.idt.base = 0;
	sregs.idt.limit = 0; /* tiny guests: any exception ends in a triple fault */
	sregs.cr3 = b->user_mode ? SKIFF_TINY_PGTABLE_GPA : X86_BOOT_PGTABLE_GPA;
	sregs.cr4 = CR4_PAE | (b->user_mode ? CR4_OSFXSR | CR4_OSXMMEXCPT : 0);
	sregs.cr0 = CR0_PE | CR0_ET | CR0_PG | (b->user_mode ? CR0_MP | CR0_NE | CR0_WP : 0);
	sregs.efer = EFER_LME | EFER_LMA;
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;

	memset(&regs, 0, sizeof(regs));
	/* Tiny guests get IOPL 3 so that they may use in/out (port I/O exits) at CPL3. */
	regs.rflags = 0x2 | (b->user_mode ? 3u << 12 : 0);
	regs.rip = b->entry;
	regs.rsi = b->rsi;
	regs.rdi = b->rdi;
	regs.rsp = b->rsp;
	if (ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	return 0;
}

int arch_vcpu_init(struct vm *vm, struct vcpu *vcpu)
{
	struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };
	int err;

	err = setup_cpuid(vm, vcpu);
	if (!err)
		err = setup_lapic(vcpu);
	if (!err && ioctl(vcpu->fd, KVM_SET_FPU, &fpu) < 0)
		err = -errno;
	if (!err && vcpu->id == 0)
		err = setup_boot_regs(vm, vcpu);
	return err;
}
