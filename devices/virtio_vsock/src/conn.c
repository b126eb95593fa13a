// SPDX-License-Identifier: MIT
/* Connection state machine and credit; see the primer in conn.h. */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dev.h"
#include "iov.h"
#include "rx_chains.h"

/*
 * Let the host socket hold the whole window we advertise to the guest
 * (buf_alloc), so that a host reader keeping up takes every packet straight
 * from guest memory: with the default send buffer (about 208 KiB of skb
 * memory) a 256 KiB window of 64 KiB packets often ends in a partial
 * sendmsg(), and the rest is then copied into the backlog and written later
 * on EPOLLOUT by the pump (an extra copy and two extra wake-ups). Only
 * raised, never lowered; the kernel doubles the value and caps it at
 * net.core.wmem_max. Best effort: a failure only costs speed.
 */
static void host_sndbuf(int fd, uint32_t buf_alloc)
{
	int cur = 0, want = buf_alloc > INT32_MAX / 2 ? INT32_MAX / 2 : (int)buf_alloc;
	socklen_t len = sizeof(cur);

	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &cur, &len) || cur >= 2 * want)
		return;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
}

struct conn *conn_new(struct vsock_dev *dev, int fd, uint16_t type, uint32_t local_port,
		      uint32_t peer_port, const struct virtio_vsock_hdr *req)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (pthread_mutex_init(&c->lock, NULL)) {
		free(c);
		return NULL;
	}
	c->dev = dev;
	c->fd = fd;
	c->type = type;
	c->local_port = local_port;
	c->peer_port = peer_port;
	c->refs = 1;
	c->buf_alloc = dev->cfg.conn_buf_size;
	c->pump = &dev->pumps[(local_port * 31u + peer_port) % dev->n_pumps];
	host_sndbuf(fd, c->buf_alloc);
	if (req) {
		c->state = CONN_ESTABLISHED;
		c->pending = PEND_RESPONSE;
		c->peer_buf_alloc = req->buf_alloc;
		c->peer_fwd_cnt = req->fwd_cnt;
	} else {
		c->state = CONN_HOST_CONNECTING;
		c->pending = PEND_REQUEST;
	}
	return c;
}

