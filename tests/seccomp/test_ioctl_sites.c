// SPDX-License-Identifier: MIT
/*
 * Every ioctl a thread can issue is in its seccomp allowlist, and no
 * allowlist has an ioctl that no code issues on that thread (issue 22: the
 * vCPU filter lacked KVM_GET_FPU, which the fwait answer calls).
 *
 * The table below names every ioctl call site of the product code (file,
 * enclosing function, request) with the thread types that can reach it;
 * SETUP means only before any filter is installed (VM creation, vCPU set-up).
 * Two checks, neither of which can go stale:
 *   - sites: the sources under vmm/, devices/, vhost_user/ and sandbox/ are
 *     scanned for ioctl( (and isatty(, an ioctl TCGETS): a call site missing
 *     from the table, or a table row whose call site is gone, fails. A new
 *     call must name its request as a macro at the call site.
 *   - filters: for every thread type and every request of the table, a
 *     child process installs that type's real filter (KILL) and issues the
 *     ioctl on fd -1. Allowed: EBADF; forbidden: SIGSYS. Allowed must equal
 *     "some row of this request names this thread type".
 * What the table cannot see is a new caller of an existing function from
 * another thread; the linux-kvm and vmm tests run their guests under KILL
 * for that.
 */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "skiff/sandbox.h"

#ifndef __aarch64__
/*
 * The arm64 vCPU ioctls' argument (arch/arm64/include/uapi/asm/kvm.h), only
 * so that KVM_ARM_VCPU_INIT and KVM_ARM_PREFERRED_TARGET have their numbers
 * on other hosts: the table lists the arm64 call sites everywhere.
 */
struct kvm_vcpu_init {
	__u32 target;
	__u32 features[7];
};
#endif

#define SETUP 0u
#define T(kind) (1u << (kind))
#define VCPU T(SANDBOX_VCPU)
#define MAIN T(SANDBOX_VMM_MAIN)
#define SERIAL_IN T(SANDBOX_SERIAL_IN)

struct site {
	const char *file; /* relative to the source tree */
	const char *func; /* enclosing function */
	const char *req_name;
	unsigned long req;
	unsigned int kinds; /* T(SANDBOX_*) of the threads that can reach it; SETUP: none */
	bool seen; /* found in the sources by this run */
};

#define SITE(file, func, req, kinds)                \
	{                                           \
		file, func, #req, req, kinds, false \
	}

