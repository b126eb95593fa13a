// SPDX-License-Identifier: MIT
/*
 * `skiff run`: boot the VMs of the command line (opts.h) in this process,
 * wait for them and turn how they ended into one exit status.
 *
 * Several VMs: each is configured and checked before any starts, then they
 * start in command-line order. skiff waits for all of them; the first VM
 * that ends with a status other than 0 stops the others (they may wait for
 * a peer that is gone) and its status is skiff's. SIGINT/SIGTERM stop every
 * VM (status 130/143). One waiting thread per VM (filtered as "main") joins
 * its VM, so the first VM to end is seen at once, whatever its position.
 */
#include "run.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libskiff.h"
#include "skiff/sandbox.h"

/* One VM of the run. */
struct vm_run {
	const struct vm_opts *o;
	unsigned int idx; /* 1-based, command-line order */
	struct skiff_vm *vm;
	struct skiff_exit ex; /* set by its waiter */
	int status; /* skiff_exit_status(&ex) */
	pthread_t waiter;
	bool waiter_started;
	struct fleet *fleet;
};

/* All VMs of the run, and the signal thread's view of them. */
struct fleet {
	pthread_mutex_t lock; /* protects cause, signo and live */
	struct vm_run *runs;
	unsigned int nr;
	unsigned int cause; /* idx of the VM whose non-zero end stopped the others; 0: none */
	int signo; /* SIGINT/SIGTERM received, 0: none */
	bool live; /* the VM handles exist (false once main tears down) */
	sigset_t set;
};

/* Stop every VM of @f; call with f->lock held. */
static void stop_all(struct fleet *f)
{
	unsigned int i;

	for (i = 0; f->live && i < f->nr; i++)
		if (f->runs[i].vm)
			skiff_vm_stop(f->runs[i].vm);
}

/* The signal thread: turns SIGINT/SIGTERM into skiff_vm_stop() of every VM. */
static void *sig_thread(void *arg)
{
	struct fleet *f = arg;
	int sig;

	if (sandbox_enter(SANDBOX_VMM_SIGNAL)) {
		fputs("skiff: seccomp: cannot filter the signal thread\n", stderr);
		exit(SKIFF_STATUS_VMM_ERROR);
	}

	for (;;) {
		if (sigwait(&f->set, &sig))
			continue;
		pthread_mutex_lock(&f->lock);
		if (!f->signo)
			f->signo = sig;
		stop_all(f);
		pthread_mutex_unlock(&f->lock);
	}
	return NULL;
}

/*
 * A VM's waiting thread: joins the VM; the first VM to end with a status
 * other than 0 becomes the cause and the others are stopped.
 */
