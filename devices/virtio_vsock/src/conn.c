// SPDX-License-Identifier: MIT
/* Connection state machine and credit; see the primer in conn.h. */
#include "conn.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "iov.h"

#define PKT_IOV 256 /* iovecs of one RX packet */
#define PKT_MAX_CHAINS 64 /* chains of one mergeable packet */
#define BATCH_PKTS 16 /* packets of one host read without MRG_RXBUF */

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

struct conn *conn_new(const struct conn_env *env, struct pump *pump, int fd, uint16_t type,
		      uint32_t local_port, uint32_t peer_port, const struct virtio_vsock_hdr *req)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (pthread_mutex_init(&c->lock, NULL)) {
		free(c);
		return NULL;
	}
	c->env = env;
	c->dev = env->dev;
	c->pump = pump;
	c->fd = fd;
	c->type = type;
	c->local_port = local_port;
	c->peer_port = peer_port;
	c->refs = 1;
	c->buf_alloc = env->buf_alloc;
	txbuf_init(&c->tx, c->buf_alloc, txbuf_rec_limit(c->buf_alloc));
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

void conn_set_prefix(struct conn *c, const void *buf, uint32_t len)
{
	if (len > sizeof(c->prefix))
		len = sizeof(c->prefix);
	memcpy(c->prefix, buf, len);
	c->prefix_len = len;
	c->prefix_off = 0;
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
		c->env->ops->close_fd(c, c->fd);
	if (c->counted)
		CTR(c->env->ctr, conns_closed, 1); /* its fd is closed now */
	txbuf_release(&c->tx);
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

uint32_t conn_rx_pkt_limit(const struct conn *c)
{
	uint32_t n = c->peer_buf_alloc / CONN_PKT_CHARGE;

	if (!n)
		return 1;
	return n > CONN_PKT_RING ? CONN_PKT_RING : n;
}

/* Whether the RX packet bound holds @c's data now (CONN_PKT_CHARGE). */
static bool pkts_held(const struct conn *c)
{
	return c->pkt_n >= conn_rx_pkt_limit(c);
}

/* Forget the RW packets the guest's fwd_cnt shows wholly consumed (u32, modulo 2^32). */
static void pkts_retire(struct conn *c)
{
	while (c->pkt_n && (int32_t)(c->peer_fwd_cnt - c->pkt_end[c->pkt_head]) >= 0) {
		c->pkt_head = (uint16_t)((c->pkt_head + 1) % CONN_PKT_RING);
		c->pkt_n--;
	}
}

static bool still_waiting(const struct conn *c);

/*
 * An RW packet of @c ending at h2g_sent went out: note it; at three
 * quarters of the limit ask the guest for its fwd_cnt, at the limit hold
 * the data and start asking again on a timer (conn_expire()). Three
 * quarters: packets of 2.7 KiB and more on average (4 KiB buffers without
 * MRG_RXBUF included) run out of credit first, and then the guest's own
 * CREDIT_UPDATEs keep the count fresh; only streams of small packets ask.
 */
static void pkts_sent(struct conn *c)
{
	uint32_t lim = conn_rx_pkt_limit(c);

	c->pkt_end[(c->pkt_head + c->pkt_n) % CONN_PKT_RING] = c->h2g_sent;
	c->pkt_n++;
	if (c->pkt_n == lim - lim / 4 && !c->credit_req_out)
		c->pending |= PEND_CREDIT_REQ;
	if (c->pkt_n >= lim && !c->pkt_polling) {
		struct killq *kq = c->env->kq;

		CTR(c->env->ctr, rx_pkt_limit_stalls, 1);
		c->pkt_polling = true;
		c->pkt_poll_ms = CONN_PKT_POLL_MIN_MS;
		conn_get(c); /* the queue's, if @c was not on it */
		if (!killq_add(kq, &c->kq, killq_now(kq) + c->pkt_poll_ms))
			conn_put(c);
	}
}

void conn_fill_hdr(struct conn *c, struct virtio_vsock_hdr *h, uint16_t op, uint32_t flags,
		   uint32_t len)
{
	memset(h, 0, sizeof(*h));
	h->src_cid = VSOCK_CID_HOST;
	h->dst_cid = c->env->guest_cid;
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
	c->env->ops->schedule(c);
}

/*
 * A CREDIT_UPDATE when the guest's view of our free space got low (caller
 * holds c->lock): with @now (the control thread) and nothing else owed, put
 * on the RX queue at once (ops->credit_now); otherwise owed (PEND_CREDIT)
 * and sent by the pump.
 */
static void maybe_credit(struct conn *c, bool now)
{
	uint32_t untold = c->g2h_fwd - c->g2h_fwd_told;
	/*
	 * The guest's window: Linux (6.1.192, virtio_transport_tx_buf_size())
	 * sends at most min(our buf_alloc, its own buf_alloc) unacknowledged,
	 * so a larger buf_alloc of ours is never filled; waiting for it to
	 * half fill would stall the guest for good.
	 */
	uint32_t win = c->peer_buf_alloc && c->peer_buf_alloc < c->buf_alloc ? c->peer_buf_alloc :
									       c->buf_alloc;
	uint32_t in_view = c->g2h_recv - c->g2h_fwd_told;
	uint32_t view_free = in_view < win ? win - in_view : 0;
	/*
	 * Tell the guest once its view of the window's free space drops below
	 * half, so that it never stalls while one update is in flight; with a
	 * window under two packets (128 KiB), after every delivery.
	 */
	uint32_t low = win >= 2 * VIRTIO_VSOCK_MAX_PKT_BUF_SIZE ? win / 2 : win;

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
		if (!c->pending && now) {
			struct virtio_vsock_hdr h;
			uint32_t told = c->g2h_fwd_told;

			conn_fill_hdr(c, &h, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, 0);
			if (!c->env->ops->credit_now(c, &h))
				return;
			c->g2h_fwd_told = told;
		}
		c->pending |= PEND_CREDIT;
		conn_schedule(c);
	}
}