static struct site sites[] = {
	/* VM creation and set-up: the creating thread, before skiff_vm_start() filters anything */
	SITE("vmm/src/libskiff.c", "skiff_vm_create", KVM_GET_API_VERSION, SETUP),
	SITE("vmm/src/libskiff.c", "skiff_vm_create", KVM_CHECK_EXTENSION, SETUP),
	SITE("vmm/src/libskiff.c", "build_vm", KVM_CREATE_VM, SETUP),
	SITE("vmm/src/libskiff.c", "build_vm", KVM_SET_USER_MEMORY_REGION, SETUP),
	SITE("vmm/src/libskiff.c", "open_console", TCGETS, SETUP), /* isatty() */
	SITE("vmm/arch/x86_64/x86.c", "set_gsi_routing", KVM_SET_GSI_ROUTING, SETUP),
	SITE("vmm/arch/x86_64/x86.c", "arch_vm_init", KVM_SET_TSS_ADDR, SETUP),
	SITE("vmm/arch/x86_64/x86.c", "arch_vm_init", KVM_SET_IDENTITY_MAP_ADDR, SETUP),
	SITE("vmm/arch/x86_64/x86.c", "arch_vm_init", KVM_CREATE_IRQCHIP, SETUP),
	SITE("vmm/arch/x86_64/x86.c", "arch_vm_init", KVM_CREATE_PIT2, SETUP),
	SITE("vmm/src/vcpu.c", "vcpu_create", KVM_CREATE_VCPU, SETUP),
	SITE("vmm/src/vcpu.c", "vcpu_create", KVM_GET_VCPU_MMAP_SIZE, SETUP),
	SITE("vmm/arch/x86_64/cpu.c", "setup_cpuid", KVM_GET_SUPPORTED_CPUID, SETUP),
	SITE("vmm/arch/x86_64/cpu.c", "setup_cpuid", KVM_SET_CPUID2, SETUP),
	SITE("vmm/arch/x86_64/cpu.c", "setup_lapic", KVM_GET_LAPIC, SETUP),
	SITE("vmm/arch/x86_64/cpu.c", "setup_lapic", KVM_SET_LAPIC, SETUP),
	SITE("vmm/arch/x86_64/cpu.c", "setup_boot_regs", KVM_GET_SREGS, SETUP),
	SITE("vmm/arch/x86_64/cpu.c", "setup_boot_regs", KVM_SET_SREGS, SETUP),
	SITE("vmm/arch/x86_64/cpu.c", "setup_boot_regs", KVM_SET_REGS, SETUP),
	SITE("vmm/arch/x86_64/cpu.c", "arch_vcpu_init", KVM_SET_FPU, SETUP),
	SITE("vmm/arch/aarch64/arm64.c", "enable_nisv", KVM_CHECK_EXTENSION, SETUP),
	SITE("vmm/arch/aarch64/arm64.c", "enable_nisv", KVM_ENABLE_CAP, SETUP),
	SITE("vmm/arch/aarch64/arm64_vgic.c", "arm64_vgic_create", KVM_CREATE_DEVICE, SETUP),
	SITE("vmm/arch/aarch64/arm64_vgic.c", "vgic_set", KVM_SET_DEVICE_ATTR, SETUP),
	SITE("vmm/arch/aarch64/arm64_vcpu.c", "arch_vcpu_init", KVM_ARM_PREFERRED_TARGET, SETUP),
	SITE("vmm/arch/aarch64/arm64_vcpu.c", "arch_vcpu_init", KVM_ARM_VCPU_INIT, SETUP),
	SITE("vmm/arch/aarch64/arm64_vcpu.c", "set_reg", KVM_SET_ONE_REG, SETUP),
	/* virtio-mmio: registered at creation, deregistered by skiff_vm_destroy() (main) */
	SITE("vmm/src/virtio_mmio.c", "ioeventfd", KVM_IOEVENTFD, MAIN),
	SITE("vmm/src/virtio_mmio.c", "irqfd", KVM_IRQFD, MAIN),
	/* the UART's interrupt: guest port writes (vCPU), console input */
	SITE("vmm/src/libskiff.c", "vm_irq_line", KVM_IRQ_LINE, VCPU | SERIAL_IN),
	/* the vCPU loop and its exit handlers */
	SITE("vmm/src/vcpu.c", "vcpu_thread", KVM_RUN, VCPU),
	SITE("vmm/arch/x86_64/x86.c", "fetch_insn", KVM_TRANSLATE, VCPU),
	SITE("vmm/arch/x86_64/x86.c", "step_and_inject", KVM_SET_REGS, VCPU),
	SITE("vmm/arch/x86_64/x86.c", "step_and_inject", KVM_GET_VCPU_EVENTS, VCPU),
	SITE("vmm/arch/x86_64/x86.c", "step_and_inject", KVM_SET_VCPU_EVENTS, VCPU),
	SITE("vmm/arch/x86_64/x86.c", "answer_fwait", KVM_GET_FPU, VCPU),
	SITE("vmm/arch/x86_64/x86.c", "arch_handle_internal_error", KVM_GET_REGS, VCPU),
	SITE("vmm/arch/x86_64/x86.c", "arch_describe_vcpu", KVM_GET_REGS, VCPU),
	SITE("vmm/arch/x86_64/x86.c", "arch_describe_vcpu", KVM_GET_SREGS, VCPU),
	/* arm64's arch_describe_vcpu(): PC, PSTATE, SP_EL1 for exit messages */
	SITE("vmm/arch/aarch64/arm64_vcpu.c", "get_reg", KVM_GET_ONE_REG, VCPU),
};

#define NSITES (sizeof(sites) / sizeof(sites[0]))

static const char *const scan_dirs[] = { "vmm", "devices", "vhost_user", "sandbox" };

