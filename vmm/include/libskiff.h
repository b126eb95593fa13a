/* SPDX-License-Identifier: MIT */
/*
 * libskiff: embed the skiff KVM microVM monitor in a program.
 *
 * One opaque handle per VM; every VM keeps all of its state in that handle,
 * so several VMs can run in one process. Every call returns 0 or a negative
 * errno (never exits, never aborts).
 *
 * Life cycle:
 *   skiff_vm_create()                 opens /dev/kvm
 *   skiff_vm_set_*()                  configuration, any order, before start
 *   skiff_vm_start()                  builds the VM and runs the vCPU threads
 *   skiff_vm_wait()                   blocks until the guest ends (or stop())
 *   skiff_vm_stop()                   asks a running VM to stop (any thread)
 *   skiff_vm_destroy()                stops if needed, frees everything
 *
 * Threads: set_*, start and destroy are called from one thread; wait, stop,
 * get_counters and get_report may be called from any thread while the VM
 * runs. The library interrupts vCPU threads with the signal SIGRTMIN + 6
 * (SKIFF_KICK_SIGNAL); it installs an empty handler for it at start and the
 * embedding program must leave that signal alone.
 */
#ifndef LIBSKIFF_H
#define LIBSKIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct skiff_vm;

/* What to boot. */
enum skiff_kernel_kind {
	/* Linux x86-64: bzImage (boot protocol >= 2.12, 64-bit entry) or an
	 * uncompressed ELF vmlinux; detected from the file. */
	SKIFF_KERNEL_LINUX = 0,
	/* A static ELF entered at CPL3 in 64-bit mode (skiff/tiny_guest_abi.h). */
	SKIFF_KERNEL_TINY = 1,
};

enum skiff_console_kind {
	SKIFF_CONSOLE_STDIO = 0, /* output to stdout; input from stdin when it is a tty */
	SKIFF_CONSOLE_FILE = 1, /* output appended to a file; no input */
	SKIFF_CONSOLE_NONE = 2, /* output discarded */
	SKIFF_CONSOLE_FD = 3, /* output written to a caller's fd (not closed) */
};

/* How the guest ended (struct skiff_exit.reason). */
enum skiff_exit_reason {
	SKIFF_EXIT_RUNNING = 0, /* not ended yet */
	SKIFF_EXIT_POWEROFF, /* guest powered off */
	SKIFF_EXIT_GUEST_CODE, /* debug device / debug-exit port, .code set */
	SKIFF_EXIT_REBOOT, /* guest asked for a reset (i8042 0xfe) */
	SKIFF_EXIT_PANIC, /* guest panic (debug device, or "Kernel panic" on the console) */
	SKIFF_EXIT_TRIPLE_FAULT, /* KVM_EXIT_SHUTDOWN */
	SKIFF_EXIT_GUEST_ERROR, /* emulation failure or exit KVM could not handle */
	SKIFF_EXIT_VMM_ERROR, /* host-side failure (ioctl, thread, device) */
	SKIFF_EXIT_STOPPED, /* skiff_vm_stop() */
};

/*
 * seccomp filters (skiff_vm_set_seccomp(); sandbox/README.md has the
 * per-thread allowlists).
 */
enum skiff_seccomp_mode {
	SKIFF_SECCOMP_OFF = 0, /* no filter */
	SKIFF_SECCOMP_LOG = 1, /* forbidden calls run and the kernel logs them */
	SKIFF_SECCOMP_KILL = 2, /* a forbidden call ends the process by SIGSYS */
};

/* Process exit statuses used by `skiff run` (see skiff_exit_status()). */
#define SKIFF_STATUS_POWEROFF 0
#define SKIFF_STATUS_GUEST_CODE_MAX 63 /* guest codes 0..63 pass through */
#define SKIFF_STATUS_USAGE 64 /* bad command line or configuration */
#define SKIFF_STATUS_REBOOT 65
#define SKIFF_STATUS_PANIC 66
#define SKIFF_STATUS_TRIPLE_FAULT 67
#define SKIFF_STATUS_GUEST_ERROR 68
#define SKIFF_STATUS_GUEST_CODE_BIG 69 /* guest code outside 0..63 */
#define SKIFF_STATUS_VMM_ERROR 70
/* Stopped by SIGINT/SIGTERM: 128 + signal number, as shells do. */

