// SPDX-License-Identifier: MIT
/*
 * libskiff: the public API (include/libskiff.h) and the VM life cycle:
 * create (open /dev/kvm) -> configure -> start (memory, irqchip, devices,
 * boot image, vCPU threads) -> wait/stop -> destroy.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "skiff/sandbox.h"
#include "elf_load.h"
#include "serial.h"
#include "skiff/tiny_guest_abi.h"
#include "virtio_mmio.h"
#include "vm.h"

#define DEFAULT_MEM (128ull << 20)
#define MAX_MEM (3ull << 30)
#define MAX_IMAGE (1ull << 30)
#define PROBE_LEN 65536

struct skiff_vm {
	struct vm vm;
};

uint64_t vm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void vm_end(struct vm *vm, enum skiff_exit_reason reason, uint64_t code, int vcpu, int error,
	    const char *fmt, ...)
{
	va_list ap;
	unsigned int i;

	/* Kicks happen under the lock so that no waiter can join a thread being signalled. */
	pthread_mutex_lock(&vm->lock);
	if (vm->exit.reason == SKIFF_EXIT_RUNNING) {
		vm->exit.reason = reason;
		vm->exit.code = code;
		vm->exit.vcpu = vcpu;
		vm->exit.error = error;
		va_start(ap, fmt);
		vsnprintf(vm->exit.message, sizeof(vm->exit.message), fmt, ap);
		va_end(ap);
	}
	if (!atomic_exchange(&vm->ending, true) && !vm->joined) {
		for (i = 0; i < vm->nr_vcpus; i++)
			vcpu_kick(&vm->vcpus[i]);
	}
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
}

void vm_console_write(struct vm *vm, const void *buf, size_t len)
{
	const char *p = buf;

	while (vm->console_out >= 0 && len) {
		ssize_t n = write(vm->console_out, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* a console that fails is dropped, not fatal */
		p += n;
		len -= (size_t)n;
	}
}

int vm_irq_line(struct vm *vm, unsigned int irq, int level)
{
	struct kvm_irq_level l = { .irq = irq, .level = level };

	return ioctl(vm->vm_fd, KVM_IRQ_LINE, &l) < 0 ? -errno : 0;
}

int skiff_vm_create(struct skiff_vm **out)
{
	const char *kvm_path;
	struct skiff_vm *h;
	struct vm *vm;
	int err;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	vm = &h->vm;
	vm->t_create_ns = vm_now_ns();
	vm->vm_fd = -1;
	vm->irqchip_fd = -1;
	vm->mem.fd = -1;
	vm->console_out = -1;
	vm->console_in = -1;
	vm->cfg.mem_size = DEFAULT_MEM;
	vm->cfg.nr_vcpus = 1;
	vm->cfg.console = SKIFF_CONSOLE_STDIO;
	vm->cfg.console_fd = -1;
	vm->exit.vcpu = -1;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->cond, NULL);

	kvm_path = getenv("SKIFF_KVM_PATH");
	vm->kvm_fd = open(kvm_path ? kvm_path : "/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		err = -errno;
		goto err;
	}
	if (ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION ||
	    ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IRQCHIP) <= 0 ||
	    ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IOEVENTFD) <= 0 ||
	    ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IRQFD) <= 0 ||
	    ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IMMEDIATE_EXIT) <= 0) {
		err = -ENOSYS;
		goto err;
	}
	*out = h;
	return 0;
err:
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	pthread_cond_destroy(&vm->cond);
	pthread_mutex_destroy(&vm->lock);
	free(h);
	return err;
}

static bool configurable(const struct skiff_vm *h)
{
	return h && !h->vm.started;
}

static int replace_str(char **dst, const char *src)
{
	char *s = NULL;

	if (src) {
		s = strdup(src);
		if (!s)
			return -ENOMEM;
	}
	free(*dst);
	*dst = s;
	return 0;
}

/*
 * Read a whole regular file (at most @max bytes; only the first @max when
 * @partial). Return: 0; -errno from open/read; -EISDIR/-EINVAL for a
 * non-regular file; -EFBIG when too large; -ENOMEM.
 */
static int read_file(const char *path, size_t max, bool partial, uint8_t **buf, size_t *len)
{
	struct stat st;
	size_t want, got = 0;
	uint8_t *b;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	want = (size_t)st.st_size;
	if (want > max) {
		err = -EFBIG;
		if (!partial)
			goto out;
		want = max;
	}
	b = malloc(want ? want : 1);
	if (!b) {
		err = -ENOMEM;
		goto out;
	}
	while (got < want) {
		ssize_t n = read(fd, b + got, want - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			free(b);
			goto out;
		}
		got += (size_t)n;
	}
	*buf = b;
	*len = got;
	err = 0;
out:
	close(fd);
	return err;
}

