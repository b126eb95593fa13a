// SPDX-License-Identifier: MIT
/*
 * Guest-to-guest routing: groups of devices, per-destination forward
 * queues, connection tracking from REQUEST to RST, delivery into the
 * destination's RX virtqueue by its pump 0. See router.h for the model,
 * the caps and the locking.
 *
 * Both guests run the protocol of Linux's
 * net/vmw_vsock/virtio_transport_common.c between themselves; the device
 * refuses with an RST where a Linux peer would answer one for a packet of
 * no socket (virtio_transport_reset_no_sock()).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iov.h"
#include "router.h"

#define ROUTE_BUCKETS 1024u
#define ROUTE_PKT_IOV 256u /* iovecs of one delivered packet */

/* One packet on its way to a destination, header in host order. */
struct fwd_pkt {
	struct fwd_pkt *next;
	struct virtio_vsock_hdr hdr; /* hdr.len: payload bytes in data (0 but for RW) */
	uint32_t off; /* payload bytes already delivered (pump 0 of the destination) */
	uint8_t data[];
};

/*
 * A tracked guest-to-guest connection: end 0 sent the REQUEST. m[i] is the
 * member of end i, NULL once that member went offline; rst_to is the
 * member that is owed an RST because the other end went away.
 */
struct route_track {
	struct route_track *next;
	uint64_t cid[2];
	uint32_t port[2];
	struct route_member *m[2];
	struct route_member *rst_to;
	uint16_t type;
};

struct route_member {
	struct route_group *g;
	struct route_link link; /* the device's side (router.h) */
	uint64_t cid;
	struct route_member *next;

	/* Under g->lock. */
	bool online;
	bool seqpacket; /* negotiated VIRTIO_VSOCK_F_SEQPACKET (set by route_online()) */
	bool dgram; /* negotiated VIRTIO_VSOCK_F_DGRAM */
	struct fwd_pkt *q_head, *q_tail;
	uint32_t q_bytes, q_dgram_bytes;
	unsigned int q_data, q_ctl, q_dgram;
	unsigned int rst_owed; /* tracks with rst_to == this member */
	unsigned int n_tracked; /* tracks with this member as an end */
	unsigned int n_waiters; /* members whose waiting_on is this one */
	struct route_member *waiting_on; /* destination of our held packet */

	atomic_bool rx_pending; /* q_head || rst_owed, for pump 0's idle check */

	/* Control thread of dev (or its threads stopped). */
	struct fwd_pkt *held;
};

struct route_group {
	struct route_group *next; /* groups list, under groups_lock */
	char name[VSOCK_GROUP_NAME_MAX + 1];
	pthread_mutex_t lock;
	struct route_member *members;
	unsigned int n_tracks;
	struct route_track *bucket[ROUTE_BUCKETS];
};

static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;
static struct route_group *groups; /* under groups_lock */

static void wake_fd(int fd)
{
	uint64_t one = 1;
	ssize_t r = write(fd, &one, sizeof(one));

	(void)r;
}

static void update_pending(struct route_member *m)
{
	atomic_store(&m->rx_pending, m->q_head || m->rst_owed);
}

/* ---- connection table (g->lock held) ---- */

static unsigned int track_hash(uint64_t c1, uint32_t p1, uint64_t c2, uint32_t p2)
{
	uint64_t a = (c1 << 32) ^ p1, b = (c2 << 32) ^ p2, x;

	if (a > b) {
		x = a;
		a = b;
		b = x;
	}
	x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
	return (unsigned int)(x >> 40) % ROUTE_BUCKETS;
}

static struct route_track *track_find(struct route_group *g, uint64_t c1, uint32_t p1, uint64_t c2,
				      uint32_t p2)
{
	struct route_track *t;

	for (t = g->bucket[track_hash(c1, p1, c2, p2)]; t; t = t->next) {
		if (t->cid[0] == c1 && t->port[0] == p1 && t->cid[1] == c2 && t->port[1] == p2)
			return t;
		if (t->cid[0] == c2 && t->port[0] == p2 && t->cid[1] == c1 && t->port[1] == p1)
			return t;
	}
	return NULL;
}

