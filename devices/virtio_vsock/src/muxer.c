// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "conn.h"
#include "muxer.h"

static unsigned int bucket_of(uint32_t local_port, uint32_t peer_port)
{
	uint64_t k = ((uint64_t)local_port << 32) | peer_port;

	k *= 0x9e3779b97f4a7c15ull;
	return (unsigned int)(k >> 40) & (MUX_BUCKETS - 1);
}

int mux_init(struct muxer *m, unsigned int max)
{
	memset(m, 0, sizeof(*m));
	m->max = max;
	return -pthread_mutex_init(&m->lock, NULL);
}

void mux_fini(struct muxer *m)
{
	pthread_mutex_destroy(&m->lock);
}

static struct conn *find(struct muxer *m, uint32_t local_port, uint32_t peer_port)
{
	struct conn *c = m->bucket[bucket_of(local_port, peer_port)];

	while (c && !(c->local_port == local_port && c->peer_port == peer_port))
		c = c->hash_next;
	return c;
}

struct conn *mux_lookup(struct muxer *m, uint32_t local_port, uint32_t peer_port)
{
	struct conn *c;

	pthread_mutex_lock(&m->lock);
	c = find(m, local_port, peer_port);
	if (c)
		conn_get(c);
	pthread_mutex_unlock(&m->lock);
	return c;
}

int mux_insert(struct muxer *m, struct conn *c)
{
	unsigned int b = bucket_of(c->local_port, c->peer_port);
	int ret = 0;

	pthread_mutex_lock(&m->lock);
	if (find(m, c->local_port, c->peer_port)) {
		ret = -EEXIST;
	} else if (m->count >= m->max) {
		ret = -ENOSPC;
	} else {
		conn_get(c);
		c->hash_next = m->bucket[b];
		m->bucket[b] = c;
		c->in_table = true;
		__atomic_store_n(&m->count, m->count + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&m->lock);
	return ret;
}

int mux_remove(struct muxer *m, struct conn *c)
{
	struct conn **pp;
	int removed = 0;

	pthread_mutex_lock(&m->lock);
	if (c->in_table) {
		for (pp = &m->bucket[bucket_of(c->local_port, c->peer_port)]; *pp;
		     pp = &(*pp)->hash_next) {
			if (*pp == c) {
				*pp = c->hash_next;
				break;
			}
		}
		c->in_table = false;
		__atomic_store_n(&m->count, m->count - 1, __ATOMIC_RELAXED);
		removed = 1;
	}
	pthread_mutex_unlock(&m->lock);
	if (removed)
		conn_put(c);
	return removed;
}

bool mux_local_port_used(struct muxer *m, uint32_t local_port)
{
	unsigned int b;
	bool used = false;

	pthread_mutex_lock(&m->lock);
	for (b = 0; b < MUX_BUCKETS && !used; b++) {
		struct conn *c;

		for (c = m->bucket[b]; c; c = c->hash_next) {
			if (c->local_port == local_port) {
				used = true;
				break;
			}
		}
	}
	pthread_mutex_unlock(&m->lock);
	return used;
}

void mux_drain(struct muxer *m, void (*fn)(struct conn *c, void *opaque), void *opaque)
{
	unsigned int b;

	for (b = 0; b < MUX_BUCKETS; b++) {
		for (;;) {
			struct conn *c;

			pthread_mutex_lock(&m->lock);
			c = m->bucket[b];
			if (c) {
				m->bucket[b] = c->hash_next;
				c->in_table = false;
				__atomic_store_n(&m->count, m->count - 1, __ATOMIC_RELAXED);
			}
			pthread_mutex_unlock(&m->lock);
			if (!c)
				break;
			fn(c, opaque);
		}
	}
}
