// SPDX-License-Identifier: MIT
/*
 * skiff: the command-line front end of libskiff.
 *
 *   skiff run --kernel PATH [options]     boot a VM, exit with how it ended
 *   skiff help | --help | -h | --version | -V
 *
 * Exit status: see usage() below and libskiff.h (SKIFF_STATUS_*). A command-
 * line mistake is one line naming the option, the value and what is valid
 * (helpers shared with skiff-vsock: cli_common/), then SKIFF_STATUS_USAGE.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libskiff.h"
#include "parse.h"
#include "skiff/cli.h"
#include "skiff/sandbox.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: skiff run --kernel PATH [options]\n"
		"       skiff help | --help | -h\n"
		"       skiff --version | -V\n"
		"\n"
		"Boot a KVM microVM with an in-process virtio-vsock device.\n"
		"\n"
		"options of run (each that takes a value at most once):\n"
		"  --kernel PATH        Linux bzImage or ELF vmlinux (x86-64), or with\n"
		"                       --tiny-guest a static ELF entered at CPL3\n"
		"  --tiny-guest         boot --kernel as a tiny test guest (64-bit, CPL3,\n"
		"                       identity-mapped user pages; see tests/guests/)\n"
		"  --initrd PATH        initial ramdisk (Linux)\n"
		"  --cmdline STR        kernel command line (default for Linux:\n"
		"                       \"console=ttyS0 reboot=k panic=-1\"); with --vsock,\n"
		"                       \"virtio_mmio.device=4K@0xd0000000:5\" is appended\n"
		"  --mem SIZE           guest RAM, K/M/G suffixes, multiple of 2M,\n"
		"                       2M..3G (default 128M)\n"
		"  --cpus N             vCPUs, 1..%d (default 1)\n"
		"  --vsock " VSOCK_FORM "\n"
		"                       the VM's virtio-vsock device (one per VM) on\n"
		"                       virtio-mmio; items separated by single commas,\n"
		"                       each key once:\n"
		"                         cid         guest CID, 3..4294967294\n"
		"                         uds         host-side socket path, at most 96\n"
		"                                     bytes, in an existing directory\n"
		"                         rx-threads  RX pump threads, 1..%u (default:\n"
		"                                     one per online core, at most 4)\n"
		"                         mrg-rxbuf   offer mergeable RX buffers\n"
		"                                     (default off)\n"
		"                       host side is Firecracker-style: connect to PATH\n"
		"                       and send \"CONNECT <port>\\n\"; guest connections\n"
		"                       to port P go to PATH_P\n"
		"  --console stdio|file:PATH|none\n"
		"                       where COM1 (ttyS0) goes (default stdio; input\n"
		"                       is read from stdin when it is a terminal)\n"
		"  --seccomp kill|log|off\n"
		"                       seccomp filter per thread type (default kill: a\n"
		"                       forbidden system call ends skiff by SIGSYS with a\n"
		"                       message naming the thread and the call; log: the\n"
		"                       kernel logs it and lets it run)\n"
		"  -h, --help           this text\n"
		"\n"
		"exit status:\n"
		"  0      guest powered off (or a tiny guest exited with 0)\n"
		"  1-63   a tiny guest's exit code (debug device) / debug-exit port value\n"
		"  64     bad command line or configuration\n"
		"  65     guest rebooted\n"
		"  66     guest panic\n"
		"  67     triple fault\n"
		"  68     guest error (instruction KVM could not emulate, failed entry)\n"
		"  69     guest exit code above 63\n"
		"  70     VMM error (KVM, host resources)\n"
		"  130/143 stopped by SIGINT/SIGTERM\n",
		SKIFF_MAX_VCPUS, SKIFF_VSOCK_MAX_RX_THREADS);
}

/* The signal thread: turns SIGINT/SIGTERM into skiff_vm_stop(). */
struct sig_ctx {
	pthread_mutex_t lock; /* protects vm and signo */
	struct skiff_vm *vm; /* NULL once main is tearing down */
	int signo;
	sigset_t set;
};