static struct route_track *track_new(struct route_group *g, struct route_member *a,
				     const struct virtio_vsock_hdr *h, struct route_member *b)
{
	struct route_track *t = calloc(1, sizeof(*t));
	unsigned int i;

	if (!t)
		return NULL;
	t->cid[0] = h->src_cid;
	t->port[0] = h->src_port;
	t->cid[1] = h->dst_cid;
	t->port[1] = h->dst_port;
	t->m[0] = a;
	t->m[1] = b;
	t->type = h->type;
	i = track_hash(t->cid[0], t->port[0], t->cid[1], t->port[1]);
	t->next = g->bucket[i];
	g->bucket[i] = t;
	a->n_tracked++;
	b->n_tracked++;
	g->n_tracks++;
	return t;
}

static void track_remove(struct route_group *g, struct route_track *t)
{
	struct route_track **pp =
		&g->bucket[track_hash(t->cid[0], t->port[0], t->cid[1], t->port[1])];
	unsigned int i;

	while (*pp && *pp != t)
		pp = &(*pp)->next;
	if (*pp)
		*pp = t->next;
	for (i = 0; i < 2; i++)
		if (t->m[i])
			t->m[i]->n_tracked--;
	if (t->rst_to) {
		t->rst_to->rst_owed--;
		update_pending(t->rst_to);
	}
	g->n_tracks--;
	free(t);
}

/*
 * End @end of @t is gone (its member went offline, or its guest broke the
 * protocol): the other end, if its member is online, is owed an RST (sent
 * by its pump 0, then the track is removed); else the track goes now.
 */
static void track_drop_end(struct route_group *g, struct route_track *t, int end)
{
	struct route_member *other = t->m[!end];

	t->m[end]->n_tracked--;
	t->m[end] = NULL;
	if (other && other->online && !t->rst_to) {
		t->rst_to = other;
		other->rst_owed++;
		update_pending(other);
		wake_fd(other->link.rx_wake_fd);
	} else {
		track_remove(g, t);
	}
}

/* ---- membership ---- */

int route_join(const struct route_link *link, const char *name, struct route_member **out)
{
	struct route_member *m, *o;
	struct route_group *g;
	int ret = 0;

	if (!name)
		name = "";
	if (strlen(name) > VSOCK_GROUP_NAME_MAX)
		return -ENAMETOOLONG;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->link = *link;
	m->cid = link->cid;
	atomic_init(&m->rx_pending, false);
	pthread_mutex_lock(&groups_lock);
	for (g = groups; g; g = g->next)
		if (!strcmp(g->name, name))
			break;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			ret = -ENOMEM;
			goto out;
		}
		strcpy(g->name, name);
		pthread_mutex_init(&g->lock, NULL);
		g->next = groups;
		groups = g;
	}
	pthread_mutex_lock(&g->lock);
	for (o = g->members; o; o = o->next)
		if (o->cid == m->cid)
			ret = -EADDRINUSE;
	if (!ret) {
		m->g = g;
		m->next = g->members;
		g->members = m;
		*out = m;
	}
	pthread_mutex_unlock(&g->lock);
	if (ret && !g->members) {
		/* A group made for nobody (only possible when it was new). */
		groups = g->next;
		pthread_mutex_destroy(&g->lock);
		free(g);
	}
out:
	pthread_mutex_unlock(&groups_lock);
	if (ret)
		free(m);
	return ret;
}

