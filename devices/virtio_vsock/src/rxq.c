// SPDX-License-Identifier: MIT
/*
 * The RX virtqueue layer: chain reservation (per-thread caches, the shared
 * pool), the one packet writer and the one used-entry publisher. See rxq.h.
 */
#include "rxq.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iov.h"

#define SEND_HDR_TRIES 8u /* chains rxq_send_hdr() looks at, at most */

void used_publish(struct vq *vq, pthread_mutex_t *lock, const struct vring_used_elem *used,
		  unsigned int n, bool check, const struct vq_irq *irq)
{
	bool notify = false;

	if (lock)
		pthread_mutex_lock(lock);
	if (n)
		vq_push_batch(vq, used, n);
	if (check)
		notify = vq_need_notify(vq);
	if (lock)
		pthread_mutex_unlock(lock);
	if (!check)
		return;
	if (notify) {
		CTR(irq->ctr, irqs_sent, 1);
		irq->signal(irq->opaque, irq->q);
	} else {
		CTR(irq->ctr, irqs_suppressed, 1);
	}
}

int rxq_init(struct rxq *q, unsigned int pool_cap, const struct vq_irq *irq)
{
	memset(q, 0, sizeof(*q));
	q->irq = *irq;
	q->pool_cap = pool_cap;
	q->hdr_len = VSOCK_HDR_LEN;
	q->batch = 4;
	q->pool = calloc(pool_cap, sizeof(*q->pool));
	if (!q->pool)
		return -ENOMEM;
	if (pthread_mutex_init(&q->lock, NULL)) {
		free(q->pool);
		q->pool = NULL;
		return -ENOMEM;
	}
	return 0;
}

void rxq_fini(struct rxq *q)
{
	if (!q->pool)
		return;
	free(q->pool);
	q->pool = NULL;
	pthread_mutex_destroy(&q->lock);
}

void rxq_start(struct rxq *q, bool mrg, unsigned int n_threads)
{
	q->mrg = mrg;
	q->hdr_len = mrg ? VSOCK_MRG_HDR_LEN : VSOCK_HDR_LEN;
	q->batch = q->vq.num / (2 * (n_threads ? n_threads : 1));
	if (q->batch < 4)
		q->batch = 4;
	if (q->batch > RX_BATCH)
		q->batch = RX_BATCH;
}

void rxq_cache_init(struct rxq_cache *rc, struct rxq *q)
{
	rc->q = q;
	rc->first = rc->n = 0;
	rc->done_n = 0;
	rc->unsignalled = false;
}

