// SPDX-License-Identifier: MIT
/*
 * Unit tests: the connection state machine alone (conn.c), no threads. The
 * layers above it are a fake struct conn_ops that records what it is asked;
 * the RX queue is a fake split ring (fake_ring.h) behind a real struct rxq;
 * the host side is one end of a socketpair; deadlines use a fake clock.
 *
 * Covered: every guest op in every state, credit arithmetic across the u32
 * wrap both ways, a guest overrunning our credit, half-close in both
 * orders, SEQPACKET framing both ways, the TX batch, and the deadlines of a
 * host-initiated REQUEST and of our SHUTDOWN (restarted while the guest's
 * fwd_cnt moves), the RX packet bound (held data, CREDIT_REQUEST polling).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "fake_ring.h"
#include "iov.h"

#define GUEST_CID 3u
#define LOCAL_PORT 1234u
#define PEER_PORT 5678u
#define BUF_ALLOC 4096u /* small: credit updates after every delivery */
#define RX_BUF 4096u

/* What the fake upper layers were asked. */
static struct {
	unsigned int schedule, unlist, close_fd, accepted, credit_now;
	int out; /* last set_out(): -1 never, 0 off, 1 on */
	int accepted_ret, credit_now_ret, set_out_ret;
	struct virtio_vsock_hdr credit_hdr;
} ops_seen;

static void op_schedule(struct conn *c)
{
	(void)c;
	ops_seen.schedule++;
}

static int op_set_out(struct conn *c, bool on)
{
	(void)c;
	ops_seen.out = on;
	return on ? ops_seen.set_out_ret : 0;
}

static void op_unlist(struct conn *c)
{
	(void)c;
	ops_seen.unlist++;
}

static int op_credit_now(struct conn *c, const struct virtio_vsock_hdr *h)
{
	(void)c;
	ops_seen.credit_now++;
	ops_seen.credit_hdr = *h;
	return ops_seen.credit_now_ret;
}

static int op_accepted(struct conn *c)
{
	(void)c;
	ops_seen.accepted++;
	return ops_seen.accepted_ret;
}

static void op_close_fd(struct conn *c, int fd)
{
	(void)c;
	ops_seen.close_fd++;
	close(fd);
}

static const struct conn_ops fake_ops = {
	.schedule = op_schedule,
	.set_out = op_set_out,
	.unlist = op_unlist,
	.credit_now = op_credit_now,
	.accepted = op_accepted,
	.close_fd = op_close_fd,
};

static int64_t fake_now;

static int64_t fake_clock(void *opaque)
{
	(void)opaque;
	return fake_now;
}

static const struct killq_clock clock_fake = { .now_ms = fake_clock };

static unsigned int irqs;

static void fake_signal(void *opaque, unsigned int q)
{
	(void)opaque;
	(void)q;
	irqs++;
}

static struct fake f;
static struct dev_counters ctr;
static struct killq kq;
static struct conn_env env;
static struct rxq rxq;
static struct rxq_cache rc;
static struct tx_batch batch;
static uint16_t used_seen;
static int host; /* the host peer's end of the socketpair */

static void setup(void)
{
	struct vq_irq irq = { .signal = fake_signal, .q = VSOCK_VQ_RX, .ctr = &ctr };

	memset(&ops_seen, 0, sizeof(ops_seen));
	ops_seen.out = -1;
	memset(&ctr, 0, sizeof(ctr));
	fake_now = 1000;
	ck_assert_int_eq(killq_init(&kq, &clock_fake), 0);
	env = (struct conn_env){ .ops = &fake_ops,
				 .ctr = &ctr,
				 .kq = &kq,
				 .guest_cid = GUEST_CID,
				 .buf_alloc = BUF_ALLOC,
				 .rx_pkt_max = VIRTIO_VSOCK_MAX_PKT_BUF_SIZE };
	fake_init(&f, 1ull << VIRTIO_F_VERSION_1);
	ck_assert_int_eq(rxq_init(&rxq, RX_BATCH, &irq), 0);
	rxq.vq = f.vq;
	rxq_start(&rxq, false, 1);
	rxq_cache_init(&rc, &rxq);
	memset(&batch, 0, sizeof(batch));
	used_seen = 0;
	irqs = 0;
	host = -1;
}

static void teardown(void)
{
	if (host >= 0)
		close(host);
	rxq_fini(&rxq);
	killq_fini(&kq);
	fake_fini(&f);
}

/* A connection over a fresh socketpair of @sotype; @guest: guest-initiated. */
static struct conn *make(int sotype, bool guest)
{
	uint16_t type =
		sotype == SOCK_SEQPACKET ? VIRTIO_VSOCK_TYPE_SEQPACKET : VIRTIO_VSOCK_TYPE_STREAM;
	struct virtio_vsock_hdr req = { .src_cid = GUEST_CID,
					.dst_cid = VSOCK_CID_HOST,
					.src_port = PEER_PORT,
					.dst_port = LOCAL_PORT,
					.type = type,
					.op = VIRTIO_VSOCK_OP_REQUEST,
					.buf_alloc = 65536 };
	struct conn *c;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, sotype | SOCK_NONBLOCK, 0, sv), 0);
	host = sv[1];
	c = conn_new(&env, NULL, sv[0], type, LOCAL_PORT, PEER_PORT, guest ? &req : NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->state, guest ? CONN_ESTABLISHED : CONN_HOST_CONNECTING);
	ck_assert_uint_eq(c->pending, guest ? PEND_RESPONSE : PEND_REQUEST);
	return c;
}

