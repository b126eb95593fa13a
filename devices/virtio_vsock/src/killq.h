/* SPDX-License-Identifier: MIT */
/*
 * The kill queue: deadlines of things that wait for someone else (a host
 * connection for the guest's RESPONSE, a close for the guest's RST), and
 * the one-shot timerfd that fires at the earliest of them. It knows nothing
 * of what its entries are: an entry is a struct killq_entry inside the
 * owner's object (struct conn), which holds a reference for the queue
 * while it is queued (killq_add() says when to take one, killq_remove()
 * and killq_pop() when to drop it).
 *
 * The timerfd is armed for the earliest deadline and only ever pulled
 * earlier by a new one (killq_arm()), so a steady stream of new deadlines
 * cannot keep pushing an earlier one back; when it fires, the owner takes
 * the due entries (killq_fired()), handles them, and re-arms it for the
 * earliest deadline left (killq_rearm()).
 *
 * Times are milliseconds of the queue's clock: CLOCK_MONOTONIC
 * (skiff_mono_ms()), or a clock given at init (unit tests), which has no
 * timerfd: only killq_armed_at() tells when it would fire.
 *
 * Locking: q->lock protects the list, armed_at and every entry's fields;
 * every function here takes it (but the *_locked ones, whose caller holds
 * it). Lock order: an owner's own lock (conn->lock) before q->lock.
 */
#ifndef SKIFF_VSOCK_KILLQ_H
#define SKIFF_VSOCK_KILLQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct killq_entry {
	struct killq_entry *next, *prev;
	int64_t deadline_ms;
	bool queued;
};

struct killq_clock {
	int64_t (*now_ms)(void *opaque);
	void *opaque;
};

struct killq {
	pthread_mutex_t lock;
	struct killq_entry *head; /* unordered, doubly linked */
	int64_t armed_at; /* the time the timer is armed for; INT64_MAX: not armed */
	int timer_fd; /* one-shot, CLOCK_MONOTONIC, absolute; -1 with a given clock */
	struct killq_clock clock; /* now_ms NULL: skiff_mono_ms() */
};

/*
 * killq_init() - an empty, unarmed queue. @clock NULL: CLOCK_MONOTONIC and
 * a timerfd (non-blocking, close-on-exec) to poll for killq_fd(); else
 * that clock and no timerfd. Return: 0, or -errno of timerfd_create()
 * (EMFILE, ENFILE, ENOMEM); killq_fini() is safe either way.
 */
int killq_init(struct killq *q, const struct killq_clock *clock);
/* killq_fini() - close the timerfd; entries still queued are the owner's to drop first. */
void killq_fini(struct killq *q);

/* killq_fd() - the timerfd to poll (readable once armed time passed), or -1. */
static inline int killq_fd(const struct killq *q)
{
	return q->timer_fd;
}

/* killq_now() - the queue's clock, in ms. */
int64_t killq_now(const struct killq *q);

/* killq_armed_at() - when the timer fires (ms of the queue's clock), INT64_MAX: not armed. */
int64_t killq_armed_at(struct killq *q);

/*
 * killq_arm() / killq_arm_locked() - make the timer fire at @at at the
 * latest: arm it for @at unless it is armed for an earlier time already.
 * For deadlines that are not entries (a CONNECT line, a paused listener).
 */
void killq_arm(struct killq *q, int64_t at);
void killq_arm_locked(struct killq *q, int64_t at);

/*
 * killq_add() - give @e the deadline @at (queued or not) and arm the timer
 * for it (killq_arm()). Return: true when @e was not queued and is now:
 * the owner's reference for the queue is then due (the caller took one
 * before the call and drops it on false, see conn.c's use).
 */
bool killq_add(struct killq *q, struct killq_entry *e, int64_t at);

/*
 * killq_set_deadline() - move @e's deadline to @at without arming: for the
 * owner handling a due entry after killq_fired(), whose killq_rearm() then
 * looks at it.
 */
void killq_set_deadline(struct killq *q, struct killq_entry *e, int64_t at);

/*
 * killq_remove() - take @e out of the queue. Return: whether it was queued
 * (the queue's reference is then the caller's to drop).
 */
bool killq_remove(struct killq *q, struct killq_entry *e);

/*
 * killq_fired() - the timer fired (or the owner looks at time @now): the
 * timer counts as not armed any more, and @due is called, under q->lock,
 * for every entry whose deadline is not after @now, in queue order. The
 * entries stay queued: @due takes what it needs (a reference) and the
 * owner handles them after the call, without q->lock, then calls
 * killq_rearm().
 */
void killq_fired(struct killq *q, int64_t now, void (*due)(struct killq_entry *e, void *arg),
		 void *arg);

/* killq_earliest_locked() - the earliest deadline queued, or INT64_MAX. */
int64_t killq_earliest_locked(const struct killq *q);

/*
 * killq_rearm() - arm the timer for the earliest of @next (a deadline of
 * the owner's that is not an entry, INT64_MAX: none) and the queued
 * deadlines; unarmed when there is none.
 */
void killq_rearm(struct killq *q, int64_t next);

/*
 * killq_restart() - as killq_rearm(), but forgetting what the timer was
 * armed for before (after the owner's thread was stopped and restarted).
 */
void killq_restart(struct killq *q, int64_t next);

/*
 * killq_pop() - take any one entry out of the queue (the caller drops its
 * reference). Return: the entry, or NULL when the queue is empty.
 */
struct killq_entry *killq_pop(struct killq *q);

/* killq_disarm() - the timer will not fire (until the next arm). */
void killq_disarm(struct killq *q);

#endif
