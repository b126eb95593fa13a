// SPDX-License-Identifier: MIT
/* The kill queue: deadlines and the one-shot timerfd; see killq.h. */
#include "killq.h"

#include <errno.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "skiff/mono_ms.h"

int killq_init(struct killq *q, const struct killq_clock *clock)
{
	*q = (struct killq){ .armed_at = INT64_MAX, .timer_fd = -1 };
	pthread_mutex_init(&q->lock, NULL);
	if (clock) {
		q->clock = *clock;
		return 0;
	}
	q->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	return q->timer_fd < 0 ? -errno : 0;
}

void killq_fini(struct killq *q)
{
	if (q->timer_fd >= 0)
		close(q->timer_fd);
	q->timer_fd = -1;
	pthread_mutex_destroy(&q->lock);
}

int64_t killq_now(const struct killq *q)
{
	return q->clock.now_ms ? q->clock.now_ms(q->clock.opaque) : skiff_mono_ms();
}

int64_t killq_armed_at(struct killq *q)
{
	int64_t at;

	pthread_mutex_lock(&q->lock);
	at = q->armed_at;
	pthread_mutex_unlock(&q->lock);
	return at;
}

void killq_arm_locked(struct killq *q, int64_t at)
{
	struct itimerspec its = { 0 };

	if (at >= q->armed_at)
		return;
	q->armed_at = at;
	if (q->timer_fd < 0)
		return;
	if (at < 1)
		at = 1; /* 0 would disarm; an absolute time past fires at once */
	its.it_value.tv_sec = at / 1000;
	its.it_value.tv_nsec = (at % 1000) * 1000000L;
	timerfd_settime(q->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void killq_arm(struct killq *q, int64_t at)
{
	pthread_mutex_lock(&q->lock);
	killq_arm_locked(q, at);
	pthread_mutex_unlock(&q->lock);
}

bool killq_add(struct killq *q, struct killq_entry *e, int64_t at)
{
	bool added = false;

	pthread_mutex_lock(&q->lock);
	e->deadline_ms = at;
	if (!e->queued) {
		e->queued = true;
		e->prev = NULL;
		e->next = q->head;
		if (q->head)
			q->head->prev = e;
		q->head = e;
		added = true;
	}
	killq_arm_locked(q, at);
	pthread_mutex_unlock(&q->lock);
	return added;
}

void killq_set_deadline(struct killq *q, struct killq_entry *e, int64_t at)
{
	pthread_mutex_lock(&q->lock);
	e->deadline_ms = at;
	pthread_mutex_unlock(&q->lock);
}

static bool unlink_locked(struct killq *q, struct killq_entry *e)
{
	if (!e->queued)
		return false;
	if (e->prev)
		e->prev->next = e->next;
	else
		q->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	e->next = e->prev = NULL;
	e->queued = false;
	return true;
}

bool killq_remove(struct killq *q, struct killq_entry *e)
{
	bool was;

	pthread_mutex_lock(&q->lock);
	was = unlink_locked(q, e);
	pthread_mutex_unlock(&q->lock);
	return was;
}

void killq_fired(struct killq *q, int64_t now, void (*due)(struct killq_entry *e, void *arg),
		 void *arg)
{
	struct killq_entry *e;

	pthread_mutex_lock(&q->lock);
	q->armed_at = INT64_MAX; /* one-shot: it is not armed any more */
	for (e = q->head; e; e = e->next)
		if (e->deadline_ms <= now)
			due(e, arg);
	pthread_mutex_unlock(&q->lock);
}

int64_t killq_earliest_locked(const struct killq *q)
{
	const struct killq_entry *e;
	int64_t first = INT64_MAX;

	for (e = q->head; e; e = e->next)
		if (e->deadline_ms < first)
			first = e->deadline_ms;
	return first;
}

static void rearm_locked(struct killq *q, int64_t next)
{
	int64_t first = killq_earliest_locked(q);

	if (first < next)
		next = first;
	if (next != INT64_MAX)
		killq_arm_locked(q, next); /* a deadline added meanwhile is in the list */
}

void killq_rearm(struct killq *q, int64_t next)
{
	pthread_mutex_lock(&q->lock);
	rearm_locked(q, next);
	pthread_mutex_unlock(&q->lock);
}

void killq_restart(struct killq *q, int64_t next)
{
	pthread_mutex_lock(&q->lock);
	q->armed_at = INT64_MAX;
	rearm_locked(q, next);
	pthread_mutex_unlock(&q->lock);
}

struct killq_entry *killq_pop(struct killq *q)
{
	struct killq_entry *e;

	pthread_mutex_lock(&q->lock);
	e = q->head;
	if (e)
		unlink_locked(q, e);
	pthread_mutex_unlock(&q->lock);
	return e;
}

void killq_disarm(struct killq *q)
{
	struct itimerspec its = { 0 };

	pthread_mutex_lock(&q->lock);
	q->armed_at = INT64_MAX;
	if (q->timer_fd >= 0)
		timerfd_settime(q->timer_fd, 0, &its, NULL);
	pthread_mutex_unlock(&q->lock);
}
