// SPDX-License-Identifier: MIT
/*
 * RX descriptor chains for the pump threads: each pump reserves chains in
 * batches into its own small ring (cache) under dev->rxq_lock, returns the
 * unused ones to a shared pool when it goes idle, and publishes the used
 * entries of a round at once (one interrupt check per round).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"
#include "iov.h"
#include "rx_chains.h"

struct rx_slot *cache_slot(struct pump *p, unsigned int i)
{
	return &p->cache[i % RX_BATCH];
}

/* Move one slot's chain, fixing its iov pointer. */
static void slot_copy(struct rx_slot *dst, const struct rx_slot *src)
{
	unsigned int n = src->c.n_out + src->c.n_in;

	dst->c = src->c;
	dst->pos = src->pos;
	memcpy(dst->iov, src->iov, n * sizeof(struct iovec));
	dst->c.iov = dst->iov;
	dst->c.cap = RX_SLOT_IOV;
}

/*
 * Top the cache up to @want chains, from the pool first, then the ring.
 * Malformed chains are returned to the guest at once (length 0). Caller does
 * not hold rxq_lock.
 */
void cache_topup(struct pump *p, unsigned int want)
{
	struct vsock_dev *dev = p->dev;
	bool signal = false;

	if (want > RX_BATCH)
		want = RX_BATCH;
	pthread_mutex_lock(&dev->rxq_lock);
	while (p->cache_n < want) {
		struct rx_slot *s = cache_slot(p, p->cache_first + p->cache_n);
		int r;

		if (dev->pool_n) {
			slot_copy(s, &dev->pool[--dev->pool_n]);
			p->cache_n++;
			continue;
		}
		s->c.iov = s->iov;
		s->c.cap = RX_SLOT_IOV;
		s->pos = dev->rxq.last_avail;
		r = vq_pop(&dev->rxq, &s->c);
		if (r == 1 && !s->c.n_out) {
			p->cache_n++;
			continue;
		}
		if (r == 1 || r == -EINVAL || r == -E2BIG) {
			/* Readable RX descriptors, or a bad chain: give it back empty. */
			CTR_ADD(dev, malformed_pkts, 1);
			vq_push(&dev->rxq, s->c.head, 0);
			signal = true;
			continue;
		}
		if (r == 0 && !p->cache_n && vq_enable_notify(&dev->rxq))
			continue;
		break; /* empty, or broken ring */
	}
	if (signal)
		signal = vq_need_notify(&dev->rxq);
	pthread_mutex_unlock(&dev->rxq_lock);
	if (signal) {
		CTR_ADD(dev, irqs_sent, 1);
		dev_signal(dev, VSOCK_VQ_RX);
	}
}

/* The @i-th reserved chain, reserving more if needed; NULL when none. */
struct rx_slot *slot_get(struct pump *p, unsigned int i)
{
	if (i >= p->cache_n)
		cache_topup(p, i + 1 > p->dev->rx_batch ? i + 1 : p->dev->rx_batch);
	return i < p->cache_n ? cache_slot(p, p->cache_first + i) : NULL;
}

void slots_consume(struct pump *p, unsigned int k)
{
	p->cache_first = (p->cache_first + k) % RX_BATCH;
	p->cache_n -= k;
}

/* Give unused reserved chains to the pool (the pump is going idle). */
void cache_return(struct pump *p)
{
	struct vsock_dev *dev = p->dev;
	bool any = p->cache_n;

	if (!any)
		return;
	pthread_mutex_lock(&dev->rxq_lock);
	while (p->cache_n && dev->pool_n < dev->pool_cap) {
		slot_copy(&dev->pool[dev->pool_n++], cache_slot(p, p->cache_first));
		slots_consume(p, 1);
	}
	pthread_mutex_unlock(&dev->rxq_lock);
	pump_rx_kicked(dev);
}

void done_publish(struct pump *p)
{
	struct vsock_dev *dev = p->dev;

	if (!p->done_n)
		return;
	pthread_mutex_lock(&dev->rxq_lock);
	vq_push_batch(&dev->rxq, p->done, p->done_n);
	pthread_mutex_unlock(&dev->rxq_lock);
	p->done_n = 0;
	p->unsignalled = true;
}

/* Publish what is left of this round, then at most one interrupt for all of it. */
void done_flush(struct pump *p)
{
	struct vsock_dev *dev = p->dev;
	bool notify;

	done_publish(p);
	if (!p->unsignalled)
		return;
	p->unsignalled = false;
	pthread_mutex_lock(&dev->rxq_lock);
	notify = vq_need_notify(&dev->rxq);
	pthread_mutex_unlock(&dev->rxq_lock);
	if (notify) {
		CTR_ADD(dev, irqs_sent, 1);
		dev_signal(dev, VSOCK_VQ_RX);
	} else {
		CTR_ADD(dev, irqs_suppressed, 1);
	}
}

void done_add(struct pump *p, uint16_t head, uint32_t len)
{
	p->done[p->done_n].id = head;
	p->done[p->done_n].len = len;
	p->done_n++;
}