int conn_describe(const struct conn *c, char *buf, size_t len)
{
	return snprintf(buf, len,
			"state %d pending %#x shut peer %#x local %#x; g2h buf_alloc %u recv %u "
			"fwd_cnt %u told %u backlog %u out_armed %d want_flush %d; h2g "
			"peer_buf_alloc %u peer_fwd_cnt %u sent %u credit %u readable %d eof %d",
			(int)c->state, c->pending, c->peer_shut, c->local_shut, c->buf_alloc,
			c->g2h_recv, c->g2h_fwd, c->g2h_fwd_told, txbuf_len(&c->tx), c->out_armed,
			c->want_flush, c->peer_buf_alloc, c->peer_fwd_cnt, c->h2g_sent,
			conn_credit_avail(c), c->host_readable, c->host_eof);
}

void conn_opened(struct conn *c)
{
	c->counted = true;
	CTR(c->env->ctr, conns_opened, 1);
}

void conn_watch_deadline(struct conn *c, unsigned int ms)
{
	struct killq *kq = c->env->kq;

	/* After our SHUTDOWN, a guest with data still to read gets longer. */
	if (c->state == CONN_ESTABLISHED && c->peer_fwd_cnt != c->h2g_sent &&
	    ms < DEV_STALL_TIMEOUT_MS)
		ms = DEV_STALL_TIMEOUT_MS;
	c->deadline_fwd = c->peer_fwd_cnt;
	conn_get(c); /* the queue's, if @c was not on it */
	if (!killq_add(kq, &c->kq, killq_now(kq) + ms))
		conn_put(c); /* it was: the caller holds another */
}

void conn_unwatch_deadline(struct conn *c)
{
	if (killq_remove(c->env->kq, &c->kq))
		conn_put(c); /* the caller holds another: not the last */
}

