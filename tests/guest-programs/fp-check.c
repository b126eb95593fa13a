// SPDX-License-Identifier: MIT
/*
 * fp-check: do the FP/SIMD registers of a guest process survive what the guest
 * kernel does to it? (issue 15, guest-kernel-patches/host-support/README.md).
 * Static, runs in the test guests' initramfs; the host side is
 * tests/guest-programs/fp_check_test.sh.
 *
 *   fp-check [--procs P] [--rounds R]
 *   fp-check --xsave-size     print "FP-CHECK-XSAVE cpuid_size=N": CPUID leaf
 *                             0xD's size of the XSAVE area for the features
 *                             enabled in XCR0 (0 without XSAVE), and exit
 *
 * P processes (default 3) run R rounds (default 400) each. A round loads a
 * pattern unique to the process and the round into every vector register the
 * CPU and the host OS enable (xmm0-15 for SSE, ymm0-15 with AVX, zmm0-31 and
 * k0-7 with AVX-512F) and into MXCSR, then, within the same asm block: makes
 * one system call (sched_yield(), so another process runs on the guest's one
 * CPU; kill(getpid(), SIGUSR1), whose handler loads a different pattern; or
 * getpid()), writes to a page it has not touched yet (a page fault the guest
 * kernel resolves) and stores the registers back. They must hold the pattern.
 *
 * The SIGUSR1 handler also checks the signal frame the guest kernel built, as
 * x86-64 Linux defines it: uc_mcontext.fpregs holds the interrupted xmm
 * registers and MXCSR; if its sw_reserved bytes carry FP_XSTATE_MAGIC1, an
 * XSAVE image of xstate_size bytes (standard format) follows, ending in
 * FP_XSTATE_MAGIC2, whose components hold the interrupted ymm/zmm/k state.
 *
 * Then a debugger's view: a child loads a pattern and stops itself with
 * SIGSTOP (in the same asm block); its tracer must read the child's xmm
 * registers and MXCSR with PTRACE_GETFPREGS, write others with
 * PTRACE_SETFPREGS, and the child must find exactly those after it resumes,
 * every other register unchanged.
 *
 * Output: per process that passed, "FP-CHECK-PROC proc=I signals=N
 * frame_xstate=BYTES" (the xstate_size of its signal frames' XSAVE image, 0
 * if they had none); per process that failed, "FP-CHECK-ERROR proc=I ..."
 * saying what differed first; "FP-CHECK-PTRACE status=ok|fail [what]"; then
 * one line "FP-CHECK status=ok|fail level=sse|avx|avx512 procs=P rounds=R".
 * Exit status: 0 ok, 1 fail, 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cpuid.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_PROCS 16

/* x86-64 signal frame FP layout (arch/x86/include/uapi/asm/sigcontext.h) */
#define XSTATE_MAGIC1 0x46505853u /* FP_XSTATE_MAGIC1 */
#define XSTATE_MAGIC2 0x46505845u /* FP_XSTATE_MAGIC2 */
#define FXSAVE_MXCSR 24
#define FXSAVE_XMM 160
#define FXSAVE_SW_BYTES 464
#define XSAVE_HDR_BV 512

enum level { L_SSE, L_AVX, L_AVX512 };
static const char *const level_name[] = { "sse", "avx", "avx512" };
/* XSAVE state components each level uses: x87+SSE, +AVX, +opmask/ZMM_Hi256/Hi16_ZMM */
static const uint64_t level_features[] = { 0x3, 0x7, 0xe7 };

/* Register image: vector register r at v[r], whatever the width. */
struct regs {
	uint8_t v[32][64] __attribute__((aligned(64)));
	uint16_t k[8];
	uint32_t mxcsr;
};

/* One system call (nr -1: none) made between loading and storing the registers. */
struct action {
	long nr, a0, a1;
	volatile char *touch; /* written after the call */
};

static enum level level;
/* XSAVE standard-format offsets of components 2 (YMM_Hi128), 5-7 (AVX-512) */
static unsigned int comp_off[8];

static int nvec(void)
{
	return level == L_AVX512 ? 32 : 16;
}