/*
 * Does one PT_LOAD of the ELF64 file whose first @len bytes are @head sit in
 * the upper half of the address space, as every x86-64 vmlinux's does
 * (arch/x86/kernel/vmlinux.lds.S links at __START_KERNEL_map)? A user-mode
 * Linux binary carries "Linux" notes too but is linked low, like any
 * program. Program headers beyond @head count as "no".
 */
static bool elf_linked_high(const uint8_t *head, size_t len)
{
	uint64_t phoff;
	uint16_t phentsize, phnum, i;

	if (len < 64)
		return false;
	memcpy(&phoff, head + 32, sizeof(phoff));
	memcpy(&phentsize, head + 54, sizeof(phentsize));
	memcpy(&phnum, head + 56, sizeof(phnum));
	if (phentsize < 56 || phoff > len)
		return false;
	for (i = 0; i < phnum && (len - phoff) / phentsize > i; i++) {
		const uint8_t *ph = head + phoff + (size_t)i * phentsize;
		uint32_t type;
		uint64_t vaddr;

		memcpy(&type, ph, sizeof(type));
		memcpy(&vaddr, ph + 16, sizeof(vaddr));
		if (type == 1 /* PT_LOAD */ && vaddr >= 0xffff800000000000ull)
			return true;
	}
	return false;
}

/*
 * An ELF file that passed the Linux probe must also be an x86-64 Linux
 * kernel: a vmlinux carries "Linux" ELF notes and is linked in the upper
 * half; a tiny guest or a user program has no such note, a user-mode Linux
 * binary is linked low. Either would otherwise be entered with the 64-bit
 * boot protocol. Return: 0, -EMEDIUMTYPE, or -errno from open/read.
 */
static int elf_is_linux(const char *path, const uint8_t *head, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int found;

	if (fd < 0)
		return -errno;
	found = elf_has_note(fd, head, len, "Linux");
	close(fd);
	if (found < 0)
		return found;
	return found && elf_linked_high(head, len) ? 0 : -EMEDIUMTYPE;
}

int skiff_vm_set_kernel(struct skiff_vm *h, const char *path, enum skiff_kernel_kind kind)
{
	uint8_t *head;
	size_t len;
	int err;

	if (!h || !path || (kind != SKIFF_KERNEL_LINUX && kind != SKIFF_KERNEL_TINY))
		return -EINVAL;
	if (!configurable(h))
		return -EBUSY;
	err = read_file(path, PROBE_LEN, true, &head, &len);
	if (err)
		return err;
	err = arch_probe_kernel(head, len, kind);
	if (!err && kind == SKIFF_KERNEL_LINUX && len >= 4 && !memcmp(head, "\177ELF", 4))
		err = elf_is_linux(path, head, len);
	free(head);
	if (err)
		return err;
	err = replace_str(&h->vm.cfg.kernel_path, path);
	if (!err)
		h->vm.cfg.kernel_kind = kind;
	return err;
}

int skiff_vm_set_initrd(struct skiff_vm *h, const char *path)
{
	int err;

	if (!h)
		return -EINVAL;
	if (!configurable(h))
		return -EBUSY;
	if (path) {
		err = access(path, R_OK) ? -errno : 0;
		if (err)
			return err;
	}
	return replace_str(&h->vm.cfg.initrd_path, path);
}

int skiff_vm_set_cmdline(struct skiff_vm *h, const char *cmdline)
{
	if (!h)
		return -EINVAL;
	if (!configurable(h))
		return -EBUSY;
	if (cmdline && strlen(cmdline) >= SKIFF_TINY_CMDLINE_MAX)
		return -E2BIG;
	return replace_str(&h->vm.cfg.cmdline, cmdline);
}

int skiff_vm_set_memory(struct skiff_vm *h, uint64_t bytes)
{
	if (!h || bytes < (2u << 20) || bytes > MAX_MEM || bytes % (2u << 20))
		return -EINVAL;
	if (!configurable(h))
		return -EBUSY;
	h->vm.cfg.mem_size = bytes;
	return 0;
}