/* A guest packet of @c's connection. */
static struct virtio_vsock_hdr pkt(const struct conn *c, uint16_t op, uint32_t len, uint32_t flags)
{
	return (struct virtio_vsock_hdr){ .src_cid = GUEST_CID,
					  .dst_cid = VSOCK_CID_HOST,
					  .src_port = PEER_PORT,
					  .dst_port = LOCAL_PORT,
					  .len = len,
					  .type = c->type,
					  .op = op,
					  .flags = flags,
					  .buf_alloc = 65536,
					  .fwd_cnt = c->h2g_sent };
}

/* Guest sends @op with payload @data (@len bytes), then the TX batch is written. */
static void tx(struct conn *c, uint16_t op, const void *data, uint32_t len, uint32_t flags)
{
	struct virtio_vsock_hdr h = pkt(c, op, len, flags);
	struct iovec v = { (void *)(uintptr_t)data, len };

	conn_handle_tx(c, &h, &v, len ? 1 : 0, &batch);
	conn_tx_flush(&batch);
}

/* Post @n RX buffers of RX_BUF bytes. */
static void rx_post(unsigned int n)
{
	while (n--) {
		uint16_t d = f.avail_idx % QNUM;

		fake_set_desc(&f, fake_desc(&f), d, BUF_GPA + d * RX_BUF, RX_BUF,
			      VRING_DESC_F_WRITE, 0);
		fake_avail(&f, d);
	}
}

/* The next packet the guest finds in the used ring. Return: false when none. */
static bool rx_take(struct virtio_vsock_hdr *h, void *payload, uint32_t cap)
{
	struct vring_used *u = fake_used(&f);
	struct vring_used_elem e;
	uint8_t *buf;

	if (__atomic_load_n(&u->idx, __ATOMIC_ACQUIRE) == used_seen)
		return false;
	e = u->ring[used_seen++ % QNUM];
	buf = fake_hva(&f, BUF_GPA + e.id * RX_BUF);
	memcpy(h, buf, sizeof(*h));
	pkt_hdr_from_le(h);
	ck_assert_uint_eq(e.len, VSOCK_HDR_LEN + h->len);
	if (payload)
		memcpy(payload, buf + VSOCK_HDR_LEN, h->len < cap ? h->len : cap);
	return true;
}

/* Run the pump's side for @c until it has nothing to send; publish. Return: steps made. */
static int pump(struct conn *c)
{
	int steps = 0, r;

	pthread_mutex_lock(&c->lock);
	conn_want_flush(c);
	while ((r = conn_rx_next(c, &rc)) == 0 && steps < 64)
		steps++;
	pthread_mutex_unlock(&c->lock);
	rxq_flush(&rc);
	return r == -EAGAIN ? -EAGAIN : steps;
}

/* The pump saw @events on @c's host socket. */
static void event(struct conn *c, uint32_t events)
{
	pthread_mutex_lock(&c->lock);
	conn_host_event(c, events);
	pthread_mutex_unlock(&c->lock);
}

/* Make @c ESTABLISHED with nothing owed: its RESPONSE (or REQUEST + guest RESPONSE) went out. */
static void establish(struct conn *c)
{
	struct virtio_vsock_hdr h;

	rx_post(1);
	ck_assert_int_eq(pump(c), 1);
	ck_assert(rx_take(&h, NULL, 0));
	if (c->state == CONN_HOST_CONNECTING) {
		ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_REQUEST);
		tx(c, VIRTIO_VSOCK_OP_RESPONSE, NULL, 0, 0);
		ck_assert_uint_eq(ops_seen.accepted, 1);
	} else {
		ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RESPONSE);
	}
	ck_assert_int_eq(c->state, CONN_ESTABLISHED);
	ck_assert_uint_eq(c->pending, 0);
}

/* ---- every op in every state ---- */

enum outcome {
	O_RESET_RST, /* CLOSED, RST owed */
	O_CLOSED_SILENT, /* CLOSED, nothing owed */
	O_ESTABLISHED, /* still/now ESTABLISHED */
	O_IGNORED, /* CLOSED before, nothing changed */
};

struct op_case {
	int state; /* CONN_* the connection is in */
	uint16_t op;
	uint32_t flags;
	enum outcome want;
	unsigned int refused, resets; /* counters after */
};

