/* SPDX-License-Identifier: MIT */
/*
 * The VM: everything one skiff VM owns. No globals: two VMs in one process
 * are two of these.
 */
#ifndef SKIFF_VM_H
#define SKIFF_VM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "libskiff.h"
#include "bus.h"
#include "mem.h"

struct kvm_run;
struct serial;
struct debug_dev;
struct virtio_mmio;

/* What skiff_vm_set_*() collected; fixed once the VM starts. */
struct vm_config {
	char *kernel_path;
	enum skiff_kernel_kind kernel_kind;
	char *initrd_path;
	char *cmdline;
	uint64_t mem_size;
	unsigned int nr_vcpus;
	enum skiff_console_kind console;
	char *console_path;
	int console_fd; /* SKIFF_CONSOLE_FD: caller's fd */
	bool has_vsock;
	uint64_t vsock_cid;
	char *vsock_uds;
	char *vsock_group; /* routing group, "" = default */
	unsigned int vsock_rx_threads;
	unsigned int vsock_ctl_thread; /* enum skiff_vsock_ctl_thread */
	bool vsock_mrg_rxbuf;
	bool vsock_dgram;
	uint32_t vsock_conn_buf;
	enum skiff_seccomp_mode seccomp;
};

struct vcpu {
	struct vm *vm;
	unsigned int id;
	int fd;
	struct kvm_run *run; /* mmap of the vCPU fd */
	size_t run_size;
	pthread_t thread;
	bool thread_started;
};

/* Where the boot code wants vCPU 0 to start (filled by arch_load_guest()). */
struct boot_info {
	uint64_t entry; /* x86 rip, arm64 PC */
	uint64_t rsi, rdi, rsp; /* x86 */
	uint64_t x0; /* arm64: the DTB's address */
	bool user_mode; /* tiny guest: CPL3 */
};

struct vm {
	int kvm_fd;
	int vm_fd;
	int irqchip_fd; /* arm64: the VGIC device; -1 on x86 (KVM_CREATE_IRQCHIP has none) */
	struct vm_config cfg;
	struct guest_mem mem;
	struct bus mmio_bus;
	struct bus pio_bus;
	struct vcpu *vcpus;
	unsigned int nr_vcpus;
	struct boot_info boot;
	int console_out; /* fd the console writes to, -1 for none */
	bool console_out_owned;
	int console_in; /* fd the UART reads, -1 for none (not owned) */

	struct serial *serial;
	struct debug_dev *debug;
	struct virtio_mmio *vmmio;

	uint64_t t_create_ns; /* CLOCK_MONOTONIC at skiff_vm_create() */
	_Atomic uint64_t setup_ns; /* create to first KVM_RUN, 0 until then */
	_Atomic uint64_t exits, exits_mmio, exits_io, exits_intr, int3_injected, fwait_handled;

	/* x86 ACPI PM1_EN (bits 0-15) and PM1_CNT (16-31), arch/x86_64/acpi_pm.c. */
	_Atomic uint32_t acpi_pm1;

	/* Report slots written by the debug device; bit i of report_set = slot i valid. */
	_Atomic uint64_t reports[16];
	_Atomic uint32_t report_set;
	_Atomic unsigned int report_key; /* slot selected by REPORT_KEY */

	/* Set once the VM must end; vCPU loops test it before every KVM_RUN. */
	atomic_bool ending;
	/* skiff_vm_stop() was called, maybe before or during skiff_vm_start() */
	atomic_bool stop_requested;
	/*
	 * skiff_vm_start() was called. Written by the thread that starts the
	 * VM, without the lock; skiff_vm_stop() reads it on any thread (the
	 * CLI's signal thread), so it is atomic.
	 */
	atomic_bool started;

	pthread_mutex_t lock; /* protects the fields below */
	pthread_cond_t cond; /* signalled when running_vcpus drops or the VM ends */
	bool joined;
	unsigned int running_vcpus;
	struct skiff_exit exit;
};

/*
 * vm_end() - record why the VM ends (the first caller wins) and kick every
 * vCPU out of KVM_RUN. Callable from any thread, including vCPU threads and
 * device threads. @vcpu: the vCPU that saw it, or -1. @fmt: detail for
 * skiff_exit.message.
 */
void vm_end(struct vm *vm, enum skiff_exit_reason reason, uint64_t code, int vcpu, int error,
	    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* vm_console_write() - raw bytes to the console output (serial, debug PUTC). */
void vm_console_write(struct vm *vm, const void *buf, size_t len);

/*
 * vm_irq_line() - set interrupt @irq to @level (KVM_IRQ_LINE): x86 an
 * IOAPIC/PIC input; arm64 KVM's encoding (type, vCPU, INTID: arm64_spi_irq_line()).
 * Return: 0 or -errno.
 */
int vm_irq_line(struct vm *vm, unsigned int irq, int level);

/* The signal that kicks a vCPU thread out of KVM_RUN. */
#define SKIFF_KICK_SIGNAL (SIGRTMIN + 6)

/* vcpu.c */
int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned int id);
void vcpu_destroy(struct vcpu *vcpu);
/* vcpu_thread() - the run loop (pthread start routine, arg = struct vcpu). */
void *vcpu_thread(void *arg);
/* vcpu_kick() - make KVM_RUN return on that vCPU (immediate_exit + signal). */
void vcpu_kick(struct vcpu *vcpu);

uint64_t vm_now_ns(void);

#endif /* SKIFF_VM_H */
