// SPDX-License-Identifier: MIT
/*
 * Filter compilation, installation and the SIGSYS report.
 *
 * Every type's program is compiled once, by sandbox_init() on a thread with
 * no filter, into plain BPF (struct sock_fprog) kept in memory: installing
 * one on a thread is then two system calls (prctl(PR_SET_NO_NEW_PRIVS),
 * seccomp(SECCOMP_SET_MODE_FILTER)) and no allocation, so a filter never has
 * to allow what libseccomp itself would do. System call names are resolved
 * into a table at the same time, so that the SIGSYS handler only reads memory
 * and calls write(2), getpid(2), gettid(2) and tgkill(2), which every filter
 * allows (Documentation/userspace-api/seccomp_filter.rst, SECCOMP_RET_TRAP:
 * si_syscall and si_arch name the call).
 */
#include <errno.h>
#include <malloc.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox_int.h"

#define NAME_TABLE_NR 512 /* x86-64 and arm64 numbers are below this (451 in Linux 6.1) */

/* The audit architecture of this build's system calls (si_arch of a SIGSYS). */
#if defined(__x86_64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "sandbox: add this architecture's AUDIT_ARCH_ value"
#endif
#define NAME_MAX_LEN 24

static const char *const kind_names[SANDBOX_KIND_NUM] = {
	[SANDBOX_VMM_MAIN] = "main",	   [SANDBOX_VMM_SIGNAL] = "signal",
	[SANDBOX_VCPU] = "vcpu",	   [SANDBOX_SERIAL_IN] = "serial-in",
	[SANDBOX_VSOCK_CTL] = "vsock-ctl", [SANDBOX_VSOCK_PUMP] = "vsock-pump",
	[SANDBOX_VU_MAIN] = "vu-main",	   [SANDBOX_VU_SIGNAL] = "vu-signal",
	[SANDBOX_SPAWNER] = "spawner",	   [SANDBOX_VSOCK_LOBBY] = "vsock-lobby",
};

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER; /* protects the set-up below */
static bool inited;
/*
 * Written under init_lock, read by sandbox_mode() on any thread without it
 * (the spawner and device threads read it while sandbox_init() finishes):
 * every store is atomic for those lock-free readers.
 */
static enum sandbox_mode cur_mode;
static const char *prog_name = "skiff";
static struct sock_fprog progs[SANDBOX_KIND_NUM]; /* read-only once inited */
static char names[NAME_TABLE_NR][NAME_MAX_LEN]; /* read-only once inited */

/* The calling thread's type, for the SIGSYS report (-1: not filtered by us). */
static __thread int tls_kind __attribute__((tls_model("initial-exec"))) = -1;

int sandbox_parse_mode(const char *s, enum sandbox_mode *out)
{
	if (!strcmp(s, "kill"))
		*out = SANDBOX_KILL;
	else if (!strcmp(s, "log"))
		*out = SANDBOX_LOG;
	else if (!strcmp(s, "off"))
		*out = SANDBOX_OFF;
	else
		return -EINVAL;
	return 0;
}

const char *sandbox_mode_name(enum sandbox_mode mode)
{
	switch (mode) {
	case SANDBOX_KILL:
		return "kill";
	case SANDBOX_LOG:
		return "log";
	case SANDBOX_OFF:
		break;
	}
	return "off";
}

const char *sandbox_kind_name(enum sandbox_kind kind)
{
	return (unsigned int)kind < SANDBOX_KIND_NUM ? kind_names[kind] : "?";
}

enum sandbox_mode sandbox_mode(void)
{
	return __atomic_load_n(&cur_mode, __ATOMIC_ACQUIRE);
}

/* ---- the SIGSYS report (async-signal-safe) ---- */

static size_t put_str(char *buf, size_t pos, size_t cap, const char *s)
{
	while (*s && pos + 1 < cap)
		buf[pos++] = *s++;
	return pos;
}

static size_t put_num(char *buf, size_t pos, size_t cap, unsigned long v, unsigned int base)
{
	char tmp[24];
	size_t n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < sizeof(tmp));
	while (n && pos + 1 < cap)
		buf[pos++] = tmp[--n];
	return pos;
}

static void on_sigsys(int sig, siginfo_t *si, void *uctx)
{
	int kind = tls_kind;
	unsigned int nr = (unsigned int)si->si_syscall;
	char buf[256];
	size_t n = 0;
	ssize_t w;

	n = put_str(buf, n, sizeof(buf), prog_name);
	n = put_str(buf, n, sizeof(buf), ": seccomp: thread '");
	n = put_str(buf, n, sizeof(buf),
		    kind >= 0 && kind < SANDBOX_KIND_NUM ? kind_names[kind] : "unknown");
	n = put_str(buf, n, sizeof(buf), "' made a forbidden system call ");
	if (si->si_arch != SANDBOX_AUDIT_ARCH) {
		n = put_str(buf, n, sizeof(buf), "of arch 0x");
		n = put_num(buf, n, sizeof(buf), si->si_arch, 16);
		n = put_str(buf, n, sizeof(buf), " ");
	} else if (nr < NAME_TABLE_NR && names[nr][0]) {
		n = put_str(buf, n, sizeof(buf), names[nr]);
		n = put_str(buf, n, sizeof(buf), " ");
	}
	n = put_str(buf, n, sizeof(buf), "(");
	n = put_num(buf, n, sizeof(buf), nr, 10);
	n = put_str(buf, n, sizeof(buf), "); ending the process\n");
	w = write(STDERR_FILENO, buf, n);
	(void)w;
	/* SA_RESETHAND made SIGSYS default again and SA_NODEFER left it unblocked. */
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGSYS);
	/* Not reached; should tgkill fail, a trapped call now kills by SIGSYS. */
	syscall(SYS_ptrace, 0, 0, 0, 0);
	_exit(128 + SIGSYS);
}