static int cmp_pos(const void *a, const void *b)
{
	const struct rx_slot *x = a, *y = b;

	return (int)x->pos - (int)y->pos;
}

void rx_return_all(struct vsock_dev *dev, bool give_back)
{
	unsigned int i, k;
	bool rewind = true, signal;
	uint16_t last = dev->rxq.last_avail;

	for (i = 0; i < dev->n_pumps; i++) {
		struct pump *p = &dev->pumps[i];

		while (p->cache_n && dev->pool_n < dev->pool_cap) {
			slot_copy(&dev->pool[dev->pool_n++], cache_slot(p, p->cache_first));
			slots_consume(p, 1);
		}
	}
	if (!give_back)
		dev->pool_n = 0; /* the queue is being reset: nothing to give back */
	if (!dev->pool_n || !dev->rxq.num)
		return;
	/*
	 * If the unused chains are exactly the last ones popped, un-pop them;
	 * otherwise return them to the driver empty.
	 */
	for (k = 0; k < dev->pool_n; k++)
		dev->pool[k].pos = (uint16_t)(dev->pool[k].pos - (uint16_t)(last - dev->pool_n));
	qsort(dev->pool, dev->pool_n, sizeof(dev->pool[0]), cmp_pos);
	for (k = 0; k < dev->pool_n; k++)
		if (dev->pool[k].pos != k)
			rewind = false;
	if (rewind) {
		dev->rxq.last_avail = (uint16_t)(last - dev->pool_n);
		dev->pool_n = 0;
		return;
	}
	for (k = 0; k < dev->pool_n; k++)
		vq_push(&dev->rxq, dev->pool[k].c.head, 0);
	dev->pool_n = 0;
	signal = vq_need_notify(&dev->rxq);
	if (signal) {
		CTR_ADD(dev, irqs_sent, 1);
		dev_signal(dev, VSOCK_VQ_RX);
	}
}

int rx_send_hdr_now(struct vsock_dev *dev, const struct virtio_vsock_hdr *h)
{
	bool mrg = dev_has_feature(dev, VIRTIO_VSOCK_F_MRG_RXBUF);
	uint32_t hl = mrg ? VSOCK_MRG_HDR_LEN : VSOCK_HDR_LEN;
	struct rx_slot *s = &dev->ctl_rx;
	struct virtio_vsock_mrg_hdr m;
	bool pushed = false, notify = false;
	unsigned int tries;
	int ret = -EAGAIN;

	m.hdr = *h;
	pkt_hdr_to_le(&m.hdr);
	m.num_buffers = htole16(1);
	pthread_mutex_lock(&dev->rxq_lock);
	for (tries = 0; tries < 8; tries++) {
		int r = 1;

		if (dev->pool_n) {
			slot_copy(s, &dev->pool[--dev->pool_n]);
		} else {
			s->c.iov = s->iov;
			s->c.cap = RX_SLOT_IOV;
			r = vq_pop(&dev->rxq, &s->c);
		}
		if (r == 0 || r == -EIO)
			break; /* empty (the pump path asks for a kick), or broken */
		pushed = true;
		if (r == 1 && !s->c.n_out && s->c.in_len >= hl) {
			iov_write(s->c.iov, s->c.n_in, 0, &m, hl);
			vq_push(&dev->rxq, s->c.head, hl);
			ret = 0;
			break;
		}
		/* Readable descriptors, too short, or a bad chain: back empty. */
		CTR_ADD(dev, malformed_pkts, 1);
		vq_push(&dev->rxq, s->c.head, 0);
	}
	if (pushed)
		notify = vq_need_notify(&dev->rxq);
	pthread_mutex_unlock(&dev->rxq_lock);
	if (notify) {
		CTR_ADD(dev, irqs_sent, 1);
		dev_signal(dev, VSOCK_VQ_RX);
	} else if (pushed) {
		CTR_ADD(dev, irqs_suppressed, 1);
	}
	if (!ret)
		CTR_ADD(dev, rx_pkts, 1);
	return ret;
}

uint32_t rx_hdr_len(const struct vsock_dev *dev)
{
	return dev_has_feature(dev, VIRTIO_VSOCK_F_MRG_RXBUF) ? VSOCK_MRG_HDR_LEN : VSOCK_HDR_LEN;
}

struct rx_slot *slot_first_usable(struct pump *p, unsigned int max_chains)
{
	uint32_t hl = rx_hdr_len(p->dev);
	struct rx_slot *s;

	if (p->done_n + max_chains + 1 > RX_BATCH * 2)
		done_flush(p);
	while ((s = slot_get(p, 0)) && s->c.in_len < hl) {
		CTR_ADD(p->dev, malformed_pkts, 1);
		if (p->done_n + max_chains + 1 > RX_BATCH * 2)
			done_flush(p);
		done_add(p, s->c.head, 0);
		slots_consume(p, 1);
	}
	return s;
}
