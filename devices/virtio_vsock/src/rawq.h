/* SPDX-License-Identifier: MIT */
/*
 * The queue of connection-less packets owed to the guest (rawq.c): RSTs
 * answering guest packets of no connection, or of a routed connection
 * refused, sent by pump 0 (rawq_peek(), rawq_pop()) before its other work.
 * At most DEV_RAW_MAX; beyond, a packet is dropped and counted.
 *
 * Locking: q->lock protects raw[] and n. n is written under it, always
 * with an atomic store, because pump 0 reads it without the lock to
 * decide whether to sleep (rawq_pending()): a stale value costs one
 * round, since rawq_peek() looks again under the lock.
 */
#ifndef SKIFF_VSOCK_RAWQ_H
#define SKIFF_VSOCK_RAWQ_H

#include <pthread.h>
#include <stdbool.h>

#include "counters.h"
#include "packet.h"

#define DEV_RAW_MAX 256u /* RSTs owed for packets of no connection */

struct rawq {
	pthread_mutex_t lock;
	struct virtio_vsock_hdr raw[DEV_RAW_MAX]; /* host order */
	unsigned int n; /* see above: atomic stores under lock, lock-free reads */
	/* Set at init, then read-only. */
	struct dev_counters *ctr; /* dropped_pkts */
	int wake_fd; /* eventfd of the thread that sends them (pump 0) */
};

/* rawq_init() - an empty queue; @wake_fd is written when a packet is queued. Return: 0, -errno. */
int rawq_init(struct rawq *q, struct dev_counters *ctr, int wake_fd);
void rawq_fini(struct rawq *q);

/*
 * rawq_put() - owe the guest packet @h (host order): queued and the sender
 * woken, or dropped (counted in dropped_pkts) when DEV_RAW_MAX are owed.
 * Any thread.
 */
void rawq_put(struct rawq *q, const struct virtio_vsock_hdr *h);

/* rawq_peek() - copy the oldest owed packet to @h. Return: false when none. */
bool rawq_peek(struct rawq *q, struct virtio_vsock_hdr *h);

/* rawq_pop() - the oldest owed packet went out: drop it. */
void rawq_pop(struct rawq *q);

/* rawq_pending() - whether packets are owed (lock free, a hint: see above). */
static inline bool rawq_pending(const struct rawq *q)
{
	return __atomic_load_n(&q->n, __ATOMIC_RELAXED);
}

/* rawq_clear() - forget every owed packet (threads stopped: reset). */
void rawq_clear(struct rawq *q);

#endif