void conn_reset(struct conn *c, bool send_rst)
{
	/*
	 * A host client the guest refused or did not answer, or a guest
	 * REQUEST whose RESPONSE had not gone out (the guest sees an RST to
	 * its REQUEST): attempts that never became a connection.
	 */
	if (c->state == CONN_HOST_CONNECTING || (c->pending & PEND_RESPONSE))
		CTR(c->env->ctr, conns_refused, 1);
	else if (c->state == CONN_ESTABLISHED)
		CTR(c->env->ctr, conn_resets, 1);
	conn_end(c, send_rst);
}

void conn_end(struct conn *c, bool send_rst)
{
	if (c->state == CONN_CLOSED)
		return;
	c->state = CONN_CLOSED;
	c->env->ops->unlist(c);
	conn_unwatch_deadline(c);
	shutdown(c->fd, SHUT_RDWR);
	txbuf_release(&c->tx);
	c->pending = send_rst ? PEND_RST : 0;
	conn_schedule(c);
}

/*
 * A zero-length SEQPACKET record goes out with one empty iovec rather than
 * none: Linux sends both, but qemu-aarch64 7.2 (user-mode emulation, where
 * tests/aarch64/user_tests.sh runs the device tests) answers 0 to a
 * sendmsg() without iovecs and sends nothing.
 */
