// SPDX-License-Identifier: MIT
/* Unit tests: the connection table (insert, lookup, remove, cap, drain). */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "conn.h"
#include "muxer.h"

static struct conn *mk(uint32_t local, uint32_t peer)
{
	struct conn *c = calloc(1, sizeof(*c));

	pthread_mutex_init(&c->lock, NULL);
	c->fd = -1;
	c->refs = 1;
	c->local_port = local;
	c->peer_port = peer;
	return c;
}

START_TEST(insert_lookup_remove)
{
	struct muxer m;
	struct conn *a = mk(1, 2), *b = mk(2, 1), *a2 = mk(1, 2), *got;

	ck_assert_int_eq(mux_init(&m, 10), 0);
	ck_assert_int_eq(mux_insert(&m, a), 0);
	ck_assert_int_eq(mux_insert(&m, b), 0);
	ck_assert_int_eq(mux_insert(&m, a2), -EEXIST); /* same ports */
	ck_assert_int_eq(a->refs, 2);
	got = mux_lookup(&m, 1, 2);
	ck_assert_ptr_eq(got, a);
	ck_assert_int_eq(a->refs, 3);
	conn_put(got);
	ck_assert_ptr_eq(mux_lookup(&m, 2, 1), b);
	conn_put(b);
	ck_assert_ptr_null(mux_lookup(&m, 1, 3));
	ck_assert(mux_local_port_used(&m, 2));
	ck_assert(!mux_local_port_used(&m, 3));
	ck_assert_int_eq(mux_remove(&m, a), 1);
	ck_assert_int_eq(mux_remove(&m, a), 0); /* already out */
	ck_assert_int_eq(a->refs, 1);
	ck_assert_ptr_null(mux_lookup(&m, 1, 2));
	ck_assert_uint_eq(m.count, 1);
	ck_assert_int_eq(mux_remove(&m, b), 1);
	conn_put(a);
	conn_put(b);
	conn_put(a2);
	mux_fini(&m);
}
END_TEST

START_TEST(cap_and_collisions)
{
	struct muxer m;
	struct conn *c[300];
	unsigned int i;

	ck_assert_int_eq(mux_init(&m, 256), 0);
	/* Many entries, many sharing buckets. */
	for (i = 0; i < 300; i++) {
		c[i] = mk(1000 + i / 3, i % 3);
		ck_assert_int_eq(mux_insert(&m, c[i]), i < 256 ? 0 : -ENOSPC);
	}
	for (i = 0; i < 256; i++) {
		struct conn *got = mux_lookup(&m, 1000 + i / 3, i % 3);

		ck_assert_ptr_eq(got, c[i]);
		conn_put(got);
	}
	for (i = 0; i < 256; i += 2)
		ck_assert_int_eq(mux_remove(&m, c[i]), 1);
	for (i = 1; i < 256; i += 2) {
		struct conn *got = mux_lookup(&m, 1000 + i / 3, i % 3);

		ck_assert_ptr_eq(got, c[i]);
		conn_put(got);
	}
	ck_assert_uint_eq(m.count, 128);
	for (i = 1; i < 256; i += 2)
		ck_assert_int_eq(mux_remove(&m, c[i]), 1);
	ck_assert_uint_eq(m.count, 0);
	for (i = 0; i < 300; i++) {
		ck_assert_int_eq(c[i]->refs, 1);
		conn_put(c[i]);
	}
	mux_fini(&m);
}
END_TEST

static void drained(struct conn *c, void *opaque)
{
	(*(unsigned int *)opaque)++;
	conn_put(c); /* the table's reference */
}

START_TEST(drain_empties)
{
	struct muxer m;
	struct conn *c[20];
	unsigned int i, n = 0;

	ck_assert_int_eq(mux_init(&m, 100), 0);
	for (i = 0; i < 20; i++) {
		c[i] = mk(i, i);
		ck_assert_int_eq(mux_insert(&m, c[i]), 0);
	}
	mux_drain(&m, drained, &n);
	ck_assert_uint_eq(n, 20);
	ck_assert_uint_eq(m.count, 0);
	for (i = 0; i < 20; i++) {
		ck_assert_int_eq(c[i]->refs, 1);
		ck_assert(!c[i]->in_table);
		conn_put(c[i]);
	}
	mux_fini(&m);
}
END_TEST

struct churn {
	struct muxer *m;
	struct conn *c;
	int done;
};

static void *churn_main(void *arg)
{
	struct churn *ch = arg;
	unsigned int i;

	for (i = 0; i < 20000; i++) {
		ck_assert_int_eq(mux_insert(ch->m, ch->c), 0);
		ck_assert_int_eq(mux_remove(ch->m, ch->c), 1);
	}
	__atomic_store_n(&ch->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The control thread reads the count without the table's lock (the cap check
 * before it connects, dev_ctl.c request_socket()) while pumps insert and
 * remove: every store of the count must be atomic. Fails under TSan
 * (-DSKIFF_SANITIZE=thread) when one is not; elsewhere it checks the bounds.
 */
START_TEST(count_read_without_lock)
{
	struct muxer m;
	struct churn ch = { .m = &m, .c = mk(7, 8) };
	unsigned long reads = 0;
	pthread_t t;

	ck_assert_int_eq(mux_init(&m, 10), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, churn_main, &ch), 0);
	while (!__atomic_load_n(&ch.done, __ATOMIC_ACQUIRE) || !reads) {
		ck_assert_uint_le(__atomic_load_n(&m.count, __ATOMIC_RELAXED), 1);
		reads++;
	}
	pthread_join(t, NULL);
	ck_assert_uint_eq(m.count, 0);
	conn_put(ch.c);
	mux_fini(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("muxer");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, insert_lookup_remove);
	tcase_add_test(tc, cap_and_collisions);
	tcase_add_test(tc, drain_empties);
	tcase_add_test(tc, count_read_without_lock);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