static const struct op_case op_cases[] = {
	/* Host-initiated, REQUEST sent, awaiting RESPONSE. */
	{ CONN_HOST_CONNECTING, VIRTIO_VSOCK_OP_REQUEST, 0, O_RESET_RST, 1, 0 },
	{ CONN_HOST_CONNECTING, VIRTIO_VSOCK_OP_RESPONSE, 0, O_ESTABLISHED, 0, 0 },
	{ CONN_HOST_CONNECTING, VIRTIO_VSOCK_OP_RST, 0, O_CLOSED_SILENT, 1, 0 },
	{ CONN_HOST_CONNECTING, VIRTIO_VSOCK_OP_SHUTDOWN, 3, O_RESET_RST, 1, 0 },
	{ CONN_HOST_CONNECTING, VIRTIO_VSOCK_OP_RW, 0, O_RESET_RST, 1, 0 },
	{ CONN_HOST_CONNECTING, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, O_RESET_RST, 1, 0 },
	{ CONN_HOST_CONNECTING, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0, O_RESET_RST, 1, 0 },
	/* Established, nothing owed. */
	{ CONN_ESTABLISHED, VIRTIO_VSOCK_OP_REQUEST, 0, O_RESET_RST, 0, 1 },
	{ CONN_ESTABLISHED, VIRTIO_VSOCK_OP_RESPONSE, 0, O_RESET_RST, 0, 1 },
	{ CONN_ESTABLISHED, VIRTIO_VSOCK_OP_RST, 0, O_CLOSED_SILENT, 0, 1 },
	{ CONN_ESTABLISHED, VIRTIO_VSOCK_OP_SHUTDOWN, 3, O_RESET_RST, 0, 0 }, /* close: answered */
	{ CONN_ESTABLISHED, VIRTIO_VSOCK_OP_SHUTDOWN, 2, O_ESTABLISHED, 0, 0 },
	{ CONN_ESTABLISHED, VIRTIO_VSOCK_OP_RW, 0, O_ESTABLISHED, 0, 0 },
	{ CONN_ESTABLISHED, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, O_ESTABLISHED, 0, 0 },
	{ CONN_ESTABLISHED, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0, O_ESTABLISHED, 0, 0 },
	/* Closed (reset before): every packet is ignored. */
	{ CONN_CLOSED, VIRTIO_VSOCK_OP_REQUEST, 0, O_IGNORED, 0, 1 },
	{ CONN_CLOSED, VIRTIO_VSOCK_OP_RESPONSE, 0, O_IGNORED, 0, 1 },
	{ CONN_CLOSED, VIRTIO_VSOCK_OP_RST, 0, O_IGNORED, 0, 1 },
	{ CONN_CLOSED, VIRTIO_VSOCK_OP_SHUTDOWN, 3, O_IGNORED, 0, 1 },
	{ CONN_CLOSED, VIRTIO_VSOCK_OP_RW, 0, O_IGNORED, 0, 1 },
	{ CONN_CLOSED, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, O_IGNORED, 0, 1 },
	{ CONN_CLOSED, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0, O_IGNORED, 0, 1 },
};

START_TEST(op_in_state)
{
	const struct op_case *k = &op_cases[_i];
	struct conn *c = make(SOCK_STREAM, k->state != CONN_HOST_CONNECTING);
	uint32_t len = k->op == VIRTIO_VSOCK_OP_RW ? 5 : 0;
	unsigned int sched;
	char got[8];

	if (k->state != CONN_HOST_CONNECTING)
		establish(c);
	if (k->state == CONN_CLOSED) {
		tx(c, VIRTIO_VSOCK_OP_RST, NULL, 0, 0);
		ck_assert_int_eq(c->state, CONN_CLOSED);
		c->pending = 0; /* as after the pump retired it */
	}
	sched = ops_seen.schedule;
	tx(c, k->op, "hello", len, k->flags);
	switch (k->want) {
	case O_RESET_RST:
		ck_assert_int_eq(c->state, CONN_CLOSED);
		ck_assert_uint_eq(c->pending, PEND_RST);
		ck_assert_uint_eq(ops_seen.unlist, 1);
		break;
	case O_CLOSED_SILENT:
		ck_assert_int_eq(c->state, CONN_CLOSED);
		ck_assert_uint_eq(c->pending, 0);
		ck_assert_uint_eq(ops_seen.unlist, 1);
		break;
	case O_ESTABLISHED:
		ck_assert_int_eq(c->state, CONN_ESTABLISHED);
		ck_assert_uint_eq(ops_seen.unlist, 0);
		break;
	case O_IGNORED:
		ck_assert_int_eq(c->state, CONN_CLOSED);
		ck_assert_uint_eq(c->pending, 0);
		ck_assert_uint_eq(ops_seen.schedule, sched);
		ck_assert_uint_eq(ops_seen.unlist, 1); /* the first RST's */
		break;
	}
	if (k->op == VIRTIO_VSOCK_OP_RW && k->want == O_ESTABLISHED) {
		ck_assert_int_eq(read(host, got, sizeof(got)), 5);
		ck_assert_uint_eq(c->g2h_fwd, 5);
	}
	if (k->op == VIRTIO_VSOCK_OP_CREDIT_REQUEST && k->want == O_ESTABLISHED)
		ck_assert_uint_eq(c->pending, PEND_CREDIT);
	if (k->op == VIRTIO_VSOCK_OP_RESPONSE && k->want == O_ESTABLISHED)
		ck_assert_uint_eq(ops_seen.accepted, 1);
	ck_assert_uint_eq(ctr.conns_refused, k->refused);
	ck_assert_uint_eq(ctr.conn_resets, k->resets);
	conn_put(c);
	ck_assert_uint_eq(ops_seen.close_fd, 1);
}
END_TEST