static int vwidth(void)
{
	return level == L_SSE ? 16 : level == L_AVX ? 32 : 64;
}

static void detect(void)
{
	unsigned int a, b, c, d, xcr0_lo, xcr0_hi;

	level = L_SSE;
	__cpuid(1, a, b, c, d);
	if (!(c & bit_OSXSAVE) || !(c & bit_AVX))
		return;
	__asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
	if ((xcr0_lo & 0x6) != 0x6)
		return;
	level = L_AVX;
	__cpuid_count(0xd, 2, a, b, c, d);
	comp_off[2] = b;
	__cpuid_count(7, 0, a, b, c, d);
	if (!(b & bit_AVX512F) || (xcr0_lo & 0xe6) != 0xe6)
		return;
	level = L_AVX512;
	for (int i = 5; i <= 7; i++) {
		__cpuid_count(0xd, i, a, b, c, d);
		comp_off[i] = b;
	}
}

#define IRP16 ".irp r,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
#define IRP32                                                                \
	".irp r,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22," \
	"23,24,25,26,27,28,29,30,31\n"
#define XMM_CLOBBERS                                                                             \
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
		"xmm11", "xmm12", "xmm13", "xmm14", "xmm15"
#define ZMM_CLOBBERS                                                                          \
	XMM_CLOBBERS, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", \
		"xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k0", \
		"k1", "k2", "k3", "k4", "k5", "k6", "k7"

/*
 * Load @in, make the call of @a, write to a->touch, store the registers into
 * @out. Nothing but the kernel runs between load and store.
 */
static void run_sse(const struct regs *in, struct regs *out, const struct action *a)
{
	long nr = a->nr;

	__asm__ volatile("ldmxcsr %[imx]\n" IRP16 "movdqu \\r*64(%[in]), %%xmm\\r\n.endr\n"
			 "test %%rax, %%rax\n js 1f\n syscall\n1:\n"
			 "movb $1, (%[touch])\n" IRP16 "movdqu %%xmm\\r, \\r*64(%[out])\n.endr\n"
			 "stmxcsr %[omx]\n"
			 : "+a"(nr), [omx] "=m"(out->mxcsr)
			 : [in] "r"(in->v), [out] "r"(out->v), [touch] "r"(a->touch), "D"(a->a0),
			   "S"(a->a1), [imx] "m"(in->mxcsr)
			 : "rcx", "r11", "memory", XMM_CLOBBERS);
}

__attribute__((target("avx"))) static void run_avx(const struct regs *in, struct regs *out,
						   const struct action *a)
{
	long nr = a->nr;

	__asm__ volatile("vldmxcsr %[imx]\n" IRP16 "vmovdqu \\r*64(%[in]), %%ymm\\r\n.endr\n"
			 "test %%rax, %%rax\n js 1f\n syscall\n1:\n"
			 "movb $1, (%[touch])\n" IRP16 "vmovdqu %%ymm\\r, \\r*64(%[out])\n.endr\n"
			 "vstmxcsr %[omx]\n"
			 : "+a"(nr), [omx] "=m"(out->mxcsr)
			 : [in] "r"(in->v), [out] "r"(out->v), [touch] "r"(a->touch), "D"(a->a0),
			   "S"(a->a1), [imx] "m"(in->mxcsr)
			 : "rcx", "r11", "memory", XMM_CLOBBERS);
}

__attribute__((target("avx512f"))) static void run_avx512(const struct regs *in, struct regs *out,
							  const struct action *a)
{
	long nr = a->nr;

	__asm__ volatile("vldmxcsr %[imx]\n" IRP32 "vmovdqu64 \\r*64(%[in]), %%zmm\\r\n.endr\n"
			 ".irp r,0,1,2,3,4,5,6,7\n"
			 "kmovw \\r*2(%[ik]), %%k\\r\n.endr\n"
			 "test %%rax, %%rax\n js 1f\n syscall\n1:\n"
			 "movb $1, (%[touch])\n" IRP32 "vmovdqu64 %%zmm\\r, \\r*64(%[out])\n.endr\n"
			 ".irp r,0,1,2,3,4,5,6,7\n"
			 "kmovw %%k\\r, \\r*2(%[ok])\n.endr\n"
			 "vstmxcsr %[omx]\n"
			 : "+a"(nr), [omx] "=m"(out->mxcsr)
			 : [in] "r"(in->v), [out] "r"(out->v), [ik] "r"(in->k), [ok] "r"(out->k),
			   [touch] "r"(a->touch), "D"(a->a0), "S"(a->a1), [imx] "m"(in->mxcsr)
			 : "rcx", "r11", "memory", ZMM_CLOBBERS);
}