static struct rx_slot *ring_slot(struct rxq_cache *rc, unsigned int i)
{
	return &rc->slot[(rc->first + i) % RX_BATCH];
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

/* Note used entry (@head, @len); the caller keeps done_n below RX_DONE_MAX. */
static void note(struct rxq_cache *rc, uint16_t head, uint32_t len)
{
	rc->done[rc->done_n].id = head;
	rc->done[rc->done_n].len = len;
	rc->done_n++;
}

/*
 * Reserve chains up to @want (<= RX_BATCH): from the pool first, then the
 * ring. Chains with readable descriptors or that fail the walk are
 * returned at once with used length 0 (published, one interrupt check) and
 * counted malformed, at most @max_bad of them. With @ask_kick, an empty
 * ring and nothing reserved, asks the driver for a kick and re-checks.
 */
static void topup(struct rxq_cache *rc, unsigned int want, bool ask_kick, unsigned int max_bad)
{
	struct rxq *q = rc->q;
	unsigned int bad = 0;
	bool more = true;

	if (want > RX_BATCH)
		want = RX_BATCH;
	while (more) {
		bool returned = false;

		more = false;
		pthread_mutex_lock(&q->lock);
		while (rc->n < want) {
			struct rx_slot *s = ring_slot(rc, rc->n);
			int r;

			if (q->pool_n) {
				slot_copy(s, &q->pool[--q->pool_n]);
				rc->n++;
				continue;
			}
			s->c.iov = s->iov;
			s->c.cap = RX_SLOT_IOV;
			s->pos = q->vq.last_avail;
			r = vq_pop(&q->vq, &s->c);
			if (r == 1 && !s->c.n_out) {
				rc->n++;
				continue;
			}
			if (r == 1 || r == -EINVAL || r == -E2BIG) {
				/* Readable RX descriptors, or a bad chain: give it back empty. */
				CTR(q->irq.ctr, malformed_pkts, 1);
				note(rc, s->c.head, 0);
				returned = true;
				if (++bad == max_bad)
					break;
				if (rc->done_n == RX_DONE_MAX) {
					more = true; /* publish, then go on */
					break;
				}
				continue;
			}
			if (ask_kick && r == 0 && !rc->n && vq_enable_notify(&q->vq))
				continue;
			break; /* empty, or broken ring */
		}
		pthread_mutex_unlock(&q->lock);
		if (returned)
			rxq_flush(rc);
	}
}

struct rx_slot *rxq_slot(struct rxq_cache *rc, unsigned int i)
{
	if (i >= rc->n)
		topup(rc, i + 1 > rc->q->batch ? i + 1 : rc->q->batch, true, UINT32_MAX);
	return i < rc->n ? ring_slot(rc, i) : NULL;
}

void rxq_consume(struct rxq_cache *rc, unsigned int k)
{
	rc->first = (rc->first + k) % RX_BATCH;
	rc->n -= k;
}

bool rxq_cache_return(struct rxq_cache *rc)
{
	struct rxq *q = rc->q;

	if (!rc->n)
		return false;
	pthread_mutex_lock(&q->lock);
	while (rc->n && q->pool_n < q->pool_cap) {
		slot_copy(&q->pool[q->pool_n++], ring_slot(rc, 0));
		rxq_consume(rc, 1);
	}
	pthread_mutex_unlock(&q->lock);
	return true;
}

static int cmp_pos(const void *a, const void *b)
{
	const struct rx_slot *x = a, *y = b;

	return (int)x->pos - (int)y->pos;
}

void rxq_return_pool(struct rxq *q, bool give_back)
{
	uint16_t last = q->vq.last_avail;
	bool rewind = true;
	unsigned int k;

	if (!give_back)
		q->pool_n = 0; /* the queue is being reset: nothing to give back */
	if (!q->pool_n || !q->vq.num)
		return;
	/*
	 * If the unused chains are exactly the last ones popped, un-pop them;
	 * otherwise return them to the driver empty.
	 */
	for (k = 0; k < q->pool_n; k++)
		q->pool[k].pos = (uint16_t)(q->pool[k].pos - (uint16_t)(last - q->pool_n));
	qsort(q->pool, q->pool_n, sizeof(q->pool[0]), cmp_pos);
	for (k = 0; k < q->pool_n; k++)
		if (q->pool[k].pos != k)
			rewind = false;
	if (rewind) {
		q->vq.last_avail = (uint16_t)(last - q->pool_n);
		q->pool_n = 0;
		return;
	}
	for (k = 0; k < q->pool_n; k++)
		vq_push(&q->vq, q->pool[k].c.head, 0);
	q->pool_n = 0;
	used_publish(&q->vq, NULL, NULL, 0, true, &q->irq);
}

void rxq_drop_first(struct rxq_cache *rc)
{
	CTR(rc->q->irq.ctr, malformed_pkts, 1);
	if (rc->done_n == RX_DONE_MAX)
		rxq_flush(rc);
	note(rc, ring_slot(rc, 0)->c.head, 0);
	rxq_consume(rc, 1);
}

struct rx_slot *rxq_first_usable(struct rxq_cache *rc, unsigned int max_chains)
{
	uint32_t hl = rc->q->hdr_len;
	struct rx_slot *s;

