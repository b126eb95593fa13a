// SPDX-License-Identifier: MIT
/*
 * Simulated driver: the guest vsock stack, just enough of Linux's
 * net/vmw_vsock/virtio_transport_common.c to drive the device like a real
 * guest and to check what the device sends back.
 *
 * Credit, as Linux does it: every packet we send carries our buf_alloc and
 * fwd_cnt (bytes the application consumed). We may send
 * min(peer_buf_alloc, buf_alloc) - (tx_cnt - peer_fwd_cnt) bytes
 * (virtio_transport_tx_buf_size() of 6.1.192): a device advertising more
 * than the guest's buffer never has more than that in flight. After a
 * read, we send a CREDIT_UPDATE once the space we have not yet advertised
 * would leave the peer less than one maximum packet, or the read left the
 * queue empty (virtio_transport_stream_do_dequeue()); SEQPACKET: after
 * every message. sim_drv_config.credit_6_1_0 restores 6.1.0's rules (the
 * peer's buf_alloc alone; the free-space rule alone).
 * The check on the device: a RW packet that makes rx_cnt - fwd_cnt_we_sent
 * exceed buf_alloc is a credit violation (the device cannot know a newer
 * fwd_cnt than the last one we published). Like Linux we take buf_alloc and
 * fwd_cnt from every packet as it comes; a packet whose fwd_cnt is older
 * than one before it (the device published packets of one connection out of
 * order) takes credit back and is counted as a protocol error.
 *
 * All functions with the "__" or "conn_" prefix run with drv->lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static struct sim_conn *conn_find(struct sim_drv *drv, uint64_t peer_cid, uint32_t local,
				  uint32_t peer)
{
	struct sim_conn *c;

	for (c = drv->conns; c; c = c->next)
		if (c->local_port == local && c->peer_port == peer && c->peer_cid == peer_cid)
			return c;
	return NULL;
}

static struct sim_listener *listener_find(struct sim_drv *drv, uint32_t port)
{
	struct sim_listener *l;

	for (l = drv->listeners; l; l = l->next)
		if (l->port == port)
			return l;
	return NULL;
}

static void conn_unlink(struct sim_conn *c)
{
	struct sim_conn **pp;

	if (!c->in_table)
		return;
	for (pp = &c->drv->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	c->in_table = false;
	c->next = NULL;
}

static struct sim_conn *conn_new(struct sim_drv *drv, uint64_t peer_cid, uint32_t local,
				 uint32_t peer, uint16_t type)
{
	struct sim_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ring = malloc(drv->cfg.buf_alloc);
	if (!c->ring) {
		free(c);
		return NULL;
	}
	c->drv = drv;
	c->peer_cid = peer_cid;
	c->local_port = local;
	c->peer_port = peer;
	c->type = type;
	c->buf_alloc = drv->cfg.buf_alloc;
	c->next = drv->conns;
	drv->conns = c;
	c->in_table = true;
	return c;
}

static void conn_free(struct sim_conn *c)
{
	conn_unlink(c);
	free(c->ring);
	free(c->end_at);
	free(c->end_flags);
	free(c->pkt_end);
	free(c);
}

static void conn_hdr(struct sim_conn *c, struct virtio_vsock_hdr *hdr, uint16_t op)
{
	sim_hdr_init(c->drv, hdr, c->local_port, c->peer_port, c->type, op);
	hdr->dst_cid = c->peer_cid;
	hdr->buf_alloc = c->buf_alloc;
	hdr->fwd_cnt = c->fwd_cnt;
	c->adv_fwd_cnt = c->fwd_cnt;
}

static void conn_ctl(struct sim_conn *c, uint16_t op, uint32_t flags)
{
	struct virtio_vsock_hdr hdr;

	conn_hdr(c, &hdr, op);
	hdr.flags = flags;
	sim__queue_ctl(c->drv, &hdr);
}

/* Note an RW packet ending at rx_cnt @end as queued. Return: 0, -ENOMEM. */
static int pkts_push(struct sim_conn *c, uint32_t end)
{
	if (c->npkts == c->pkts_cap) {
		unsigned int cap = c->pkts_cap ? c->pkts_cap * 2 : 64, i;
		uint32_t *a = malloc(cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		for (i = 0; i < c->npkts; i++)
			a[i] = c->pkt_end[(c->pkts_head + i) % c->pkts_cap];
		free(c->pkt_end);
		c->pkt_end = a;
		c->pkts_cap = cap;
		c->pkts_head = 0;
	}
	c->pkt_end[(c->pkts_head + c->npkts) % c->pkts_cap] = end;
	c->npkts++;
	if (c->npkts > c->npkts_max)
		c->npkts_max = c->npkts;
	return 0;
}

static void conn_consumed(struct sim_conn *c, uint32_t n)
{
	uint32_t free_space;

	c->fwd_cnt += n;
	/* packets wholly consumed leave the queue (u32 counters, modulo 2^32) */
	while (c->npkts && (int32_t)(c->fwd_cnt - c->pkt_end[c->pkts_head]) >= 0) {
		c->pkts_head = (c->pkts_head + 1) % c->pkts_cap;
		c->npkts--;
	}
	free_space = c->buf_alloc - (c->fwd_cnt - c->adv_fwd_cnt);
	if (free_space < VIRTIO_VSOCK_MAX_PKT_BUF_SIZE && !c->reset && !c->done && c->in_table)
		conn_ctl(c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
}

/*
 * The end of one read of @c (6.1.192 rules): a STREAM read that left the
 * queue empty, with consumed bytes not yet reported, sends a CREDIT_UPDATE
 * (rx_bytes < SO_RCVLOWAT in virtio_transport_stream_do_dequeue()); a
 * SEQPACKET message read always does (virtio_transport_seqpacket_do_dequeue()).
 */
static void conn_read_end(struct sim_conn *c)
{
	if (c->drv->cfg.credit_6_1_0 || c->reset || c->done || !c->in_table)
		return;
	if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET ||
	    (!c->ring_len && c->fwd_cnt != c->adv_fwd_cnt))
		conn_ctl(c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
}

void sim__sink_read_ends(struct sim_drv *drv)
{
	struct sim_conn *c;

	for (c = drv->conns; c; c = c->next) {
		if (!c->sink_read)
			continue;
		c->sink_read = false;
		conn_read_end(c);
	}
}

static void ring_put(struct sim_conn *c, const struct iovec *iov, int iovcnt)
{
	int i;

	for (i = 0; i < iovcnt; i++) {
		const uint8_t *s = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			uint32_t tail = (c->ring_head + c->ring_len) % c->buf_alloc;
			uint32_t room = c->buf_alloc - tail;
			uint32_t l = left < room ? (uint32_t)left : room;

			memcpy(c->ring + tail, s, l);
			c->ring_len += l;
			s += l;
			left -= l;
		}
	}
}

static void ring_get(struct sim_conn *c, void *buf, uint32_t n)
{
	uint8_t *d = buf;

	while (n) {
		uint32_t room = c->buf_alloc - c->ring_head;
		uint32_t l = n < room ? n : room;

		if (d) {
			memcpy(d, c->ring + c->ring_head, l);
			d += l;
		}
		c->ring_head = (c->ring_head + l) % c->buf_alloc;
		c->ring_len -= l;
		n -= l;
	}
}

static void conn_push_end(struct sim_conn *c, uint32_t flags)
{
	if (c->nends == c->ends_cap) {
		unsigned int cap = c->ends_cap ? c->ends_cap * 2 : 64, i;
		uint32_t *a = malloc(cap * sizeof(*a)), *f = malloc(cap * sizeof(*f));

		if (!a || !f) {
			free(a);
			free(f);
			sim__proto_error(c->drv, "out of memory for message ends");
			return;
		}
		for (i = 0; i < c->nends; i++) {
			a[i] = c->end_at[(c->ends_head + i) % c->ends_cap];
			f[i] = c->end_flags[(c->ends_head + i) % c->ends_cap];
		}
		free(c->end_at);
		free(c->end_flags);
		c->end_at = a;
		c->end_flags = f;
		c->ends_cap = cap;
		c->ends_head = 0;
	}
	c->end_at[(c->ends_head + c->nends) % c->ends_cap] = c->rx_cnt;
	c->end_flags[(c->ends_head + c->nends) % c->ends_cap] = flags;
	c->nends++;
}

static void conn_rw(struct sim_conn *c, const struct virtio_vsock_hdr *hdr, const struct iovec *iov,
		    int iovcnt, uint32_t len)
{
	struct sim_drv *drv = c->drv;

	if (!c->established) {
		sim__proto_error(drv, "RW before RESPONSE on %u:%u", c->local_port, c->peer_port);
		return;
	}
	if (c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_SEND)
		sim__proto_error(drv, "RW after SHUTDOWN SEND on %u:%u", c->local_port,
				 c->peer_port);
	if ((uint32_t)(c->rx_cnt + len - c->adv_fwd_cnt) > c->buf_alloc ||
	    c->ring_len + len > c->buf_alloc) {
		drv->stats.credit_violations++;
		sim__proto_error(drv,
				 "credit exceeded on %u:%u: rx_cnt %u + %u, advertised fwd_cnt %u, "
				 "buf_alloc %u",
				 c->local_port, c->peer_port, c->rx_cnt, len, c->adv_fwd_cnt,
				 c->buf_alloc);
		return;
	}
	if (c->type == VIRTIO_VSOCK_TYPE_STREAM && hdr->flags)
		sim__proto_error(drv, "RW flags %#x on a stream", hdr->flags);
	if (c->sink) {
		c->rx_cnt += len;
		c->sink(c->sink_opaque, iov, iovcnt, len, hdr->flags);
		conn_consumed(c, len);
		c->sink_read = true;
		return;
	}
	if (drv->cfg.rx_pkt_overhead && len &&
	    (uint64_t)(c->npkts + 1) * drv->cfg.rx_pkt_overhead > c->buf_alloc) {
		/* a 6.12.92+ guest: too many skbs queued for buf_alloc */
		drv->stats.pkt_overhead_resets++;
		conn_ctl(c, VIRTIO_VSOCK_OP_RST, 0);
		c->reset = true;
		conn_unlink(c);
		return;
	}
	if (len && pkts_push(c, c->rx_cnt + len)) {
		sim__proto_error(drv, "out of memory for queued packets");
		return;
	}
	ring_put(c, iov, iovcnt);
	c->rx_cnt += len;
	if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET && (hdr->flags & VIRTIO_VSOCK_SEQ_EOM))
		conn_push_end(c, hdr->flags);
}