void conn_get(struct conn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void conn_put(struct conn *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (c->fd >= 0)
		dev_fd_close(c->dev, c->fd);
	if (c->counted)
		CTR_ADD(c->dev, conns_closed, 1); /* its fd is closed now */
	free(c->bl);
	free(c->sq_recs);
	free(c->msg);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

uint32_t conn_credit_avail(const struct conn *c)
{
	uint32_t in_flight = c->h2g_sent - c->peer_fwd_cnt;

	if (in_flight >= c->peer_buf_alloc)
		return 0;
	return c->peer_buf_alloc - in_flight;
}

void conn_fill_hdr(struct conn *c, struct virtio_vsock_hdr *h, uint16_t op, uint32_t flags,
		   uint32_t len)
{
	memset(h, 0, sizeof(*h));
	h->src_cid = VSOCK_CID_HOST;
	h->dst_cid = c->dev->cfg.guest_cid;
	h->src_port = c->local_port;
	h->dst_port = c->peer_port;
	h->len = len;
	h->type = c->type;
	h->op = op;
	h->flags = flags;
	h->buf_alloc = c->buf_alloc;
	h->fwd_cnt = c->g2h_fwd;
	c->g2h_fwd_told = c->g2h_fwd;
}

void conn_schedule(struct conn *c)
{
	pump_enqueue(c);
}

void conn_maybe_credit(struct conn *c)
{
	uint32_t untold = c->g2h_fwd - c->g2h_fwd_told;
	uint32_t view_free = c->buf_alloc - (c->g2h_recv - c->g2h_fwd_told);
	/*
	 * Tell the guest once its view of our free space drops below half the
	 * buffer, so that it never stalls while one update is in flight; with
	 * a buffer under two packets (128 KiB), after every delivery.
	 */
	uint32_t low =
		c->buf_alloc >= 2 * VIRTIO_VSOCK_MAX_PKT_BUF_SIZE ? c->buf_alloc / 2 : c->buf_alloc;

	if (!untold || c->state != CONN_ESTABLISHED || (c->pending & PEND_CREDIT))
		return;
	if (view_free < low) {
		/*
		 * On the control thread, with nothing else owed (so the
		 * RESPONSE went out before), the update goes on the RX queue
		 * at once (the pump publishes our packets before it lets go
		 * of c->lock, so none older can overtake it): the
		 * guest is waiting for it, and the pump hop costs two
		 * wake-ups per credit window. Else the pump sends it.
		 */
		if (!c->pending && ctl_is_current(c->dev)) {
			struct virtio_vsock_hdr h;
			uint32_t told = c->g2h_fwd_told;

			conn_fill_hdr(c, &h, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, 0);
			if (!rx_send_hdr_now(c->dev, &h))
				return;
			c->g2h_fwd_told = told;
		}
		c->pending |= PEND_CREDIT;
		conn_schedule(c);
	}
}

int conn_describe(struct conn *c, char *buf, size_t len)
{
	bool starved;
	int n;

	pthread_mutex_lock(&c->lock);
	pthread_mutex_lock(&c->pump->lock);
	starved = c->pump->starved;
	pthread_mutex_unlock(&c->pump->lock);
	n = snprintf(buf, len,
		     "state %d pending %#x shut peer %#x local %#x; g2h buf_alloc %u recv %u "
		     "fwd_cnt %u told %u backlog %u out_armed %d want_flush %d; h2g "
		     "peer_buf_alloc %u peer_fwd_cnt %u sent %u credit %u readable %d eof %d; "
		     "pump %u starved %d",
		     (int)c->state, c->pending, c->peer_shut, c->local_shut, c->buf_alloc,
		     c->g2h_recv, c->g2h_fwd, c->g2h_fwd_told, c->bl_len, c->out_armed,
		     c->want_flush, c->peer_buf_alloc, c->peer_fwd_cnt, c->h2g_sent,
		     conn_credit_avail(c), c->host_readable, c->host_eof, c->pump->id, starved);
	pthread_mutex_unlock(&c->lock);
	return n;
}

void conn_opened(struct conn *c)
{
	c->counted = true;
	CTR_ADD(c->dev, conns_opened, 1);
}

void conn_reset(struct conn *c, bool send_rst)
{
	/*
	 * A host client the guest refused or did not answer, or a guest
	 * REQUEST whose RESPONSE had not gone out (the guest sees an RST to
	 * its REQUEST): attempts that never became a connection.
	 */
	if (c->state == CONN_HOST_CONNECTING || (c->pending & PEND_RESPONSE))
		CTR_ADD(c->dev, conns_refused, 1);
	else if (c->state == CONN_ESTABLISHED)
		CTR_ADD(c->dev, conn_resets, 1);
	conn_end(c, send_rst);
}

void conn_end(struct conn *c, bool send_rst)
{
	struct vsock_dev *dev = c->dev;

	if (c->state == CONN_CLOSED)
		return;
	c->state = CONN_CLOSED;
	mux_remove(&dev->mux, c);
	dev_unwatch_deadline(c);
	shutdown(c->fd, SHUT_RDWR);
	free(c->bl);
	c->bl = NULL;
	c->bl_len = c->bl_cap = c->bl_head = 0;
	free(c->sq_recs);
	c->sq_recs = NULL;
	c->sq_cap = c->sq_head = c->sq_cnt = 0;
	c->sq_open = false;
	c->pending = send_rst ? PEND_RST : 0;
	conn_schedule(c);
}

/* ---- backlog ring ---- */

/*
 * Room for @need more bytes. The ring holds buf_alloc bytes: it only ever
 * holds guest bytes received and not yet taken by the host socket
 * (g2h_recv - g2h_fwd), which the credit check keeps within buf_alloc.
 */
static int bl_reserve(struct conn *c, uint32_t need)
{
	if (!need)
		return 0;
	if (!c->bl) {
		c->bl = malloc(c->buf_alloc);
		if (!c->bl)
			return -ENOMEM;
		c->bl_cap = c->buf_alloc;
		c->bl_head = c->bl_len = 0;
	}
	return c->bl_cap - c->bl_len >= need ? 0 : -ENOBUFS;
}

/* Append @len bytes of an iovec stream (from @off) at the ring's tail. */
static void bl_append_iov(struct conn *c, const struct iovec *iov, unsigned int n, size_t off,
			  uint32_t len)
{
	while (len) {
		uint32_t tail = (c->bl_head + c->bl_len) % c->bl_cap;
		uint32_t room = c->bl_cap - tail;
		uint32_t chunk = len < room ? len : room;

		iov_read(iov, n, off, c->bl + tail, chunk);
		c->bl_len += chunk;
		off += chunk;
		len -= chunk;
	}
}

/* iovecs for @len ring bytes starting @skip bytes after the head. */
static unsigned int bl_iov(const struct conn *c, uint32_t skip, uint32_t len, struct iovec v[2])
{
	uint32_t start = (c->bl_head + skip) % c->bl_cap;
	uint32_t first = c->bl_cap - start;

	if (first >= len) {
		v[0] = (struct iovec){ c->bl + start, len };
		return 1;
	}
	v[0] = (struct iovec){ c->bl + start, first };
	v[1] = (struct iovec){ c->bl, len - first };
	return 2;
}

static void bl_consume(struct conn *c, uint32_t n)
{
	c->bl_head = (c->bl_head + n) % c->bl_cap;
	c->bl_len -= n;
	if (!c->bl_len)
		c->bl_head = 0;
}

/* ---- SEQPACKET message records ---- */

#define SQ_RECS_MIN 16

/*
 * Most records a guest within its credit can make us keep: every record
 * but the head (whose message may have gone already) and the open one
 * starts with a message of at least one byte of credit, since an empty
 * message is counted on the record before it. (Only a run of 2^32 - 1
 * empty messages behind one record needs a record of its own.)
 */
static uint32_t sq_rec_max(const struct conn *c)
{
	return c->buf_alloc > UINT32_MAX - 2 ? UINT32_MAX : c->buf_alloc + 2;
}

static struct sq_rec *sq_at(const struct conn *c, uint32_t i)
{
	return &c->sq_recs[(c->sq_head + i) % c->sq_cap];
}

/*
 * Append the record of a new message, so far empty.
 * Return: 0; -ENOMEM; -ENOBUFS beyond sq_rec_max().
 */
static int sq_push(struct conn *c)
{
	if (c->sq_cnt == c->sq_cap) {
		uint32_t max = sq_rec_max(c), cap, i;
		struct sq_rec *r;

		if (c->sq_cap >= max)
			return -ENOBUFS;
		cap = c->sq_cap ? (c->sq_cap > max / 2 ? max : c->sq_cap * 2) : SQ_RECS_MIN;
		r = malloc((size_t)cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		for (i = 0; i < c->sq_cnt; i++)
			r[i] = *sq_at(c, i);
		free(c->sq_recs);
		c->sq_recs = r;
		c->sq_cap = cap;
		c->sq_head = 0;
	}
	*sq_at(c, c->sq_cnt++) = (struct sq_rec){ .len = 0, .n = 1 };
	return 0;
}

/* One more empty message after the last record. Return: false if it has no room. */
static bool sq_count_empty(struct conn *c)
{
	struct sq_rec *t = c->sq_cnt ? sq_at(c, c->sq_cnt - 1) : NULL;

	if (!t || t->n == UINT32_MAX)
		return false;
	t->n++;
	return true;
}

/* Whether the backlog holds anything (for SEQPACKET also a message being assembled). */
static bool bl_busy(const struct conn *c)
{
	return c->type == VIRTIO_VSOCK_TYPE_SEQPACKET ? c->sq_cnt : c->bl_len;
}

static ssize_t send_iov(int fd, const struct iovec *iov, unsigned int n)
{
	struct msghdr m = { .msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = n };
	ssize_t r;

	do
		r = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static void delivered(struct conn *c, uint32_t n)
{
	c->g2h_fwd += n;
	CTR_ADD(c->dev, tx_bytes, n);
}

/* After the backlog drained: pass on a guest half-close, or finish a close. */
static void after_drain(struct conn *c)
{
	if (bl_busy(c) || c->state != CONN_ESTABLISHED)
		return;
	if (c->rst_when_drained) {
		conn_end(c, true); /* the guest closed, we answer: a normal close */
		return;
	}
	if (c->peer_shut & VIRTIO_VSOCK_SHUTDOWN_SEND)
		shutdown(c->fd, SHUT_WR);
}

/*
 * Send the complete messages of a SEQPACKET backlog, one host message each,
 * in order. Return: whether one is left to send (EAGAIN), or -errno.
 */
static int sq_flush(struct conn *c)
{
	struct iovec v[2];
	ssize_t r;

	while (c->sq_cnt > (c->sq_open ? 1u : 0u)) {
		struct sq_rec *h = sq_at(c, 0);

		r = send_iov(c->fd, v, h->len ? bl_iov(c, 0, h->len, v) : 0);
		if (r == -EAGAIN)
			return 1;
		if (r < 0)
			return (int)r;
		if (h->len) {
			bl_consume(c, h->len);
			delivered(c, h->len);
			h->len = 0; /* what is left of the record: h->n - 1 empty messages */
		}
		if (--h->n)
			continue;
		c->sq_head = (c->sq_head + 1) % c->sq_cap;
		c->sq_cnt--;
	}
	return 0;
}

/* Send what a STREAM backlog holds. Return: whether bytes are left (EAGAIN), or -errno. */
static int stream_flush(struct conn *c)
{
	struct iovec v[2];
	ssize_t r;

	while (c->bl_len) {
		r = send_iov(c->fd, v, bl_iov(c, 0, c->bl_len, v));
		if (r == -EAGAIN)
			return 1;
		if (r < 0)
			return (int)r;
		bl_consume(c, (uint32_t)r);
		delivered(c, (uint32_t)r);
	}
	return 0;
}

int conn_flush(struct conn *c)
{
	int left = c->type == VIRTIO_VSOCK_TYPE_SEQPACKET ? sq_flush(c) : stream_flush(c);
	int r;

	if (left < 0)
		return left;
	r = pump_set_out(c, left);
	if (r)
		return r;
	conn_maybe_credit(c);
	after_drain(c);
	return 0;
}

/*
 * Write the TX batch of @c (dev->txb.c == c; caller holds c->lock) and empty
 * it, keeping b->c and its reference. Return: 0, or -errno (the caller resets).
 */
static int batch_send(struct conn *c)
{
	struct tx_batch *b = &c->dev->txb;
	uint32_t len = b->len;
	ssize_t r = 0;
	int ret = 0;

	if (!len || c->state != CONN_ESTABLISHED)
		goto out; /* reset meanwhile: the data goes with the connection */
	if (!c->bl_len) {
		r = send_iov(c->fd, b->iov, b->n);
		if (r == -EAGAIN)
			r = 0;
		if (r < 0) {
			ret = (int)r;
			goto out;
		}
		delivered(c, (uint32_t)r);
	}
	if ((uint32_t)r < len) {
		/* Fits: every batched byte was checked against buf_alloc. */
		if (bl_reserve(c, len - (uint32_t)r)) {
			ret = -ENOBUFS;
			goto out;
		}
		bl_append_iov(c, b->iov, b->n, (size_t)r, len - (uint32_t)r);
		ret = pump_set_out(c, true);
		if (ret)
			goto out;
	}
	conn_maybe_credit(c);
out:
	b->n = 0;
	b->len = 0;
	return ret;
}

void conn_tx_flush(struct vsock_dev *dev)
{
	struct conn *c = dev->txb.c;

	if (!c)
		return;
	pump_defer_wakes();
	pthread_mutex_lock(&c->lock);
	if (batch_send(c))
		conn_reset(c, true); /* EPIPE, ECONNRESET, ENOBUFS: this one only */
	pthread_mutex_unlock(&c->lock);
	pump_flush_wakes();
	dev->txb.c = NULL;
	conn_put(c);
}

/*
 * Guest RW payload of a STREAM connection: added to the TX batch when the
 * backlog is empty (sent by conn_tx_flush()), else written or queued now.
 * Return: 0 or -errno (reset).
 */
static int rw_stream(struct conn *c, const struct iovec *p, unsigned int n, uint32_t len)
{
	struct tx_batch *b = &c->dev->txb;
	ssize_t r = 0;
	int ret;

	if (b->c == c && (b->n + n > TXB_IOV || b->len + len > TXB_MAX_BYTES)) {
		ret = batch_send(c);
		if (ret)
			return ret;
	}
	if (!c->bl_len && len && (!b->c || b->c == c) && n <= TXB_IOV - b->n) {
		if (!b->c) {
			conn_get(c);
			b->c = c;
		}
		memcpy(b->iov + b->n, p, n * sizeof(*p));
		b->n += n;
		b->len += len;
		return 0;
	}
	if (!c->bl_len && len) {
		r = send_iov(c->fd, p, n);
		if (r == -EAGAIN)
			r = 0;
		if (r < 0)
			return (int)r;
		delivered(c, (uint32_t)r);
	}
	if ((uint32_t)r < len) {
		if (bl_reserve(c, len - (uint32_t)r))
			return -ENOBUFS;
		bl_append_iov(c, p, n, (size_t)r, len - (uint32_t)r);
		return pump_set_out(c, true);
	}
	return 0;
}

/*
 * Guest RW payload of a SEQPACKET connection: assemble until EOM. The
 * message bytes go to the byte ring (within buf_alloc by credit), their
 * boundaries to the records (at most one per byte of credit), so a guest
 * within its credit never overflows the backlog, whatever its message sizes.
 */
static int rw_seqpacket(struct conn *c, const struct iovec *p, unsigned int n, uint32_t len,
			uint32_t flags)
{
	bool eom = flags & (VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR);
	struct sq_rec *t;
	ssize_t r;
	int ret;

	if (!c->sq_cnt && eom) {
		/* A whole message and nothing queued before it: send in place. */
		r = send_iov(c->fd, p, n);
		if (r >= 0) {
			delivered(c, len);
			return 0;
		}
		if (r != -EAGAIN)
			return (int)r;
	}
	if (bl_reserve(c, len))
		return -ENOBUFS;
	if (!c->sq_open) {
		if (!len && eom && sq_count_empty(c))
			return conn_flush(c);
		ret = sq_push(c);
		if (ret)
			return ret;
		c->sq_open = true;
	}
	bl_append_iov(c, p, n, 0, len);
	t = sq_at(c, c->sq_cnt - 1);
	t->len += len;
	if (eom) {
		c->sq_open = false;
		if (!t->len && c->sq_cnt > 1) {
			/* It was empty after all: count it on the record before. */
			c->sq_cnt--;
			if (!sq_count_empty(c))
				c->sq_cnt++;
		}
	}
	return conn_flush(c);
}

/*
 * Write the "OK <port>\n" reply of a host-initiated connection. Return: 0;
 * -EPIPE or -ECONNRESET when the client will not read any more (it closed,
 * or shut down its reading side); -EIO or another -errno else.
 */
static int send_ok(struct conn *c)
{
	char line[16];
	size_t n = uds_format_ok(line, c->local_port);
	struct iovec v = { line, n };
	ssize_t r = send_iov(c->fd, &v, 1);

	if (r < 0)
		return (int)r;
	return r == (ssize_t)n ? 0 : -EIO;
}

/*
 * The guest accepted host-initiated @c (caller holds c->lock): "OK" to the
 * client, and the connection is established. A client that already went
 * away without reading "OK" (a one-shot sender: write, close) still gets
 * everything it sent delivered, the bytes after its CONNECT line first,
 * then SHUTDOWN RCV|SEND as for any host close. Return: 0, or -errno of a
 * failed "OK" (the caller resets).
 */
static int host_accepted(struct conn *c)
{
	int ret = send_ok(c);

	if (ret == -EPIPE || ret == -ECONNRESET)
		c->host_hup = true; /* it reads no more: our SHUTDOWN will say RCV too */
	else if (ret)
		return ret;
	dev_unwatch_deadline(c);
	c->state = CONN_ESTABLISHED;
	conn_schedule(c);
	return 0;
}

void conn_handle_tx(struct conn *c, const struct virtio_vsock_hdr *h, const struct iovec *payload,
		    unsigned int n_payload)
{
	uint32_t old_credit;
	int ret = 0;

	pump_defer_wakes();
	pthread_mutex_lock(&c->lock);
	if (c->state == CONN_CLOSED)
		goto out;
	if (h->type != c->type) {
		conn_reset(c, true);
		goto out;
	}
	old_credit = conn_credit_avail(c);
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	switch (h->op) {
	case VIRTIO_VSOCK_OP_RST:
		/* After a SHUTDOWN RCV|SEND either way it is the close handshake. */
		if (c->state == CONN_ESTABLISHED &&
		    ((c->peer_shut & 3u) == 3u || (c->local_shut & 3u) == 3u))
			conn_end(c, false);
		else
			conn_reset(c, false);
		goto out;
	case VIRTIO_VSOCK_OP_REQUEST:
		conn_reset(c, true);
		goto out;
	case VIRTIO_VSOCK_OP_RESPONSE:
		if (c->state != CONN_HOST_CONNECTING || host_accepted(c))
			conn_reset(c, true);
		goto out;
	default:
		break;
	}
	if (c->state != CONN_ESTABLISHED) {
		conn_reset(c, true);
		goto out;
	}
	switch (h->op) {
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		c->peer_shut |= h->flags & (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
		if (h->flags & VIRTIO_VSOCK_SHUTDOWN_RCV)
			shutdown(c->fd, SHUT_RD);
		if ((c->peer_shut & 3u) == 3u)
			c->rst_when_drained = true;
		after_drain(c);
		if (c->state == CONN_ESTABLISHED)
			conn_schedule(c); /* the pump may stop reading */
		goto out;
	case VIRTIO_VSOCK_OP_RW:
		if ((c->peer_shut & VIRTIO_VSOCK_SHUTDOWN_SEND) ||
		    c->g2h_recv - c->g2h_fwd + h->len > c->buf_alloc) {
			/* Data after SHUTDOWN SEND, or beyond the credit we gave. */
			CTR_ADD(c->dev, malformed_pkts, 1);
			conn_reset(c, true);
			goto out;
		}
		c->g2h_recv += h->len;
		if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET)
			ret = rw_seqpacket(c, payload, n_payload, h->len, h->flags);
		else
			ret = rw_stream(c, payload, n_payload, h->len);
		if (ret) {
			conn_reset(c, true); /* EPIPE, ECONNRESET, ENOBUFS: this one only */
			goto out;
		}
		conn_maybe_credit(c);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		c->pending |= PEND_CREDIT;
		conn_schedule(c);
		break;
	default: /* CREDIT_UPDATE */
		break;
	}
	if (!old_credit && conn_credit_avail(c))
		conn_schedule(c);
out:
	pthread_mutex_unlock(&c->lock);
	pump_flush_wakes();
}