struct skiff_exit {
	enum skiff_exit_reason reason;
	uint64_t code; /* SKIFF_EXIT_GUEST_CODE: the value the guest wrote */
	int vcpu; /* the vCPU that ended the VM, -1 if none */
	int error; /* SKIFF_EXIT_VMM_ERROR: the negative errno */
	char message[256]; /* human-readable detail, NUL-terminated */
};

/* Most RX pump threads of the vsock device (struct skiff_vsock_config.rx_threads). */
#define SKIFF_VSOCK_MAX_RX_THREADS 16u

/*
 * struct skiff_vsock_config.ctl_thread: the device's control work (TX
 * queue, kicks, host clients) on a thread of its own, or on RX pump 0's
 * thread, which shortens the host-to-guest credit loop by a thread wake-up
 * (devices/virtio_vsock/README.md, Threads). AUTO: ON_PUMP0 when at most 2
 * CPUs are online, else OWN. Same values as the device's enum
 * vsock_ctl_thread.
 */
enum skiff_vsock_ctl_thread {
	SKIFF_VSOCK_CTL_AUTO = 0,
	SKIFF_VSOCK_CTL_OWN = 1,
	SKIFF_VSOCK_CTL_ON_PUMP0 = 2,
};

struct skiff_vsock_config {
	uint64_t guest_cid; /* >= 3 and < 0xffffffff */
	const char *uds_path; /* Firecracker-style hybrid socket path; copied */
	/* RX pump threads, 1..SKIFF_VSOCK_MAX_RX_THREADS; 0: one per online core, at most 4 */
	unsigned int rx_threads;
	bool mrg_rxbuf; /* offer VIRTIO_VSOCK_F_MRG_RXBUF */
	/*
	 * Offer VIRTIO_VSOCK_F_DGRAM (experimental datagrams); host side over
	 * AF_UNIX SOCK_DGRAM next to uds_path (devices/virtio_vsock/README.md,
	 * "Datagrams"); uds_path then at most 89 bytes.
	 */
	bool dgram;
	uint32_t conn_buf_size; /* buf_alloc advertised per connection; 0 = device default */
	/*
	 * Guest-to-guest routing group; copied. VMs of one process whose vsock
	 * devices share a group reach each other by CID (AF_VSOCK between
	 * guests, no host socket); NULL or "" is the default group, so by
	 * default all VMs of a process do. CIDs must be unique within a group:
	 * skiff_vm_start() of a second VM with a CID in use fails with
	 * -EADDRINUSE. At most 63 bytes.
	 */
	const char *group;
	/* Where the device's control work runs: enum skiff_vsock_ctl_thread (0: auto). */
	unsigned int ctl_thread;
};

struct skiff_counters {
	/* VMM: vCPU exits to user space, all vCPUs. */
	uint64_t vm_exits;
	uint64_t exits_mmio;
	uint64_t exits_io;
	uint64_t exits_intr; /* KVM_RUN returned EINTR */
	uint64_t int3_injected; /* int3 emulation failures answered with #BP (x86) */
	uint64_t fwait_handled; /* fwait emulation failures answered (x86: skipped or #MF) */
	/* Nanoseconds from skiff_vm_create() to the first KVM_RUN. */
	uint64_t setup_ns;
	/* CLOCK_MONOTONIC time of the first KVM_RUN in ns (0 before it). */
	uint64_t first_run_mono_ns;
	/* vsock (all 0 without a vsock device). */
	bool vsock_present;
	uint64_t vsock_device_features; /* what the device offered */
	uint64_t vsock_driver_features; /* what the driver accepted (FEATURES_OK) */
	uint32_t vsock_status; /* virtio device status register */
	uint64_t vsock_notify_exits; /* QueueNotify writes that missed the ioeventfd */
	uint64_t vsock_tx_pkts, vsock_tx_bytes, vsock_rx_pkts, vsock_rx_bytes;
	uint64_t vsock_kicks, vsock_irqs_sent, vsock_irqs_suppressed;
	/* the device's counters; see struct vsock_dev_counters (skiff/vsock_dev.h) for each */
	uint64_t vsock_conn_resets, vsock_dropped_pkts, vsock_malformed_pkts;
	uint64_t vsock_conns_opened, vsock_conns_closed, vsock_dev_resets;
	uint64_t vsock_conns_open, vsock_host_fds; /* now */
	uint64_t vsock_conns_refused, vsock_stray_pkts;
	uint64_t vsock_rx_pkt_limit_stalls; /* vsock_dev_counters.rx_pkt_limit_stalls */
	/* datagrams: vsock_dev_counters.dgram_* */
	uint64_t vsock_dgram_tx_pkts, vsock_dgram_tx_bytes, vsock_dgram_tx_drop_malformed;
	uint64_t vsock_dgram_tx_drop_no_dest, vsock_dgram_tx_drop_full, vsock_dgram_tx_drop_err;
	uint64_t vsock_dgram_rx_pkts, vsock_dgram_rx_bytes, vsock_dgram_rx_drop_no_buf;
	uint64_t vsock_dgram_rx_drop_too_big, vsock_dgram_rx_drop_bad_addr, vsock_dgram_rx_drop_err;
	uint64_t vsock_dgram_rx_drop_no_dest;
};