/* Calls that are an ioctl, and the request of those that do not name it. */
static const struct {
	const char *name;
	const char *implied_req; /* NULL: the second argument */
} calls[] = { { "ioctl", NULL }, { "isatty", "TCGETS" } };

static char problems[8192];
static size_t problems_len;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (problems_len >= sizeof(problems) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(problems + problems_len, sizeof(problems) - problems_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		problems_len += (size_t)n;
	if (problems_len > sizeof(problems) - 1)
		problems_len = sizeof(problems) - 1;
}

static bool is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Blank out comments, string and character literals (newlines kept). */
static void strip(char *s)
{
	char *p = s;

	while (*p) {
		if (p[0] == '/' && p[1] == '*') {
			for (; *p && !(p[0] == '*' && p[1] == '/'); p++)
				if (*p != '\n')
					*p = ' ';
			if (*p)
				p[0] = p[1] = ' ', p += 2;
		} else if (p[0] == '/' && p[1] == '/') {
			for (; *p && *p != '\n'; p++)
				*p = ' ';
		} else if (*p == '"' || *p == '\'') {
			char q = *p++;

			for (; *p && *p != q && *p != '\n'; p++) {
				if (*p == '\\' && p[1])
					*p++ = ' ';
				*p = ' ';
			}
			if (*p == q)
				p++;
		} else {
			p++;
		}
	}
}

/*
 * The function whose definition encloses @pos: the last line before it that
 * starts in column 0 with an identifier and has a '(' (kernel style puts
 * every definition's name there; statements are indented).
 */
static void enclosing_func(const char *text, const char *pos, char *out, size_t len)
{
	const char *line = text, *best = NULL, *p;

	for (p = text; p < pos; p++) {
		if (p == text || p[-1] == '\n') {
			line = p;
			if (is_ident(*line) &&
			    memchr(line, '(', (size_t)(strchrnul(line, '\n') - line)))
				best = line;
		}
	}
	out[0] = 0;
	if (!best)
		return;
	p = strchr(best, '(');
	while (p > best && !is_ident(p[-1]))
		p--;
	line = p;
	while (line > best && is_ident(line[-1]))
		line--;
	snprintf(out, len, "%.*s", (int)(p - line), line);
}

/* The @n-th (0-based) top-level argument of the call whose '(' is at @open. */
static void call_arg(const char *open, unsigned int n, char *out, size_t len)
{
	const char *p = open + 1, *start = p;
	unsigned int depth = 0, idx = 0;

	out[0] = 0;
	for (; *p; p++) {
		if (*p == '(' || *p == '[' || *p == '{') {
			depth++;
		} else if ((*p == ')' || *p == ']' || *p == '}') && depth) {
			depth--;
		} else if ((*p == ',' || *p == ')') && !depth) {
			if (idx == n) {
				while (start < p && isspace((unsigned char)*start))
					start++;
				while (p > start && isspace((unsigned char)p[-1]))
					p--;
				snprintf(out, len, "%.*s", (int)(p - start), start);
				return;
			}
			if (*p == ')')
				return;
			idx++;
			start = p + 1;
		}
	}
}

static void record_site(const char *rel, const char *func, const char *req, unsigned int line)
{
	unsigned int i;
	bool found = false;

	for (i = 0; i < NSITES; i++) {
		if (!strcmp(sites[i].file, rel) && !strcmp(sites[i].func, func) &&
		    !strcmp(sites[i].req_name, req)) {
			sites[i].seen = true;
			found = true;
		}
	}
	if (!found)
		problem("%s:%u: ioctl %s in %s() is not in the table of %s: add it with the "
			"thread types that can reach it, and allow it in their filters "
			"(sandbox/src/allow.c)\n",
			rel, line, req, func, __FILE__);
}

static void scan_file(const char *path, const char *rel)
{
	FILE *f = fopen(path, "r");
	char *text, func[128], req[128];
	unsigned int c;
	long size;
	const char *p;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)size + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	strip(text);
	for (c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
		size_t nlen = strlen(calls[c].name);

		for (p = text; (p = strstr(p, calls[c].name)); p += nlen) {
			const char *q = p + nlen, *l;
			unsigned int line = 1;

			if ((p > text && (is_ident(p[-1]) || p[-1] == '.' || p[-1] == '>')) ||
			    is_ident(*q))
				continue;
			while (*q == ' ' || *q == '\t')
				q++;
			if (*q != '(')
				continue;
			for (l = text; l < p; l++)
				line += *l == '\n';
			enclosing_func(text, p, func, sizeof(func));
			if (!func[0] || !strcmp(func, calls[c].name))
				continue; /* a declaration or the wrapper's own definition */
			if (calls[c].implied_req)
				snprintf(req, sizeof(req), "%s", calls[c].implied_req);
			else
				call_arg(q, 1, req, sizeof(req));
			if (!req[0] || !(isupper((unsigned char)req[0]) || req[0] == '_') ||
			    strspn(req, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(req)) {
				problem("%s:%u: ioctl in %s() with request '%s': name the request "
					"by its macro at the call site, so this test can check it\n",
					rel, line, func, req);
				continue;
			}
			record_site(rel, func, req, line);
		}
	}
	free(text);
}

static void scan_dir(const char *root, const char *rel)
{
	char path[2048], sub[1024];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	d = opendir(path);
	ck_assert_msg(d != NULL, "%s: %s", path, strerror(errno));
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name);
		snprintf(path, sizeof(path), "%s/%s", root, sub);
		if (stat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode))
			scan_dir(root, sub);
		else if (n > 2 &&
			 (!strcmp(e->d_name + n - 2, ".c") || !strcmp(e->d_name + n - 2, ".h")))
			scan_file(path, sub);
	}
	closedir(d);
}

