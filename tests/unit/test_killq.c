// SPDX-License-Identifier: MIT
/*
 * Unit tests: the kill queue alone (killq.c), driven by a fake clock:
 * insert, remove and re-arm, the earliest deadline chosen for the timer,
 * expiry in deadline order as the clock moves, removal of an entry already
 * due, many entries; and with the real clock, that the timerfd fires.
 */
#include <check.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "killq.h"

static int64_t fake_now;

static int64_t fake_clock(void *opaque)
{
	(void)opaque;
	return fake_now;
}

static const struct killq_clock fake = { .now_ms = fake_clock };

/* An owner's object with its entry inside, as struct conn has. */
struct item {
	int id;
	struct killq_entry kq;
	bool expired;
};

#define ITEM(e) ((struct item *)((char *)(e)-offsetof(struct item, kq)))

struct due_list {
	struct item *got[1100];
	unsigned int n;
};

static void collect(struct killq_entry *e, void *arg)
{
	struct due_list *d = arg;

	ck_assert_uint_lt(d->n, 1100);
	d->got[d->n++] = ITEM(e);
}

/*
 * What the owner does when the timer fires at fake_now: take the due ones,
 * expire them (out of the queue), re-arm. Return: how many expired.
 */
static unsigned int tick(struct killq *q, struct due_list *d)
{
	unsigned int i;

	d->n = 0;
	killq_fired(q, fake_now, collect, d);
	for (i = 0; i < d->n; i++) {
		ck_assert(killq_remove(q, &d->got[i]->kq));
		d->got[i]->expired = true;
	}
	killq_rearm(q, INT64_MAX);
	return d->n;
}

static struct killq q;
static struct due_list due;

static void setup(void)
{
	fake_now = 1000;
	ck_assert_int_eq(killq_init(&q, &fake), 0);
	ck_assert_int_eq(killq_fd(&q), -1); /* a fake clock has no timerfd */
}

static void teardown(void)
{
	killq_fini(&q);
}

START_TEST(add_remove_rearm)
{
	struct item a = { .id = 1 }, b = { .id = 2 };

	ck_assert_int_eq(killq_armed_at(&q), INT64_MAX);
	ck_assert(killq_add(&q, &a.kq, 3000)); /* newly queued: a reference is due */
	ck_assert_int_eq(killq_armed_at(&q), 3000);
	ck_assert(!killq_add(&q, &a.kq, 2500)); /* already queued: new deadline only */
	ck_assert_int_eq(a.kq.deadline_ms, 2500);
	ck_assert_int_eq(killq_armed_at(&q), 2500); /* pulled earlier */
	ck_assert(killq_add(&q, &b.kq, 4000));
	ck_assert_int_eq(killq_armed_at(&q), 2500); /* a later one never pushes it back */
	ck_assert(killq_remove(&q, &a.kq));
	ck_assert(!killq_remove(&q, &a.kq)); /* twice: not queued any more */
	ck_assert(!a.kq.queued);
	/* Armed for a's time still (one-shot: it fires, and the re-arm finds b). */
	ck_assert_int_eq(killq_armed_at(&q), 2500);
	fake_now = 2500;
	ck_assert_uint_eq(tick(&q, &due), 0);
	ck_assert_int_eq(killq_armed_at(&q), 4000);
	/* A queued entry moved later, from a handler: the re-arm follows it. */
	fake_now = 4000;
	due.n = 0;
	killq_fired(&q, fake_now, collect, &due);
	ck_assert_uint_eq(due.n, 1);
	killq_set_deadline(&q, &b.kq, 6000);
	killq_rearm(&q, INT64_MAX);
	ck_assert_int_eq(killq_armed_at(&q), 6000);
	/* A deadline of the owner's that is not an entry, earlier. */
	killq_rearm(&q, 5000);
	ck_assert_int_eq(killq_armed_at(&q), 5000);
	ck_assert(killq_remove(&q, &b.kq));
	/* Empty: a tick leaves it unarmed. */
	fake_now = 5000;
	ck_assert_uint_eq(tick(&q, &due), 0);
	ck_assert_int_eq(killq_armed_at(&q), INT64_MAX);
	ck_assert_ptr_null(killq_pop(&q));
}
END_TEST

START_TEST(earliest_selected)
{
	struct item it[5];
	static const int64_t at[5] = { 9000, 4000, 7000, 4000, 12000 };
	unsigned int i;

	for (i = 0; i < 5; i++) {
		it[i] = (struct item){ .id = (int)i };
		killq_add(&q, &it[i].kq, at[i]);
	}
	pthread_mutex_lock(&q.lock);
	ck_assert_int_eq(killq_earliest_locked(&q), 4000);
	pthread_mutex_unlock(&q.lock);
	ck_assert_int_eq(killq_armed_at(&q), 4000);
	/* A restart forgets the armed time and arms for the earliest again. */
	ck_assert(killq_remove(&q, &it[1].kq));
	ck_assert(killq_remove(&q, &it[3].kq));
	killq_restart(&q, INT64_MAX);
	ck_assert_int_eq(killq_armed_at(&q), 7000);
	killq_restart(&q, 6500); /* the owner's own deadline, earlier */
	ck_assert_int_eq(killq_armed_at(&q), 6500);
	killq_disarm(&q);
	ck_assert_int_eq(killq_armed_at(&q), INT64_MAX);
	while (killq_pop(&q))
		;
	for (i = 0; i < 5; i++)
		ck_assert(!it[i].kq.queued);
}
END_TEST