int skiff_vm_set_vcpus(struct skiff_vm *h, unsigned int n)
{
	if (!h || !n || n > SKIFF_MAX_VCPUS)
		return -EINVAL;
	if (!configurable(h))
		return -EBUSY;
	h->vm.cfg.nr_vcpus = n;
	return 0;
}

int skiff_vm_set_console(struct skiff_vm *h, enum skiff_console_kind kind, const char *path, int fd)
{
	if (!h || (kind == SKIFF_CONSOLE_FILE && (!path || !*path)) ||
	    (kind == SKIFF_CONSOLE_FD && fd < 0) || kind > SKIFF_CONSOLE_FD)
		return -EINVAL;
	if (!configurable(h))
		return -EBUSY;
	if (replace_str(&h->vm.cfg.console_path, kind == SKIFF_CONSOLE_FILE ? path : NULL))
		return -ENOMEM;
	h->vm.cfg.console = kind;
	h->vm.cfg.console_fd = kind == SKIFF_CONSOLE_FD ? fd : -1;
	return 0;
}

int skiff_vm_set_vsock(struct skiff_vm *h, const struct skiff_vsock_config *cfg)
{
	/* Room for "_<port>" (up to 11 bytes) and the NUL in sun_path. */
	const size_t max_path = sizeof(((struct sockaddr_un *)0)->sun_path) - 12;

	if (!h || !cfg || !cfg->uds_path || !*cfg->uds_path || cfg->guest_cid < 3 ||
	    cfg->guest_cid >= 0xffffffffull || cfg->rx_threads > SKIFF_VSOCK_MAX_RX_THREADS ||
	    cfg->ctl_thread > SKIFF_VSOCK_CTL_ON_PUMP0)
		return -EINVAL;
	if (strlen(cfg->uds_path) > max_path)
		return -ENAMETOOLONG;
	if (!configurable(h))
		return -EBUSY;
#ifndef SKIFF_HAVE_VSOCK
	return -ENOTSUP;
#else
	if (cfg->group && strlen(cfg->group) > 63)
		return -ENAMETOOLONG;
	if (replace_str(&h->vm.cfg.vsock_uds, cfg->uds_path) ||
	    replace_str(&h->vm.cfg.vsock_group, cfg->group ? cfg->group : ""))
		return -ENOMEM;
	h->vm.cfg.has_vsock = true;
	h->vm.cfg.vsock_cid = cfg->guest_cid;
	h->vm.cfg.vsock_rx_threads = cfg->rx_threads;
	h->vm.cfg.vsock_ctl_thread = cfg->ctl_thread;
	h->vm.cfg.vsock_mrg_rxbuf = cfg->mrg_rxbuf;
	h->vm.cfg.vsock_dgram = cfg->dgram;
	h->vm.cfg.vsock_conn_buf = cfg->conn_buf_size;
	return 0;
#endif
}

int skiff_vm_set_seccomp(struct skiff_vm *h, enum skiff_seccomp_mode mode)
{
	if (!h ||
	    (mode != SKIFF_SECCOMP_OFF && mode != SKIFF_SECCOMP_LOG && mode != SKIFF_SECCOMP_KILL))
		return -EINVAL;
	if (!configurable(h))
		return -EBUSY;
	h->vm.cfg.seccomp = mode;
	return 0;
}

static void kick_handler(int sig)
{
	(void)sig; /* only there to make KVM_RUN return -EINTR */
}

static int open_console(struct vm *vm)
{
	switch (vm->cfg.console) {
	case SKIFF_CONSOLE_STDIO:
		vm->console_out = STDOUT_FILENO;
		vm->console_in = isatty(STDIN_FILENO) ? STDIN_FILENO : -1;
		return 0;
	case SKIFF_CONSOLE_FILE:
		vm->console_out =
			open(vm->cfg.console_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (vm->console_out < 0)
			return -errno;
		vm->console_out_owned = true;
		return 0;
	case SKIFF_CONSOLE_FD:
		vm->console_out = vm->cfg.console_fd;
		return 0;
	case SKIFF_CONSOLE_NONE:
	default:
		return 0;
	}
}

/* Does the command line @s hold the whole word @word (or @word=...)? */
static bool cmdline_has(const char *s, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = strstr(s, word); p; p = strstr(p + 1, word))
		if ((p == s || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || word[n - 1] == '='))
			return true;
	return false;
}

