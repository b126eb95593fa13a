/* SPDX-License-Identifier: MIT */
/*
 * The RX virtqueue layer (rxq.c): everything that puts packets on the RX
 * queue, for the pump threads, the control thread and the router alike.
 *
 *   - struct rxq: the RX virtqueue, its lock, the shared pool of chains
 *     idle pumps returned, and how to raise its interrupt (struct vq_irq);
 *   - struct rxq_cache: one thread's reservation of chains (a small ring)
 *     and the used entries it has not published yet;
 *   - the ONE packet writer: rxq_span() gathers the payload room of the
 *     next packet (one chain, or with MRG_RXBUF several: mergeable spans),
 *     the caller fills it, rxq_put() writes the header and num_buffers and
 *     notes the used entries; rxq_send_hdr() does both for a header-only
 *     packet on a thread that keeps no reservation;
 *   - the ONE "publish used entries, decide the interrupt, count it":
 *     used_publish(), for the TX queue too.
 *
 * Knows nothing of connections, pumps or the device: what it needs from
 * them (the interrupt, the counters) is given at rxq_init().
 *
 * Locking: rxq->lock protects vq, pool and pool_n; rxq_init() and
 * rxq_start() run with no thread using the queue. A struct rxq_cache is its
 * owner thread's alone. All functions but rxq_return_pool() take rxq->lock
 * themselves (caller holds no rxq lock).
 */
#ifndef SKIFF_VSOCK_RXQ_H
#define SKIFF_VSOCK_RXQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "counters.h"
#include "packet.h"
#include "virtqueue.h"

#define RX_SLOT_IOV 64u /* iovecs per RX chain */
#define RX_BATCH 64u /* RX chains a thread reserves at once, at most */
#define RX_DONE_MAX (RX_BATCH * 2) /* used entries a cache notes before publishing */

/* One reserved RX chain. */
struct rx_slot {
	struct vq_chain c;
	uint16_t pos; /* avail ring position it was popped from */
	struct iovec iov[RX_SLOT_IOV];
};

/* How a queue's interrupt is raised and counted (set at init, then read-only). */
struct vq_irq {
	void (*signal)(void *opaque, unsigned int q); /* raise queue @q's interrupt */
	void *opaque;
	unsigned int q; /* VSOCK_VQ_* */
	struct dev_counters *ctr; /* irqs_sent, irqs_suppressed (and rxq's rx_*, malformed_pkts) */
};

struct rxq {
	pthread_mutex_t lock; /* protects vq, pool, pool_n */
	struct vq vq;
	struct rx_slot *pool; /* chains popped but unused, returned by idle threads */
	unsigned int pool_n, pool_cap;
	/*
	 * rxq_dgram_put() found too few chains: the threads that keep reserved
	 * chains while idle are to put them in the pool (pump_dgram_short()).
	 */
	atomic_bool dgram_short;

	/* Set by rxq_start() (no thread running), then read-only. */
	bool mrg; /* VIRTIO_VSOCK_F_MRG_RXBUF: 46-byte header, packets span chains */
	uint32_t hdr_len; /* VSOCK_MRG_HDR_LEN or VSOCK_HDR_LEN */
	unsigned int batch; /* chains a cache reserves at once (<= RX_BATCH) */

	struct vq_irq irq; /* set at init */
#ifdef SKIFF_TEST_HOOKS
	unsigned int test_fault; /* vsock_dev_config.test_fault (see rxq_put()) */
	uint32_t test_fault_port;
#endif
};

/* One thread's reserved chains and unpublished used entries. */
struct rxq_cache {
	struct rxq *q;
	struct rx_slot slot[RX_BATCH]; /* a ring: n slots from first */
	unsigned int first, n;
	struct vring_used_elem done[RX_DONE_MAX];
	unsigned int done_n;
	bool unsignalled; /* entries published, the interrupt check not made yet */
};

