// SPDX-License-Identifier: MIT
/*
 * arm64 vCPUs (Linux Documentation/virt/kvm/api.rst, KVM_ARM_VCPU_INIT and
 * KVM_SET_ONE_REG): the host's preferred target with PSCI 0.2 (KVM answers
 * the guest's PSCI calls, CPU_ON included, in the kernel), every vCPU but
 * the first powered off until the guest starts it with CPU_ON, and vCPU 0's
 * boot registers as Documentation/arm64/booting.rst asks: x0 = the DTB,
 * x1-x3 = 0, PC = the Image's first byte, EL1h with D, A, I, F masked (MMU
 * and caches are off after KVM's reset).
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arch.h"
#include "arm64_kvm.h"

/* A 64-bit core register (struct kvm_regs) as a KVM_{GET,SET}_ONE_REG id. */
#define CORE_REG(field) \
	(KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | KVM_REG_ARM_CORE_REG(field))

/* booting.rst: "PSTATE.DAIF must be masked"; EL1 with its own stack pointer. */
#define BOOT_PSTATE (PSR_MODE_EL1h | PSR_D_BIT | PSR_A_BIT | PSR_I_BIT | PSR_F_BIT)

static int set_reg(struct vcpu *vcpu, uint64_t id, uint64_t val)
{
	struct kvm_one_reg r = { .id = id, .addr = (uint64_t)(uintptr_t)&val };

	return ioctl(vcpu->fd, KVM_SET_ONE_REG, &r) < 0 ? -errno : 0;
}

static int get_reg(struct vcpu *vcpu, uint64_t id, uint64_t *val)
{
	struct kvm_one_reg r = { .id = id, .addr = (uint64_t)(uintptr_t)val };

	return ioctl(vcpu->fd, KVM_GET_ONE_REG, &r) < 0 ? -errno : 0;
}

static int set_boot_regs(struct vm *vm, struct vcpu *vcpu)
{
	int err = set_reg(vcpu, CORE_REG(regs.regs[0]), vm->boot.x0);
	unsigned int i;

	for (i = 1; !err && i < 4; i++)
		err = set_reg(vcpu, CORE_REG(regs.regs[i]), 0);
	if (!err)
		err = set_reg(vcpu, CORE_REG(regs.pstate), BOOT_PSTATE);
	if (!err)
		err = set_reg(vcpu, CORE_REG(regs.pc), vm->boot.entry);
	return err;
}

int arch_vcpu_init(struct vm *vm, struct vcpu *vcpu)
{
	struct kvm_vcpu_init init;
	int err;

	memset(&init, 0, sizeof(init));
	if (ioctl(vm->vm_fd, KVM_ARM_PREFERRED_TARGET, &init) < 0)
		return -errno;
	init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
	if (vcpu->id)
		init.features[0] |= 1u << KVM_ARM_VCPU_POWER_OFF;
	if (ioctl(vcpu->fd, KVM_ARM_VCPU_INIT, &init) < 0)
		return -errno;
	err = 0;
	if (vcpu->id == 0)
		err = set_boot_regs(vm, vcpu);
	return err;
}

void arch_describe_vcpu(struct vcpu *vcpu, char *buf, size_t len)
{
	uint64_t pc, pstate, sp;

	if (get_reg(vcpu, CORE_REG(regs.pc), &pc) ||
	    get_reg(vcpu, CORE_REG(regs.pstate), &pstate) || get_reg(vcpu, CORE_REG(sp_el1), &sp)) {
		snprintf(buf, len, "registers unavailable");
		return;
	}
	snprintf(buf, len, "pc=0x%llx pstate=0x%llx sp_el1=0x%llx", (unsigned long long)pc,
		 (unsigned long long)pstate, (unsigned long long)sp);
}
