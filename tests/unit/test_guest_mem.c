// SPDX-License-Identifier: MIT
/* Unit tests: guest memory translation (gm_set, gm_map, gm_ptr). */
#include <check.h>
#include <errno.h>
#include <stdint.h>

#include "guest_mem.h"

static char a[4096], b[4096], c[4096];

static void setup_two(struct guest_mem *gm)
{
	struct vsock_mem_region r[] = { { 0x1000, sizeof(a), a },
					{ 0x2000, sizeof(b), b },
					{ 0x10000, sizeof(c), c } };

	ck_assert_int_eq(gm_set(gm, r, 3), 0);
}

START_TEST(set_rejects_bad_tables)
{
	struct guest_mem gm = { 0 };
	struct vsock_mem_region zero[] = { { 0x1000, 0, a } };
	struct vsock_mem_region wrap[] = { { UINT64_MAX - 10, 100, a } };
	struct vsock_mem_region overlap[] = { { 0x1000, 0x1000, a }, { 0x1800, 0x1000, b } };
	struct vsock_mem_region many[VSOCK_MAX_MEM_REGIONS + 1];
	unsigned int i;

	ck_assert_int_eq(gm_set(&gm, zero, 1), -EINVAL);
	ck_assert_int_eq(gm_set(&gm, wrap, 1), -EINVAL);
	ck_assert_int_eq(gm_set(&gm, overlap, 2), -EINVAL);
	for (i = 0; i < VSOCK_MAX_MEM_REGIONS + 1; i++)
		many[i] = (struct vsock_mem_region){ 0x1000ull * (i + 1), 0x1000, a };
	ck_assert_int_eq(gm_set(&gm, many, VSOCK_MAX_MEM_REGIONS + 1), -EINVAL);
	ck_assert_int_eq(gm_set(&gm, many, VSOCK_MAX_MEM_REGIONS), 0);
	ck_assert_uint_eq(gm.n, VSOCK_MAX_MEM_REGIONS);
}
END_TEST

START_TEST(map_inside_one_region)
{
	struct guest_mem gm;
	struct iovec iov[4];
	unsigned int n = 0;

	setup_two(&gm);
	ck_assert_int_eq(gm_map(&gm, 0x1010, 100, iov, 4, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_ptr_eq(iov[0].iov_base, a + 0x10);
	ck_assert_uint_eq(iov[0].iov_len, 100);
	/* Exactly the whole region. */
	ck_assert_int_eq(gm_map(&gm, 0x10000, 4096, iov, 4, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_ptr_eq(iov[1].iov_base, c);
	ck_assert_uint_eq(iov[1].iov_len, 4096);
}
END_TEST

START_TEST(map_splits_adjacent_regions)
{
	struct guest_mem gm;
	struct iovec iov[4];
	unsigned int n = 0;

	setup_two(&gm);
	ck_assert_int_eq(gm_map(&gm, 0x1ff0, 0x20, iov, 4, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_ptr_eq(iov[0].iov_base, a + 0xff0);
	ck_assert_uint_eq(iov[0].iov_len, 0x10);
	ck_assert_ptr_eq(iov[1].iov_base, b);
	ck_assert_uint_eq(iov[1].iov_len, 0x10);
	/* Not enough room for the split: nothing appended. */
	n = 3;
	ck_assert_int_eq(gm_map(&gm, 0x1ff0, 0x20, iov, 4, &n), -ENOBUFS);
	ck_assert_uint_eq(n, 3);
}
END_TEST

START_TEST(map_rejects_outside_and_overflow)
{
	struct guest_mem gm;
	struct iovec iov[4];
	unsigned int n = 0;

	setup_two(&gm);
	ck_assert_int_eq(gm_map(&gm, 0x0, 1, iov, 4, &n), -EFAULT);
	ck_assert_int_eq(gm_map(&gm, 0x2fff, 2, iov, 4, &n), -EFAULT); /* runs into a hole */
	ck_assert_int_eq(gm_map(&gm, 0x10000, 4097, iov, 4, &n), -EFAULT);
	ck_assert_int_eq(gm_map(&gm, UINT64_MAX, 2, iov, 4, &n), -EFAULT);
	ck_assert_int_eq(gm_map(&gm, 0x1000, UINT64_MAX, iov, 4, &n), -EFAULT);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(gm_map(&gm, 0x5000, 0, iov, 4, &n), 0); /* empty: nothing */
	ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(ptr_single_region_only)
{
	struct guest_mem gm;

	setup_two(&gm);
	ck_assert_ptr_eq(gm_ptr(&gm, 0x1000, 4096), a);
	ck_assert_ptr_null(gm_ptr(&gm, 0x1ff0, 0x20)); /* spans two regions */
	ck_assert_ptr_null(gm_ptr(&gm, 0x1000, 0));
	ck_assert_ptr_null(gm_ptr(&gm, UINT64_MAX - 1, 4));
	ck_assert_ptr_null(gm_ptr(&gm, 0x3000, 1));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("guest_mem");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, set_rejects_bad_tables);
	tcase_add_test(tc, map_inside_one_region);
	tcase_add_test(tc, map_splits_adjacent_regions);
	tcase_add_test(tc, map_rejects_outside_and_overflow);
	tcase_add_test(tc, ptr_single_region_only);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