/*
 * skiff_vm_create() - a new, unconfigured VM handle. Opens /dev/kvm (or the
 * path in the environment variable SKIFF_KVM_PATH, for tests) and checks the
 * KVM API version and the capabilities skiff needs.
 * Return: 0; -ENOENT when /dev/kvm does not exist; -EACCES/-EPERM when it
 * cannot be opened; -ENOSYS when the KVM API is not version 12 or a needed
 * capability is missing; -ENOMEM.
 */
int skiff_vm_create(struct skiff_vm **out);

/*
 * skiff_vm_set_kernel() - the image to boot. The file is opened and its
 * format checked now (and read again at start).
 * Return: 0; -ENOENT/-EACCES/... from open(2); -ENOEXEC when the file is not
 * a bzImage or x86-64 ELF (LINUX) or not a static x86-64 ELF executable
 * (TINY); -EMEDIUMTYPE for LINUX when the file is an x86-64 ELF but not a
 * Linux kernel (no "Linux" ELF note: a tiny guest or a user program);
 * -EBUSY after start.
 */
int skiff_vm_set_kernel(struct skiff_vm *vm, const char *path, enum skiff_kernel_kind kind);

/* skiff_vm_set_initrd() - initrd for Linux. Return: 0; -errno from open(2); -EBUSY. */
int skiff_vm_set_initrd(struct skiff_vm *vm, const char *path);

/*
 * skiff_vm_set_cmdline() - kernel command line (copied). For Linux, a vsock
 * device is described in the ACPI DSDT (an LNRO0005 device, found by any
 * kernel with ACPI and virtio_mmio); skiff appends
 * "virtio_mmio.device=4K@0xd0000000:5" only when the command line holds
 * "acpi=off" and no virtio_mmio.device= of its own (kernels without ACPI:
 * pass acpi=off). Return: 0; -E2BIG beyond 4095 bytes; -ENOMEM; -EBUSY. The
 * kernel's own limit (at most 2047 bytes for Linux, with what skiff
 * appends) is checked by skiff_vm_start(): -ENAMETOOLONG.
 */
int skiff_vm_set_cmdline(struct skiff_vm *vm, const char *cmdline);

/*
 * skiff_vm_set_memory() - guest RAM in bytes, a multiple of 2 MiB, from
 * 2 MiB to 3 GiB (RAM stays below the MMIO hole at 0xc0000000).
 * Default 128 MiB. Return: 0; -EINVAL; -EBUSY.
 */
int skiff_vm_set_memory(struct skiff_vm *vm, uint64_t bytes);

/* skiff_vm_set_vcpus() - 1..SKIFF_MAX_VCPUS vCPUs (default 1). Return: 0; -EINVAL; -EBUSY. */
#define SKIFF_MAX_VCPUS 64
int skiff_vm_set_vcpus(struct skiff_vm *vm, unsigned int n);

/*
 * skiff_vm_set_console() - where the 8250 (and the tiny guests' PUTC) goes.
 * @path: the file for SKIFF_CONSOLE_FILE (created/appended when the VM
 * starts), else NULL. @fd: the fd for SKIFF_CONSOLE_FD, else ignored.
 * Default: SKIFF_CONSOLE_STDIO. Return: 0; -EINVAL; -ENOMEM; -EBUSY.
 */
int skiff_vm_set_console(struct skiff_vm *vm, enum skiff_console_kind kind, const char *path,
			 int fd);