static void *sig_thread(void *arg)
{
	struct sig_ctx *c = arg;
	int sig;

	if (sandbox_enter(SANDBOX_VMM_SIGNAL)) {
		fputs("skiff: seccomp: cannot filter the signal thread\n", stderr);
		exit(SKIFF_STATUS_VMM_ERROR);
	}

	for (;;) {
		if (sigwait(&c->set, &sig))
			continue;
		pthread_mutex_lock(&c->lock);
		if (!c->signo)
			c->signo = sig;
		if (c->vm)
			skiff_vm_stop(c->vm);
		pthread_mutex_unlock(&c->lock);
	}
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

struct run_opts {
	const char *kernel, *initrd, *cmdline;
	bool tiny;
	bool mem_set;
	uint64_t mem;
	unsigned int cpus;
	bool vsock_set;
	char *vsock_buf; /* the --vsock copy that vsock.uds points into; freed by cmd_run() */
	struct vsock_opt vsock;
	enum skiff_console_kind console;
	const char *console_path;
	enum sandbox_mode seccomp;
};

static const struct option run_longopts[] = {
	{ "kernel", required_argument, NULL, 'k' },
	{ "initrd", required_argument, NULL, 'i' },
	{ "cmdline", required_argument, NULL, 'c' },
	{ "mem", required_argument, NULL, 'm' },
	{ "cpus", required_argument, NULL, 'n' },
	{ "vsock", required_argument, NULL, 'v' },
	{ "console", required_argument, NULL, 'o' },
	{ "tiny-guest", no_argument, NULL, 't' },
	{ "seccomp", required_argument, NULL, 'S' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* One option of run and its value. Return: 0; -EINVAL after a message. */
static int run_option(int c, char *arg, struct run_opts *o)
{
	uint64_t v;

	switch (c) {
	case 'k':
		o->kernel = arg;
		break;
	case 'i':
		o->initrd = arg;
		break;
	case 'c':
		o->cmdline = arg;
		break;
	case 't':
		o->tiny = true;
		break;
	case 'm':
		if (cli_parse_size(arg, &o->mem) || o->mem < (2u << 20) || o->mem > (3ull << 30) ||
		    o->mem % (2u << 20)) {
			cli_bad_value("skiff", "--mem", arg,
				      "give a multiple of 2M from 2M to 3G, with a K, M or G "
				      "suffix (e.g. --mem 256M)");
			return -EINVAL;
		}
		o->mem_set = true;
		break;
	case 'n':
		if (cli_parse_uint(arg, 1, SKIFF_MAX_VCPUS, &v)) {
			cli_bad_value("skiff", "--cpus", arg, "give a number of vCPUs from 1 to %d",
				      SKIFF_MAX_VCPUS);
			return -EINVAL;
		}
		o->cpus = (unsigned int)v;
		break;
	case 'v':
		o->vsock_buf = strdup(arg); /* cut up by parse_vsock(); argv stays as given */
		if (!o->vsock_buf) {
			fputs("skiff: out of memory\n", stderr);
			return -EINVAL;
		}
		if (parse_vsock(o->vsock_buf, arg, &o->vsock) ||
		    cli_check_sock_path("skiff", "vsock socket", "uds=PATH", o->vsock.uds, 11))
			return -EINVAL;
		o->vsock_set = true;
		break;
	case 'o':
		if (parse_console(arg, &o->console, &o->console_path)) {
			cli_bad_value("skiff", "--console", arg, "give stdio, none or file:PATH");
			return -EINVAL;
		}
		if (o->console_path && cli_check_out_file("skiff", "console file",
							  "--console file:PATH", o->console_path))
			return -EINVAL;
		break;
	case 'S':
		if (sandbox_parse_mode(arg, &o->seccomp)) {
			cli_bad_value("skiff", "--seccomp", arg, "give kill, log or off");
			return -EINVAL;
		}
		break;
	}
	return 0;
}

static int parse_run(int argc, char **argv, struct run_opts *o)
{
	const char *seen[256] = { NULL };
	int c;

	memset(o, 0, sizeof(*o));
	o->cpus = 1;
	o->console = SKIFF_CONSOLE_STDIO;
	o->seccomp = SANDBOX_KILL;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", run_longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == '?' || c == ':') {
			cli_getopt_error("skiff", c, argv, run_longopts);
			return -EINVAL;
		}
		if (c != 't' &&
		    cli_once("skiff", run_longopts, seen, c, optarg,
			     c == 'v' ? "a VM has one vsock device: give --vsock once" : NULL))
			return -EINVAL;
		if (run_option(c, optarg, o))
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr,
			"skiff: unexpected argument '%s'; run takes options only (see skiff "
			"--help)\n",
			argv[optind]);
		return -EINVAL;
	}
	if (!o->kernel) {
		fprintf(stderr, "skiff: no kernel given; pass --kernel PATH (see skiff --help)\n");
		return -EINVAL;
	}
	return 0;
}

static int initrd_error(const char *path, int err)
{
	fprintf(stderr,
		"skiff: cannot read initrd '%s' (%s); check the path given to --initrd and its "
		"permissions\n",
		path, strerror(-err));
	return SKIFF_STATUS_USAGE;
}

static int configure(struct skiff_vm *vm, const struct run_opts *o)
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
	if (skiff_vm_set_seccomp(vm, (enum skiff_seccomp_mode)o->seccomp))
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