/* A packet of the other socket type resets the connection. */
START_TEST(type_mismatch_resets)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h;

	establish(c);
	h = pkt(c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, 0);
	h.type = VIRTIO_VSOCK_TYPE_SEQPACKET;
	conn_handle_tx(c, &h, NULL, 0, &batch);
	ck_assert_int_eq(c->state, CONN_CLOSED);
	ck_assert_uint_eq(c->pending, PEND_RST);
	ck_assert_uint_eq(ctr.conn_resets, 1);
	conn_put(c);
}
END_TEST

/* The pump's side: a reset connection sends its RST, then may be retired. */
START_TEST(rst_then_retire)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h;

	establish(c);
	tx(c, VIRTIO_VSOCK_OP_REQUEST, NULL, 0, 0);
	ck_assert(!conn_retirable(c));
	ck_assert_int_eq(pump(c), -EAGAIN); /* no RX buffer: nothing lost */
	ck_assert_uint_eq(c->pending, PEND_RST);
	rx_post(1);
	ck_assert_int_eq(pump(c), 1);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(h.src_port, LOCAL_PORT);
	ck_assert_uint_eq(h.dst_port, PEER_PORT);
	ck_assert_uint_eq(h.dst_cid, GUEST_CID);
	ck_assert(conn_retirable(c));
	conn_put(c);
}
END_TEST

/* ---- credit ---- */

/* Our counters across 2^32: a guest within its credit is never refused. */
START_TEST(credit_wrap_g2h)
{
	struct conn *c = make(SOCK_STREAM, true);
	char data[64], got[64];
	int i;

	establish(c);
	c->g2h_recv = c->g2h_fwd = c->g2h_fwd_told = 0xffffffe0u;
	memset(data, 'x', sizeof(data));
	for (i = 0; i < 3; i++) {
		tx(c, VIRTIO_VSOCK_OP_RW, data, sizeof(data), 0);
		ck_assert_int_eq(c->state, CONN_ESTABLISHED);
		ck_assert_int_eq(read(host, got, sizeof(got)), (int)sizeof(got));
	}
	ck_assert_uint_eq(c->g2h_fwd, 0xffffffe0u + 192u);
	ck_assert_uint_eq(c->g2h_fwd, 0xa0u);
	/* buf_alloc < 128 KiB: every delivery is told at once, carrying the wrapped fwd_cnt. */
	ck_assert_uint_eq(ops_seen.credit_now, 3);
	ck_assert_uint_eq(ops_seen.credit_hdr.op, VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	ck_assert_uint_eq(ops_seen.credit_hdr.fwd_cnt, 0xa0u);
	ck_assert_uint_eq(ops_seen.credit_hdr.buf_alloc, BUF_ALLOC);
	ck_assert_uint_eq(ctr.malformed_pkts, 0);
	conn_put(c);
}
END_TEST

/* Without an RX chain at hand the update is owed to the pump instead. */
START_TEST(credit_update_falls_back_to_pump)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h;
	char got[8];

	establish(c);
	ops_seen.credit_now_ret = -EAGAIN;
	tx(c, VIRTIO_VSOCK_OP_RW, "abc", 3, 0);
	ck_assert_int_eq(read(host, got, sizeof(got)), 3);
	ck_assert_uint_eq(c->pending, PEND_CREDIT);
	rx_post(1);
	ck_assert_int_eq(pump(c), 1);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	ck_assert_uint_eq(h.fwd_cnt, 3);
	conn_put(c);
}
END_TEST

/* A guest sending past the buf_alloc we advertised is reset, counted malformed. */
START_TEST(credit_overrun_resets)
{
	struct conn *c = make(SOCK_STREAM, true);
	static char data[BUF_ALLOC + 1];

	establish(c);
	tx(c, VIRTIO_VSOCK_OP_RW, data, BUF_ALLOC + 1, 0);
	ck_assert_int_eq(c->state, CONN_CLOSED);
	ck_assert_uint_eq(c->pending, PEND_RST);
	ck_assert_uint_eq(ctr.malformed_pkts, 1);
	conn_put(c);
}
END_TEST