static ssize_t send_iov(int fd, const struct iovec *iov, unsigned int n)
{
	static const struct iovec none;
	struct msghdr m = { .msg_iov = (struct iovec *)(uintptr_t)(n ? iov : &none),
			    .msg_iovlen = n ? n : 1 };
	ssize_t r;

	do
		r = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static void delivered(struct conn *c, uint32_t n)
{
	c->g2h_fwd += n;
	CTR(c->env->ctr, tx_bytes, n);
}

/* After the backlog drained: pass on a guest half-close, or finish a close. */
static void after_drain(struct conn *c)
{
	if (txbuf_busy(&c->tx) || c->state != CONN_ESTABLISHED)
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

	while (txbuf_msg_ready(&c->tx)) {
		uint32_t len = txbuf_msg_head_len(&c->tx);

		r = send_iov(c->fd, v, txbuf_iov(&c->tx, 0, len, v));
		if (r == -EAGAIN)
			return 1;
		if (r < 0)
			return (int)r;
		txbuf_msg_sent(&c->tx);
		if (len)
			delivered(c, len);
	}
	return 0;
}

/* Send what a STREAM backlog holds. Return: whether bytes are left (EAGAIN), or -errno. */
static int stream_flush(struct conn *c)
{
	struct iovec v[2];
	ssize_t r;

	while (txbuf_len(&c->tx)) {
		r = send_iov(c->fd, v, txbuf_iov(&c->tx, 0, txbuf_len(&c->tx), v));
		if (r == -EAGAIN)
			return 1;
		if (r < 0)
			return (int)r;
		txbuf_consume(&c->tx, (uint32_t)r);
		delivered(c, (uint32_t)r);
	}
	return 0;
}

/* Write the backlog; @now: on the control thread (maybe_credit()). Return: 0 or -errno. */
static int flush(struct conn *c, bool now)
{
	int left = c->type == VIRTIO_VSOCK_TYPE_SEQPACKET ? sq_flush(c) : stream_flush(c);
	int r;

	if (left < 0)
		return left;
	r = c->env->ops->set_out(c, left);
	if (r)
		return r;
	maybe_credit(c, now);
	after_drain(c);
	return 0;
}

int conn_flush(struct conn *c)
{
	return flush(c, false);
}

/*
 * Write the TX batch of @c (b->c == c; caller holds c->lock) and empty
 * it, keeping b->c and its reference. Return: 0, or -errno (the caller resets).
 */
static int batch_send(struct conn *c, struct tx_batch *b)
{
	uint32_t len = b->len;
	ssize_t r = 0;
	int ret = 0;

	if (!len || c->state != CONN_ESTABLISHED)
		goto out; /* reset meanwhile: the data goes with the connection */
	if (!txbuf_len(&c->tx)) {
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
		if (txbuf_reserve(&c->tx, len - (uint32_t)r)) {
			ret = -ENOBUFS;
			goto out;
		}
		txbuf_append_iov(&c->tx, b->iov, b->n, (size_t)r, len - (uint32_t)r);
		ret = c->env->ops->set_out(c, true);
		if (ret)
			goto out;
	}
	maybe_credit(c, true);
out:
	b->n = 0;
	b->len = 0;
	return ret;
}

void conn_tx_flush(struct tx_batch *b)
{
	struct conn *c = b->c;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	if (batch_send(c, b))
		conn_reset(c, true); /* EPIPE, ECONNRESET, ENOBUFS: this one only */
	pthread_mutex_unlock(&c->lock);
	b->c = NULL;
	conn_put(c);
}

/*
 * Guest RW payload of a STREAM connection: added to the TX batch when the
 * backlog is empty (sent by conn_tx_flush()), else written or queued now.
 * Return: 0 or -errno (reset).
 */
static int rw_stream(struct conn *c, const struct iovec *p, unsigned int n, uint32_t len,
		     struct tx_batch *b)
{
	ssize_t r = 0;
	int ret;

	if (b->c == c && (b->n + n > TXB_IOV || b->len + len > TXB_MAX_BYTES)) {
		ret = batch_send(c, b);
		if (ret)
			return ret;
	}
	if (!txbuf_len(&c->tx) && len && (!b->c || b->c == c) && n <= TXB_IOV - b->n) {
		if (!b->c) {
			conn_get(c);
			b->c = c;
		}
		memcpy(b->iov + b->n, p, n * sizeof(*p));
		b->n += n;
		b->len += len;
		return 0;
	}
	if (!txbuf_len(&c->tx) && len) {
		r = send_iov(c->fd, p, n);
		if (r == -EAGAIN)
			r = 0;
		if (r < 0)
			return (int)r;
		delivered(c, (uint32_t)r);
	}
	if ((uint32_t)r < len) {
		if (txbuf_reserve(&c->tx, len - (uint32_t)r))
			return -ENOBUFS;
		txbuf_append_iov(&c->tx, p, n, (size_t)r, len - (uint32_t)r);
		return c->env->ops->set_out(c, true);
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
	ssize_t r;
	int ret;

	if (!txbuf_recs(&c->tx) && eom) {
		/* A whole message and nothing queued before it: send in place. */
		r = send_iov(c->fd, p, n);
		if (r >= 0) {
			delivered(c, len);
			return 0;
		}
		if (r != -EAGAIN)
			return (int)r;
	}
	if (txbuf_reserve(&c->tx, len))
		return -ENOBUFS;
	if (!txbuf_msg_is_open(&c->tx)) {
		if (!len && eom && txbuf_msg_empty(&c->tx))
			return flush(c, true);
		ret = txbuf_msg_open(&c->tx);
		if (ret)
			return ret;
	}
	txbuf_msg_append_iov(&c->tx, p, n, 0, len);
	if (eom)
		txbuf_msg_close(&c->tx);
	return flush(c, true);
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
	int ret = c->env->ops->accepted(c);

	if (ret == -EPIPE || ret == -ECONNRESET)
		c->host_hup = true; /* it reads no more: our SHUTDOWN will say RCV too */
	else if (ret)
		return ret;
	conn_unwatch_deadline(c);
	c->state = CONN_ESTABLISHED;
	conn_schedule(c);
	return 0;
}

void conn_handle_tx(struct conn *c, const struct virtio_vsock_hdr *h, const struct iovec *payload,
		    unsigned int n_payload, struct tx_batch *b)
{
	uint32_t old_credit;
	bool old_held;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	if (c->state == CONN_CLOSED)
		goto out;
	if (h->type != c->type) {
		conn_reset(c, true);
		goto out;
	}
	old_credit = conn_credit_avail(c);
	old_held = pkts_held(c);
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	c->credit_req_out = false; /* any packet carries the guest's fwd_cnt */
	pkts_retire(c);
	if (c->pkt_polling && !pkts_held(c)) {
		c->pkt_polling = false;
		if (!still_waiting(c))
			conn_unwatch_deadline(c);
	}
	switch (h->op) {
	case VIRTIO_VSOCK_OP_RST:
		/* After a SHUTDOWN RCV|SEND either way it is the close handshake. */
		if (c->state == CONN_ESTABLISHED &&
		    (conn_shut_both(c->peer_shut) || conn_shut_both(c->local_shut)))
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
		if (conn_shut_both(c->peer_shut))
			c->rst_when_drained = true;
		after_drain(c);
		if (c->state == CONN_ESTABLISHED)
			conn_schedule(c); /* the pump may stop reading */
		goto out;
	case VIRTIO_VSOCK_OP_RW:
		if ((c->peer_shut & VIRTIO_VSOCK_SHUTDOWN_SEND) ||
		    c->g2h_recv - c->g2h_fwd + h->len > c->buf_alloc) {
			/* Data after SHUTDOWN SEND, or beyond the credit we gave. */
			CTR(c->env->ctr, malformed_pkts, 1);
			conn_reset(c, true);
			goto out;
		}
		c->g2h_recv += h->len;
		if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET)
			ret = rw_seqpacket(c, payload, n_payload, h->len, h->flags);
		else
			ret = rw_stream(c, payload, n_payload, h->len, b);
		if (ret) {
			conn_reset(c, true); /* EPIPE, ECONNRESET, ENOBUFS: this one only */
			goto out;
		}
		maybe_credit(c, true);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		c->pending |= PEND_CREDIT;
		conn_schedule(c);
		break;
	default: /* CREDIT_UPDATE */
		break;
	}
	if ((!old_credit || old_held) && conn_credit_avail(c) && !pkts_held(c))
		conn_schedule(c);
out:
	pthread_mutex_unlock(&c->lock);
}

/* ---- host socket events and deadlines ---- */

void conn_host_event(struct conn *c, uint32_t events)
{
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->host_readable = true;
	if (events & EPOLLHUP)
		c->host_hup = true;
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->host_rdhup = true;
	if (events & EPOLLOUT)
		c->want_flush = true;
}

/* Is @c still waiting for the guest? (caller holds c->lock) */
static bool still_waiting(const struct conn *c)
{
	if (c->state == CONN_HOST_CONNECTING)
		return true;
	return c->state == CONN_ESTABLISHED && conn_shut_both(c->local_shut);
}

/*
 * The deadline of @c held at the RX packet bound (pkt_polling): ask for the
 * guest's fwd_cnt again and re-arm with twice the delay (at most
 * CONN_PKT_POLL_MAX_MS). Return: false when @c is no longer held that way
 * (the deadline is then the other kind's, if any).
 */
static bool pkt_poll(struct conn *c, int64_t now)
{
	if (c->state != CONN_ESTABLISHED || still_waiting(c) || !pkts_held(c)) {
		c->pkt_polling = false;
		return false;
	}
	c->pending |= PEND_CREDIT_REQ;
	conn_schedule(c);
	c->pkt_poll_ms =
		(uint16_t)(c->pkt_poll_ms * 2 > CONN_PKT_POLL_MAX_MS ? CONN_PKT_POLL_MAX_MS :
								       c->pkt_poll_ms * 2);
	killq_set_deadline(c->env->kq, &c->kq, now + c->pkt_poll_ms);
	return true;
}

void conn_expire(struct conn *c, int64_t now)
{
	if (c->pkt_polling && pkt_poll(c, now))
		return;
	if (!still_waiting(c)) {
		conn_unwatch_deadline(c);
		return;
	}
	/*
	 * After our SHUTDOWN, a guest still reading what we sent is not
	 * late: the clock restarts whenever its fwd_cnt moved, with 2 s once
	 * it consumed everything, 10 s while data is left (a guest that
	 * stops reading is not kept forever).
	 */
	if (c->state == CONN_ESTABLISHED && c->peer_fwd_cnt != c->deadline_fwd) {
		c->deadline_fwd = c->peer_fwd_cnt;
		killq_set_deadline(c->env->kq, &c->kq,
				   now + (c->peer_fwd_cnt == c->h2g_sent ? DEV_CLOSE_TIMEOUT_MS :
									   DEV_STALL_TIMEOUT_MS));
		return;
	}
	conn_reset(c, true); /* leaves the kill queue */
}

void conn_forget(struct conn *c)
{
	if (c->state == CONN_HOST_CONNECTING)
		CTR(c->env->ctr, conns_refused, 1); /* its host client never got "OK" */
	c->state = CONN_CLOSED;
	c->pending = 0;
}

bool conn_retirable(const struct conn *c)
{
	return c->state == CONN_CLOSED && !(c->pending & PEND_RST);
}

/* ---- host to guest: the next RX packet ---- */

/* Send a control packet. Return: 0, or -EAGAIN when out of RX buffers. */
static int emit_ctl(struct conn *c, struct rxq_cache *rc, uint16_t op, uint32_t flags)
{
	struct virtio_vsock_hdr h;

	if (!rxq_first_usable(rc, PKT_MAX_CHAINS))
		return -EAGAIN;
	conn_fill_hdr(c, &h, op, flags, 0);
	rxq_put(rc, &h, 0);
	return 0;
}

/* Host EOF on @c: owe the guest a SHUTDOWN once the data before it went out. */
static void host_eof(struct conn *c)
{
	c->host_eof = true;
	c->host_readable = false;
	c->shut_to_send = VIRTIO_VSOCK_SHUTDOWN_SEND;
	if (c->host_hup)
		c->shut_to_send |= VIRTIO_VSOCK_SHUTDOWN_RCV;
	c->pending |= PEND_SHUTDOWN;
}

static bool peer_gone(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLRDHUP };

	return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLRDHUP | POLLHUP));
}