/*
 * The command line the guest gets: the user's (or the default), plus the
 * vsock device as "virtio_mmio.device=" when the kernel will not read the
 * DSDT that describes it (LNRO0005, arch/x86_64/acpi.c). The rule is QEMU
 * microvm's: the device is in the ACPI tables always, and on the command
 * line only when the guest turns ACPI off ("acpi=off"), so a kernel with
 * both ACPI and CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES (skiff's own) never gets
 * it twice. A command line that names a virtio_mmio.device itself is left
 * as it is. Kernels built without ACPI: pass "acpi=off" (harmless there).
 */
static char *build_cmdline(const struct vm *vm)
{
	const char *base = vm->cfg.cmdline;
	char *s;

	if (vm->cfg.kernel_kind == SKIFF_KERNEL_TINY)
		return strdup(base ? base : "");
	if (!base)
		base = arch_linux_cmdline();
	if (!vm->cfg.has_vsock || !arch_virtio_mmio_on_cmdline() ||
	    !cmdline_has(base, "acpi=off") || cmdline_has(base, "virtio_mmio.device="))
		return strdup(base);
	if (asprintf(&s, "%s virtio_mmio.device=4K@0x%llx:%u", base,
		     (unsigned long long)arch_virtio_mmio_gpa(), arch_virtio_mmio_irq()) < 0)
		return NULL;
	return s;
}

static int load_images(struct vm *vm)
{
	uint8_t *kernel = NULL, *initrd = NULL;
	size_t kernel_len = 0, initrd_len = 0;
	char *cmdline;
	int err;

	cmdline = build_cmdline(vm);
	if (!cmdline)
		return -ENOMEM;
	err = read_file(vm->cfg.kernel_path, MAX_IMAGE, false, &kernel, &kernel_len);
	if (!err && vm->cfg.initrd_path && vm->cfg.kernel_kind == SKIFF_KERNEL_LINUX)
		err = read_file(vm->cfg.initrd_path, MAX_IMAGE, false, &initrd, &initrd_len);
	if (!err)
		err = arch_load_guest(vm, kernel, kernel_len, initrd, initrd_len, cmdline);
	free(initrd);
	free(kernel);
	free(cmdline);
	return err;
}

static int build_vm(struct vm *vm)
{
	struct kvm_userspace_memory_region region;
	struct vcpu *vcpus;
	unsigned int i;
	int err;

	err = guest_mem_create(&vm->mem, vm->cfg.mem_size);
	if (err)
		return err;
	vm->mem.base = arch_ram_base();
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0)
		return -errno;
	err = arch_vm_init(vm);
	if (err)
		return err;
	region = (struct kvm_userspace_memory_region){
		.slot = 0,
		.guest_phys_addr = vm->mem.base,
		.memory_size = vm->mem.size,
		.userspace_addr = (uintptr_t)vm->mem.hva,
	};
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return -errno;
	err = open_console(vm);
	if (!err)
		err = arch_add_legacy_devices(vm);
	if (!err)
		err = load_images(vm);
	if (err)
		return err;

	vcpus = calloc(vm->cfg.nr_vcpus, sizeof(*vcpus));
	if (!vcpus)
		return -ENOMEM;
	for (i = 0; i < vm->cfg.nr_vcpus; i++)
		vcpus[i].fd = -1;
	/*
	 * vm_end() (skiff_vm_stop() from another thread, even during this
	 * start) walks vcpus[0..nr_vcpus) under vm->lock: publish the array and
	 * each vCPU once it exists under that lock too.
	 */
	pthread_mutex_lock(&vm->lock);
	vm->vcpus = vcpus;
	pthread_mutex_unlock(&vm->lock);
	for (i = 0; i < vm->cfg.nr_vcpus; i++) {
		err = vcpu_create(vm, &vm->vcpus[i], i);
		if (err)
			return err;
		pthread_mutex_lock(&vm->lock);
		vm->nr_vcpus = i + 1;
		pthread_mutex_unlock(&vm->lock);
		err = arch_vcpu_init(vm, &vm->vcpus[i]);
		if (err)
			return err;
	}
	err = arch_vcpus_created(vm);
	/*
	 * The transport's irqfd last: on arm64 KVM refuses KVM_IRQFD (EAGAIN)
	 * until the GIC is initialized, which needs every vCPU
	 * (virt/kvm/eventfd.c, kvm_arch_intc_initialized()).
	 */
	if (!err && vm->cfg.has_vsock)
		err = virtio_mmio_vsock_create(vm, arch_virtio_mmio_gpa(), arch_virtio_mmio_irq(),
					       &vm->vmmio);
	return err;
}