/*
 * used_publish() - the one "publish used entries, decide the interrupt,
 * count it": put @n used entries @used on @vq in order (contiguous in the
 * used ring: vq_push_batch()), under @lock unless it is NULL (the caller
 * owns @vq alone); then when @check, ask once whether the driver wants an
 * interrupt for everything published since the last check
 * (vq_need_notify(): EVENT_IDX used_event or NO_INTERRUPT), raise it with
 * irq->signal and count irqs_sent, or count irqs_suppressed. @n may be 0
 * (check only).
 */
void used_publish(struct vq *vq, pthread_mutex_t *lock, const struct vring_used_elem *used,
		  unsigned int n, bool check, const struct vq_irq *irq);

/* rxq_init() - an unconfigured queue with a pool of @pool_cap chains. Return: 0, -ENOMEM. */
int rxq_init(struct rxq *q, unsigned int pool_cap, const struct vq_irq *irq);
void rxq_fini(struct rxq *q);

/*
 * rxq_start() - q->vq is set up: take the negotiated @mrg (MRG_RXBUF) and
 * size the reservation batch for @n_threads reserving threads: queue size /
 * (2 x @n_threads), clamped to [4, RX_BATCH]. No thread uses @q.
 */
void rxq_start(struct rxq *q, bool mrg, unsigned int n_threads);

/* rxq_cache_init() - an empty reservation on @q. */
void rxq_cache_init(struct rxq_cache *rc, struct rxq *q);

/* rxq_slot() - the @i-th reserved chain (0: the next), reserving more if needed; NULL when none. */
struct rx_slot *rxq_slot(struct rxq_cache *rc, unsigned int i);

/* rxq_consume() - drop the first @k reserved chains (their used entries are noted). */
void rxq_consume(struct rxq_cache *rc, unsigned int k);

/*
 * rxq_cache_return() - give the unused reserved chains to the pool (as many
 * as it holds). Return: whether any went there (the caller then wakes the
 * threads that starved: pump_rx_kicked()).
 */
bool rxq_cache_return(struct rxq_cache *rc);

/*
 * rxq_return_pool() - threads stopped, every cache returned: forget the
 * pooled chains. With @give_back, un-pop them when they are the last ones
 * popped, or else return them to the driver empty (used length 0) with one
 * interrupt check.
 */
void rxq_return_pool(struct rxq *q, bool give_back);

/*
 * rxq_first_usable() - the first reserved chain long enough for a header
 * (q->hdr_len); shorter ones are returned empty and counted malformed.
 * Publishes the noted used entries first when a packet of @max_chains
 * chains would not fit the list. Return: NULL when the RX queue is out of
 * buffers.
 */
struct rx_slot *rxq_first_usable(struct rxq_cache *rc, unsigned int max_chains);

/*
 * rxq_span() - the payload room of the next RX packet: the first usable
 * chain after its header (rxq_first_usable()), then, with MRG_RXBUF, the
 * reserved chains after it (reserving more as needed), up to @want bytes
 * and @max_chains chains (@max_chains <= RX_BATCH). The room goes into
 * @iov (at most @iov_cap entries, *@niov set) for the caller to fill, then
 * rxq_put(). Return: bytes of room, at most @want (0 when the first chain
 * holds a header only); -EAGAIN when the RX queue has no usable chain.
 */
int rxq_span(struct rxq_cache *rc, uint32_t want, unsigned int max_chains, struct iovec *iov,
	     unsigned int iov_cap, unsigned int *niov);

/*
 * rxq_span_pkts() - without MRG_RXBUF: the payload room of the next @max_pkts
 * RX packets at most, one chain each, for one host read spread over them:
 * the first usable chain (rxq_first_usable()) and the reserved chains after
 * it (reserving more as needed), each after its header, at most @pkt_max
 * bytes per chain and @want in all; a chain that holds a header only ends
 * the run before it. The room goes into @iov (at most @iov_cap entries,
 * *@niov set), the room of chain k into @room[k] (@max_pkts entries),
 * *@npkts chains. The caller fills the room in order, then calls rxq_put()
 * once per chain, in order, with that chain's bytes (the last may have
 * fewer than its room; chains left without bytes stay reserved).
 * Return: bytes of room, at most @want (0 when the first chain holds a
 * header only: rxq_drop_first()); -EAGAIN when the RX queue has no usable
 * chain; -EINVAL with MRG_RXBUF (use rxq_span()).
 */