START_TEST(every_call_site_in_table)
{
	unsigned int i;

	for (i = 0; i < sizeof(scan_dirs) / sizeof(scan_dirs[0]); i++)
		scan_dir(SOURCE_DIR, scan_dirs[i]);
	for (i = 0; i < NSITES; i++)
		if (!sites[i].seen)
			problem("table row %s %s() %s: no such call site any more; remove or "
				"update the row (and the filters' allowlists)\n",
				sites[i].file, sites[i].func, sites[i].req_name);
	ck_assert_msg(!problems_len, "\n%s", problems);
}
END_TEST

/* Whether @kind's filter lets ioctl(-1, @req) through (EBADF) rather than trap it. */
static bool filter_allows(enum sandbox_kind kind, unsigned long req)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		long r;

		/* The SIGSYS report would be noise: a trap is the answer here. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(3);
		if (sandbox_enter(kind))
			_exit(2);
		r = syscall(SYS_ioctl, -1, req, 0);
		_exit(r == -1 && errno == EBADF ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		return false;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: ioctl 0x%lx in a child: status 0x%x", sandbox_kind_name(kind), req,
		      status);
	return true;
}

START_TEST(filters_match_table)
{
	unsigned int i, j, k;

	ck_assert_int_eq(sandbox_init(SANDBOX_KILL, "test_ioctl_sites"), 0);
	for (i = 0; i < NSITES; i++) {
		unsigned int want = 0;

		for (j = 0; j < i; j++)
			if (sites[j].req == sites[i].req)
				break;
		if (j < i)
			continue; /* this request was checked with its first row */
		for (j = i; j < NSITES; j++)
			if (sites[j].req == sites[i].req)
				want |= sites[j].kinds;
		for (k = 0; k < SANDBOX_KIND_NUM; k++) {
			bool allowed = filter_allows(k, sites[i].req);

			if (allowed && !(want & T(k)))
				problem("filter '%s' allows %s, which no code issues on that "
					"thread: remove it from sandbox/src/allow.c\n",
					sandbox_kind_name(k), sites[i].req_name);
			else if (!allowed && (want & T(k)))
				problem("filter '%s' lacks %s, which the thread issues: add it to "
					"sandbox/src/allow.c\n",
					sandbox_kind_name(k), sites[i].req_name);
		}
	}
	ck_assert_msg(!problems_len, "\n%s", problems);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("seccomp_ioctl_sites");
	TCase *tc = tcase_create("sites");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_call_site_in_table);
	tcase_add_test(tc, filters_match_table);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