int skiff_vm_start(struct skiff_vm *h)
{
	struct sigaction sa;
	struct vm *vm;
	unsigned int i;
	int err;

	if (!h)
		return -EINVAL;
	vm = &h->vm;
	if (vm->started)
		return -EALREADY;
	if (!vm->cfg.kernel_path)
		return -EINVAL;
	vm->started = true;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SKIFF_KICK_SIGNAL, &sa, NULL) < 0)
		return -errno;

	/* Filters compiled and the spawner started before any VM thread exists. */
	err = vm->cfg.seccomp ? sandbox_init((enum sandbox_mode)vm->cfg.seccomp, "skiff") : 0;
	if (err) {
		vm_end(vm, SKIFF_EXIT_VMM_ERROR, 0, -1, err, "seccomp %s: %s",
		       sandbox_mode_name((enum sandbox_mode)vm->cfg.seccomp), strerror(-err));
		vm->joined = true;
		return err;
	}
	err = build_vm(vm);
	if (err) {
		vm_end(vm, SKIFF_EXIT_VMM_ERROR, 0, -1, err, "VM set-up failed: %s",
		       strerror(-err));
		vm->joined = true;
		return err;
	}
	pthread_mutex_lock(&vm->lock);
	for (i = 0; i < vm->nr_vcpus; i++) {
		err = -pthread_create(&vm->vcpus[i].thread, NULL, vcpu_thread, &vm->vcpus[i]);
		if (err)
			break;
		vm->vcpus[i].thread_started = true;
		vm->running_vcpus++;
	}
	pthread_mutex_unlock(&vm->lock);
	if (err)
		vm_end(vm, SKIFF_EXIT_VMM_ERROR, 0, -1, err, "cannot start vCPU thread: %s",
		       strerror(-err));
	else if (atomic_load(&vm->stop_requested))
		vm_end(vm, SKIFF_EXIT_STOPPED, 0, -1, 0, "stopped by the host");
	/*
	 * A vm_end() before the vCPUs had their kvm_run (a stop while the VM was
	 * built) kicked nothing and set ending, so no later call kicks: do it.
	 */
	if (atomic_load(&vm->ending)) {
		pthread_mutex_lock(&vm->lock);
		for (i = 0; i < vm->nr_vcpus; i++)
			vcpu_kick(&vm->vcpus[i]);
		pthread_mutex_unlock(&vm->lock);
	}
	return err;
}

int skiff_vm_wait(struct skiff_vm *h, int timeout_ms, struct skiff_exit *out)
{
	struct vm *vm;
	struct timespec deadline;
	unsigned int i;
	int err = 0;

	if (!h || !h->vm.started)
		return -EINVAL;
	vm = &h->vm;
	clock_gettime(CLOCK_REALTIME, &deadline);
	if (timeout_ms >= 0) {
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000l;
		if (deadline.tv_nsec >= 1000000000l) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000l;
		}
	}
	pthread_mutex_lock(&vm->lock);
	while (!(atomic_load(&vm->ending) && vm->running_vcpus == 0) && !err) {
		if (timeout_ms < 0)
			pthread_cond_wait(&vm->cond, &vm->lock);
		else
			err = -pthread_cond_timedwait(&vm->cond, &vm->lock, &deadline);
	}
	if (err == -ETIMEDOUT && atomic_load(&vm->ending) && vm->running_vcpus == 0)
		err = 0;
	if (!err && !vm->joined) {
		vm->joined = true;
		for (i = 0; i < vm->nr_vcpus; i++) {
			if (vm->vcpus[i].thread_started)
				pthread_join(vm->vcpus[i].thread, NULL);
			vm->vcpus[i].thread_started = false;
		}
	}
	if (!err && out)
		*out = vm->exit;
	pthread_mutex_unlock(&vm->lock);
	return err;
}

int skiff_vm_stop(struct skiff_vm *h)
{
	if (!h)
		return -EINVAL;
	/*
	 * Recorded first (seq_cst), then started is read; skiff_vm_start() sets
	 * started, then reads this after its vCPUs exist: one of the two sees
	 * the other, so a stop racing a start is never lost.
	 */
	atomic_store(&h->vm.stop_requested, true);
	if (h->vm.started)
		vm_end(&h->vm, SKIFF_EXIT_STOPPED, 0, -1, 0, "stopped by the host");
	return 0;
}