/* The clock moves on step by step: each entry expires at its deadline, not before, in order. */
START_TEST(expiry_in_order)
{
	static const int64_t at[6] = { 1500, 1200, 3000, 1200, 2000, 2999 };
	struct item it[6];
	int64_t last = 0;
	unsigned int i, total = 0;

	for (i = 0; i < 6; i++) {
		it[i] = (struct item){ .id = (int)i };
		killq_add(&q, &it[i].kq, at[i]);
	}
	while (killq_armed_at(&q) != INT64_MAX) {
		int64_t fire = killq_armed_at(&q);
		unsigned int n;

		ck_assert_int_gt(fire, last); /* the timer only moves forward */
		fake_now = fire - 1; /* a tick one ms early expires nothing */
		n = tick(&q, &due);
		ck_assert_uint_eq(n, 0);
		ck_assert_int_eq(killq_armed_at(&q), fire);
		fake_now = fire;
		n = tick(&q, &due);
		ck_assert_uint_ge(n, 1);
		for (i = 0; i < due.n; i++)
			ck_assert_int_eq(at[due.got[i]->id], fire);
		/* Everything still queued is later. */
		for (i = 0; i < 6; i++)
			ck_assert(it[i].expired == (at[i] <= fire));
		total += n;
		last = fire;
	}
	ck_assert_uint_eq(total, 6);
	ck_assert_int_eq(last, 3000);
}
END_TEST

/* An entry that is due but taken out before the owner handles it (answered meanwhile). */
START_TEST(remove_already_expired)
{
	struct item a = { .id = 0 }, b = { .id = 1 };

	killq_add(&q, &a.kq, 1100);
	killq_add(&q, &b.kq, 1100);
	fake_now = 1200; /* both are past their deadline */
	due.n = 0;
	killq_fired(&q, fake_now, collect, &due);
	ck_assert_uint_eq(due.n, 2);
	ck_assert(killq_remove(&q, &a.kq)); /* answered before its handler ran */
	ck_assert(killq_remove(&q, &b.kq));
	ck_assert(!killq_remove(&q, &a.kq)); /* the handler's own remove: nothing left */
	killq_rearm(&q, INT64_MAX);
	ck_assert_int_eq(killq_armed_at(&q), INT64_MAX);
	/* Removed before the timer even fired, with its deadline long past. */
	killq_add(&q, &a.kq, 100);
	ck_assert_int_eq(killq_armed_at(&q), 100);
	ck_assert(killq_remove(&q, &a.kq));
	ck_assert_uint_eq(tick(&q, &due), 0);
	ck_assert(!a.expired);
	ck_assert_int_eq(killq_armed_at(&q), INT64_MAX);
	/* And queued again afterwards: a fresh entry. */
	ck_assert(killq_add(&q, &a.kq, 1300));
	fake_now = 1300;
	ck_assert_uint_eq(tick(&q, &due), 1);
	ck_assert(a.expired);
}
END_TEST

START_TEST(many_entries)
{
	enum { N = 1024 };
	struct item *it = calloc(N, sizeof(*it));
	unsigned int i, expired = 0;

	ck_assert_ptr_nonnull(it);
	for (i = 0; i < N; i++) {
		it[i].id = (int)i;
		/* Scattered deadlines in [2000, 2000 + 97 * 13): many share one. */
		ck_assert(killq_add(&q, &it[i].kq, 2000 + (int64_t)((i * 37u) % 97u) * 13));
	}
	/* Every other one answered in the meantime. */
	for (i = 0; i < N; i += 2)
		ck_assert(killq_remove(&q, &it[i].kq));
	while (killq_armed_at(&q) != INT64_MAX) {
		fake_now = killq_armed_at(&q);
		expired += tick(&q, &due);
		for (i = 0; i < due.n; i++)
			ck_assert_int_eq(due.got[i]->kq.deadline_ms, fake_now);
	}
	ck_assert_uint_eq(expired, N / 2);
	for (i = 0; i < N; i++)
		ck_assert(it[i].expired == (i % 2 == 1));
	ck_assert_ptr_null(killq_pop(&q));
	free(it);
}
END_TEST

/* With the real clock: the timerfd is armed for the deadline and becomes readable. */
START_TEST(timerfd_fires)
{
	struct killq r;
	struct item a = { .id = 0 };
	struct pollfd p;
	uint64_t v;
	int64_t t0;

	ck_assert_int_eq(killq_init(&r, NULL), 0);
	ck_assert_int_ge(killq_fd(&r), 0);
	p = (struct pollfd){ .fd = killq_fd(&r), .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 0), 0); /* not armed: silent */
	t0 = killq_now(&r);
	killq_add(&r, &a.kq, t0 + 30);
	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	ck_assert_int_ge(killq_now(&r), t0 + 30);
	ck_assert_int_eq(read(killq_fd(&r), &v, sizeof(v)), (ssize_t)sizeof(v));
	/* Disarmed with an entry queued: it does not fire. */
	killq_add(&r, &a.kq, killq_now(&r) + 20);
	killq_disarm(&r);
	ck_assert_int_eq(poll(&p, 1, 100), 0);
	/* A deadline already past fires at once. */
	killq_arm(&r, 0);
	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	ck_assert(killq_remove(&r, &a.kq));
	killq_fini(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("killq");
	TCase *tc = tcase_create("fake clock"), *real = tcase_create("timerfd");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, add_remove_rearm);
	tcase_add_test(tc, earliest_selected);
	tcase_add_test(tc, expiry_in_order);
	tcase_add_test(tc, remove_already_expired);
	tcase_add_test(tc, many_entries);
	tcase_add_test(real, timerfd_fires);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, real);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