void route_leave(struct route_member *m)
{
	struct route_member **pp;
	struct route_group *g, **gp;

	if (!m)
		return;
	route_offline(m);
	g = m->g;
	pthread_mutex_lock(&groups_lock);
	pthread_mutex_lock(&g->lock);
	for (pp = &g->members; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	pthread_mutex_unlock(&g->lock);
	if (!g->members) {
		for (gp = &groups; *gp; gp = &(*gp)->next)
			if (*gp == g) {
				*gp = g->next;
				break;
			}
		pthread_mutex_destroy(&g->lock);
		free(g); /* no member: no track, no queue left */
	}
	pthread_mutex_unlock(&groups_lock);
	free(m);
}

void route_online(struct route_member *m, bool seqpacket, bool dgram)
{
	pthread_mutex_lock(&m->g->lock);
	m->online = true;
	m->seqpacket = seqpacket;
	m->dgram = dgram;
	pthread_mutex_unlock(&m->g->lock);
}

static void queue_free(struct route_member *m)
{
	while (m->q_head) {
		struct fwd_pkt *f = m->q_head;

		m->q_head = f->next;
		free(f);
	}
	m->q_tail = NULL;
	m->q_bytes = m->q_dgram_bytes = 0;
	m->q_data = m->q_ctl = m->q_dgram = 0;
}

void route_offline(struct route_member *m)
{
	struct route_member *o;
	struct route_group *g;
	unsigned int i;

	if (!m)
		return;
	g = m->g;
	pthread_mutex_lock(&g->lock);
	m->online = false;
	queue_free(m);
	free(m->held);
	m->held = NULL;
	if (m->waiting_on) {
		m->waiting_on->n_waiters--;
		m->waiting_on = NULL;
	}
	for (o = g->members; o && m->n_waiters; o = o->next) {
		if (o->waiting_on != m)
			continue;
		o->waiting_on = NULL;
		m->n_waiters--;
		wake_fd(o->link.tx_wake_fd); /* its held packet now meets an offline CID */
	}
	for (i = 0; i < ROUTE_BUCKETS && (m->n_tracked || m->rst_owed); i++) {
		struct route_track *t = g->bucket[i], *next;

		for (; t; t = next) {
			int end;

			next = t->next;
			if (t->rst_to == m) {
				track_remove(g, t);
				continue;
			}
			end = t->m[0] == m ? 0 : t->m[1] == m ? 1 : -1;
			if (end >= 0)
				track_drop_end(g, t, end);
		}
	}
	update_pending(m);
	pthread_mutex_unlock(&g->lock);
}

/* ---- sender side (control thread of the sender) ---- */

static bool is_dgram(const struct fwd_pkt *f)
{
	return f->hdr.type == VIRTIO_VSOCK_TYPE_DGRAM;
}

static bool fits(const struct route_member *d, const struct fwd_pkt *f)
{
	if (is_dgram(f))
		return d->q_dgram < ROUTE_FWD_DGRAM_PKTS &&
		       d->q_dgram_bytes + f->hdr.len <= ROUTE_FWD_DGRAM_BYTES;
	if (!f->hdr.len)
		return d->q_ctl < ROUTE_FWD_CTL_PKTS;
	return d->q_data < ROUTE_FWD_DATA_PKTS &&
	       (!d->q_data || d->q_bytes + f->hdr.len <= ROUTE_FWD_DATA_BYTES);
}

/* Append @f to @d's queue (g->lock held, fits() checked). */
static void enqueue(struct route_member *d, struct fwd_pkt *f)
{
	bool was_empty = !d->q_head;

	f->next = NULL;
	if (d->q_tail)
		d->q_tail->next = f;
	else
		d->q_head = f;
	d->q_tail = f;
	if (is_dgram(f)) {
		d->q_dgram++;
		d->q_dgram_bytes += f->hdr.len;
	} else if (f->hdr.len) {
		d->q_data++;
		d->q_bytes += f->hdr.len;
	} else {
		d->q_ctl++;
	}
	update_pending(d);
	if (was_empty)
		wake_fd(d->link.rx_wake_fd);
}

/* Queue @f for @d, or hold it and wait for room (g->lock held). */
static void enqueue_or_hold(struct route_member *me, struct route_member *d, struct fwd_pkt *f)
{
	if (fits(d, f)) {
		enqueue(d, f);
		return;
	}
	me->held = f;
	me->waiting_on = d;
	d->n_waiters++;
}

static void reply_rst(struct route_member *me, const struct virtio_vsock_hdr *in)
{
	struct virtio_vsock_hdr h;

	pkt_rst_reply(&h, in, in->type);
	if (in->op == VIRTIO_VSOCK_OP_REQUEST)
		CTR(me->link.ctr, conns_refused, 1);
	else
		CTR(me->link.ctr, stray_pkts, 1);
	if (in->op != VIRTIO_VSOCK_OP_RST)
		rawq_put(me->link.raw, &h);
}

static struct route_member *find_member(struct route_group *g, uint64_t cid)
{
	struct route_member *o;

	for (o = g->members; o; o = o->next)
		if (o->cid == cid)
			return o;
	return NULL;
}

/* route_tx() of datagram @h (payload @p on @ch): queue or drop, never an RST, never held. */
static void route_tx_dgram(struct route_member *me, const struct vq_chain *ch,
			   const struct vsock_pkt *p)
{
	const struct virtio_vsock_hdr *h = &p->hdr;
	struct route_group *g = me->g;
	struct route_member *d;
	struct fwd_pkt *f;

	f = malloc(sizeof(*f) + h->len);
	if (!f) {
		CTR(me->link.ctr, dgram_tx_drop_err, 1);
		return;
	}
	f->hdr = *h;
	f->hdr.buf_alloc = f->hdr.fwd_cnt = 0; /* unused by datagrams: not passed on */
	f->off = 0;
	f->next = NULL;
	if (iov_read(ch->iov, ch->n_out, p->payload_off, f->data, h->len) != h->len) {
		free(f); /* cannot happen: pkt_parse_tx() checked the length */
		CTR(me->link.ctr, dgram_tx_drop_err, 1);
		return;
	}
	pthread_mutex_lock(&g->lock);
	d = find_member(g, h->dst_cid);
	if (!d || d == me || !d->online || !d->dgram) {
		pthread_mutex_unlock(&g->lock);
		free(f);
		CTR(me->link.ctr, dgram_tx_drop_no_dest, 1);
		return;
	}
	if (!fits(d, f)) {
		pthread_mutex_unlock(&g->lock);
		free(f);
		CTR(me->link.ctr, dgram_tx_drop_full, 1);
		return;
	}
	enqueue(d, f);
	pthread_mutex_unlock(&g->lock);
	CTR(me->link.ctr, dgram_tx_pkts, 1);
	CTR(me->link.ctr, dgram_tx_bytes, h->len);
}

void route_tx(struct route_member *me, const struct vq_chain *ch, const struct vsock_pkt *p)
{
	const struct virtio_vsock_hdr *h = &p->hdr;
	struct route_member *d;
	struct route_group *g = me->g;
	uint32_t len = h->op == VIRTIO_VSOCK_OP_RW ? h->len : 0;
	struct route_track *t;
	struct fwd_pkt *f;

	if (h->type == VIRTIO_VSOCK_TYPE_DGRAM) {
		route_tx_dgram(me, ch, p);
		return;
	}
	f = malloc(sizeof(*f) + len);
	if (!f) {
		reply_rst(me, h);
		return;
	}
	f->hdr = *h;
	f->hdr.len = len;
	f->off = 0;
	f->next = NULL;
	if (len && iov_read(ch->iov, ch->n_out, p->payload_off, f->data, len) != len)
		goto refuse; /* cannot happen: pkt_parse_tx() checked the length */

	pthread_mutex_lock(&g->lock);
	d = find_member(g, h->dst_cid);
	if (!d || d == me || !d->online)
		goto refuse_locked;
	if (h->type == VIRTIO_VSOCK_TYPE_SEQPACKET && !d->seqpacket)
		goto refuse_locked;
	t = track_find(g, h->src_cid, h->src_port, h->dst_cid, h->dst_port);
	if (h->op == VIRTIO_VSOCK_OP_REQUEST) {
		if (t && (t->rst_to || t->type != h->type))
			goto refuse_locked;
		if (!t && (me->n_tracked >= me->link.max_conns ||
			   d->n_tracked >= d->link.max_conns || !track_new(g, me, h, d)))
			goto refuse_locked;
	} else if (!t || t->type != h->type) {
		goto refuse_locked; /* no such connection: as Linux, RST (none for an RST) */
	} else if (t->rst_to) {
		/* The peer is gone and its RST is on its way to us. */
		if (h->op == VIRTIO_VSOCK_OP_RST)
			track_remove(g, t);
		pthread_mutex_unlock(&g->lock);
		free(f);
		CTR(me->link.ctr, stray_pkts, 1);
		return;
	} else if (h->op == VIRTIO_VSOCK_OP_RST) {
		track_remove(g, t);
	}
	enqueue_or_hold(me, d, f);
	pthread_mutex_unlock(&g->lock);
	return;
refuse_locked:
	pthread_mutex_unlock(&g->lock);
refuse:
	free(f);
	reply_rst(me, h);
}

void route_tx_bad(struct route_member *me, const struct virtio_vsock_hdr *h)
{
	struct route_group *g = me->g;
	struct route_track *t;
	uint16_t type = 0;

	pthread_mutex_lock(&g->lock);
	t = track_find(g, h->src_cid, h->src_port, h->dst_cid, h->dst_port);
	if (t && !t->rst_to && (t->m[0] == me || t->m[1] == me)) {
		type = t->type;
		track_drop_end(g, t, t->m[0] == me ? 0 : 1);
	}
	pthread_mutex_unlock(&g->lock);
	if (type) {
		struct virtio_vsock_hdr r;

		pkt_rst_reply(&r, h, type);
		CTR(me->link.ctr, conn_resets, 1);
		rawq_put(me->link.raw, &r);
	}
}

bool route_cid_ok(uint64_t own_cid, uint64_t cid)
{
	return cid >= 3 && cid < 0xffffffffull && cid != own_cid;
}

bool route_tx_held(const struct route_member *me)
{
	return me && me->held;
}

bool route_tx_retry(struct route_member *me)
{
	struct route_member *d;
	struct fwd_pkt *f = me->held;
	bool resume = true;

	if (!f)
		return false;
	pthread_mutex_lock(&me->g->lock);
	d = me->waiting_on;
	if (!d || !d->online) {
		/* The destination went offline: its tracks owe us the RSTs. */
		if (d) {
			d->n_waiters--;
			me->waiting_on = NULL;
		}
		me->held = NULL;
		free(f);
		CTR(me->link.ctr, dropped_pkts, 1);
	} else if (fits(d, f)) {
		d->n_waiters--;
		me->waiting_on = NULL;
		me->held = NULL;
		enqueue(d, f);
	} else {
		resume = false;
	}
	pthread_mutex_unlock(&me->g->lock);
	return resume;
}

/* ---- destination side (pump 0 of the destination) ---- */

bool route_rx_pending(const struct route_member *me)
{
	return me && atomic_load_explicit(&me->rx_pending, memory_order_relaxed);
}

/*
 * Deliver what is left of @f: one RX packet per piece. Without MRG_RXBUF a
 * piece is what one chain holds after the header; with it, up to
 * ROUTE_MRG_MAX_CHAINS chains of those reserved now. An RW payload that
 * needs several pieces becomes several RW packets with the same header
 * but len; SEQPACKET EOM/EOR only on the last. Return: 0 when all of @f
 * went out; -EAGAIN when the RX queue ran out (f->off says how far).
 */
static int deliver(struct rxq_cache *rc, struct fwd_pkt *f)
{
	do {
		uint32_t left = f->hdr.len - f->off, piece;
		struct iovec iov[ROUTE_PKT_IOV];
		struct virtio_vsock_hdr h;
		unsigned int niov;
		int room = rxq_span(rc, left, ROUTE_MRG_MAX_CHAINS, iov, ROUTE_PKT_IOV, &niov);

		if (room < 0)
			return -EAGAIN;
		piece = (uint32_t)room;
		iov_write(iov, niov, 0, f->data + f->off, piece);
		h = f->hdr;
		h.len = piece;
		if (f->hdr.type == VIRTIO_VSOCK_TYPE_SEQPACKET && piece < left)
			h.flags &= ~(VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR);
		rxq_put(rc, &h, piece);
		f->off += piece;
	} while (f->off < f->hdr.len);
	return 0;
}

/* An RST owed to us for a connection whose other end went away. */
static bool owed_rst(struct route_group *g, struct route_member *me, struct virtio_vsock_hdr *h)
{
	unsigned int i;

	for (i = 0; i < ROUTE_BUCKETS; i++) {
		struct route_track *t;

		for (t = g->bucket[i]; t; t = t->next) {
			int end;

			if (t->rst_to != me)
				continue;
			end = t->cid[0] == me->cid ? 0 : 1;
			pkt_rst(h, t->cid[!end], t->port[!end], t->cid[end], t->port[end], t->type);
			return true;
		}
	}
	return false;
}

/* Datagram @f to the guest through @dg_rc, now or never (counted either way). */
static void deliver_dgram(struct route_member *me, struct rxq_cache *dg_rc, struct fwd_pkt *f)
{
	int ret = rxq_dgram_put(dg_rc, &f->hdr, f->data, f->hdr.len);

	if (!ret) {
		CTR(me->link.ctr, dgram_rx_pkts, 1);
		CTR(me->link.ctr, dgram_rx_bytes, f->hdr.len);
	} else if (ret == -EMSGSIZE) {
		CTR(me->link.ctr, dgram_rx_drop_too_big, 1);
	} else {
		CTR(me->link.ctr, dgram_rx_drop_no_buf, 1);
	}
}

int route_rx_serve(struct route_member *me, struct rxq_cache *rc, struct rxq_cache *dg_rc,
		   unsigned int *budget)
{
	struct route_group *g;
	struct route_member *o;

	if (!me)
		return 0;
	g = me->g;
	while (*budget) {
		struct fwd_pkt *f = NULL, rst;
		bool have_rst = false;

		(*budget)--;
		pthread_mutex_lock(&g->lock);
		if (me->rst_owed)
			have_rst = owed_rst(g, me, &rst.hdr);
		else
			f = me->q_head;
		pthread_mutex_unlock(&g->lock);
		if (have_rst) {
			struct route_track *t;

			rst.off = 0;
			if (deliver(rc, &rst))
				return -EAGAIN;
			pthread_mutex_lock(&g->lock);
			t = track_find(g, rst.hdr.src_cid, rst.hdr.src_port, rst.hdr.dst_cid,
				       rst.hdr.dst_port);
			if (t && t->rst_to == me)
				track_remove(g, t);
			pthread_mutex_unlock(&g->lock);
			CTR(me->link.ctr, conn_resets, 1); /* its other end went away */
			continue;
		}
		if (!f)
			return 0;
		if (is_dgram(f))
			deliver_dgram(me, dg_rc, f);
		else if (deliver(rc, f))
			return -EAGAIN;
		/* Only this thread takes the head off; others append behind it. */
		pthread_mutex_lock(&g->lock);
		me->q_head = f->next;
		if (!me->q_head)
			me->q_tail = NULL;
		if (is_dgram(f)) {
			me->q_dgram--;
			me->q_dgram_bytes -= f->hdr.len;
		} else if (f->hdr.len) {
			me->q_data--;
			me->q_bytes -= f->hdr.len;
		} else {
			me->q_ctl--;
		}
		update_pending(me);
		for (o = g->members; o && me->n_waiters; o = o->next)
			if (o->waiting_on == me)
				wake_fd(o->link.tx_wake_fd);
		pthread_mutex_unlock(&g->lock);
		free(f);
	}
	return 0;
}