static void run(const struct regs *in, struct regs *out, const struct action *a)
{
	if (level == L_AVX512)
		run_avx512(in, out, a);
	else if (level == L_AVX)
		run_avx(in, out, a);
	else
		run_sse(in, out, a);
}

/* splitmix64: the pattern generator */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill(struct regs *r, uint64_t seed)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < nvec(); i++)
		for (int j = 0; j < vwidth(); j += 8) {
			uint64_t x = mix(&seed);

			memcpy(&r->v[i][j], &x, 8);
		}
	if (level == L_AVX512)
		for (int i = 0; i < 8; i++)
			r->k[i] = (uint16_t)mix(&seed);
	/* all exceptions masked; rounding mode, DAZ and FTZ vary */
	r->mxcsr = 0x1f80 | (uint32_t)(mix(&seed) & 0xe040);
}

/* First difference of @got from @want as text in @buf, or NULL. */
static const char *diff(const struct regs *want, const struct regs *got, char *buf, size_t len)
{
	for (int i = 0; i < nvec(); i++)
		if (memcmp(want->v[i], got->v[i], vwidth())) {
			snprintf(buf, len, "vector register %d", i);
			return buf;
		}
	for (int i = 0; level == L_AVX512 && i < 8; i++)
		if (want->k[i] != got->k[i]) {
			snprintf(buf, len, "k%d: want %#x got %#x", i, want->k[i], got->k[i]);
			return buf;
		}
	if (want->mxcsr != got->mxcsr) {
		snprintf(buf, len, "mxcsr: want %#x got %#x", want->mxcsr, got->mxcsr);
		return buf;
	}
	return NULL;
}

/* The signal handler's view: what it must find in the frame, what it loads. */
static const struct regs *sig_want;
static struct regs sig_clobber, sig_scratch;
static char scratch_byte;
static const struct action no_call = { .nr = -1, .touch = &scratch_byte };
static volatile sig_atomic_t sig_count;
static char sig_error[160];
static unsigned int frame_xstate;

static void frame_error(const char *what)
{
	if (!sig_error[0])
		snprintf(sig_error, sizeof(sig_error), "signal frame: %s", what);
}

/* Compare @n bytes of register r's image at @src (stride @step) with want. */
static int frame_cmp(const uint8_t *src, int first, int count, int step, int from, int n)
{
	for (int i = 0; i < count; i++)
		if (memcmp(src + i * step, &sig_want->v[first + i][from], n))
			return first + i;
	return -1;
}