static void *waiter_thread(void *arg)
{
	struct vm_run *r = arg;
	struct fleet *f = r->fleet;

	if (sandbox_enter(SANDBOX_VMM_MAIN)) {
		fputs("skiff: seccomp: cannot filter a waiting thread\n", stderr);
		skiff_vm_stop(r->vm);
	}
	skiff_vm_wait(r->vm, -1, &r->ex);
	r->status = skiff_exit_status(&r->ex);
	pthread_mutex_lock(&f->lock);
	if (r->status && !f->cause) {
		f->cause = r->idx;
		stop_all(f);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* Errors that name the problem and the remedy. */
static int kernel_error(const char *path, int err, bool tiny)
{
	switch (err) {
	case -ENOENT:
		fprintf(stderr,
			"skiff: kernel '%s' does not exist; check the path given to --kernel\n",
			path);
		break;
	case -EACCES:
	case -EPERM:
		fprintf(stderr,
			"skiff: kernel '%s' is not readable (%s); make it readable by this user "
			"(chmod a+r) or run skiff as a user who can read it\n",
			path, strerror(-err));
		break;
	case -EISDIR:
	case -EINVAL:
		fprintf(stderr,
			"skiff: kernel '%s' is not a regular file; pass the image file itself\n",
			path);
		break;
	case -ENOEXEC:
#ifdef __aarch64__
		if (tiny)
			fprintf(stderr,
				"skiff: '%s': tiny test guests are x86-64 programs; on arm64 drop "
				"--tiny-guest and pass an arm64 Image\n",
				path);
		else
			fprintf(stderr,
				"skiff: '%s' is not an arm64 Linux Image (magic \"ARM\\x64\" at byte "
				"56, Linux 3.17 or later, little endian); pass arch/arm64/boot/Image "
				"or Debian's vmlinuz (an Image), and decompress a gzip'd one first "
				"(zcat vmlinuz > Image)\n",
				path);
		break;
#endif
		if (tiny)
			fprintf(stderr,
				"skiff: '%s' is not a static x86-64 ELF executable; build the tiny "
				"guest with tests/guests/ (gcc -ffreestanding -nostdlib -static)\n",
				path);
		else
			fprintf(stderr,
				"skiff: unknown kernel format in '%s': need an x86-64 bzImage with a "
				"64-bit entry (boot protocol 2.12 or later) or an ELF vmlinux; pass "
				"arch/x86/boot/bzImage or vmlinux from a kernel build (or add "
				"--tiny-guest for a tiny test guest)\n",
				path);
		break;
	case -EMEDIUMTYPE:
		fprintf(stderr,
			"skiff: '%s' is an x86-64 ELF file but not a Linux kernel (every vmlinux has "
			"a \"Linux\" ELF note and is linked in the upper half; a user-mode Linux "
			"binary is linked low); to boot a tiny test guest add --tiny-guest, to boot "
			"Linux pass vmlinux or arch/x86/boot/bzImage from an x86_64 kernel build "
			"(scripts/build-kernels.sh --print-path VARIANT x86_64)\n",
			path);
		break;
	default:
		fprintf(stderr, "skiff: cannot load kernel '%s': %s\n", path, strerror(-err));
	}
	return SKIFF_STATUS_USAGE;
}

static int kvm_error(int err)
{
	const char *path = getenv("SKIFF_KVM_PATH") ? getenv("SKIFF_KVM_PATH") : "/dev/kvm";

	switch (err) {
	case -ENOENT:
		fprintf(stderr,
			"skiff: %s does not exist, so KVM is not available; load the KVM module "
			"(modprobe kvm_intel or kvm_amd), enable virtualization in the firmware, "
			"or on a cloud VM pick an instance type with nested virtualization\n",
			path);
		break;
	case -EACCES:
	case -EPERM:
		fprintf(stderr,
			"skiff: %s is not accessible (%s); add your user to the group that owns it "
			"(usually: sudo usermod -aG kvm $USER, then log in again) or run as root\n",
			path, strerror(-err));
		break;
	case -ENOSYS:
		fprintf(stderr,
			"skiff: %s lacks what skiff needs (API version 12, in-kernel irqchip, "
			"ioeventfd, irqfd, immediate_exit); use a Linux 4.11 or newer host kernel\n",
			path);
		break;
	default:
		fprintf(stderr, "skiff: cannot use %s: %s\n", path, strerror(-err));
	}
	return SKIFF_STATUS_VMM_ERROR;
}

static int initrd_error(const char *path, int err)
{
	fprintf(stderr,
		"skiff: cannot read initrd '%s' (%s); check the path given to --initrd and its "
		"permissions\n",
		path, strerror(-err));
	return SKIFF_STATUS_USAGE;
}

static int configure(struct skiff_vm *vm, const struct vm_opts *o, enum sandbox_mode seccomp)
{
	int err;

	err = skiff_vm_set_kernel(vm, o->kernel, o->tiny ? SKIFF_KERNEL_TINY : SKIFF_KERNEL_LINUX);
	if (err)
		return kernel_error(o->kernel, err, o->tiny);
	if (o->initrd && (err = skiff_vm_set_initrd(vm, o->initrd)))
		return initrd_error(o->initrd, err);
	if (o->cmdline && (err = skiff_vm_set_cmdline(vm, o->cmdline))) {
		fprintf(stderr,
			"skiff: bad --cmdline: %zu bytes, too long (%s); give at most 2047 bytes "
			"(Linux, with what skiff appends) or 4095 (tiny guest)\n",
			strlen(o->cmdline), strerror(-err));
		return SKIFF_STATUS_USAGE;
	}
	if (o->mem_set && skiff_vm_set_memory(vm, o->mem))
		return SKIFF_STATUS_USAGE; /* checked in parse_run() */
	if (skiff_vm_set_seccomp(vm, (enum skiff_seccomp_mode)seccomp))
		return SKIFF_STATUS_USAGE;
	if (skiff_vm_set_vcpus(vm, o->cpus))
		return SKIFF_STATUS_USAGE;
	if (skiff_vm_set_console(vm, o->console, o->console_path, -1))
		return SKIFF_STATUS_USAGE;
	if (o->vsock_set) {
		struct skiff_vsock_config vc = {
			.guest_cid = o->vsock.cid,
			.uds_path = o->vsock.uds,
			.rx_threads = o->vsock.rx_threads,
			.mrg_rxbuf = o->vsock.mrg_rxbuf,
			.dgram = o->vsock.dgram,
			.conn_buf_size = o->vsock.conn_buf,
			.ctl_thread = o->vsock.ctl_thread,
		};

		err = skiff_vm_set_vsock(vm, &vc);
		if (err == -ENOTSUP) {
			fprintf(stderr, "skiff: this build has no virtio-vsock device library; "
					"rebuild skiff with devices/virtio_vsock\n");
			return SKIFF_STATUS_USAGE;
		}
		if (err) {
			fprintf(stderr, "skiff: bad --vsock settings: %s\n", strerror(-err));
			return SKIFF_STATUS_USAGE;
		}
	}
	return 0;
}

/*
 * skiff_vm_start() failed for @r with @err: say why (@what: "the VM" or
 * "VM 2"). Return: the exit status.
 */
static int start_error(const struct vm_run *r, const char *what, int err)
{
	const struct vm_opts *o = r->o;
	const char *msg = r->ex.message;

	if (err == -ENAMETOOLONG)
		fprintf(stderr,
			"skiff: bad --cmdline: %zu bytes, longer than the kernel takes with what "
			"skiff appends (%s); the x86-64 boot protocol allows at most 2047 bytes in "
			"all (the kernel's cmdline_size may be less), arm64's device tree 2047, a "
			"tiny guest 4095: shorten it\n",
			o->cmdline ? strlen(o->cmdline) : 0, msg);
	else if (err == -E2BIG)
		fprintf(stderr,
			"skiff: cannot start %s: the kernel, initrd and boot tables do not fit in "
			"guest memory (%s); give the guest more memory with --mem\n",
			what, msg);
	else if (err == -ENOEXEC && o->tiny)
		fprintf(stderr,
			"skiff: cannot start %s: '%s' is no tiny guest image (%s): a tiny guest is "
			"a static, non-PIE x86-64 ELF linked at 1 MiB or above; build it with "
			"tests/guests/ (gcc -ffreestanding -nostdlib -static -no-pie)\n",
			what, o->kernel, msg);
	else if (err == -ENOEXEC)
		fprintf(stderr,
			"skiff: cannot start %s: the kernel image is malformed (%s); rebuild it or "
			"pass another --kernel\n",
			what, msg);
	else if (err == -EADDRINUSE)
		fprintf(stderr,
			"skiff: cannot start %s: another process listens on the vsock uds path "
			"(%s); stop it or choose another uds=PATH\n",
			what, msg);
	else if (err == -ENOTSOCK)
		fprintf(stderr,
			"skiff: cannot start %s: the vsock uds path exists and is not a socket "
			"(%s); remove it or choose another uds=PATH\n",
			what, msg);
	else
		fprintf(stderr, "skiff: cannot start %s: %s\n", what, msg);
	return (err == -E2BIG || err == -ENAMETOOLONG || err == -ENOEXEC || err == -EADDRINUSE ||
		err == -ENOTSOCK) ?
		       SKIFF_STATUS_USAGE :
		       SKIFF_STATUS_VMM_ERROR;
}

/*
 * With SKIFF_STATS=PATH in the environment, write counters as key=value
 * lines to PATH when the VMs have ended (bench/vmm_bench.c, the skiff-linux
 * tests, scripts/demo.sh); with several VMs each key starts with "vmN."
 * (N from 1).
 */
static char stats_buf[4096]; /* the stats file's stdio buffer, see run_vms() */

static void stat_u64(FILE *f, const char *p, const char *key, uint64_t v)
{
	fprintf(f, "%s%s=%llu\n", p, key, (unsigned long long)v);
}

/*
 * Every counter of struct skiff_counters (libskiff.h says what each means),
 * one key=value line each; the vsock_ ones are all 0 without a device.
 */
static void write_stats(FILE *f, const struct vm_run *r, unsigned int nr, uint64_t t_main_ns)
{
	struct skiff_counters c;
	char p[16] = "";

	if (skiff_vm_get_counters(r->vm, &c))
		return;
	if (nr > 1)
		snprintf(p, sizeof(p), "vm%u.", r->idx);
	stat_u64(f, p, "main_to_first_run_ns",
		 c.first_run_mono_ns ? c.first_run_mono_ns - t_main_ns : 0);
	stat_u64(f, p, "create_to_first_run_ns", c.setup_ns);
	stat_u64(f, p, "vm_exits", c.vm_exits);
	stat_u64(f, p, "exits_mmio", c.exits_mmio);
	stat_u64(f, p, "exits_io", c.exits_io);
	stat_u64(f, p, "exits_intr", c.exits_intr);
	stat_u64(f, p, "int3_injected", c.int3_injected);
	stat_u64(f, p, "fwait_handled", c.fwait_handled);
	fprintf(f, "%svsock_status=0x%x\n", p, c.vsock_status);
	fprintf(f, "%svsock_device_features=0x%llx\n%svsock_driver_features=0x%llx\n", p,
		(unsigned long long)c.vsock_device_features, p,
		(unsigned long long)c.vsock_driver_features);
	stat_u64(f, p, "vsock_kicks", c.vsock_kicks);
	stat_u64(f, p, "vsock_notify_exits", c.vsock_notify_exits);
	stat_u64(f, p, "vsock_rx_pkts", c.vsock_rx_pkts);
	stat_u64(f, p, "vsock_rx_bytes", c.vsock_rx_bytes);
	stat_u64(f, p, "vsock_tx_pkts", c.vsock_tx_pkts);
	stat_u64(f, p, "vsock_tx_bytes", c.vsock_tx_bytes);
	stat_u64(f, p, "vsock_irqs_sent", c.vsock_irqs_sent);
	stat_u64(f, p, "vsock_irqs_suppressed", c.vsock_irqs_suppressed);
	stat_u64(f, p, "vsock_conn_resets", c.vsock_conn_resets);
	stat_u64(f, p, "vsock_dropped_pkts", c.vsock_dropped_pkts);
	stat_u64(f, p, "vsock_malformed_pkts", c.vsock_malformed_pkts);
	stat_u64(f, p, "vsock_conns_opened", c.vsock_conns_opened);
	stat_u64(f, p, "vsock_conns_closed", c.vsock_conns_closed);
	stat_u64(f, p, "vsock_conns_refused", c.vsock_conns_refused);
	stat_u64(f, p, "vsock_conns_open", c.vsock_conns_open);
	stat_u64(f, p, "vsock_host_fds", c.vsock_host_fds);
	stat_u64(f, p, "vsock_stray_pkts", c.vsock_stray_pkts);
	stat_u64(f, p, "vsock_rx_pkt_limit_stalls", c.vsock_rx_pkt_limit_stalls);
	stat_u64(f, p, "vsock_dev_resets", c.vsock_dev_resets);
	stat_u64(f, p, "vsock_dgram_tx_pkts", c.vsock_dgram_tx_pkts);
	stat_u64(f, p, "vsock_dgram_tx_bytes", c.vsock_dgram_tx_bytes);
	stat_u64(f, p, "vsock_dgram_tx_drop_malformed", c.vsock_dgram_tx_drop_malformed);
	stat_u64(f, p, "vsock_dgram_tx_drop_no_dest", c.vsock_dgram_tx_drop_no_dest);
	stat_u64(f, p, "vsock_dgram_tx_drop_full", c.vsock_dgram_tx_drop_full);
	stat_u64(f, p, "vsock_dgram_tx_drop_err", c.vsock_dgram_tx_drop_err);
	stat_u64(f, p, "vsock_dgram_rx_pkts", c.vsock_dgram_rx_pkts);
	stat_u64(f, p, "vsock_dgram_rx_bytes", c.vsock_dgram_rx_bytes);
	stat_u64(f, p, "vsock_dgram_rx_drop_no_buf", c.vsock_dgram_rx_drop_no_buf);
	stat_u64(f, p, "vsock_dgram_rx_drop_too_big", c.vsock_dgram_rx_drop_too_big);
	stat_u64(f, p, "vsock_dgram_rx_drop_bad_addr", c.vsock_dgram_rx_drop_bad_addr);
	stat_u64(f, p, "vsock_dgram_rx_drop_err", c.vsock_dgram_rx_drop_err);
	stat_u64(f, p, "vsock_dgram_rx_drop_no_dest", c.vsock_dgram_rx_drop_no_dest);
}

/* "VM 2 (cid 4)", or "VM" when it is the only one. */
static void vm_name(const struct vm_run *r, unsigned int nr, char *buf, size_t len)
{
	if (nr == 1)
		snprintf(buf, len, "VM");
	else if (r->o->vsock_set)
		snprintf(buf, len, "VM %u (cid %llu)", r->idx, (unsigned long long)r->o->vsock.cid);
	else
		snprintf(buf, len, "VM %u", r->idx);
}

/* How each VM ended, on stderr (nothing for a clean end), and skiff's status. */
static int report_ends(struct fleet *f, bool vmm_error)
{
	char name[48];
	unsigned int i;
	int status;

	for (i = 0; i < f->nr; i++) {
		struct vm_run *r = &f->runs[i];

		vm_name(r, f->nr, name, sizeof(name));
		if (r->ex.reason == SKIFF_EXIT_STOPPED && f->signo)
			fprintf(stderr, "skiff: %s ended (stopped): stopped by signal %d (%s)\n",
				name, f->signo, strsignal(f->signo));
		else if (r->ex.reason == SKIFF_EXIT_STOPPED && f->cause && f->cause != r->idx)
			fprintf(stderr, "skiff: %s ended (stopped): VM %u ended first, status %d\n",
				name, f->cause, f->runs[f->cause - 1].status);
		else if (r->ex.reason != SKIFF_EXIT_POWEROFF &&
			 (r->ex.reason != SKIFF_EXIT_GUEST_CODE || (f->nr > 1 && r->status)))
			fprintf(stderr, "skiff: %s ended (%s): %s\n", name,
				skiff_exit_reason_name(r->ex.reason), r->ex.message);
	}
	if (f->signo)
		status = 128 + f->signo;
	else if (vmm_error)
		status = SKIFF_STATUS_VMM_ERROR;
	else
		status = f->cause ? f->runs[f->cause - 1].status : 0;
	return status;
}

/* Create and configure every VM. Return: 0; the exit status after a message. */
static int create_all(struct fleet *f, enum sandbox_mode seccomp)
{
	unsigned int i;
	int err, status;

	for (i = 0; i < f->nr; i++) {
		err = skiff_vm_create(&f->runs[i].vm);
		if (err)
			return kvm_error(err);
		status = configure(f->runs[i].vm, f->runs[i].o, seccomp);
		if (status)
			return status;
	}
	return 0;
}

/* Start every VM in order. Return: 0; the exit status after a message. */
static int start_all(struct fleet *f)
{
	char name[48];
	unsigned int i;
	int err;

	for (i = 0; i < f->nr; i++) {
		struct vm_run *r = &f->runs[i];

		err = skiff_vm_start(r->vm);
		if (!err)
			continue;
		skiff_vm_wait(r->vm, -1, &r->ex);
		if (f->nr == 1)
			snprintf(name, sizeof(name), "the VM");
		else
			vm_name(r, f->nr, name, sizeof(name));
		return start_error(r, name, err);
	}
	return 0;
}

int run_vms(const struct run_opts *o, uint64_t t_main_ns)
{
	struct fleet f = { .lock = PTHREAD_MUTEX_INITIALIZER, .nr = o->nr_vms };
	bool vmm_error = false;
	FILE *stats = NULL;
	unsigned int i;
	pthread_t th;
	int err, status;

	/* Block SIGINT/SIGTERM before any thread exists; one thread sigwait()s for them. */
	sigemptyset(&f.set);
	sigaddset(&f.set, SIGINT);
	sigaddset(&f.set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &f.set, NULL);

	/* File problems are reported even on a host without KVM. */
	for (i = 0; i < o->nr_vms; i++) {
		const struct vm_opts *v = &o->vms[i];

		if (access(v->kernel, R_OK))
			return kernel_error(v->kernel, -errno, v->tiny);
		if (v->initrd && access(v->initrd, R_OK))
			return initrd_error(v->initrd, -errno);
	}

	/* Filters compiled before any thread exists (the signal thread is filtered too). */
	err = sandbox_init(o->seccomp, "skiff");
	if (err) {
		fprintf(stderr, "skiff: cannot set up seccomp (%s): %s\n",
			sandbox_mode_name(o->seccomp), strerror(-err));
		return err == -ENOTSUP ? SKIFF_STATUS_USAGE : SKIFF_STATUS_VMM_ERROR;
	}

	f.runs = calloc(o->nr_vms, sizeof(*f.runs));
	if (!f.runs) {
		fputs("skiff: out of memory\n", stderr);
		return SKIFF_STATUS_VMM_ERROR;
	}
	for (i = 0; i < o->nr_vms; i++) {
		f.runs[i].o = &o->vms[i];
		f.runs[i].idx = i + 1;
		f.runs[i].fleet = &f;
	}
	f.live = true;
	status = create_all(&f, o->seccomp);
	if (status)
		goto out;
	if (pthread_create(&th, NULL, sig_thread, &f) == 0)
		pthread_detach(th);
	status = start_all(&f);
	if (status)
		goto out;

	/* The VMs run: from here on this thread only waits and tears down. */
	for (i = 0; i < f.nr; i++) {
		err = pthread_create(&f.runs[i].waiter, NULL, waiter_thread, &f.runs[i]);
		f.runs[i].waiter_started = !err;
		if (err) {
			fprintf(stderr,
				"skiff: cannot start a thread to wait for VM %u (%s); "
				"stopping the VMs\n",
				i + 1, strerror(err));
			vmm_error = true;
			pthread_mutex_lock(&f.lock);
			stop_all(&f);
			pthread_mutex_unlock(&f.lock);
			break;
		}
	}
	if (getenv("SKIFF_STATS"))
		stats = fopen(getenv("SKIFF_STATS"), "w"); /* opened before the filter forbids it */
	/*
	 * Our own buffer: otherwise stdio allocates one at the first write,
	 * under the filter, and for a character device (/dev/null, a tty)
	 * asks isatty(), an ioctl (TCGETS) that the main thread must not make.
	 */
	if (stats)
		setvbuf(stats, stats_buf, _IOFBF, sizeof(stats_buf));
	if (sandbox_enter(SANDBOX_VMM_MAIN)) {
		fputs("skiff: seccomp: cannot filter the main thread\n", stderr);
		pthread_mutex_lock(&f.lock);
		stop_all(&f);
		pthread_mutex_unlock(&f.lock);
	}
	for (i = 0; i < f.nr; i++) {
		if (f.runs[i].waiter_started)
			pthread_join(f.runs[i].waiter, NULL);
		else
			waiter_thread(&f.runs[i]); /* stopped above: returns at once */
	}
	for (i = 0; stats && i < f.nr; i++)
		write_stats(stats, &f.runs[i], f.nr, t_main_ns);
	if (stats)
		fclose(stats);
	pthread_mutex_lock(&f.lock);
	status = report_ends(&f, vmm_error);
	pthread_mutex_unlock(&f.lock);
out:
	pthread_mutex_lock(&f.lock);
	f.live = false;
	pthread_mutex_unlock(&f.lock);
	for (i = 0; i < f.nr; i++)
		skiff_vm_destroy(f.runs[i].vm);
	free(f.runs);
	return status;
}