/* ---- compilation ---- */

static int compile_one(enum sandbox_kind kind, uint32_t def_action, struct sock_fprog *out)
{
	scmp_filter_ctx ctx = seccomp_init(def_action);
	struct sock_filter *insns = NULL;
	off_t size;
	int fd = -1, ret;

	if (!ctx)
		return -ENOMEM;
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, def_action);
	if (!ret)
		ret = sandbox_add_rules(ctx, kind);
	if (ret)
		goto out;
	fd = memfd_create("skiff-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = seccomp_export_bpf(ctx, fd);
	if (ret)
		goto out;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(*insns) ||
	    size / (off_t)sizeof(*insns) > BPF_MAXINSNS) {
		ret = -E2BIG;
		goto out;
	}
	insns = malloc((size_t)size);
	if (!insns) {
		ret = -ENOMEM;
		goto out;
	}
	if (pread(fd, insns, (size_t)size, 0) != size) {
		ret = -EIO;
		free(insns);
		goto out;
	}
	out->len = (unsigned short)(size / (off_t)sizeof(*insns));
	out->filter = insns;
out:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return ret;
}

static void resolve_names(void)
{
	unsigned int nr;

	for (nr = 0; nr < NAME_TABLE_NR; nr++) {
		char *s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr);

		if (s) {
			snprintf(names[nr], sizeof(names[nr]), "%s", s);
			free(s);
		}
	}
}

/*
 * glibc's malloc opens /proc/sys/vm/overcommit_memory the first time it gives
 * a thread arena's memory back (check_may_shrink_heap(), malloc/arena.c) and
 * caches the answer. Make that first time happen here, on a thread with no
 * filter: free enough memory of a fresh thread's arena for heap_trim() to
 * shrink it. Otherwise a device thread closing many connections would do it
 * under its filter, which rightly has no open.
 */
static void *warm_arena(void *unused)
{
	void *p[32];
	unsigned int i;

	for (i = 0; i < 32; i++) {
		p[i] = malloc(64 * 1024); /* below the mmap threshold: from the arena */
		__asm__ volatile("" : : "r"(p[i]) : "memory"); /* keep the pair */
	}
	for (i = 0; i < 32; i++)
		free(p[i]);
	return NULL;
}

static void warm_malloc(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t t;

	/*
	 * Once more than 8 arenas exist, the next thread that needs one makes
	 * glibc size the arena limit from /sys/devices/system/cpu/online
	 * (arena_get2(), malloc/arena.c): an open under whatever filter that
	 * thread has. Setting the limit here, to glibc's own default of 8 per
	 * online CPU, means that file is never read later.
	 */
	mallopt(M_ARENA_MAX, (int)(8 * (cpus > 0 ? cpus : 1)));
	if (!pthread_create(&t, NULL, warm_arena, NULL))
		pthread_join(t, NULL);
}

int sandbox_init(enum sandbox_mode mode, const char *prog)
{
	struct sigaction sa;
	uint32_t def_action;
	unsigned int k;
	int ret = 0;

	pthread_mutex_lock(&init_lock);
	if (inited) {
		if (mode != cur_mode)
			ret = -EBUSY;
		else if (mode != SANDBOX_OFF)
			ret = sandbox_spawner_start(); /* a no-op unless we are a fork child */
		goto out;
	}
	if (prog)
		prog_name = prog;
	if (mode == SANDBOX_OFF)
		goto done;
	if (mode == SANDBOX_LOG && seccomp_api_get() < 3) {
		ret = -ENOTSUP;
		goto out;
	}
	def_action = mode == SANDBOX_KILL ? SCMP_ACT_TRAP : SCMP_ACT_LOG;
	for (k = 0; k < SANDBOX_KIND_NUM && !ret; k++)
		ret = compile_one(k, def_action, &progs[k]);
	if (ret)
		goto err_free;
	resolve_names();
	warm_malloc();
#ifdef SKIFF_TEST_HOOKS
	sandbox_test_hook_init();
#endif
	if (mode == SANDBOX_KILL) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigsys;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESETHAND;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSYS, &sa, NULL)) {
			ret = -errno;
			goto err_free;
		}
	}
	__atomic_store_n(&cur_mode, mode, __ATOMIC_RELEASE);
	ret = sandbox_spawner_start();
	if (ret) {
		__atomic_store_n(&cur_mode, SANDBOX_OFF, __ATOMIC_RELEASE);
		goto err_free;
	}
done:
	__atomic_store_n(&cur_mode, mode, __ATOMIC_RELEASE);
	inited = true;
out:
	pthread_mutex_unlock(&init_lock);
	return ret;
err_free:
	/* Not inited: nothing was installed, a later call starts over. */
	for (k = 0; k < SANDBOX_KIND_NUM; k++) {
		free(progs[k].filter);
		progs[k].filter = NULL;
	}
	goto out;
}

int sandbox_enter(enum sandbox_kind kind)
{
	enum sandbox_mode mode = sandbox_mode();

	if ((unsigned int)kind >= SANDBOX_KIND_NUM)
		return -EINVAL;
	if (mode == SANDBOX_OFF)
		return 0;
	if (!progs[kind].filter)
		return -EINVAL;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	tls_kind = (int)kind;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &progs[kind])) {
		tls_kind = -1;
		return -errno;
	}
#ifdef SKIFF_TEST_HOOKS
	sandbox_test_hook_run(kind);
#endif
	return 0;
}