int rxq_span_pkts(struct rxq_cache *rc, uint32_t want, uint32_t pkt_max, unsigned int max_pkts,
		  struct iovec *iov, unsigned int iov_cap, unsigned int *niov, uint32_t *room,
		  unsigned int *npkts);

/*
 * rxq_drop_first() - the next chain cannot carry the packet (room for a
 * header only where payload is due): return it empty, count it malformed.
 */
void rxq_drop_first(struct rxq_cache *rc);

/*
 * rxq_put() - the one RX packet writer. The first @n payload bytes of the
 * room of the last rxq_span() (or rxq_first_usable()) are filled: write
 * header @h (host order, h->len as given) with num_buffers = the chains
 * those bytes take (the first holds the header) at the start of the first,
 * note the chains' used entries (header + payload bytes of each), drop them
 * from the reservation, count rx_pkts, rx_bytes (@n) and rx_chains_max.
 * In SKIFF_TEST_HOOKS builds an RW packet from the host (src_cid 2) to the
 * configured port lies about its layout (q->test_fault). Return: the chains used.
 */
unsigned int rxq_put(struct rxq_cache *rc, struct virtio_vsock_hdr *h, uint32_t n);

/*
 * rxq_send_hdr() - header-only packet @h (host order) on the RX queue at
 * once, from a thread that keeps no reservation (the control thread; @rc
 * empty on entry and on return): one chain from the pool or the ring
 * (chains with readable descriptors, too short or bad are returned empty
 * and counted malformed, at most 8 tried), published with one interrupt
 * check (used_publish()). Does not ask the driver for a kick. Return: 0;
 * -EAGAIN when no usable chain is available (the caller leaves the packet
 * to a pump).
 */
int rxq_send_hdr(struct rxq_cache *rc, const struct virtio_vsock_hdr *h);

/*
 * rxq_dgram_put() - one datagram (@h, host order, h->len == @len; @len <=
 * 64 KiB payload bytes at @data) on the RX queue now or never, from a
 * thread whose cache @rc is empty on entry (and is on return). Chains come
 * from the pool first, then the ring (never from other threads' caches),
 * and only while more than a quarter of the queue size stays available in
 * the two together, so datagrams never take the RX buffers streams need
 * last; one chain without MRG_RXBUF, up to RX_BATCH with it (one packet,
 * num_buffers set). Chains taken for a datagram that does not fit go back
 * where they came from (ring chains are un-popped). Never asks the driver
 * for a kick. Counts rx_pkts/rx_bytes as rxq_put().
 * On -EAGAIN sets q->dgram_short: a Linux guest refills its RX queue only
 * once fewer than half its buffers are left with the device
 * (virtio_transport.c, rx_buf_nr < rx_buf_max_nr / 2), and idle pumps may
 * keep up to half the queue reserved, so the datagram path can stall for
 * good unless they give those chains to the pool.
 * Return: 0 (published, one interrupt check); -EAGAIN: not enough RX
 * buffers now (beyond the reserve); -EMSGSIZE: without MRG_RXBUF, larger
 * than the first RX buffer.
 */
int rxq_dgram_put(struct rxq_cache *rc, struct virtio_vsock_hdr *h, const void *data, uint32_t len);

/* rxq_publish() - put the noted used entries on the ring, no interrupt check yet. */
void rxq_publish(struct rxq_cache *rc);

/*
 * rxq_flush() - rxq_publish(), then one interrupt check for every entry
 * published since the last check (used_publish()).
 */
void rxq_flush(struct rxq_cache *rc);

#endif
