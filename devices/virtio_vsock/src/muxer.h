/* SPDX-License-Identifier: MIT */
/*
 * Connection table keyed by (local port, peer port), with the connection
 * cap. Routing by destination CID happens before this (dev_ctl.c): only
 * packets for CID 2 reach it, and packets that belong to no connection
 * (a REQUEST, a stray packet, later datagrams) are handled by the caller.
 *
 * Locking: mux->lock protects the buckets, the count (stored atomically, read
 * without the lock: see struct muxer) and every conn's
 * hash_next / in_table. Lock order: conn->lock before mux->lock.
 */
#ifndef SKIFF_VSOCK_MUXER_H
#define SKIFF_VSOCK_MUXER_H

#include <pthread.h>
#include <stdint.h>

struct conn;

#define MUX_BUCKETS 1024u

struct muxer {
	pthread_mutex_t lock;
	/*
	 * Written under lock, always with an atomic store: the control thread
	 * reads it without the lock for the connection cap (request_socket()),
	 * where a value one connection old is harmless (mux_insert() checks again).
	 */
	unsigned int count;
	unsigned int max;
	struct conn *bucket[MUX_BUCKETS];
};

int mux_init(struct muxer *m, unsigned int max);
void mux_fini(struct muxer *m);

/* mux_lookup() - the connection for the ports, with a reference taken; or NULL. */
struct conn *mux_lookup(struct muxer *m, uint32_t local_port, uint32_t peer_port);

/*
 * mux_insert() - add @c (the table takes a reference).
 * Return: 0; -EEXIST when the ports are taken; -ENOSPC at the connection cap.
 */
int mux_insert(struct muxer *m, struct conn *c);

/* mux_remove() - take @c out if it is in; drops the table's reference. Return: 1 if removed. */
int mux_remove(struct muxer *m, struct conn *c);

/* mux_local_port_used() - whether any connection uses @local_port. */
bool mux_local_port_used(struct muxer *m, uint32_t local_port);

/*
 * mux_drain() - empty the table: calls @fn on each connection with the table
 * lock released (the reference passes to @fn). For reset and destroy.
 */
void mux_drain(struct muxer *m, void (*fn)(struct conn *c, void *opaque), void *opaque);

#endif