/* The guest's credit across 2^32: what we may send, and what we send. */
START_TEST(credit_wrap_h2g)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h, g;
	char got[64];

	establish(c);
	c->h2g_sent = 0xfffffff8u;
	g = pkt(c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, 0);
	g.buf_alloc = 20;
	g.fwd_cnt = 0xfffffff0u; /* 8 in flight: 12 left */
	conn_handle_tx(c, &g, NULL, 0, &batch);
	ck_assert_uint_eq(conn_credit_avail(c), 12);
	ck_assert_int_eq(write(host, "0123456789abcdefghij", 20), 20);
	event(c, EPOLLIN);
	rx_post(4);
	/*
	 * One packet: the credit is used up. At buf_alloc 20 the RX packet
	 * bound is one packet, so a CREDIT_REQUEST follows it.
	 */
	ck_assert_int_eq(pump(c), 2);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_uint_eq(h.len, 12);
	ck_assert_mem_eq(got, "0123456789ab", 12);
	ck_assert_uint_eq(c->h2g_sent, 4);
	ck_assert_uint_eq(conn_credit_avail(c), 0);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_REQUEST);
	ck_assert(!rx_take(&h, NULL, 0));
	/* The guest consumed everything: the rest goes (and another CREDIT_REQUEST). */
	g.fwd_cnt = 4;
	conn_handle_tx(c, &g, NULL, 0, &batch);
	ck_assert_uint_eq(conn_credit_avail(c), 20);
	ck_assert_int_eq(pump(c), 2);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_uint_eq(h.len, 8);
	ck_assert_mem_eq(got, "cdefghij", 8);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_REQUEST);
	/* A guest claiming to have read more than we sent gives no credit. */
	g.fwd_cnt = 100;
	conn_handle_tx(c, &g, NULL, 0, &batch);
	ck_assert_uint_eq(conn_credit_avail(c), 0);
	conn_put(c);
}
END_TEST

/*
 * Without MRG_RXBUF one host read fills several RX chains, one RW packet
 * each (emit_rw_batch()): chains of 4096, 44 (room for the header only),
 * 4096 and 100 bytes take 4052, nothing (returned empty, malformed), 4052
 * and 56 bytes, in order; the rest waits in the host socket.
 */
START_TEST(rx_batch_spreads_one_read)
{
	static const uint32_t len[] = { RX_BUF, VSOCK_HDR_LEN, RX_BUF, 100 };
	static const uint32_t want[] = { RX_BUF - VSOCK_HDR_LEN, 0, RX_BUF - VSOCK_HDR_LEN, 56 };
	struct conn *c = make(SOCK_STREAM, true);
	struct vring_used *u = fake_used(&f);
	uint8_t data[10000], got[RX_BUF];
	struct virtio_vsock_hdr h;
	uint32_t off = 0, i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	establish(c);
	ck_assert_int_eq(write(host, data, sizeof(data)), (ssize_t)sizeof(data));
	event(c, EPOLLIN);
	for (i = 0; i < 4; i++) {
		uint16_t d = f.avail_idx % QNUM;

		fake_set_desc(&f, fake_desc(&f), d, BUF_GPA + d * RX_BUF, len[i],
			      VRING_DESC_F_WRITE, 0);
		fake_avail(&f, d);
	}
	ck_assert_int_eq(pump(c), -EAGAIN); /* out of chains, bytes left */
	for (i = 0; i < 4; i++) {
		if (!want[i]) {
			struct vring_used_elem e = u->ring[used_seen++ % QNUM];

			ck_assert_uint_eq(e.len, 0);
			continue;
		}
		ck_assert(rx_take(&h, got, sizeof(got)));
		ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
		ck_assert_uint_eq(h.len, want[i]);
		ck_assert_uint_eq(h.buf_alloc, c->buf_alloc);
		ck_assert_mem_eq(got, data + off, want[i]);
		off += want[i];
	}
	ck_assert(!rx_take(&h, NULL, 0));
	ck_assert_uint_eq(ctr.malformed_pkts, 1);
	ck_assert_uint_eq(ctr.rx_pkts, 1 + 3); /* the RESPONSE, then 3 RW */
	ck_assert_uint_eq(c->h2g_sent, off);
	ck_assert_uint_eq(c->pkt_n, 3);
	ck_assert_int_eq(recv(c->fd, got, sizeof(got), MSG_PEEK | MSG_DONTWAIT),
			 (ssize_t)(sizeof(data) - off)); /* the rest waits in the socket */
	conn_put(c);
}
END_TEST

/* ---- half-close ---- */

/* The guest stops writing first, then the host closes: a normal close. */
START_TEST(half_close_guest_first)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h;
	char got[8];

	establish(c);
	tx(c, VIRTIO_VSOCK_OP_SHUTDOWN, NULL, 0, VIRTIO_VSOCK_SHUTDOWN_SEND);
	ck_assert_int_eq(c->state, CONN_ESTABLISHED);
	ck_assert_int_eq(read(host, got, sizeof(got)), 0); /* shutdown(SHUT_WR) passed on */
	/* The host still writes, then closes. */
	ck_assert_int_eq(write(host, "bye", 3), 3);
	close(host);
	host = -1;
	event(c, EPOLLIN | EPOLLRDHUP | EPOLLHUP);
	rx_post(4);
	ck_assert_int_gt(pump(c), 0);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_mem_eq(got, "bye", 3);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_SHUTDOWN);
	ck_assert_uint_eq(h.flags, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	ck_assert(conn_shut_both(c->local_shut));
	/* The guest's RST completes the handshake: counted nowhere. */
	tx(c, VIRTIO_VSOCK_OP_RST, NULL, 0, 0);
	ck_assert_int_eq(c->state, CONN_CLOSED);
	ck_assert_uint_eq(c->pending, 0);
	ck_assert_uint_eq(ctr.conn_resets, 0);
	conn_put(c);
}
END_TEST

