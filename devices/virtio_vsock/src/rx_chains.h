/* SPDX-License-Identifier: MIT */
/*
 * RX chain reservation for the pump threads (rx_chains.c). All functions
 * but rx_return_all() run on the pump thread that owns @p, without
 * dev->rxq_lock held (they take it themselves).
 */
#ifndef SKIFF_VSOCK_RX_CHAINS_H
#define SKIFF_VSOCK_RX_CHAINS_H

#include "dev.h"

/* The @i-th slot of the pump's cache ring (index not reduced). */
struct rx_slot *cache_slot(struct pump *p, unsigned int i);

/*
 * cache_topup() - fill the cache up to @want chains (<= RX_BATCH): from the
 * pool first, then the RX ring. Chains with readable descriptors or that
 * fail the walk are returned at once with used length 0 and counted as
 * malformed. With an empty ring and an empty cache, asks the driver for a
 * kick (vq_enable_notify) and re-checks.
 */
void cache_topup(struct pump *p, unsigned int want);

/* slot_get() - the @i-th reserved chain, reserving more if needed; NULL when none. */
struct rx_slot *slot_get(struct pump *p, unsigned int i);

/* slots_consume() - drop the first @k reserved chains (they were used). */
void slots_consume(struct pump *p, unsigned int k);

/* cache_return() - give the unused chains to the pool; wake starved pumps. */
void cache_return(struct pump *p);

/* rx_hdr_len() - bytes of header before an RX payload: with MRG_RXBUF, num_buffers too. */
uint32_t rx_hdr_len(const struct vsock_dev *dev);

/*
 * slot_first_usable() - the first reserved chain long enough for a header
 * (rx_hdr_len()); shorter ones are returned empty and counted malformed.
 * Flushes used entries first so that a packet of up to @max_chains chains
 * fits the done list. Return: NULL when the RX queue is out of buffers.
 */
struct rx_slot *slot_first_usable(struct pump *p, unsigned int max_chains);

/*
 * done_add() - note a used entry. done_publish() puts the noted entries in
 * the used ring (under rxq_lock) without an interrupt; done_flush() does
 * that too, then checks once whether the guest wants an interrupt for all
 * entries published since the last check, and raises it.
 */
void done_add(struct pump *p, uint16_t head, uint32_t len);
void done_publish(struct pump *p);
void done_flush(struct pump *p);

/*
 * rx_send_hdr_now() - put the header-only packet @h (host order) on the RX
 * queue at once, from the control thread (a thread without a chain cache):
 * one chain from the pool or the ring under rxq_lock, published at once,
 * then at most one interrupt. Unusable chains met on the way are returned
 * empty and counted as malformed (at most 8). Return: 0; -EAGAIN when no
 * usable chain is available (the caller leaves the packet to the pump).
 */
int rx_send_hdr_now(struct vsock_dev *dev, const struct virtio_vsock_hdr *h);

#endif