static void check_frame(const ucontext_t *uc)
{
	const uint8_t *fp = (const uint8_t *)uc->uc_mcontext.fpregs;
	uint32_t magic1, ext, size, mxcsr, magic2;
	uint64_t bv, xf;
	char msg[96];
	int r = -1;

	if (!fp) {
		frame_error("no fpregs");
		return;
	}
	memcpy(&mxcsr, fp + FXSAVE_MXCSR, 4);
	if (mxcsr != sig_want->mxcsr) {
		frame_error("mxcsr differs");
		return;
	}
	r = frame_cmp(fp + FXSAVE_XMM, 0, 16, 16, 0, 16);
	if (r >= 0) {
		snprintf(msg, sizeof(msg), "xmm%d differs", r);
		frame_error(msg);
		return;
	}
	memcpy(&magic1, fp + FXSAVE_SW_BYTES, 4);
	if (magic1 != XSTATE_MAGIC1)
		return; /* a legacy (FXSAVE only) frame */
	memcpy(&ext, fp + FXSAVE_SW_BYTES + 4, 4);
	memcpy(&size, fp + FXSAVE_SW_BYTES + 16, 4);
	if (size < XSAVE_HDR_BV + 64 || ext < size + 4) {
		snprintf(msg, sizeof(msg), "xstate_size %u extended_size %u", size, ext);
		frame_error(msg);
		return;
	}
	memcpy(&magic2, fp + size, 4);
	if (magic2 != XSTATE_MAGIC2) {
		snprintf(msg, sizeof(msg),
			 "FP_XSTATE_MAGIC1 but no FP_XSTATE_MAGIC2 at xstate_size %u", size);
		frame_error(msg);
		return;
	}
	frame_xstate = size;
	memcpy(&xf, fp + FXSAVE_SW_BYTES + 8, 8);
	if ((xf & level_features[level]) != level_features[level]) {
		snprintf(msg, sizeof(msg), "xfeatures %#llx lacks %#llx", (unsigned long long)xf,
			 (unsigned long long)level_features[level]);
		frame_error(msg);
		return;
	}
	memcpy(&bv, fp + XSAVE_HDR_BV, 8);
	if (level >= L_AVX) {
		if (!(bv & 4) || comp_off[2] + 256 > size ||
		    (r = frame_cmp(fp + comp_off[2], 0, 16, 16, 16, 16)) >= 0) {
			snprintf(msg, sizeof(msg), "ymm%d upper half differs", r);
			frame_error(msg);
			return;
		}
	}
	if (level == L_AVX512) {
		if ((bv & 0xe0) != 0xe0 || comp_off[7] + 1024 > size) {
			frame_error("AVX-512 state missing");
			return;
		}
		if ((r = frame_cmp(fp + comp_off[6], 0, 16, 32, 32, 32)) >= 0 ||
		    (r = frame_cmp(fp + comp_off[7], 16, 16, 64, 0, 64)) >= 0) {
			snprintf(msg, sizeof(msg), "zmm%d differs", r);
			frame_error(msg);
			return;
		}
		for (int i = 0; i < 8; i++) {
			uint64_t k;

			memcpy(&k, fp + comp_off[5] + 8 * i, 8);
			if (k != sig_want->k[i]) {
				snprintf(msg, sizeof(msg), "k%d differs", i);
				frame_error(msg);
				return;
			}
		}
	}
}

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	sig_count++;
	check_frame(ctx);
	/* Leave other values behind: sigreturn must bring the old ones back. */
	run(&sig_clobber, &sig_scratch, &no_call);
}

/* One process: R rounds. Returns 0 or 1 (and prints FP-CHECK-ERROR). */
static int worker(int id, int rounds)
{
	static struct regs in, out;
	long page = sysconf(_SC_PAGESIZE);
	char *pages, buf[128];
	const char *d;
	struct sigaction sa;

	pages = mmap(NULL, (size_t)rounds * page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED) {
		printf("FP-CHECK-ERROR proc=%d mmap: %s\n", id, strerror(errno));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);

	for (int r = 0; r < rounds; r++) {
		struct action a = { .touch = pages + (long)r * page };

		switch (r % 4) {
		case 1:
			a.nr = SYS_kill;
			a.a0 = getpid();
			a.a1 = SIGUSR1;
			break;
		case 2:
			a.nr = SYS_getpid;
			break;
		default:
			a.nr = SYS_sched_yield;
			break;
		}
		fill(&in, ((uint64_t)id << 32) | (uint64_t)r);
		fill(&sig_clobber, ~(((uint64_t)id << 32) | (uint64_t)r));
		sig_want = &in;
		run(&in, &out, &a);
		d = diff(&in, &out, buf, sizeof(buf));
		if (d || sig_error[0]) {
			printf("FP-CHECK-ERROR proc=%d round=%d after %s: %s%s%s\n", id, r,
			       a.nr == SYS_kill	       ? "a signal handler" :
			       a.nr == SYS_sched_yield ? "sched_yield" :
							 "getpid",
			       d ? d : "registers ok", sig_error[0] ? "; " : "", sig_error);
			return 1;
		}
	}
	printf("FP-CHECK-PROC proc=%d signals=%d frame_xstate=%u\n", id, (int)sig_count,
	       frame_xstate);
	return 0;
}

