// SPDX-License-Identifier: MIT
/*
 * vCPU threads: create the KVM vCPU, run KVM_RUN in a loop, hand exits to the
 * buses and end the VM on the exits that mean the guest is done
 * (Documentation/virt/kvm/api.rst, "kvm_run").
 */
#include <errno.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"
#include "skiff/sandbox.h"
#include "vm.h"

int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned int id)
{
	int size, err;

	vcpu->vm = vm;
	vcpu->id = id;
	vcpu->run = NULL;
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)id);
	if (vcpu->fd < 0)
		return -errno;
	size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (size < (int)sizeof(struct kvm_run)) {
		err = size < 0 ? -errno : -EINVAL;
		goto err_close;
	}
	vcpu->run = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED) {
		err = -errno;
		vcpu->run = NULL;
		goto err_close;
	}
	vcpu->run_size = (size_t)size;
	return 0;
err_close:
	close(vcpu->fd);
	vcpu->fd = -1;
	return err;
}

void vcpu_destroy(struct vcpu *vcpu)
{
	if (vcpu->run)
		munmap(vcpu->run, vcpu->run_size);
	if (vcpu->fd >= 0)
		close(vcpu->fd);
	vcpu->run = NULL;
	vcpu->fd = -1;
}

void vcpu_kick(struct vcpu *vcpu)
{
	if (!vcpu->run)
		return;
	__atomic_store_n(&vcpu->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (vcpu->thread_started)
		pthread_kill(vcpu->thread, SKIFF_KICK_SIGNAL);
}

static void handle_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;
	uint32_t i;

	for (i = 0; i < run->io.count; i++) {
		if (!bus_dispatch(&vcpu->vm->pio_bus, run->io.port, data, run->io.size, is_write) &&
		    !is_write)
			memset(data, 0xff, run->io.size); /* nothing there: floating bus */
		data += run->io.size;
	}
}

static void handle_mmio(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	uint32_t len = run->mmio.len;

	if (len > sizeof(run->mmio.data))
		return;
	if (!bus_dispatch(&vcpu->vm->mmio_bus, run->mmio.phys_addr, run->mmio.data, len,
			  run->mmio.is_write) &&
	    !run->mmio.is_write)
		memset(run->mmio.data, 0xff, len);
}

static void handle_system_event(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;

	switch (vcpu->run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN:
		vm_end(vm, SKIFF_EXIT_POWEROFF, 0, (int)vcpu->id, 0, "guest powered off");
		break;
	case KVM_SYSTEM_EVENT_RESET:
		vm_end(vm, SKIFF_EXIT_REBOOT, 0, (int)vcpu->id, 0, "guest reset");
		break;
	case KVM_SYSTEM_EVENT_CRASH:
		vm_end(vm, SKIFF_EXIT_PANIC, 0, (int)vcpu->id, 0, "guest crash event");
		break;
	default:
		vm_end(vm, SKIFF_EXIT_GUEST_ERROR, 0, (int)vcpu->id, 0,
		       "unknown KVM system event %u", vcpu->run->system_event.type);
	}
}

/* One exit. Return: false when the loop must stop. */
static bool handle_exit(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;
	struct kvm_run *run = vcpu->run;
	char where[160], msg[200];

	atomic_fetch_add_explicit(&vm->exits, 1, memory_order_relaxed);
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		atomic_fetch_add_explicit(&vm->exits_io, 1, memory_order_relaxed);
		handle_io(vcpu);
		return true;
	case KVM_EXIT_MMIO:
		atomic_fetch_add_explicit(&vm->exits_mmio, 1, memory_order_relaxed);
		handle_mmio(vcpu);
		return true;
	case KVM_EXIT_INTR:
		return true;
	case KVM_EXIT_HLT:
		/* Only seen without an in-kernel LAPIC: nothing can wake the vCPU. */
		vm_end(vm, SKIFF_EXIT_POWEROFF, 0, (int)vcpu->id, 0, "vCPU %u halted", vcpu->id);
		return false;
	case KVM_EXIT_SHUTDOWN:
		arch_describe_vcpu(vcpu, where, sizeof(where));
		vm_end(vm, SKIFF_EXIT_TRIPLE_FAULT, 0, (int)vcpu->id, 0,
		       "triple fault on vCPU %u (%s)", vcpu->id, where);
		return false;
	case KVM_EXIT_SYSTEM_EVENT:
		handle_system_event(vcpu);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		if (arch_handle_internal_error(vcpu, msg, sizeof(msg)))
			return true;
		vm_end(vm, SKIFF_EXIT_GUEST_ERROR, 0, (int)vcpu->id, 0, "vCPU %u: %s", vcpu->id,
		       msg);
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		vm_end(vm, SKIFF_EXIT_GUEST_ERROR, 0, (int)vcpu->id, 0,
		       "vCPU %u: VM entry failed, hardware reason 0x%llx", vcpu->id,
		       (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		return false;
	default:
		if (arch_handle_exit(vcpu, msg, sizeof(msg)))
			return true;
		arch_describe_vcpu(vcpu, where, sizeof(where));
		vm_end(vm, SKIFF_EXIT_GUEST_ERROR, 0, (int)vcpu->id, 0, "vCPU %u: %s (%s)",
		       vcpu->id, msg, where);
		return false;
	}
}

void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;
	struct vm *vm = vcpu->vm;
	sigset_t set;

	/* The kick signal is only ever delivered to this thread on purpose. */
	sigemptyset(&set);
	sigaddset(&set, SKIFF_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	if (vm->cfg.seccomp) {
		int err = sandbox_enter(SANDBOX_VCPU);

		if (err)
			vm_end(vm, SKIFF_EXIT_VMM_ERROR, 0, (int)vcpu->id, err,
			       "vCPU %u: cannot install its seccomp filter: %s", vcpu->id,
			       strerror(-err));
	}
	while (!atomic_load(&vm->ending)) {
		if (vcpu->id == 0 && !atomic_load_explicit(&vm->setup_ns, memory_order_relaxed))
			atomic_store(&vm->setup_ns, vm_now_ns() - vm->t_create_ns);
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			int err = errno;

			if (err == EINTR || err == EAGAIN) {
				atomic_fetch_add_explicit(&vm->exits_intr, 1, memory_order_relaxed);
				__atomic_store_n(&vcpu->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
				continue;
			}
			vm_end(vm, SKIFF_EXIT_VMM_ERROR, 0, (int)vcpu->id, -err,
			       "vCPU %u: KVM_RUN failed: %s", vcpu->id, strerror(err));
			break;
		}
		if (!handle_exit(vcpu))
			break;
	}

	pthread_mutex_lock(&vm->lock);
	vm->running_vcpus--;
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	return NULL;
}