static uint64_t t_main_ns; /* CLOCK_MONOTONIC at main() */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * With SKIFF_STATS=PATH in the environment, write counters as key=value
 * lines to PATH when the VM has ended (for bench/vmm_bench.c and the
 * skiff-linux tests): the VMM's, then the vsock device's (struct
 * skiff_counters, libskiff.h, says what each one counts; all 0 without
 * --vsock).
 */
static char stats_buf[1024]; /* the stats file's stdio buffer, see cmd_run() */

static void write_stats(struct skiff_vm *vm, FILE *f)
{
	struct skiff_counters c;

	if (!f)
		return;
	if (skiff_vm_get_counters(vm, &c)) {
		fclose(f);
		return;
	}
	fprintf(f, "main_to_first_run_ns=%llu\ncreate_to_first_run_ns=%llu\nvm_exits=%llu\n",
		(unsigned long long)(c.first_run_mono_ns ? c.first_run_mono_ns - t_main_ns : 0),
		(unsigned long long)c.setup_ns, (unsigned long long)c.vm_exits);
	fprintf(f, "int3_injected=%llu\nfwait_handled=%llu\nvsock_status=0x%x\n",
		(unsigned long long)c.int3_injected, (unsigned long long)c.fwait_handled,
		c.vsock_status);
	fprintf(f, "vsock_device_features=0x%llx\nvsock_driver_features=0x%llx\n",
		(unsigned long long)c.vsock_device_features,
		(unsigned long long)c.vsock_driver_features);
	fprintf(f, "vsock_kicks=%llu\nvsock_rx_pkts=%llu\nvsock_tx_pkts=%llu\n",
		(unsigned long long)c.vsock_kicks, (unsigned long long)c.vsock_rx_pkts,
		(unsigned long long)c.vsock_tx_pkts);
	fprintf(f, "vsock_rx_bytes=%llu\nvsock_tx_bytes=%llu\nvsock_conns_opened=%llu\n",
		(unsigned long long)c.vsock_rx_bytes, (unsigned long long)c.vsock_tx_bytes,
		(unsigned long long)c.vsock_conns_opened);
	fprintf(f, "vsock_conns_refused=%llu\nvsock_conn_resets=%llu\nvsock_malformed_pkts=%llu\n",
		(unsigned long long)c.vsock_conns_refused, (unsigned long long)c.vsock_conn_resets,
		(unsigned long long)c.vsock_malformed_pkts);
	fprintf(f, "vsock_dropped_pkts=%llu\nvsock_stray_pkts=%llu\n",
		(unsigned long long)c.vsock_dropped_pkts, (unsigned long long)c.vsock_stray_pkts);
	fclose(f);
}