void skiff_vm_destroy(struct skiff_vm *h)
{
	struct vm *vm;
	unsigned int i;

	if (!h)
		return;
	vm = &h->vm;
	if (vm->started) {
		skiff_vm_stop(h);
		skiff_vm_wait(h, -1, NULL);
	}
	/* Devices first: their threads may still touch guest memory. */
	virtio_mmio_destroy(vm->vmmio);
	serial_destroy(vm->serial);
	for (i = 0; i < vm->nr_vcpus; i++)
		vcpu_destroy(&vm->vcpus[i]);
	free(vm->vcpus);
	if (vm->irqchip_fd >= 0)
		close(vm->irqchip_fd);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	guest_mem_destroy(&vm->mem);
	if (vm->console_out_owned)
		close(vm->console_out);
	close(vm->kvm_fd);
	free(vm->cfg.kernel_path);
	free(vm->cfg.initrd_path);
	free(vm->cfg.cmdline);
	free(vm->cfg.console_path);
	free(vm->cfg.vsock_uds);
	free(vm->cfg.vsock_group);
	pthread_cond_destroy(&vm->cond);
	pthread_mutex_destroy(&vm->lock);
	free(h);
}

int skiff_vm_get_counters(struct skiff_vm *h, struct skiff_counters *out)
{
	struct vm *vm;

	if (!h || !out)
		return -EINVAL;
	vm = &h->vm;
	memset(out, 0, sizeof(*out));
	out->vm_exits = atomic_load(&vm->exits);
	out->exits_mmio = atomic_load(&vm->exits_mmio);
	out->exits_io = atomic_load(&vm->exits_io);
	out->exits_intr = atomic_load(&vm->exits_intr);
	out->int3_injected = atomic_load(&vm->int3_injected);
	out->fwait_handled = atomic_load(&vm->fwait_handled);
	out->setup_ns = atomic_load(&vm->setup_ns);
	out->first_run_mono_ns = out->setup_ns ? vm->t_create_ns + out->setup_ns : 0;
	if (vm->vmmio)
		virtio_mmio_counters(vm->vmmio, out);
	return 0;
}

int skiff_vm_get_report(struct skiff_vm *h, unsigned int slot, uint64_t *value)
{
	if (!h || !value || slot >= SKIFF_DEBUG_REPORT_SLOTS)
		return -EINVAL;
	if (!(atomic_load(&h->vm.report_set) & (1u << slot)))
		return -ENOENT;
	*value = atomic_load(&h->vm.reports[slot]);
	return 0;
}

int skiff_exit_status(const struct skiff_exit *e)
{
	switch (e->reason) {
	case SKIFF_EXIT_POWEROFF:
		return SKIFF_STATUS_POWEROFF;
	case SKIFF_EXIT_GUEST_CODE:
		return e->code <= SKIFF_STATUS_GUEST_CODE_MAX ? (int)e->code :
								SKIFF_STATUS_GUEST_CODE_BIG;
	case SKIFF_EXIT_REBOOT:
		return SKIFF_STATUS_REBOOT;
	case SKIFF_EXIT_PANIC:
		return SKIFF_STATUS_PANIC;
	case SKIFF_EXIT_TRIPLE_FAULT:
		return SKIFF_STATUS_TRIPLE_FAULT;
	case SKIFF_EXIT_GUEST_ERROR:
		return SKIFF_STATUS_GUEST_ERROR;
	case SKIFF_EXIT_STOPPED:
		return 128 + SIGTERM;
	case SKIFF_EXIT_RUNNING:
	case SKIFF_EXIT_VMM_ERROR:
	default:
		return SKIFF_STATUS_VMM_ERROR;
	}
}

const char *skiff_exit_reason_name(enum skiff_exit_reason reason)
{
	static const char *const names[] = {
		[SKIFF_EXIT_RUNNING] = "running",
		[SKIFF_EXIT_POWEROFF] = "poweroff",
		[SKIFF_EXIT_GUEST_CODE] = "guest-exit",
		[SKIFF_EXIT_REBOOT] = "reboot",
		[SKIFF_EXIT_PANIC] = "panic",
		[SKIFF_EXIT_TRIPLE_FAULT] = "triple-fault",
		[SKIFF_EXIT_GUEST_ERROR] = "guest-error",
		[SKIFF_EXIT_VMM_ERROR] = "vmm-error",
		[SKIFF_EXIT_STOPPED] = "stopped",
	};

	if ((unsigned int)reason >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[reason];
}

const char *skiff_version(void)
{
	return SKIFF_VERSION;
}
