/* SPDX-License-Identifier: MIT */
/*
 * The RX pump threads (rx_pump.c): each owns a shard of connections in its
 * own epoll and sends every packet of those connections to the guest
 * (conn_rx_next()); pump 0 also the connection-less RSTs (rawq.h) and the
 * packets other guests routed here (router.h).
 *
 * Locking: pump->lock protects the fields said below; taken after a
 * conn->lock, never before one.
 */
#ifndef SKIFF_VSOCK_PUMP_H
#define SKIFF_VSOCK_PUMP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "rxq.h"

struct conn;
struct epoll_event;
struct vsock_dev;

struct pump {
	struct vsock_dev *dev;
	unsigned int id;
	pthread_t thread;
	bool running;
	int epfd;
	int wake_fd; /* eventfd: work queued, RX buffers, stop */

	pthread_mutex_t lock; /* protects work, blocked, sleeping, starved */
	struct conn *work_head, *work_tail; /* connections with something to do */
	struct conn *blocked; /* waiting for RX buffers */
	bool sleeping; /* in epoll_wait with nothing to do */
	/*
	 * Found no RX buffer; waits for a kick. Written under lock only
	 * (pump_set_starved()); the pump reads it without the lock as a hint
	 * while serving (pump_starved()), so every access outside the lock is
	 * atomic. A stale value costs one round: the decision that parks a
	 * connection is made again under lock (pump_main()).
	 */
	bool starved;
	atomic_bool give_back; /* a starved pump asks for this one's reserved chains */

	/* Owned by the pump thread. */
	struct rxq_cache rc; /* reserved RX chains, used entries not published yet */
	struct rxq_cache
		dg_rc; /* pump 0: routed datagrams (rxq_dgram_put()), empty between calls */
	struct conn *zombies; /* retired, reference dropped at the next loop top */
};

int pump_start(struct vsock_dev *dev, struct pump *p);
void pump_stop(struct pump *p);
/* pump_wake() - make the pump look at its work list (thread safe). */
void pump_wake(struct pump *p);
/* pump_enqueue() - add @c to its pump's work list (takes a reference) and wake it. */
void pump_enqueue(struct conn *c);
/*
 * pump_defer_wakes() / pump_flush_wakes() - around a conn->lock section of
 * the calling thread: pump_enqueue() then leaves the eventfd write to
 * pump_flush_wakes(), called after the unlock. A pump woken earlier would
 * first block on that same conn->lock (a futex sleep and a second wake-up).
 */
void pump_defer_wakes(void);
void pump_flush_wakes(void);
/*
 * pump_watch() - hand @c to its pump: take the pump's ownership reference
 * (always, dropped when the pump retires @c or forget_conn() drops it), then
 * add @c's fd to the pump's epoll. Caller holds c->lock.
 * Return: 0, or -errno of EPOLL_CTL_ADD (ENOMEM; ENOSPC at the per-user
 * fs.epoll.max_user_watches): @c is the pump's all the same, and the caller
 * resets it (conn_reset()), which the pump then retires.
 */
int pump_watch(struct conn *c);
/*
 * pump_set_out() - add (re-arm, after EAGAIN or a backlog append) or remove
 * EPOLLOUT interest for @c (caller holds c->lock).
 * Return: 0, or -errno (ENOMEM) of EPOLL_CTL_MOD when adding failed: the
 * backlog would never be written, the caller resets @c.
 */
int pump_set_out(struct conn *c, bool on);
/*
 * pump_starved() - whether @p found no RX buffer, read without p->lock: a
 * hint (see struct pump); any thread.
 */
static inline bool pump_starved(const struct pump *p)
{
	return __atomic_load_n(&p->starved, __ATOMIC_RELAXED);
}

/* pump_set_starved() - mark @p starved or not; the caller holds p->lock. */
static inline void pump_set_starved(struct pump *p, bool starved)
{
	__atomic_store_n(&p->starved, starved, __ATOMIC_RELAXED);
}

/* pump_rx_kicked() - the guest added RX buffers: wake starved pumps. */
void pump_rx_kicked(struct vsock_dev *dev);
/*
 * rx_return_all() - threads stopped: forget every reserved, unused RX chain.
 * With @give_back, un-pop them when they are the last ones popped, or else
 * return them to the driver empty (used length 0): rxq_return_pool().
 */
void rx_return_all(struct vsock_dev *dev, bool give_back);
/*
 * pump_starve() - @p found no RX chain: mark it starved (an RX kick or
 * chains returned to the pool unstarve it: pump_rx_kicked()), re-check the
 * queue, which may have got buffers meanwhile, and if still empty ask the
 * other pumps for the chains they keep. Pump @p's thread.
 * Return: true when @p stays starved; false when chains came (go on).
 */
bool pump_starve(struct pump *p);
/*
 * pump_dgram_short() - if rxq_dgram_put() ran short of chains since the last
 * call (rxq->dgram_short), ask every pump to put the chains it keeps while
 * idle in the pool, where the next datagram finds them. Without this a
 * Linux guest, which refills only below half its RX buffers, and idle
 * pumps holding up to half the queue stall host-to-guest datagrams while
 * no stream moves. Any thread.
 */
void pump_dgram_short(struct vsock_dev *dev);

/* Most events one epoll_wait() of a pump takes. */
#define PUMP_EVENTS 64

/*
 * One turn of a pump's loop, in three calls, for the thread that runs it:
 * the pump's own (pump_main()) or, with the control work placed on pump 0
 * (struct vsock_dev_config.ctl_thread), the control thread
 * (dev_ctl.c). Between the first and the second the caller waits in
 * epoll_wait() on p->epfd, without a timeout only if the first said so.
 *
 * pump_turn_prepare() - drop retired connections; with nothing queued,
 * publish the used entries, give reserved chains back if asked, and mark
 * the pump sleeping (pump_enqueue() then writes its eventfd). Return: true
 * when the pump has nothing to do (the caller may sleep).
 * pump_turn_events() - the pump is awake: handle @n (< 0: none) events of
 * its epoll (host sockets, its eventfd).
 * pump_turn_serve() - serve every connection on the work list once, pump 0
 * the conn-less RSTs and routed packets too; publish.
 */
bool pump_turn_prepare(struct pump *p);
void pump_turn_events(struct pump *p, const struct epoll_event *ev, int n);
void pump_turn_serve(struct pump *p);

#endif