/* The tracee of ptrace_check(): stops with @a loaded, must resume with @want */
static int tracee(const struct regs *a, const struct regs *want)
{
	static struct regs out;
	struct action stop = { .nr = SYS_kill, .a0 = getpid(), .a1 = SIGSTOP };
	char buf[128];
	const char *d;

	stop.touch = &scratch_byte;
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
		return 1;
	run(a, &out, &stop);
	d = diff(want, &out, buf, sizeof(buf));
	if (d)
		printf("FP-CHECK-PTRACE status=fail tracee resumed with other values: %s\n", d);
	return d ? 1 : 0;
}

static int ptrace_check(void)
{
	static struct regs a, b, want;
	struct user_fpregs_struct fpr;
	const char *err = NULL;
	int st = 0;
	pid_t pid;

	fill(&a, 0xfeed0001);
	fill(&b, 0xfeed0002);
	want = a; /* b's xmm (low 128 bits) and MXCSR, a's everything else */
	for (int i = 0; i < 16; i++)
		memcpy(want.v[i], b.v[i], 16);
	want.mxcsr = b.mxcsr;

	pid = fork();
	if (pid < 0)
		err = "fork failed";
	else if (pid == 0)
		_exit(tracee(&a, &want));
	else if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGSTOP)
		err = "tracee did not stop";
	else if (ptrace(PTRACE_GETFPREGS, pid, NULL, &fpr) < 0)
		err = "PTRACE_GETFPREGS failed";
	else if (fpr.mxcsr != a.mxcsr)
		err = "PTRACE_GETFPREGS: MXCSR is not the tracee's";
	for (int i = 0; !err && i < 16; i++)
		if (memcmp((char *)fpr.xmm_space + 16 * i, a.v[i], 16))
			err = "PTRACE_GETFPREGS: xmm registers are not the tracee's";
	if (!err) {
		for (int i = 0; i < 16; i++)
			memcpy((char *)fpr.xmm_space + 16 * i, b.v[i], 16);
		fpr.mxcsr = b.mxcsr;
		if (ptrace(PTRACE_SETFPREGS, pid, NULL, &fpr) < 0)
			err = "PTRACE_SETFPREGS failed";
		else if (ptrace(PTRACE_CONT, pid, NULL, NULL) < 0)
			err = "PTRACE_CONT failed";
		else if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			err = "tracee failed"; /* it said why */
	} else if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	if (!err)
		printf("FP-CHECK-PTRACE status=ok\n");
	else if (strcmp(err, "tracee failed"))
		printf("FP-CHECK-PTRACE status=fail %s\n", err);
	return err ? 1 : 0;
}

static int print_xsave_size(void)
{
	unsigned int a, b = 0, c, d;

	__cpuid(1, a, b, c, d);
	b = 0;
	if (c & bit_OSXSAVE)
		__cpuid_count(0xd, 0, a, b, c, d);
	printf("FP-CHECK-XSAVE cpuid_size=%u\n", b);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "procs", required_argument, NULL, 'p' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "xsave-size", no_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	int procs = 3, rounds = 400, c, bad = 0;
	pid_t pids[MAX_PROCS];

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'p')
			procs = atoi(optarg);
		else if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 'x')
			return print_xsave_size();
		else
			return 2;
	}
	if (procs < 1 || procs > MAX_PROCS || rounds < 4) {
		fprintf(stderr, "fp-check: --procs 1..%d, --rounds >= 4\n", MAX_PROCS);
		return 2;
	}
	detect();
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (int i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fp-check: fork");
			return 1;
		}
		if (pids[i] == 0)
			_exit(worker(i, rounds));
	}
	for (int i = 0; i < procs; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			if (!(WIFEXITED(st) && WEXITSTATUS(st) == 1))
				printf("FP-CHECK-ERROR proc=%d status %#x\n", i, st);
			bad = 1;
		}
	}
	if (ptrace_check())
		bad = 1;
	printf("FP-CHECK status=%s level=%s procs=%d rounds=%d\n", bad ? "fail" : "ok",
	       level_name[level], procs, rounds);
	return bad;
}
