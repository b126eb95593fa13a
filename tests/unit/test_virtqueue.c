// SPDX-License-Identifier: MIT
/* Unit tests: split virtqueue device side and the iovec helpers. */
#include <check.h>
#include <errno.h>

#include "fake_ring.h"
#include "iov.h"

#define FEAT_ALL ((1ull << VIRTIO_RING_F_INDIRECT_DESC) | (1ull << VIRTIO_RING_F_EVENT_IDX))

static struct fake f;

static void setup_all(void)
{
	fake_init(&f, FEAT_ALL);
}

static void setup_plain(void)
{
	fake_init(&f, 0);
}

static void teardown(void)
{
	fake_fini(&f);
}

START_TEST(empty_ring)
{
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 0);
	ck_assert(!vq_has_avail(&f.vq));
}
END_TEST

START_TEST(readable_then_writable)
{
	struct vring_desc *d = fake_desc(&f);

	fake_set_desc(&f, d, 3, BUF_GPA, 44, VRING_DESC_F_NEXT, 7);
	fake_set_desc(&f, d, 7, BUF_GPA + 100, 10, VRING_DESC_F_NEXT, 1);
	fake_set_desc(&f, d, 1, BUF_GPA + 200, 300, VRING_DESC_F_WRITE, 0);
	fake_avail(&f, 3);
	ck_assert(vq_has_avail(&f.vq));
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert_uint_eq(f.c.head, 3);
	ck_assert_uint_eq(f.c.n_out, 2);
	ck_assert_uint_eq(f.c.n_in, 1);
	ck_assert_uint_eq(f.c.out_len, 54);
	ck_assert_uint_eq(f.c.in_len, 300);
	ck_assert_ptr_eq(f.c.iov[2].iov_base, fake_hva(&f, BUF_GPA + 200));
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 0);
}
END_TEST