/* Boot the VM @o describes and wait for its end. Return: the exit status. */
static int run_vm(const struct run_opts *o)
{
	struct sig_ctx sc = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct skiff_exit ex;
	struct skiff_vm *vm;
	FILE *stats = NULL;
	pthread_t th;
	int err, status;

	/* Block SIGINT/SIGTERM before any thread exists; one thread sigwait()s for them. */
	sigemptyset(&sc.set);
	sigaddset(&sc.set, SIGINT);
	sigaddset(&sc.set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sc.set, NULL);

	/* File problems are reported even on a host without KVM. */
	if (access(o->kernel, R_OK))
		return kernel_error(o->kernel, -errno, o->tiny);
	if (o->initrd && access(o->initrd, R_OK))
		return initrd_error(o->initrd, -errno);

	/* Filters compiled before any thread exists (the signal thread is filtered too). */
	err = sandbox_init(o->seccomp, "skiff");
	if (err) {
		fprintf(stderr, "skiff: cannot set up seccomp (%s): %s\n",
			sandbox_mode_name(o->seccomp), strerror(-err));
		return err == -ENOTSUP ? SKIFF_STATUS_USAGE : SKIFF_STATUS_VMM_ERROR;
	}

	err = skiff_vm_create(&vm);
	if (err)
		return kvm_error(err);
	status = configure(vm, o);
	if (status) {
		skiff_vm_destroy(vm);
		return status;
	}
	sc.vm = vm;
	if (pthread_create(&th, NULL, sig_thread, &sc) == 0)
		pthread_detach(th);

	err = skiff_vm_start(vm);
	if (err) {
		skiff_vm_wait(vm, -1, &ex);
		if (err == -ENAMETOOLONG)
			fprintf(stderr,
				"skiff: bad --cmdline: %zu bytes, longer than the kernel takes with "
				"what skiff appends (%s); the x86-64 boot protocol allows at most "
				"2047 bytes in all (the kernel's cmdline_size may be less), a tiny "
				"guest 4095: shorten it\n",
				o->cmdline ? strlen(o->cmdline) : 0, ex.message);
		else if (err == -E2BIG)
			fprintf(stderr,
				"skiff: cannot start the VM: the kernel and initrd do not fit in "
				"guest memory (%s); give the guest more memory with --mem\n",
				ex.message);
		else if (err == -ENOEXEC && o->tiny)
			fprintf(stderr,
				"skiff: cannot start the VM: '%s' is no tiny guest image (%s): a tiny "
				"guest is a static, non-PIE x86-64 ELF linked at 1 MiB or above; build "
				"it with tests/guests/ (gcc -ffreestanding -nostdlib -static -no-pie)\n",
				o->kernel, ex.message);
		else if (err == -ENOEXEC)
			fprintf(stderr,
				"skiff: cannot start the VM: the kernel image is malformed (%s); "
				"rebuild it or pass another --kernel\n",
				ex.message);
		else if (err == -EADDRINUSE)
			fprintf(stderr,
				"skiff: cannot start the VM: another process listens on the vsock "
				"uds path (%s); stop it or choose another uds=PATH\n",
				ex.message);
		else if (err == -ENOTSOCK)
			fprintf(stderr,
				"skiff: cannot start the VM: the vsock uds path exists and is not a "
				"socket (%s); remove it or choose another uds=PATH\n",
				ex.message);
		else
			fprintf(stderr, "skiff: cannot start the VM: %s\n", ex.message);
		status = (err == -E2BIG || err == -ENAMETOOLONG || err == -ENOEXEC ||
			  err == -EADDRINUSE || err == -ENOTSOCK) ?
				 SKIFF_STATUS_USAGE :
				 SKIFF_STATUS_VMM_ERROR;
		goto out;
	}
	/* The VM runs: from here on the main thread only waits and tears down. */
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
		skiff_vm_stop(vm);
	}
	skiff_vm_wait(vm, -1, &ex);
	write_stats(vm, stats);
	status = skiff_exit_status(&ex);
	pthread_mutex_lock(&sc.lock);
	if (ex.reason == SKIFF_EXIT_STOPPED && sc.signo) {
		status = 128 + sc.signo;
		snprintf(ex.message, sizeof(ex.message), "stopped by signal %d (%s)", sc.signo,
			 strsignal(sc.signo));
	}
	pthread_mutex_unlock(&sc.lock);
	if (ex.reason != SKIFF_EXIT_POWEROFF && ex.reason != SKIFF_EXIT_GUEST_CODE)
		fprintf(stderr, "skiff: VM ended (%s): %s\n", skiff_exit_reason_name(ex.reason),
			ex.message);
out:
	pthread_mutex_lock(&sc.lock);
	sc.vm = NULL;
	pthread_mutex_unlock(&sc.lock);
	skiff_vm_destroy(vm);
	return status;
}

static int cmd_run(int argc, char **argv)
{
	struct run_opts o;
	int status;

	status = parse_run(argc, argv, &o) ? SKIFF_STATUS_USAGE : run_vm(&o);
	free(o.vsock_buf);
	return status;
}

/* Is @arg one of run's options (--kernel, --kernel=X, ...)? */
static bool is_run_option(const char *arg)
{
	const struct option *o;
	size_t n;

	if (strncmp(arg, "--", 2))
		return false;
	for (o = run_longopts; o->name; o++) {
		n = strlen(o->name);
		if (o->val != 'h' && !strncmp(arg + 2, o->name, n) &&
		    (arg[n + 2] == '\0' || arg[n + 2] == '='))
			return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	const char *cmd = argc >= 2 ? argv[1] : NULL;

	t_main_ns = mono_ns();
	if (cmd && (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))) {
		usage(stdout);
		return 0;
	}
	if (cmd && (!strcmp(cmd, "--version") || !strcmp(cmd, "-V"))) {
		printf("skiff %s\n", skiff_version());
		return 0;
	}
	if (cmd && !strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (cmd && is_run_option(cmd)) {
		int i;

		/* "skiff --kernel X ...": options of run without the command. */
		fprintf(stderr,
			"skiff: '%s' is an option of the run command; did you mean: skiff run",
			cmd);
		for (i = 1; i < argc; i++)
			fprintf(stderr, " %s", argv[i]);
		fprintf(stderr, "\n");
		return SKIFF_STATUS_USAGE;
	}
	if (!cmd)
		fprintf(stderr, "skiff: no command given; ");
	else if (cmd[0] == '-')
		fprintf(stderr, "skiff: unknown option '%s'; ", cmd);
	else
		fprintf(stderr, "skiff: unknown command '%s'; ", cmd);
	fprintf(stderr, "the commands are run and help, the options --help and --version "
			"(e.g. skiff run --kernel PATH)\n");
	return SKIFF_STATUS_USAGE;
}