/*
 * SEQPACKET: make sure one whole host message sits in c->msg.
 * Return: 1 ready; 0 nothing to read (or EOF handled); -errno to reset.
 */
static int seq_fetch(struct conn *c)
{
	uint32_t cap = c->buf_alloc > 65536 ? c->buf_alloc : 65536;
	ssize_t n;

	if (c->msg_valid)
		return 1;
	n = recv(c->fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR) {
			c->host_readable = errno == EINTR;
			return 0;
		}
		return -errno;
	}
	if (!n && peer_gone(c->fd)) {
		host_eof(c);
		return 0;
	}
	if ((size_t)n > cap)
		return -EMSGSIZE;
	if (!c->msg && !(c->msg = malloc(cap)))
		return -ENOMEM;
	do
		n = recv(c->fd, c->msg, cap, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	c->msg_len = (uint32_t)n;
	c->msg_off = 0;
	c->msg_valid = true;
	return 1;
}

/*
 * Read the host socket into @iov (@niov, @space bytes of room).
 * Return: bytes read; 0 when nothing was (EAGAIN, EOF: noted, or a reset).
 */
static uint32_t host_read(struct conn *c, const struct iovec *iov, unsigned int niov,
			  uint32_t space)
{
	ssize_t r;

	do
		r = readv(c->fd, iov, (int)niov);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		if (errno == EAGAIN) {
			c->host_readable = false;
			return 0;
		}
		if (errno == ECONNRESET) {
			/*
			 * AF_UNIX: the client closed with bytes we wrote (its
			 * "OK", or guest data) unread, after all it sent was
			 * read. For the guest that is its close.
			 */
			c->host_hup = true;
			host_eof(c);
			return 0;
		}
		conn_reset(c, true);
		return 0;
	}
	if (!r) {
		if (space)
			host_eof(c);
		return 0;
	}
	/*
	 * A short stream read drained the socket: the next byte comes with a
	 * new edge. Not so for EOF already signalled: read on until read()
	 * says 0.
	 */
	if ((uint32_t)r < space && !c->host_rdhup)
		c->host_readable = false;
	return (uint32_t)r;
}