/* The host stops writing first, then the guest closes: we answer its close with an RST. */
START_TEST(half_close_host_first)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h;
	char got[8];

	establish(c);
	ck_assert_int_eq(shutdown(host, SHUT_WR), 0);
	event(c, EPOLLIN | EPOLLRDHUP);
	rx_post(2);
	ck_assert_int_eq(pump(c), 2); /* the read that saw EOF, the SHUTDOWN */
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_SHUTDOWN);
	ck_assert_uint_eq(h.flags, VIRTIO_VSOCK_SHUTDOWN_SEND);
	ck_assert(!conn_shut_both(c->local_shut));
	/* The guest can still write to the host. */
	tx(c, VIRTIO_VSOCK_OP_RW, "more", 4, 0);
	ck_assert_int_eq(read(host, got, sizeof(got)), 4);
	tx(c, VIRTIO_VSOCK_OP_SHUTDOWN, NULL, 0,
	   VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	ck_assert_int_eq(c->state, CONN_CLOSED);
	ck_assert_uint_eq(c->pending, PEND_RST);
	ck_assert_uint_eq(ctr.conn_resets, 0);
	conn_put(c);
}
END_TEST

/* Data after the guest's SHUTDOWN SEND breaks the protocol. */
START_TEST(data_after_shutdown_send)
{
	struct conn *c = make(SOCK_STREAM, true);

	establish(c);
	tx(c, VIRTIO_VSOCK_OP_SHUTDOWN, NULL, 0, VIRTIO_VSOCK_SHUTDOWN_SEND);
	tx(c, VIRTIO_VSOCK_OP_RW, "x", 1, 0);
	ck_assert_int_eq(c->state, CONN_CLOSED);
	ck_assert_uint_eq(ctr.malformed_pkts, 1);
	conn_put(c);
}
END_TEST

/* ---- SEQPACKET ---- */

/* Guest fragments up to EOM make one host message; the host's messages carry EOM. */
START_TEST(seqpacket_framing)
{
	struct conn *c = make(SOCK_SEQPACKET, true);
	struct virtio_vsock_hdr h;
	char got[32];

	establish(c);
	tx(c, VIRTIO_VSOCK_OP_RW, "abc", 3, 0);
	tx(c, VIRTIO_VSOCK_OP_RW, "de", 2, 0);
	ck_assert_int_eq(recv(host, got, sizeof(got), MSG_DONTWAIT), -1); /* not yet */
	tx(c, VIRTIO_VSOCK_OP_RW, "f", 1, VIRTIO_VSOCK_SEQ_EOM);
	ck_assert_int_eq(recv(host, got, sizeof(got), MSG_DONTWAIT), 6);
	ck_assert_mem_eq(got, "abcdef", 6);
	tx(c, VIRTIO_VSOCK_OP_RW, "gh", 2, VIRTIO_VSOCK_SEQ_EOM);
	ck_assert_int_eq(recv(host, got, sizeof(got), MSG_DONTWAIT), 2);
	ck_assert_uint_eq(c->g2h_fwd, 8);

	ck_assert_int_eq(send(host, "one", 3, 0), 3);
	ck_assert_int_eq(send(host, "second", 6, 0), 6);
	event(c, EPOLLIN);
	rx_post(4);
	pump(c);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.len, 3);
	ck_assert_uint_eq(h.flags & VIRTIO_VSOCK_SEQ_EOM, VIRTIO_VSOCK_SEQ_EOM);
	ck_assert_mem_eq(got, "one", 3);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.len, 6);
	ck_assert_uint_eq(h.flags & VIRTIO_VSOCK_SEQ_EOM, VIRTIO_VSOCK_SEQ_EOM);
	ck_assert_mem_eq(got, "second", 6);
	conn_put(c);
}
END_TEST

/* The guest tells @c its buf_alloc (a CREDIT_UPDATE, fwd_cnt 0); returns that header to reuse. */
static struct virtio_vsock_hdr guest_buf(struct conn *c, uint32_t buf_alloc)
{
	struct virtio_vsock_hdr g = pkt(c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, 0);

	g.buf_alloc = buf_alloc;
	conn_handle_tx(c, &g, NULL, 0, &batch);
	return g;
}

/* A host message larger than the guest's credit goes in fragments, EOM on the last. */
START_TEST(seqpacket_fragments)
{
	struct conn *c = make(SOCK_SEQPACKET, true);
	struct virtio_vsock_hdr h, g;
	char got[32];

	establish(c);
	g = guest_buf(c, 4);
	ck_assert_int_eq(send(host, "abcdefghij", 10, 0), 10);
	event(c, EPOLLIN);
	rx_post(4);
	pump(c);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.len, 4);
	ck_assert_uint_eq(h.flags & VIRTIO_VSOCK_SEQ_EOM, 0);
	/* buf_alloc 4: a bound of one RX packet, so a CREDIT_REQUEST follows */
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_REQUEST);
	ck_assert(!rx_take(&h, NULL, 0));
	g.fwd_cnt = 4;
	g.buf_alloc = 64;
	conn_handle_tx(c, &g, NULL, 0, &batch);
	pump(c);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.len, 6);
	ck_assert_uint_eq(h.flags & VIRTIO_VSOCK_SEQ_EOM, VIRTIO_VSOCK_SEQ_EOM);
	ck_assert_mem_eq(got, "efghij", 6);
	conn_put(c);
}
END_TEST

