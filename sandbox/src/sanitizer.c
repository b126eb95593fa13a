// SPDX-License-Identifier: MIT
/*
 * SKIFF_SANITIZE builds only: what the ASan/UBSan runtime does on any thread
 * on its normal path (per-thread alternate signal stacks, shadow and fake
 * stack mappings, reading its own options, yielding in its spin locks).
 * Compiled out of normal builds, whose filters never contain it.
 *
 * A sanitizer report from a filtered thread is written with write(2) to
 * stderr, which every filter allows; symbolizing it (opening files, running
 * llvm-symbolizer) is not allowed, so a report ends in a seccomp message:
 * run a sanitized build with --seccomp log or off to read symbolized reports.
 */
#include <errno.h>
#include <sys/prctl.h>

#include "sandbox_int.h"

/*
 * LeakSanitizer's exit-time check stops the world with a tracer task made by
 * clone(2) without CLONE_THREAD that ptrace(2)s every thread: neither has a
 * place in any filter, so with filters on the check is turned off (the hook
 * of compiler-rt's lsan_interface.h); with --seccomp off, and in every test
 * that does not use the sandbox, leaks are still checked.
 */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return sandbox_mode() != SANDBOX_OFF;
}

int sandbox_add_sanitizer(scmp_filter_ctx ctx)
{
	static const int nrs[] = {
		SCMP_SYS(sigaltstack), SCMP_SYS(sched_yield),  SCMP_SYS(getrlimit),
		SCMP_SYS(prlimit64),   SCMP_SYS(rt_sigaction), SCMP_SYS(sched_getaffinity),
	};
	unsigned int i;
	int ret;

	for (i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nrs[i], 0);
		if (ret && ret != -EEXIST)
			return ret;
	}
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
			       SCMP_A0(SCMP_CMP_EQ, PR_GET_DUMPABLE));
	return ret == -EEXIST ? 0 : ret;
}