/*
 * Without MRG_RXBUF a packet is one RX buffer (4 KiB with Linux 6.1): read
 * the host socket once into the payload room of up to BATCH_PKTS chains
 * (and at most the packets the RX packet bound still allows), then write
 * one RW packet per chain the bytes reached. One readv() per 64 KiB instead
 * of 16. Return: as emit_rw().
 */
static int emit_rw_batch(struct conn *c, struct rxq_cache *rc, uint32_t want)
{
	uint32_t room[BATCH_PKTS], left, lim = conn_rx_pkt_limit(c);
	unsigned int niov = 0, npkts = 0, max = BATCH_PKTS, k;
	struct iovec iov[PKT_IOV];
	struct virtio_vsock_hdr h;
	int space;

	if (lim - c->pkt_n < max)
		max = lim - c->pkt_n; /* >= 1: data_ready() checked pkts_held() */
	space = rxq_span_pkts(rc, want, c->env->rx_pkt_max, max, iov, PKT_IOV, &niov, room, &npkts);
	if (space < 0)
		return -EAGAIN;
	if (!space) {
		/* Room for the header only: this chain cannot carry data. */
		rxq_drop_first(rc);
		return 0;
	}
	left = host_read(c, iov, niov, (uint32_t)space);
	for (k = 0; k < npkts && left; k++) {
		uint32_t n = left < room[k] ? left : room[k];

		conn_fill_hdr(c, &h, VIRTIO_VSOCK_OP_RW, 0, n);
		rxq_put(rc, &h, n);
		c->h2g_sent += n;
		pkts_sent(c);
		left -= n;
	}
	return 0;
}