/* ---- the TX batch ---- */

START_TEST(tx_batch_gathers)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h;
	struct iovec v;
	char got[16];

	establish(c);
	h = pkt(c, VIRTIO_VSOCK_OP_RW, 3, 0);
	v = (struct iovec){ (void *)(uintptr_t) "abc", 3 };
	conn_handle_tx(c, &h, &v, 1, &batch);
	v = (struct iovec){ (void *)(uintptr_t) "def", 3 };
	conn_handle_tx(c, &h, &v, 1, &batch);
	ck_assert_ptr_eq(batch.c, c);
	ck_assert_int_eq(recv(host, got, sizeof(got), MSG_DONTWAIT), -1); /* held */
	conn_tx_flush(&batch);
	ck_assert_ptr_null(batch.c);
	ck_assert_int_eq(recv(host, got, sizeof(got), MSG_DONTWAIT), 6);
	ck_assert_mem_eq(got, "abcdef", 6);
	ck_assert_uint_eq(c->g2h_fwd, 6);
	conn_put(c);
}
END_TEST

/* ---- deadlines (fake clock) ---- */

static struct conn *due[4];
static unsigned int n_due;

static void collect(struct killq_entry *e, void *arg)
{
	(void)arg;
	due[n_due++] = conn_of_kq(e);
}

/* What the control thread does when the timer fires at fake_now. */
static unsigned int tick(void)
{
	unsigned int i, n;

	n_due = 0;
	killq_fired(&kq, fake_now, collect, NULL);
	n = n_due;
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&due[i]->lock);
		conn_expire(due[i], fake_now);
		pthread_mutex_unlock(&due[i]->lock);
	}
	return n;
}

/*
 * The RX packet bound (conn.h, CONN_PKT_CHARGE): at buf_alloc 4096 the guest may
 * hold two unconsumed RW packets. The second makes the device ask for fwd_cnt
 * and holds the data; while held a timer asks again (1, 2, 4 ms ...);
 * the guest's fwd_cnt passing the first packet's end releases the rest in one
 * packet.
 */
START_TEST(rx_pkt_bound_holds_and_polls)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h, g;
	char got[64];

	establish(c);
	g = guest_buf(c, 4096);
	ck_assert_uint_eq(conn_rx_pkt_limit(c), 2);
	rx_post(8);
	ck_assert_int_eq(write(host, "a", 1), 1);
	event(c, EPOLLIN);
	ck_assert_int_eq(pump(c), 1);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_int_eq(write(host, "b", 1), 1);
	event(c, EPOLLIN);
	ck_assert_int_eq(pump(c), 2);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.len, 1);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_REQUEST);
	ck_assert_uint_eq(ctr.rx_pkt_limit_stalls, 1);
	ck_assert(c->kq.queued);
	/* Held: host bytes wait in the socket, nothing goes. */
	ck_assert_int_eq(write(host, "cd", 2), 2);
	event(c, EPOLLIN);
	ck_assert(!conn_rx_wanted(c));
	ck_assert_int_eq(pump(c), 0);
	ck_assert(!rx_take(&h, NULL, 0));
	/* The poll: a CREDIT_REQUEST after 1 ms, the next 2 ms later. */
	fake_now += 1;
	ck_assert_uint_eq(tick(), 1);
	ck_assert_int_eq(pump(c), 1);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_REQUEST);
	fake_now += 1;
	ck_assert_uint_eq(tick(), 0);
	fake_now += 1;
	ck_assert_uint_eq(tick(), 1);
	ck_assert_int_eq(pump(c), 1);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_REQUEST);
	/* The guest answers with no progress: still held, still polled. */
	conn_handle_tx(c, &g, NULL, 0, &batch);
	ck_assert(!conn_rx_wanted(c));
	ck_assert(c->kq.queued);
	/* It consumed the first byte: one packet left, the rest goes in one packet. */
	ops_seen.schedule = 0;
	g.fwd_cnt = 1;
	conn_handle_tx(c, &g, NULL, 0, &batch);
	ck_assert_uint_eq(ops_seen.schedule, 1);
	ck_assert(!c->kq.queued);
	ck_assert_int_eq(pump(c), 2);
	ck_assert(rx_take(&h, got, sizeof(got)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_uint_eq(h.len, 2);
	ck_assert_mem_eq(got, "cd", 2);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_REQUEST);
	ck_assert_uint_eq(ctr.rx_pkt_limit_stalls, 2);
	/* It consumed everything: no packet left unconsumed. */
	g.fwd_cnt = 4;
	conn_handle_tx(c, &g, NULL, 0, &batch);
	ck_assert_uint_eq(c->pkt_n, 0);
	conn_put(c);
}
END_TEST

/* The bound follows the guest's buf_alloc: at least 1, at most CONN_PKT_RING. */
START_TEST(rx_pkt_limit_range)
{
	struct conn *c = make(SOCK_STREAM, true);
	static const uint32_t in[] = { 0, 2047, 2048, 4096, 262144, 0xffffffffu };
	static const uint32_t want[] = { 1, 1, 1, 2, 128, CONN_PKT_RING };
	unsigned int i;

	establish(c);
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		guest_buf(c, in[i]);
		ck_assert_uint_eq(conn_rx_pkt_limit(c), want[i]);
	}
	conn_put(c);
}
END_TEST