START_TEST(zero_length_descriptor_skipped)
{
	struct vring_desc *d = fake_desc(&f);

	fake_set_desc(&f, d, 0, BUF_GPA, 0, VRING_DESC_F_NEXT, 1);
	fake_set_desc(&f, d, 1, BUF_GPA, 8, 0, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert_uint_eq(f.c.n_out, 1);
	ck_assert_uint_eq(f.c.out_len, 8);
}
END_TEST

START_TEST(buffer_straddles_regions)
{
	struct vring_desc *d = fake_desc(&f);

	fake_set_desc(&f, d, 0, SPLIT_GPA + SPLIT_HALF - 20, 50, 0, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert_uint_eq(f.c.n_out, 2);
	ck_assert_ptr_eq(f.c.iov[0].iov_base, f.half_a + SPLIT_HALF - 20);
	ck_assert_uint_eq(f.c.iov[0].iov_len, 20);
	ck_assert_ptr_eq(f.c.iov[1].iov_base, f.half_b);
	ck_assert_uint_eq(f.c.iov[1].iov_len, 30);
}
END_TEST

START_TEST(readable_after_writable_rejected)
{
	struct vring_desc *d = fake_desc(&f);

	fake_set_desc(&f, d, 0, BUF_GPA, 10, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	fake_set_desc(&f, d, 1, BUF_GPA + 10, 10, 0, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	ck_assert_uint_eq(f.c.head, 0);
	/* The queue still works afterwards. */
	fake_set_desc(&f, d, 2, BUF_GPA, 10, 0, 0);
	fake_avail(&f, 2);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert_uint_eq(f.c.head, 2);
}
END_TEST

START_TEST(loop_rejected)
{
	struct vring_desc *d = fake_desc(&f);

	fake_set_desc(&f, d, 4, BUF_GPA, 1, VRING_DESC_F_NEXT, 5);
	fake_set_desc(&f, d, 5, BUF_GPA, 1, VRING_DESC_F_NEXT, 4);
	fake_avail(&f, 4);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	ck_assert_uint_eq(f.c.head, 4);
	/* A self loop too. */
	fake_set_desc(&f, d, 6, BUF_GPA, 0, VRING_DESC_F_NEXT, 6);
	fake_avail(&f, 6);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
}
END_TEST

START_TEST(next_out_of_range_rejected)
{
	struct vring_desc *d = fake_desc(&f);

	fake_set_desc(&f, d, 0, BUF_GPA, 1, VRING_DESC_F_NEXT, QNUM);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
}
END_TEST

START_TEST(address_outside_memory_rejected)
{
	struct vring_desc *d = fake_desc(&f);

	fake_set_desc(&f, d, 0, 0x10, 8, 0, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	fake_set_desc(&f, d, 1, RING_GPA + RING_SIZE - 4, 8, 0, 0);
	fake_avail(&f, 1);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	fake_set_desc(&f, d, 2, UINT64_MAX - 3, 8, 0, 0);
	fake_avail(&f, 2);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	ck_assert(!f.vq.broken);
}
END_TEST

START_TEST(too_many_iovecs)
{
	struct vring_desc *d = fake_desc(&f);
	unsigned int i;

	for (i = 0; i < 8; i++)
		fake_set_desc(&f, d, i, BUF_GPA + i * 16, 8, i < 7 ? VRING_DESC_F_NEXT : 0, i + 1);
	fake_avail(&f, 0);
	f.c.cap = 4;
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -E2BIG);
	ck_assert_uint_eq(f.c.head, 0);
}
END_TEST

START_TEST(indirect_table)
{
	struct vring_desc *d = fake_desc(&f);
	uint64_t tgpa = BUF_GPA + 0x1000;
	struct vring_desc *t = fake_hva(&f, tgpa);

	fake_set_desc(&f, t, 0, BUF_GPA, 20, VRING_DESC_F_NEXT, 2);
	fake_set_desc(&f, t, 2, BUF_GPA + 20, 24, VRING_DESC_F_NEXT, 1);
	fake_set_desc(&f, t, 1, BUF_GPA + 100, 64, VRING_DESC_F_WRITE, 0);
	fake_set_desc(&f, d, 9, tgpa, 3 * 16, VRING_DESC_F_INDIRECT | VRING_DESC_F_WRITE, 0);
	fake_avail(&f, 9);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert_uint_eq(f.c.head, 9);
	ck_assert_uint_eq(f.c.out_len, 44);
	ck_assert_uint_eq(f.c.in_len, 64);
	ck_assert_uint_eq(f.c.n_out, 2);
	ck_assert_uint_eq(f.c.n_in, 1);
}
END_TEST

START_TEST(indirect_after_direct)
{
	struct vring_desc *d = fake_desc(&f);
	uint64_t tgpa = BUF_GPA + 0x1000;
	struct vring_desc *t = fake_hva(&f, tgpa);

	fake_set_desc(&f, t, 0, BUF_GPA + 100, 64, VRING_DESC_F_WRITE, 0);
	fake_set_desc(&f, d, 0, BUF_GPA, 44, VRING_DESC_F_NEXT, 1);
	fake_set_desc(&f, d, 1, tgpa, 16, VRING_DESC_F_INDIRECT, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert_uint_eq(f.c.out_len, 44);
	ck_assert_uint_eq(f.c.in_len, 64);
}
END_TEST

START_TEST(indirect_malformed)
{
	struct vring_desc *d = fake_desc(&f);
	uint64_t tgpa = BUF_GPA + 0x1000;
	struct vring_desc *t = fake_hva(&f, tgpa);

	fake_set_desc(&f, t, 0, BUF_GPA, 8, 0, 0);
	/* Length not a multiple of 16. */
	fake_set_desc(&f, d, 0, tgpa, 24, VRING_DESC_F_INDIRECT, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	/* Zero length. */
	fake_set_desc(&f, d, 0, tgpa, 0, VRING_DESC_F_INDIRECT, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	/* INDIRECT with NEXT. */
	fake_set_desc(&f, d, 0, tgpa, 16, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
	fake_set_desc(&f, d, 1, BUF_GPA, 8, 0, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	/* Nested indirect. */
	fake_set_desc(&f, t, 0, tgpa, 16, VRING_DESC_F_INDIRECT, 0);
	fake_set_desc(&f, d, 0, tgpa, 16, VRING_DESC_F_INDIRECT, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	/* Table outside memory. */
	fake_set_desc(&f, d, 0, 0x40, 16, VRING_DESC_F_INDIRECT, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	/* Loop inside the table, and next beyond the table. */
	fake_set_desc(&f, t, 0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1);
	fake_set_desc(&f, t, 1, BUF_GPA, 8, VRING_DESC_F_NEXT, 0);
	fake_set_desc(&f, d, 0, tgpa, 32, VRING_DESC_F_INDIRECT, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	fake_set_desc(&f, t, 1, BUF_GPA, 8, VRING_DESC_F_NEXT, 2);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
	ck_assert(!f.vq.broken);
}
END_TEST

START_TEST(indirect_not_negotiated)
{
	struct vring_desc *d = fake_desc(&f);
	uint64_t tgpa = BUF_GPA + 0x1000;
	struct vring_desc *t = fake_hva(&f, tgpa);

	fake_set_desc(&f, t, 0, BUF_GPA, 8, 0, 0);
	fake_set_desc(&f, d, 0, tgpa, 16, VRING_DESC_F_INDIRECT, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EINVAL);
}
END_TEST

START_TEST(broken_avail_jump)
{
	struct vring_avail *a = fake_hva(&f, AVAIL_GPA);

	a->idx = QNUM + 1;
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EIO);
	ck_assert(f.vq.broken);
	a->idx = 1;
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EIO); /* stays broken */
}
END_TEST

START_TEST(broken_head_out_of_range)
{
	fake_avail(&f, QNUM);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), -EIO);
	ck_assert(f.vq.broken);
}
END_TEST

START_TEST(avail_exactly_num_ok)
{
	struct vring_desc *d = fake_desc(&f);
	unsigned int i;

	for (i = 0; i < QNUM; i++) {
		fake_set_desc(&f, d, i, BUF_GPA + i * 64, 64, VRING_DESC_F_WRITE, 0);
		fake_avail(&f, i);
	}
	for (i = 0; i < QNUM; i++) {
		ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
		ck_assert_uint_eq(f.c.head, i);
	}
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 0);
}
END_TEST

START_TEST(push_batch_contiguous_and_wrapping)
{
	struct vring_used *u = fake_used(&f);
	struct vring_used_elem e[5];
	unsigned int i;

	f.vq.used_idx = QNUM - 2; /* as if resumed near the end of the ring */
	for (i = 0; i < 5; i++)
		e[i] = (struct vring_used_elem){ .id = i + 10, .len = 100 * i };
	vq_push_batch(&f.vq, e, 5);
	ck_assert_uint_eq(u->idx, (uint16_t)(QNUM + 3));
	ck_assert_uint_eq(u->ring[QNUM - 2].id, 10);
	ck_assert_uint_eq(u->ring[QNUM - 1].id, 11);
	ck_assert_uint_eq(u->ring[0].id, 12);
	ck_assert_uint_eq(u->ring[2].id, 14);
	ck_assert_uint_eq(u->ring[2].len, 400);
}
END_TEST

START_TEST(event_idx_math)
{
	/* The window is (old, new]. */
	ck_assert(vring_need_event(5, 6, 5));
	ck_assert(!vring_need_event(6, 6, 5));
	ck_assert(vring_need_event(4, 10, 4));
	ck_assert(!vring_need_event(3, 10, 4));
	ck_assert(vring_need_event(9, 10, 4));
	/* Wrap-around of the 16-bit indexes. */
	ck_assert(vring_need_event(0xffff, 2, 0xfffe));
	ck_assert(vring_need_event(1, 2, 0xfffe));
	ck_assert(!vring_need_event(2, 2, 0xfffe));
	ck_assert(!vring_need_event(0xfffd, 2, 0xfffe));
}
END_TEST

START_TEST(need_notify_event_idx)
{
	struct vring_avail *a = fake_hva(&f, AVAIL_GPA);

	a->ring[QNUM] = 2; /* used_event: interrupt when used idx passes 2 */
	ck_assert(!vq_need_notify(&f.vq)); /* nothing published yet */
	vq_push(&f.vq, 0, 1);
	ck_assert(vq_need_notify(&f.vq)); /* the first interrupt always goes */
	vq_push(&f.vq, 1, 1);
	ck_assert(!vq_need_notify(&f.vq)); /* idx 2: event 2 not yet crossed */
	vq_push(&f.vq, 2, 1);
	ck_assert(vq_need_notify(&f.vq)); /* idx 3 */
	ck_assert(!vq_need_notify(&f.vq)); /* nothing new */
	vq_push(&f.vq, 3, 1);
	ck_assert(!vq_need_notify(&f.vq)); /* driver did not move used_event */
}
END_TEST

START_TEST(need_notify_no_interrupt_flag)
{
	struct vring_avail *a = fake_hva(&f, AVAIL_GPA);

	vq_push(&f.vq, 0, 1);
	ck_assert(vq_need_notify(&f.vq));
	a->flags = VRING_AVAIL_F_NO_INTERRUPT;
	vq_push(&f.vq, 1, 1);
	ck_assert(!vq_need_notify(&f.vq));
	a->flags = 0;
	ck_assert(!vq_need_notify(&f.vq)); /* nothing new */
	vq_push(&f.vq, 2, 1);
	ck_assert(vq_need_notify(&f.vq));
}
END_TEST

START_TEST(enable_notify_sets_avail_event)
{
	struct vring_used *u = fake_used(&f);
	uint16_t *avail_event = (uint16_t *)&u->ring[QNUM];
	struct vring_desc *d = fake_desc(&f);

	fake_set_desc(&f, d, 0, BUF_GPA, 8, 0, 0);
	fake_avail(&f, 0);
	ck_assert(vq_enable_notify(&f.vq)); /* a chain is already there */
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert(!vq_enable_notify(&f.vq));
	ck_assert_uint_eq(*avail_event, 1);
}
END_TEST

START_TEST(disable_notify_plain)
{
	struct vring_used *u = fake_used(&f);

	vq_disable_notify(&f.vq);
	ck_assert_uint_eq(u->flags, VRING_USED_F_NO_NOTIFY);
	ck_assert(!vq_enable_notify(&f.vq));
	ck_assert_uint_eq(u->flags, 0);
}
END_TEST

START_TEST(setup_rejects_bad_config)
{
	struct vq vq;
	struct vsock_vring_config cfg = {
		.num = 16, .desc_gpa = DESC_GPA, .avail_gpa = AVAIL_GPA, .used_gpa = USED_GPA
	};

	cfg.num = 12;
	ck_assert_int_eq(vq_setup(&vq, &f.gm, &cfg, 0), -EINVAL);
	cfg.num = 0;
	ck_assert_int_eq(vq_setup(&vq, &f.gm, &cfg, 0), -EINVAL);
	cfg.num = 16;
	cfg.desc_gpa = DESC_GPA + 8;
	ck_assert_int_eq(vq_setup(&vq, &f.gm, &cfg, 0), -EINVAL);
	cfg.desc_gpa = DESC_GPA;
	cfg.used_gpa = USED_GPA + 2;
	ck_assert_int_eq(vq_setup(&vq, &f.gm, &cfg, 0), -EINVAL);
	cfg.used_gpa = RING_GPA + RING_SIZE - 64; /* runs past the region */
	ck_assert_int_eq(vq_setup(&vq, &f.gm, &cfg, 0), -EINVAL);
	ck_assert_uint_eq(vq.num, 0);
	cfg.used_gpa = USED_GPA;
	cfg.last_avail_idx = 7;
	ck_assert_int_eq(vq_setup(&vq, &f.gm, &cfg, 0), 0);
	ck_assert_uint_eq(vq.last_avail, 7);
}
END_TEST

START_TEST(iov_helpers)
{
	char a[3] = "abc", b[5] = "defgh", c[2] = "ij", out[16];
	struct iovec iov[] = { { a, 3 }, { b, 5 }, { c, 2 } }, s[4];
	unsigned int n;

	ck_assert_uint_eq(iov_bytes(iov, 3), 10);
	ck_assert_uint_eq(iov_read(iov, 3, 2, out, 7), 7);
	ck_assert(!memcmp(out, "cdefghi", 7));
	ck_assert_uint_eq(iov_read(iov, 3, 8, out, 7), 2);
	ck_assert_uint_eq(iov_read(iov, 3, 10, out, 7), 0);
	ck_assert_uint_eq(iov_write(iov, 3, 7, "XYZ", 3), 3);
	ck_assert(!memcmp(b + 4, "X", 1) && !memcmp(c, "YZ", 2));
	n = iov_slice(iov, 3, 1, 8, s, 4);
	ck_assert_uint_eq(n, 3);
	ck_assert_ptr_eq(s[0].iov_base, a + 1);
	ck_assert_uint_eq(s[0].iov_len, 2);
	ck_assert_uint_eq(s[2].iov_len, 1);
	ck_assert_uint_eq(iov_bytes(s, n), 8);
	n = iov_slice(iov, 3, 0, 100, s, 2); /* cap hit */
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(iov_bytes(s, n), 8);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("virtqueue");
	TCase *tc = tcase_create("all_features");
	TCase *tp = tcase_create("plain");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup_all, teardown);
	tcase_add_test(tc, empty_ring);
	tcase_add_test(tc, readable_then_writable);
	tcase_add_test(tc, zero_length_descriptor_skipped);
	tcase_add_test(tc, buffer_straddles_regions);
	tcase_add_test(tc, readable_after_writable_rejected);
	tcase_add_test(tc, loop_rejected);
	tcase_add_test(tc, next_out_of_range_rejected);
	tcase_add_test(tc, address_outside_memory_rejected);
	tcase_add_test(tc, too_many_iovecs);
	tcase_add_test(tc, indirect_table);
	tcase_add_test(tc, indirect_after_direct);
	tcase_add_test(tc, indirect_malformed);
	tcase_add_test(tc, broken_avail_jump);
	tcase_add_test(tc, broken_head_out_of_range);
	tcase_add_test(tc, avail_exactly_num_ok);
	tcase_add_test(tc, push_batch_contiguous_and_wrapping);
	tcase_add_test(tc, event_idx_math);
	tcase_add_test(tc, need_notify_event_idx);
	tcase_add_test(tc, enable_notify_sets_avail_event);
	tcase_add_test(tc, setup_rejects_bad_config);
	tcase_add_test(tc, iov_helpers);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tp, setup_plain, teardown);
	tcase_add_test(tp, indirect_not_negotiated);
	tcase_add_test(tp, need_notify_no_interrupt_flag);
	tcase_add_test(tp, disable_notify_plain);
	suite_add_tcase(s, tp);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