static void conn_rx(struct sim_conn *c, const struct virtio_vsock_hdr *hdr, const struct iovec *iov,
		    int iovcnt, uint32_t len)
{
	struct sim_drv *drv = c->drv;

	/*
	 * Linux takes the credit of every packet as it comes, so a packet
	 * carrying an older fwd_cnt than one before it takes back credit the
	 * device already gave: we do the same, and count it. Not an RST: it
	 * ends the credit, and one answering a packet the device no longer
	 * knows a connection for carries none.
	 */
	if (hdr->op != VIRTIO_VSOCK_OP_RST && (int32_t)(hdr->fwd_cnt - c->peer_fwd_cnt) < 0) {
		drv->stats.stale_fwd_cnt++;
		sim__proto_error(drv, "fwd_cnt went back from %u to %u on %u:%u (op %u, tx_cnt %u)",
				 c->peer_fwd_cnt, hdr->fwd_cnt, c->local_port, c->peer_port,
				 hdr->op, c->tx_cnt);
	}
	c->peer_buf_alloc = hdr->buf_alloc;
	c->peer_fwd_cnt = hdr->fwd_cnt;
	if (hdr->type != c->type)
		sim__proto_error(drv, "type %u on a connection of type %u", hdr->type, c->type);
	if (len && hdr->op != VIRTIO_VSOCK_OP_RW)
		sim__proto_error(drv, "op %u with %u payload bytes", hdr->op, len);
	switch (hdr->op) {
	case VIRTIO_VSOCK_OP_RESPONSE:
		if (c->established)
			sim__proto_error(drv, "RESPONSE on established %u:%u", c->local_port,
					 c->peer_port);
		c->established = true;
		break;
	case VIRTIO_VSOCK_OP_RST:
		c->reset = true;
		conn_unlink(c);
		break;
	case VIRTIO_VSOCK_OP_REQUEST:
		sim__proto_error(drv, "REQUEST on existing %u:%u", c->local_port, c->peer_port);
		break;
	case VIRTIO_VSOCK_OP_RW:
		conn_rw(c, hdr, iov, iovcnt, len);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		c->credit_updates_rx++;
		break;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		conn_ctl(c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		if (hdr->flags & ~3u)
			sim__proto_error(drv, "SHUTDOWN flags %#x", hdr->flags);
		c->peer_shutdown |= hdr->flags & 3u;
		/* Linux: peer closed both ways and nothing left to read -> RST */
		if (c->peer_shutdown == 3u && !c->ring_len && !c->done) {
			conn_ctl(c, VIRTIO_VSOCK_OP_RST, 0);
			c->done = true;
			conn_unlink(c);
		}
		break;
	default:
		sim__proto_error(drv, "unknown op %u from the device", hdr->op);
		break;
	}
}

void sim__dispatch(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr, const struct iovec *iov,
		   int iovcnt, uint32_t len)
{
	struct virtio_vsock_hdr rst;
	struct sim_listener *l;
	struct sim_conn *c;

	if (hdr->dst_cid != drv->cfg.guest_cid ||
	    (hdr->src_cid != VSOCK_CID_HOST &&
	     !(drv->cfg.peer_guests && hdr->src_cid >= 3 && hdr->src_cid != drv->cfg.guest_cid &&
	       hdr->src_cid < 0xffffffffull))) {
		sim__proto_error(drv, "packet from cid %llu to cid %llu",
				 (unsigned long long)hdr->src_cid,
				 (unsigned long long)hdr->dst_cid);
		return;
	}
	if (hdr->type == VIRTIO_VSOCK_TYPE_DGRAM) {
		sim__dgram_rx(drv, hdr, iov, iovcnt, len); /* connection-less */
		return;
	}
	if (hdr->type != VIRTIO_VSOCK_TYPE_STREAM && hdr->type != VIRTIO_VSOCK_TYPE_SEQPACKET) {
		sim__proto_error(drv, "packet type %u", hdr->type);
		return;
	}
	c = conn_find(drv, hdr->src_cid, hdr->dst_port, hdr->src_port);
	if (c) {
		conn_rx(c, hdr, iov, iovcnt, len);
		return;
	}
	if (hdr->op == VIRTIO_VSOCK_OP_REQUEST) {
		l = listener_find(drv, hdr->dst_port);
		if (l && l->type == hdr->type && l->qlen < l->backlog) {
			c = conn_new(drv, hdr->src_cid, hdr->dst_port, hdr->src_port, hdr->type);
			if (c) {
				c->peer_buf_alloc = hdr->buf_alloc;
				c->peer_fwd_cnt = hdr->fwd_cnt;
				c->established = true;
				c->listener = l;
				if (l->q_tail)
					l->q_tail->aq_next = c;
				else
					l->q_head = c;
				l->q_tail = c;
				l->qlen++;
				conn_ctl(c, VIRTIO_VSOCK_OP_RESPONSE, 0);
				return;
			}
		}
	}
	sim__stray_add(drv, hdr, iov, iovcnt, len);
	if (hdr->op != VIRTIO_VSOCK_OP_RST && !drv->cfg.no_auto_rst) {
		sim_hdr_init(drv, &rst, hdr->dst_port, hdr->src_port, hdr->type,
			     VIRTIO_VSOCK_OP_RST);
		rst.dst_cid = hdr->src_cid;
		sim__queue_ctl(drv, &rst);
	}
}

void sim__reset_all_conns(struct sim_drv *drv)
{
	while (drv->conns) {
		struct sim_conn *c = drv->conns;

		c->reset = true;
		conn_unlink(c);
	}
}

void sim__free_all_conns(struct sim_drv *drv)
{
	while (drv->listeners) {
		struct sim_listener *l = drv->listeners;

		drv->listeners = l->next;
		while (l->q_head) {
			struct sim_conn *c = l->q_head;

			l->q_head = c->aq_next;
			conn_free(c);
		}
		free(l);
	}
	sim__reset_all_conns(drv);
}

/* ---- public API ---- */

int sim_connect(struct sim_drv *drv, uint32_t port, uint16_t type, int timeout_ms,
		struct sim_conn **out)
{
	return sim_connect_cid(drv, VSOCK_CID_HOST, port, type, timeout_ms, out);
}

int sim_connect_cid(struct sim_drv *drv, uint64_t cid, uint32_t port, uint16_t type, int timeout_ms,
		    struct sim_conn **out)
{
	struct timespec dl;
	struct sim_conn *c;
	int rc = 0;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	if (!drv->attached) {
		rc = -ENOTCONN;
		goto out;
	}
	do {
		drv->next_port = drv->next_port >= 0x3fffffff ? 49152 : drv->next_port + 1;
	} while (conn_find(drv, cid, drv->next_port, port) || listener_find(drv, drv->next_port));
	c = conn_new(drv, cid, drv->next_port, port, type);
	if (!c) {
		rc = -ENOMEM;
		goto out;
	}
	conn_ctl(c, VIRTIO_VSOCK_OP_REQUEST, 0);
	while (!c->established && !c->reset) {
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	if (c->reset && !c->established)
		rc = -ECONNRESET;
	if (rc) {
		if (!c->reset)
			conn_ctl(c, VIRTIO_VSOCK_OP_RST, 0);
		conn_free(c);
		goto out;
	}
	*out = c;
out:
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

int sim_listen(struct sim_drv *drv, uint32_t port, uint16_t type, unsigned int backlog,
	       struct sim_listener **out)
{
	struct sim_listener *l;
	int rc = 0;

	pthread_mutex_lock(&drv->lock);
	if (listener_find(drv, port)) {
		rc = -EADDRINUSE;
		goto out;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		rc = -ENOMEM;
		goto out;
	}
	l->drv = drv;
	l->port = port;
	l->type = type;
	l->backlog = backlog ? backlog : 1;
	l->next = drv->listeners;
	drv->listeners = l;
	*out = l;
out:
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

int sim_accept(struct sim_listener *l, int timeout_ms, struct sim_conn **out)
{
	struct sim_drv *drv = l->drv;
	struct timespec dl;
	struct sim_conn *c;
	int rc = 0;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	while (!l->q_head) {
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			goto out;
		}
	}
	c = l->q_head;
	l->q_head = c->aq_next;
	if (!l->q_head)
		l->q_tail = NULL;
	l->qlen--;
	c->aq_next = NULL;
	c->listener = NULL;
	*out = c;
out:
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

void sim_unlisten(struct sim_listener *l)
{
	struct sim_drv *drv = l->drv;
	struct sim_listener **pp;

	pthread_mutex_lock(&drv->lock);
	for (pp = &drv->listeners; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	while (l->q_head) {
		struct sim_conn *c = l->q_head;

		l->q_head = c->aq_next;
		if (!c->reset && drv->attached)
			conn_ctl(c, VIRTIO_VSOCK_OP_RST, 0);
		conn_free(c);
	}
	free(l);
	pthread_mutex_unlock(&drv->lock);
}

static ssize_t do_send(struct sim_conn *c, const void *buf, size_t len, bool seq, bool eor,
		       int timeout_ms)
{
	struct sim_drv *drv = c->drv;
	const uint8_t *p = buf;
	struct timespec dl;
	size_t sent = 0;
	ssize_t rc = 0;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	while (sent < len || (seq && !len && !sent)) {
		struct virtio_vsock_hdr hdr;
		uint32_t window, credit, n;
		unsigned int need;

		if (c->reset) {
			rc = -ECONNRESET;
			break;
		}
		if ((c->our_shutdown & VIRTIO_VSOCK_SHUTDOWN_SEND) ||
		    (c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_RCV) || c->done || !drv->attached) {
			rc = -EPIPE;
			break;
		}
		window = c->peer_buf_alloc;
		if (!drv->cfg.credit_6_1_0 && c->buf_alloc < window)
			window = c->buf_alloc;
		credit = window - (c->tx_cnt - c->peer_fwd_cnt);
		if (credit > window)
			credit = 0;
		n = len - sent < credit ? (uint32_t)(len - sent) : credit;
		if (n > drv->cfg.tx_pkt_max)
			n = drv->cfg.tx_pkt_max;
		need = sim__tx_descs_needed(drv, drv->cfg.tx_shape, n);
		if ((!n && len) || drv->vq[VSOCK_VQ_TX].free_cnt < need || drv->ctl_head) {
			sim__flush_ctl(drv);
			sim__tx_kick(drv);
			if (sim__wait(drv, &dl)) {
				rc = -ETIMEDOUT;
				break;
			}
			continue;
		}
		conn_hdr(c, &hdr, VIRTIO_VSOCK_OP_RW);
		hdr.len = n;
		if (seq && sent + n == len)
			hdr.flags = VIRTIO_VSOCK_SEQ_EOM | (eor ? VIRTIO_VSOCK_SEQ_EOR : 0);
		rc = sim__tx_pkt(drv, &hdr, p ? p + sent : NULL, n, drv->cfg.tx_shape);
		if (rc < 0)
			break;
		rc = 0;
		c->tx_cnt += n;
		sent += n;
		sim__deadline(&dl, timeout_ms);
		if (!len)
			break;
	}
	sim__tx_kick(drv);
	pthread_mutex_unlock(&drv->lock);
	return rc ? rc : (ssize_t)len;
}

ssize_t sim_send(struct sim_conn *c, const void *buf, size_t len, int timeout_ms)
{
	return do_send(c, buf, len, false, false, timeout_ms);
}

ssize_t sim_send_msg(struct sim_conn *c, const void *buf, size_t len, bool eor, int timeout_ms)
{
	return do_send(c, buf, len, true, eor, timeout_ms);
}

ssize_t sim_recv(struct sim_conn *c, void *buf, size_t cap, int timeout_ms)
{
	struct sim_drv *drv = c->drv;
	struct timespec dl;
	ssize_t rc;
	uint32_t n;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	while (!c->ring_len) {
		if (c->reset) {
			rc = -ECONNRESET;
			goto out;
		}
		if (c->done || (c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_SEND)) {
			rc = 0;
			goto out;
		}
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			goto out;
		}
	}
	n = cap < c->ring_len ? (uint32_t)cap : c->ring_len;
	ring_get(c, buf, n);
	conn_consumed(c, n);
	conn_read_end(c);
	rc = n;
out:
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

ssize_t sim_recv_msg(struct sim_conn *c, void *buf, size_t cap, uint32_t *flags, int timeout_ms)
{
	struct sim_drv *drv = c->drv;
	struct timespec dl;
	uint32_t mlen, n;
	ssize_t rc;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	while (!c->nends) {
		if (c->reset) {
			rc = -ECONNRESET;
			goto out;
		}
		if (c->done || (c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_SEND)) {
			rc = 0;
			goto out;
		}
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			goto out;
		}
	}
	mlen = c->end_at[c->ends_head] - c->fwd_cnt;
	if (flags)
		*flags = c->end_flags[c->ends_head];
	c->ends_head = (c->ends_head + 1) % c->ends_cap;
	c->nends--;
	n = cap < mlen ? (uint32_t)cap : mlen;
	ring_get(c, buf, n);
	ring_get(c, NULL, mlen - n);
	conn_consumed(c, mlen);
	conn_read_end(c);
	rc = mlen;
out:
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

int sim_shutdown(struct sim_conn *c, uint32_t flags)
{
	struct sim_drv *drv = c->drv;
	int rc = 0;

	pthread_mutex_lock(&drv->lock);
	if (c->reset || !drv->attached) {
		rc = -ECONNRESET;
	} else {
		c->our_shutdown |= flags & 3u;
		conn_ctl(c, VIRTIO_VSOCK_OP_SHUTDOWN, flags & 3u);
	}
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

int sim_wait_peer_shutdown(struct sim_conn *c, uint32_t flags, int timeout_ms)
{
	struct sim_drv *drv = c->drv;
	struct timespec dl;
	int rc = 0;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	while ((c->peer_shutdown & flags) != flags) {
		if (c->reset) {
			rc = -ECONNRESET;
			break;
		}
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

int sim_wait_reset(struct sim_conn *c, int timeout_ms)
{
	struct sim_drv *drv = c->drv;
	struct timespec dl;
	int rc = 0;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	while (!c->reset) {
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

int sim_close(struct sim_conn *c, int timeout_ms)
{
	struct sim_drv *drv = c->drv;
	struct timespec dl;
	int rc = 0;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	if (!c->reset && !c->done && drv->attached) {
		conn_ctl(c, VIRTIO_VSOCK_OP_SHUTDOWN,
			 VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
		/* the peer's RST, or its own SHUTDOWN crossing ours (we then RST) */
		while (!c->reset && !c->done) {
			if (sim__wait(drv, &dl)) {
				rc = -ETIMEDOUT;
				break;
			}
		}
		if (!c->reset && !c->done && drv->attached)
			conn_ctl(c, VIRTIO_VSOCK_OP_RST, 0);
	}
	conn_free(c);
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

void sim_abort(struct sim_conn *c)
{
	struct sim_drv *drv = c->drv;

	pthread_mutex_lock(&drv->lock);
	if (!c->reset && !c->done && drv->attached)
		conn_ctl(c, VIRTIO_VSOCK_OP_RST, 0);
	conn_free(c);
	pthread_mutex_unlock(&drv->lock);
}

int sim_credit_request(struct sim_conn *c)
{
	struct sim_drv *drv = c->drv;
	int rc = 0;

	pthread_mutex_lock(&drv->lock);
	if (c->reset || !drv->attached)
		rc = -ECONNRESET;
	else
		conn_ctl(c, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

void sim_conn_set_sink(struct sim_conn *c, sim_sink_fn fn, void *opaque)
{
	struct sim_drv *drv = c->drv;

	pthread_mutex_lock(&drv->lock);
	c->sink = fn;
	c->sink_opaque = opaque;
	pthread_mutex_unlock(&drv->lock);
}

void sim_conn_info(struct sim_conn *c, struct sim_conn_info *out)
{
	struct sim_drv *drv = c->drv;

	pthread_mutex_lock(&drv->lock);
	*out = (struct sim_conn_info){
		.local_port = c->local_port,
		.peer_port = c->peer_port,
		.type = c->type,
		.established = c->established,
		.reset = c->reset,
		.peer_shutdown = c->peer_shutdown,
		.peer_buf_alloc = c->peer_buf_alloc,
		.peer_fwd_cnt = c->peer_fwd_cnt,
		.tx_cnt = c->tx_cnt,
		.rx_cnt = c->rx_cnt,
		.fwd_cnt = c->fwd_cnt,
		.rx_queued = c->ring_len,
		.rx_queued_pkts = c->npkts,
		.rx_queued_pkts_max = c->npkts_max,
		.credit_updates_rx = c->credit_updates_rx,
	};
	pthread_mutex_unlock(&drv->lock);
}

struct sim_drv *sim_conn_drv(struct sim_conn *c)
{
	return c->drv;
}
