// SPDX-License-Identifier: MIT
/*
 * libskiff's seccomp setting (skiff_vm_set_seccomp()): argument checks, a
 * tiny guest run to its exit code under KILL with several vCPUs, the setting
 * frozen after start, and one mode per process.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "vmm_test_util.h"

#define MEM (16ull << 20)

static struct skiff_vm *tiny_vm(const char *cmdline, unsigned int vcpus)
{
	struct skiff_vm *vm;

	ck_assert_int_eq(skiff_vm_create(&vm), 0);
	ck_assert_int_eq(skiff_vm_set_kernel(vm, guest_path("guest_exit"), SKIFF_KERNEL_TINY), 0);
	ck_assert_int_eq(skiff_vm_set_cmdline(vm, cmdline), 0);
	ck_assert_int_eq(skiff_vm_set_memory(vm, MEM), 0);
	ck_assert_int_eq(skiff_vm_set_vcpus(vm, vcpus), 0);
	ck_assert_int_eq(skiff_vm_set_console(vm, SKIFF_CONSOLE_NONE, NULL, -1), 0);
	return vm;
}

START_TEST(bad_arguments)
{
	struct skiff_vm *vm = tiny_vm("n=1 code=0", 1);

	ck_assert_int_eq(skiff_vm_set_seccomp(NULL, SKIFF_SECCOMP_KILL), -EINVAL);
	ck_assert_int_eq(skiff_vm_set_seccomp(vm, (enum skiff_seccomp_mode)3), -EINVAL);
	ck_assert_int_eq(skiff_vm_set_seccomp(vm, (enum skiff_seccomp_mode) - 1), -EINVAL);
	ck_assert_int_eq(skiff_vm_set_seccomp(vm, SKIFF_SECCOMP_LOG), 0);
	ck_assert_int_eq(skiff_vm_set_seccomp(vm, SKIFF_SECCOMP_OFF), 0);
	skiff_vm_destroy(vm);
}
END_TEST

START_TEST(kill_runs_guest_then_frozen)
{
	struct skiff_vm *vm = tiny_vm("n=50 code=9", 2);
	struct skiff_exit ex;

	ck_assert_int_eq(skiff_vm_set_seccomp(vm, SKIFF_SECCOMP_KILL), 0);
	ck_assert_int_eq(skiff_vm_start(vm), 0);
	ck_assert_int_eq(skiff_vm_set_seccomp(vm, SKIFF_SECCOMP_OFF), -EBUSY);
	ck_assert_int_eq(skiff_vm_wait(vm, 60000, &ex), 0);
	ck_assert_int_eq(ex.reason, SKIFF_EXIT_GUEST_CODE);
	ck_assert_uint_eq(ex.code, 9);
	skiff_vm_destroy(vm);
}
END_TEST

START_TEST(one_mode_per_process)
{
	struct skiff_vm *a = tiny_vm("n=1 code=3", 1), *b = tiny_vm("n=1 code=4", 1);
	struct skiff_vm *c = tiny_vm("n=1 code=5", 1);
	struct skiff_exit ex;

	ck_assert_int_eq(skiff_vm_set_seccomp(a, SKIFF_SECCOMP_KILL), 0);
	ck_assert_int_eq(skiff_vm_set_seccomp(b, SKIFF_SECCOMP_LOG), 0);
	ck_assert_int_eq(skiff_vm_start(a), 0);
	ck_assert_int_eq(skiff_vm_wait(a, 60000, &ex), 0);
	ck_assert_uint_eq(ex.code, 3);
	/* LOG after KILL in the same process: refused, nothing left running */
	ck_assert_int_eq(skiff_vm_start(b), -EBUSY);
	ck_assert_int_eq(skiff_vm_wait(b, 60000, &ex), 0);
	ck_assert_int_eq(ex.reason, SKIFF_EXIT_VMM_ERROR);
	/* OFF next to KILL is fine: that VM's threads are just not filtered */
	ck_assert_int_eq(skiff_vm_start(c), 0);
	ck_assert_int_eq(skiff_vm_wait(c, 60000, &ex), 0);
	ck_assert_uint_eq(ex.code, 5);
	skiff_vm_destroy(a);
	skiff_vm_destroy(b);
	skiff_vm_destroy(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("seccomp_api");
	TCase *tc = tcase_create("api");
	SRunner *sr;
	int failed;

	if (!kvm_present())
		return SKIP_CODE;
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, bad_arguments);
	tcase_add_test(tc, kill_runs_guest_then_frozen);
	tcase_add_test(tc, one_mode_per_process);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
