// SPDX-License-Identifier: MIT
/* Connection-less packets owed to the guest; see rawq.h. */
#include "rawq.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int rawq_init(struct rawq *q, struct dev_counters *ctr, int wake_fd)
{
	q->n = 0;
	q->ctr = ctr;
	q->wake_fd = wake_fd;
	return -pthread_mutex_init(&q->lock, NULL);
}

void rawq_fini(struct rawq *q)
{
	pthread_mutex_destroy(&q->lock);
}

void rawq_put(struct rawq *q, const struct virtio_vsock_hdr *h)
{
	bool queued = false;

	pthread_mutex_lock(&q->lock);
	if (q->n < DEV_RAW_MAX) {
		q->raw[q->n] = *h;
		__atomic_store_n(&q->n, q->n + 1, __ATOMIC_RELAXED);
		queued = true;
	}
	pthread_mutex_unlock(&q->lock);
	if (queued) {
		uint64_t one = 1;
		ssize_t r = write(q->wake_fd, &one, sizeof(one));

		(void)r; /* EAGAIN: the counter is non-zero already, the sender wakes */
	} else {
		CTR(q->ctr, dropped_pkts, 1);
	}
}

bool rawq_peek(struct rawq *q, struct virtio_vsock_hdr *h)
{
	bool any;

	pthread_mutex_lock(&q->lock);
	any = q->n;
	if (any)
		*h = q->raw[0];
	pthread_mutex_unlock(&q->lock);
	return any;
}

void rawq_pop(struct rawq *q)
{
	pthread_mutex_lock(&q->lock);
	if (q->n) {
		memmove(&q->raw[0], &q->raw[1], (q->n - 1) * sizeof(q->raw[0]));
		__atomic_store_n(&q->n, q->n - 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&q->lock);
}

void rawq_clear(struct rawq *q)
{
	__atomic_store_n(&q->n, 0, __ATOMIC_RELAXED);
}