/*
 * Send one RW packet of @c (without MRG_RXBUF, from the host socket:
 * several, emit_rw_batch()). Sources, in order: the bytes that followed the
 * CONNECT line, a buffered SEQPACKET message, the host socket (read in
 * place). Return: 0 sent or nothing to send now; -EAGAIN out of RX buffers.
 */
static int emit_rw(struct conn *c, struct rxq_cache *rc)
{
	uint32_t want, space, n, flags = 0;
	struct iovec iov[PKT_IOV];
	unsigned int niov = 0;
	const uint8_t *mem = NULL;
	struct virtio_vsock_hdr h;
	int room;

	want = conn_credit_avail(c);
	if (want > c->env->rx_pkt_max)
		want = c->env->rx_pkt_max;
	if (c->prefix_off < c->prefix_len) {
		mem = c->prefix + c->prefix_off;
		if (want > c->prefix_len - c->prefix_off)
			want = c->prefix_len - c->prefix_off;
	} else if (c->type == VIRTIO_VSOCK_TYPE_SEQPACKET) {
		int ret = seq_fetch(c);

		if (ret < 0) {
			conn_reset(c, true);
			return 0;
		}
		if (!ret)
			return 0;
		mem = c->msg + c->msg_off;
		if (want >= c->msg_len - c->msg_off) {
			want = c->msg_len - c->msg_off;
			flags = VIRTIO_VSOCK_SEQ_EOM;
		}
	}
	if (!mem && !rc->q->mrg && want)
		return emit_rw_batch(c, rc, conn_credit_avail(c));
	room = rxq_span(rc, want, PKT_MAX_CHAINS, iov, PKT_IOV, &niov);
	if (room < 0)
		return -EAGAIN;
	space = (uint32_t)room;
	if (!space && (want || !mem)) {
		/* Room for the header only: this chain cannot carry data. */
		rxq_drop_first(rc);
		return 0;
	}
	if (mem && space < want) {
		/* The packet will not hold the rest: a SEQPACKET fragment. */
		flags = 0;
		want = space;
	}
	if (mem)
		n = (uint32_t)iov_write(iov, niov, 0, mem, want);
	else
		n = host_read(c, iov, niov, space);
	if (!n && !(flags & VIRTIO_VSOCK_SEQ_EOM))
		return 0;
	conn_fill_hdr(c, &h, VIRTIO_VSOCK_OP_RW, flags, n);
	rxq_put(rc, &h, n);
	c->h2g_sent += n;
	pkts_sent(c);
	if (mem == c->prefix + c->prefix_off) {
		c->prefix_off += n;
	} else if (mem) {
		c->msg_off += n;
		if (flags & VIRTIO_VSOCK_SEQ_EOM)
			c->msg_valid = false;
	}
	return 0;
}