/* A host-initiated REQUEST the guest never answers: RST after 2 s, refused. */
START_TEST(connect_timeout)
{
	struct conn *c = make(SOCK_STREAM, false);

	pthread_mutex_lock(&c->lock);
	conn_watch_deadline(c, DEV_CONNECT_TIMEOUT_MS);
	pthread_mutex_unlock(&c->lock);
	fake_now += DEV_CONNECT_TIMEOUT_MS - 1;
	ck_assert_uint_eq(tick(), 0);
	fake_now += 1;
	ck_assert_uint_eq(tick(), 1);
	ck_assert_int_eq(c->state, CONN_CLOSED);
	ck_assert_uint_eq(c->pending, PEND_RST);
	ck_assert_uint_eq(ctr.conns_refused, 1);
	ck_assert(!c->kq.queued);
	conn_put(c);
}
END_TEST

/* Answered in time: off the kill queue, nothing expires. */
START_TEST(connect_answered)
{
	struct conn *c = make(SOCK_STREAM, false);

	pthread_mutex_lock(&c->lock);
	conn_watch_deadline(c, DEV_CONNECT_TIMEOUT_MS);
	pthread_mutex_unlock(&c->lock);
	establish(c);
	ck_assert(!c->kq.queued);
	fake_now += DEV_CONNECT_TIMEOUT_MS;
	ck_assert_uint_eq(tick(), 0);
	ck_assert_int_eq(c->state, CONN_ESTABLISHED);
	conn_put(c);
}
END_TEST

/*
 * After our SHUTDOWN RCV|SEND with data unread: 10 s, restarted while the
 * guest's fwd_cnt moves (2 s once it read everything), then an RST.
 */
START_TEST(close_timeout_follows_fwd_cnt)
{
	struct conn *c = make(SOCK_STREAM, true);
	struct virtio_vsock_hdr h, g;

	establish(c);
	ck_assert_int_eq(write(host, "0123456789", 10), 10);
	close(host);
	host = -1;
	event(c, EPOLLIN | EPOLLRDHUP | EPOLLHUP);
	rx_post(4);
	pump(c);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert(rx_take(&h, NULL, 0));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_SHUTDOWN);
	ck_assert(c->kq.queued);
	/* Unread data: not the 2 s close timeout but the 10 s stall one. */
	fake_now += DEV_CLOSE_TIMEOUT_MS;
	ck_assert_uint_eq(tick(), 0);
	/* The guest reads 4 bytes at 9 s: the clock restarts (10 s again). */
	fake_now += DEV_STALL_TIMEOUT_MS - DEV_CLOSE_TIMEOUT_MS - 1000;
	g = pkt(c, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, 0);
	g.fwd_cnt = 4;
	conn_handle_tx(c, &g, NULL, 0, &batch);
	fake_now += 1000;
	ck_assert_uint_eq(tick(), 1);
	ck_assert_int_eq(c->state, CONN_ESTABLISHED);
	/* It reads the rest: 2 s from the next expiry. */
	g.fwd_cnt = 10;
	conn_handle_tx(c, &g, NULL, 0, &batch);
	fake_now += DEV_STALL_TIMEOUT_MS;
	ck_assert_uint_eq(tick(), 1);
	ck_assert_int_eq(c->state, CONN_ESTABLISHED);
	fake_now += DEV_CLOSE_TIMEOUT_MS - 1;
	ck_assert_uint_eq(tick(), 0);
	fake_now += 1;
	ck_assert_uint_eq(tick(), 1);
	ck_assert_int_eq(c->state, CONN_CLOSED);
	ck_assert_uint_eq(c->pending, PEND_RST);
	ck_assert_uint_eq(ctr.conn_resets, 1);
	conn_put(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("conn");
	TCase *t = tcase_create("state machine");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_loop_test(t, op_in_state, 0, (int)(sizeof(op_cases) / sizeof(op_cases[0])));
	tcase_add_test(t, type_mismatch_resets);
	tcase_add_test(t, rst_then_retire);
	tcase_add_test(t, credit_wrap_g2h);
	tcase_add_test(t, rx_batch_spreads_one_read);
	tcase_add_test(t, credit_update_falls_back_to_pump);
	tcase_add_test(t, credit_overrun_resets);
	tcase_add_test(t, credit_wrap_h2g);
	tcase_add_test(t, half_close_guest_first);
	tcase_add_test(t, half_close_host_first);
	tcase_add_test(t, data_after_shutdown_send);
	tcase_add_test(t, seqpacket_framing);
	tcase_add_test(t, seqpacket_fragments);
	tcase_add_test(t, tx_batch_gathers);
	tcase_add_test(t, connect_timeout);
	tcase_add_test(t, connect_answered);
	tcase_add_test(t, close_timeout_follows_fwd_cnt);
	tcase_add_test(t, rx_pkt_bound_holds_and_polls);
	tcase_add_test(t, rx_pkt_limit_range);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