	if (rc->done_n + max_chains + 1 > RX_DONE_MAX)
		rxq_flush(rc);
	while ((s = rxq_slot(rc, 0)) && s->c.in_len < hl) {
		if (rc->done_n + max_chains + 1 > RX_DONE_MAX)
			rxq_flush(rc);
		rxq_drop_first(rc);
	}
	return s;
}

int rxq_span(struct rxq_cache *rc, uint32_t want, unsigned int max_chains, struct iovec *iov,
	     unsigned int iov_cap, unsigned int *niov)
{
	struct rxq *q = rc->q;
	struct rx_slot *s = rxq_first_usable(rc, max_chains);
	uint32_t space;
	unsigned int n, k;

	if (!s)
		return -EAGAIN;
	space = s->c.in_len - q->hdr_len;
	if (space > want)
		space = want;
	n = iov_slice(s->c.iov + s->c.n_out, s->c.n_in, q->hdr_len, space, iov, iov_cap);
	for (k = 1; q->mrg && space < want && k < max_chains && n < iov_cap; k++) {
		struct rx_slot *t = rxq_slot(rc, k);
		uint32_t add;

		if (!t)
			break;
		add = t->c.in_len < want - space ? t->c.in_len : want - space;
		n += iov_slice(t->c.iov + t->c.n_out, t->c.n_in, 0, add, iov + n, iov_cap - n);
		space += add;
	}
	*niov = n;
	return (int)iov_bytes(iov, n);
}

int rxq_span_pkts(struct rxq_cache *rc, uint32_t want, uint32_t pkt_max, unsigned int max_pkts,
		  struct iovec *iov, unsigned int iov_cap, unsigned int *niov, uint32_t *room,
		  unsigned int *npkts)
{
	struct rxq *q = rc->q;
	struct rx_slot *s;
	uint32_t space = 0;
	unsigned int n = 0, k;

	if (q->mrg)
		return -EINVAL;
	s = rxq_first_usable(rc, max_pkts);
	if (!s)
		return -EAGAIN;
	for (k = 0; k < max_pkts && space < want && n < iov_cap; k++) {
		struct rx_slot *t = k ? rxq_slot(rc, k) : s;
		uint32_t add;
		unsigned int m;

		if (!t || t->c.in_len <= q->hdr_len)
			break; /* a header-only chain is the next call's first */
		add = t->c.in_len - q->hdr_len;
		if (add > pkt_max)
			add = pkt_max;
		if (add > want - space)
			add = want - space;
		m = iov_slice(t->c.iov + t->c.n_out, t->c.n_in, q->hdr_len, add, iov + n,
			      iov_cap - n);
		add = (uint32_t)iov_bytes(iov + n, m); /* less when @iov ran out */
		if (!add)
			break;
		room[k] = add;
		n += m;
		space += add;
	}
	*niov = n;
	*npkts = k;
	return (int)space;
}

#ifdef SKIFF_TEST_HOOKS
/*
 * Test only (vsock_dev_config.test_fault): make RW header @h, about to go
 * out in *@nbufs chains, lie about that layout. The used entries are left
 * true, so the guest sees exactly the lie chosen.
 */
static void test_fault(struct rxq *q, struct virtio_vsock_hdr *h, uint16_t *nbufs)
{
	uint16_t qsize;

	if (!q->mrg || !q->test_fault || h->op != VIRTIO_VSOCK_OP_RW ||
	    h->src_cid != VSOCK_CID_HOST ||
	    (q->test_fault_port && h->dst_port != q->test_fault_port))
		return;
	switch (q->test_fault) {
	case VSOCK_TEST_FAULT_NUMBUF_ZERO:
		*nbufs = 0;
		break;
	case VSOCK_TEST_FAULT_NUMBUF_OVER:
		*nbufs += 1;
		break;
	case VSOCK_TEST_FAULT_NUMBUF_RING:
		pthread_mutex_lock(&q->lock);
		qsize = q->vq.num;
		pthread_mutex_unlock(&q->lock);
		*nbufs = (uint16_t)(qsize + 1);
		break;
	case VSOCK_TEST_FAULT_LEN_OVER:
		h->len += 1;
		break;
	case VSOCK_TEST_FAULT_LEN_UNDER:
		if (h->len)
			h->len -= 1;
		break;
	}
}
#endif

unsigned int rxq_put(struct rxq_cache *rc, struct virtio_vsock_hdr *h, uint32_t n)
{
	struct rxq *q = rc->q;
	struct rx_slot *s = ring_slot(rc, 0);
	struct virtio_vsock_mrg_hdr m;
	uint32_t left = n;
	uint16_t nbufs;
	unsigned int i;

	/* Used entries: the first chain holds the header, then payload in order. */
	for (i = 0;; i++) {
		struct rx_slot *t = ring_slot(rc, i);
		uint32_t room = i ? t->c.in_len : t->c.in_len - q->hdr_len;
		uint32_t put = left < room ? left : room;

		note(rc, t->c.head, put + (i ? 0 : q->hdr_len));
		left -= put;
		if (!left)
			break;
	}
	nbufs = (uint16_t)(i + 1);
#ifdef SKIFF_TEST_HOOKS
	test_fault(q, h, &nbufs);
#endif
	m.hdr = *h;
	pkt_hdr_to_le(&m.hdr);
	m.num_buffers = htole16(nbufs);
	iov_write(s->c.iov + s->c.n_out, s->c.n_in, 0, &m, q->hdr_len);
	rxq_consume(rc, i + 1);
	CTR(q->irq.ctr, rx_pkts, 1);
	if (n)
		CTR(q->irq.ctr, rx_bytes, n);
	ctr_max(&q->irq.ctr->rx_chains_max, i + 1);
	return i + 1;
}

int rxq_send_hdr(struct rxq_cache *rc, const struct virtio_vsock_hdr *h)
{
	struct virtio_vsock_hdr copy = *h;
	unsigned int tries;
	int ret = -EAGAIN;

	for (tries = 0; tries < SEND_HDR_TRIES; tries++) {
		topup(rc, 1, false, SEND_HDR_TRIES);
		if (!rc->n)
			break; /* empty (a pump asks for a kick), or broken */
		if (ring_slot(rc, 0)->c.in_len >= rc->q->hdr_len) {
			rxq_put(rc, &copy, 0);
			ret = 0;
			break;
		}
		rxq_drop_first(rc); /* too short for the header: back empty */
	}
	rxq_flush(rc);
	return ret;
}

void rxq_publish(struct rxq_cache *rc)
{
	struct rxq *q = rc->q;

	if (!rc->done_n)
		return;
	used_publish(&q->vq, &q->lock, rc->done, rc->done_n, false, &q->irq);
	rc->done_n = 0;
	rc->unsignalled = true;
}

void rxq_flush(struct rxq_cache *rc)
{
	struct rxq *q = rc->q;

	if (!rc->done_n && !rc->unsignalled)
		return;
	used_publish(&q->vq, &q->lock, rc->done, rc->done_n, true, &q->irq);
	rc->done_n = 0;
	rc->unsignalled = false;
}

/*
 * Pop the chains of a datagram of @len payload bytes into @rc (empty),
 * under q->lock, never below the reserve. Return: 0 when they hold it;
 * -EAGAIN / -EMSGSIZE (as rxq_dgram_put()) with the chains un-popped.
 */
static int dgram_pop(struct rxq_cache *rc, uint32_t len)
{
	struct rxq *q = rc->q;
	unsigned int max = q->mrg ? RX_BATCH : 1, reserve = q->vq.num / 4;
	uint16_t start = q->vq.last_avail;
	unsigned int have = vq_avail_count(&q->vq) + q->pool_n, pooled = 0, k;
	uint32_t room = 0;
	bool bad = false, too_big;

	while (rc->n < max && (room < len || !rc->n)) {
		struct rx_slot *s = ring_slot(rc, rc->n);
		int r = 1;

		if (pooled + (unsigned int)(uint16_t)(q->vq.last_avail - start) + reserve >= have)
			break;
		if (q->pool_n && pooled == rc->n) {
			/* Pool chains first, so that a failure puts them back in order. */
			slot_copy(s, &q->pool[--q->pool_n]);
			pooled++;
		} else {
			s->c.iov = s->iov;
			s->c.cap = RX_SLOT_IOV;
			s->pos = q->vq.last_avail;
			r = vq_pop(&q->vq, &s->c);
		}
		if (r == 1 && !s->c.n_out && (rc->n || s->c.in_len >= q->hdr_len)) {
			room += rc->n ? s->c.in_len : s->c.in_len - q->hdr_len;
			rc->n++;
			continue;
		}
		if (r == 1 || r == -EINVAL || r == -E2BIG) {
			/* Readable, short or bad: back empty, as topup() does. */
			CTR(q->irq.ctr, malformed_pkts, 1);
			note(rc, s->c.head, 0);
			bad = true;
			break;
		}
		break; /* empty, or broken */
	}
	if (rc->n && room >= len)
		return 0;
	too_big = !q->mrg && rc->n == 1 && room < len;
	if (!bad) {
		q->vq.last_avail = start; /* un-pop: nothing else popped meanwhile */
		for (k = 0; k < pooled; k++) /* slots 0 .. pooled - 1 came from the pool */
			slot_copy(&q->pool[q->pool_n++], ring_slot(rc, pooled - 1 - k));
		rc->n = 0;
	} else {
		while (rc->n) {
			note(rc, ring_slot(rc, 0)->c.head, 0);
			rxq_consume(rc, 1);
		}
	}
	return too_big ? -EMSGSIZE : -EAGAIN;
}

int rxq_dgram_put(struct rxq_cache *rc, struct virtio_vsock_hdr *h, const void *data, uint32_t len)
{
	struct rxq *q = rc->q;
	const uint8_t *p = data;
	uint32_t left = len;
	unsigned int i;
	int ret;

	pthread_mutex_lock(&q->lock);
	ret = dgram_pop(rc, len);
	pthread_mutex_unlock(&q->lock);
	if (ret == -EAGAIN)
		atomic_store(&q->dgram_short, true);
	if (ret) {
		rxq_flush(rc); /* bad chains given back, if any */
		return ret;
	}
	for (i = 0; left; i++) {
		struct rx_slot *t = ring_slot(rc, i);
		uint32_t off = i ? 0 : q->hdr_len, room = t->c.in_len - off;
		uint32_t put = left < room ? left : room;

		iov_write(t->c.iov + t->c.n_out, t->c.n_in, off, p, put);
		p += put;
		left -= put;
	}
	rxq_put(rc, h, len);
	rxq_flush(rc);
	return 0;
}