static bool data_ready(const struct conn *c)
{
	if (c->state != CONN_ESTABLISHED || (c->local_shut & VIRTIO_VSOCK_SHUTDOWN_SEND) ||
	    (c->peer_shut & VIRTIO_VSOCK_SHUTDOWN_RCV) || !conn_credit_avail(c) || pkts_held(c))
		return false;
	return c->prefix_off < c->prefix_len || c->msg_valid || (c->host_readable && !c->host_eof);
}

bool conn_rx_wanted(const struct conn *c)
{
	return c->pending || data_ready(c);
}

int conn_rx_next(struct conn *c, struct rxq_cache *rc)
{
	int ret;

	if (c->pending & PEND_RST) {
		ret = emit_ctl(c, rc, VIRTIO_VSOCK_OP_RST, 0);
		if (!ret)
			c->pending = 0;
	} else if (c->state == CONN_CLOSED) {
		return 1;
	} else if (c->pending & PEND_REQUEST) {
		ret = emit_ctl(c, rc, VIRTIO_VSOCK_OP_REQUEST, 0);
		if (!ret)
			c->pending &= ~PEND_REQUEST;
	} else if (c->state == CONN_HOST_CONNECTING) {
		return 1;
	} else if (c->pending & PEND_RESPONSE) {
		ret = emit_ctl(c, rc, VIRTIO_VSOCK_OP_RESPONSE, 0);
		if (!ret)
			c->pending &= ~PEND_RESPONSE;
	} else if (c->pending & PEND_CREDIT) {
		ret = emit_ctl(c, rc, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
		if (!ret)
			c->pending &= ~PEND_CREDIT;
	} else if (c->pending & PEND_CREDIT_REQ) {
		ret = emit_ctl(c, rc, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
		if (!ret) {
			c->pending &= ~PEND_CREDIT_REQ;
			c->credit_req_out = true;
		}
	} else if (data_ready(c)) {
		ret = emit_rw(c, rc);
	} else if (c->pending & PEND_SHUTDOWN) {
		ret = emit_ctl(c, rc, VIRTIO_VSOCK_OP_SHUTDOWN, c->shut_to_send);
		if (!ret) {
			c->pending &= ~PEND_SHUTDOWN;
			c->local_shut |= c->shut_to_send;
			if (conn_shut_both(c->local_shut))
				conn_watch_deadline(c, DEV_CLOSE_TIMEOUT_MS);
		}
	} else {
		return 1;
	}
	return ret;
}

void conn_want_flush(struct conn *c)
{
	if (!c->want_flush)
		return;
	c->want_flush = false;
	if (c->state == CONN_ESTABLISHED && conn_flush(c))
		conn_reset(c, true);
}