/*
 * skiff_vm_set_vsock() - add the virtio-vsock device on virtio-mmio.
 * One device per VM: a second call replaces the first's settings.
 * Return: 0; -EINVAL for a CID outside 3..0xfffffffe, an empty path,
 * rx_threads over SKIFF_VSOCK_MAX_RX_THREADS or a ctl_thread that is not an
 * enum skiff_vsock_ctl_thread;
 * -ENAMETOOLONG when uds_path plus "_<port>" does not fit a sockaddr_un, or
 * the group name is over 63 bytes;
 * -ENOTSUP when skiff was built without the device library; -ENOMEM; -EBUSY.
 */
int skiff_vm_set_vsock(struct skiff_vm *vm, const struct skiff_vsock_config *cfg);

/*
 * skiff_vm_set_seccomp() - filter this VM's threads with seccomp: its vCPU
 * threads, the console input thread and the vsock device's threads (created
 * by the sandbox's spawner thread), each with the allowlist of its type,
 * installed before the guest runs. The library default is
 * SKIFF_SECCOMP_OFF (the `skiff` CLI asks for KILL). The setting is
 * process-wide once a VM with it starts: the first started VM's mode other
 * than OFF is the only one a later VM may use. In KILL mode the library
 * installs a SIGSYS handler that names the thread type and the system call
 * on stderr, then ends the process by SIGSYS. The calling (main) thread is not
 * filtered; the `skiff` CLI filters its own.
 * Return: 0; -EINVAL for an unknown mode; -EBUSY after start.
 */
int skiff_vm_set_seccomp(struct skiff_vm *vm, enum skiff_seccomp_mode mode);

/*
 * skiff_vm_start() - build the VM (memory, vCPUs, devices, boot image) and
 * start the vCPU threads. On failure nothing is left running and the
 * handle can only be destroyed.
 * Return: 0; -EINVAL when no kernel was set; -ENOEXEC for a bad image;
 * -E2BIG when the image or initrd does not fit in guest memory;
 * -ENAMETOOLONG when the command line is longer than the kernel takes; -EALREADY;
 * -EBUSY when another VM of this process runs seccomp in another mode;
 * -ENOTSUP when the kernel lacks SECCOMP_RET_LOG (mode LOG);
 * other -errno from KVM ioctls, mmap, open, pthread_create, the device,
 * libseccomp.
 */
int skiff_vm_start(struct skiff_vm *vm);

/*
 * skiff_vm_wait() - wait until the VM has ended, at most @timeout_ms
 * milliseconds (-1: forever), then fill @out. All vCPU threads have been
 * joined when it returns 0.
 * Return: 0; -ETIMEDOUT; -EINVAL when the VM was never started.
 */
int skiff_vm_wait(struct skiff_vm *vm, int timeout_ms, struct skiff_exit *out);

/*
 * skiff_vm_stop() - end a running VM with SKIFF_EXIT_STOPPED (unless it has
 * already ended). Does not wait. Not async-signal-safe: call it from a
 * thread (e.g. one that sigwait()s). A stop that comes before or while
 * another thread runs skiff_vm_start() is kept: that VM ends at once once
 * its vCPUs exist, with SKIFF_EXIT_STOPPED. Return: 0; -EINVAL for NULL.
 */
int skiff_vm_stop(struct skiff_vm *vm);

/*
 * skiff_vm_destroy() - stop, join, close host sockets (the vsock listener
 * path is unlinked), unmap memory, free. NULL is a no-op.
 */
void skiff_vm_destroy(struct skiff_vm *vm);

/* skiff_vm_get_counters() - snapshot; thread safe. Return: 0; -EINVAL. */
int skiff_vm_get_counters(struct skiff_vm *vm, struct skiff_counters *out);

/*
 * skiff_vm_get_report() - a value a tiny guest stored in debug report slot
 * @slot (SKIFF_DEBUG_REPORT_*). Return: 0; -ENOENT when never written;
 * -EINVAL for a bad slot.
 */
int skiff_vm_get_report(struct skiff_vm *vm, unsigned int slot, uint64_t *value);

/* skiff_exit_status() - the `skiff run` process exit status for @e. */
int skiff_exit_status(const struct skiff_exit *e);

/* skiff_exit_reason_name() - a short name ("poweroff", "triple-fault", ...). */
const char *skiff_exit_reason_name(enum skiff_exit_reason reason);

/* skiff_version() - "MAJOR.MINOR.PATCH". */
const char *skiff_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBSKIFF_H */
