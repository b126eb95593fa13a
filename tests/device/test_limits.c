// SPDX-License-Identifier: MIT
/*
 * Device tests, bounded resources (issue 10): each test pushes past one cap
 * of the "Limits and defaults" table in devices/virtio_vsock/README.md and
 * then checks that the device is still up and that another connection
 * still moves pattern data with the right hash.
 *
 *   connections          max_conns; beyond: RST / host socket closed
 *   buffered bytes       a guest that ignores our buf_alloc is reset; host
 *                        to guest never goes beyond the guest's credit
 *   queued replies       RSTs owed for stray packets (256), one CREDIT_UPDATE
 *                        owed per connection however many CREDIT_REQUESTs
 *   half-open            a REQUEST never answered, our SHUTDOWN never
 *                        answered by a guest that stopped reading, a host
 *                        client that never writes its CONNECT line
 *   before start         host clients wait at most host_wait_ms
 *   file descriptors     EMFILE on accept() and on connect(): refusal, no spin
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 6000
/* Device constants the tests push past (dev.h; the README table). */
#define RAW_MAX 256u
#define CONNECT_TIMEOUT_MS 2000
#define STALL_TIMEOUT_MS 10000
#define PENDING_MAX 64

/* Another connection still moves checked data both ways. */
static void still_moving(int fd, struct sim_conn *c, uint64_t seed)
{
	fx_xfer_g2h(fd, c, 100000, seed);
	fx_xfer_h2g(fd, c, 100000, seed + 1);
}

static void send_ctl(struct fx *fx, uint32_t src, uint32_t dst, uint16_t op)
{
	struct virtio_vsock_hdr h;

	sim_hdr_init(fx->drv, &h, src, dst, VIRTIO_VSOCK_TYPE_STREAM, op);
	h.buf_alloc = 65536;
	ck_assert_int_ge(sim_send_pkt(fx->drv, &h, NULL, 0, SIM_SHAPE_LINEAR, FX_T), 0);
}

/*
 * Connections: at max_conns, a burst of guest REQUESTs each gets an RST
 * and no host connect; host CONNECTs are closed without OK; the open
 * connections keep working.
 */
START_TEST(t_conn_cap_flood)
{
	struct fx_opts o = { .max_conns = 8, .drv.no_auto_rst = true };
	struct vsock_dev_counters k0, k1;
	struct sim_listener *l;
	struct sim_conn *c[8];
	struct sim_pkt p;
	int lfd, fds[8], i;
	bool seen[200] = { false };
	struct fx fx;

	fx_setup(&fx, &o);
	lfd = hp_listen_port(fx.uds, PORT, 64, 0);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(sim_connect(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c[i]),
				 0);
		fds[i] = hp_accept(lfd, FX_T);
		ck_assert_int_ge(fds[i], 0);
	}
	fx_counters(&fx, &k0);
	for (i = 0; i < 200; i++)
		send_ctl(&fx, 20000 + i, PORT, VIRTIO_VSOCK_OP_REQUEST);
	ck_assert_int_eq(sim_wait_tx_idle(fx.drv, FX_T), 0);
	for (i = 0; i < 200; i++) {
		ck_assert_int_eq(sim_pkt_recv(fx.drv, &p, FX_T), 0);
		ck_assert_uint_eq(p.hdr.op, VIRTIO_VSOCK_OP_RST);
		ck_assert_uint_eq(p.hdr.src_port, PORT);
		ck_assert_uint_ge(p.hdr.dst_port, 20000);
		ck_assert_uint_lt(p.hdr.dst_port, 20200);
		ck_assert(!seen[p.hdr.dst_port - 20000]);
		seen[p.hdr.dst_port - 20000] = true;
		sim_pkt_free(&p);
	}
	ck_assert_int_eq(hp_accept(lfd, 200), -ETIMEDOUT); /* no host connect for them */
	ck_assert_int_eq(sim_listen(fx.drv, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(hp_connect(fx.uds, PORT + 1, NULL, FX_T), -ECONNREFUSED);
	fx_counters(&fx, &k1);
	ck_assert_uint_eq(k1.conns_opened, k0.conns_opened);
	ck_assert_uint_eq(k1.conns_closed, k0.conns_closed);
	for (i = 0; i < 8; i++)
		still_moving(fds[i], c[i], 10 + 2 * i);
	for (i = 0; i < 8; i++) {
		close(fds[i]);
		sim_close(c[i], FX_T);
	}
	sim_unlisten(l);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/*
 * Buffered bytes, guest to host: a guest that sends past the buf_alloc we
 * advertised to a host peer that reads nothing is reset; the device never
 * held more than buf_alloc of it (what the host gets is an exact prefix of
 * what was sent, short by at most buf_alloc plus the offending packet).
 */
START_TEST(t_credit_overrun)
{
	const uint32_t buf = 16384, pkt = 16384;
	struct fx_opts o = { .conn_buf_size = buf };
	struct vsock_dev_counters k0, k1;
	struct sim_conn_info ci;
	struct sim_conn *c, *d;
	uint8_t *b = malloc(8u << 20);
	uint64_t st = 77, sent = 0;
	int lfd, lfd2, fd, fd2, sz = 4096, i;
	ssize_t got;
	struct fx fx;

	ck_assert_ptr_nonnull(b);
	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	fd2 = fx_guest_connect(&fx, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, &d, &lfd2);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
	sim_conn_info(c, &ci);
	ck_assert_uint_eq(ci.peer_buf_alloc, buf);
	fx_counters(&fx, &k0);
	for (i = 0; i < 512; i++) {
		struct virtio_vsock_hdr h;

		sim_hdr_init(fx.drv, &h, ci.local_port, ci.peer_port, VIRTIO_VSOCK_TYPE_STREAM,
			     VIRTIO_VSOCK_OP_RW);
		h.len = pkt;
		h.buf_alloc = 256 * 1024;
		hp_fill(&st, b, pkt);
		ck_assert_int_ge(sim_send_pkt(fx.drv, &h, b, pkt, SIM_SHAPE_HDR_SEP, FX_T), 0);
		ck_assert_int_eq(sim_wait_tx_idle(fx.drv, FX_T), 0);
		fx_counters(&fx, &k1);
		if (k1.malformed_pkts != k0.malformed_pkts)
			break;
		sent += pkt;
	}
	ck_assert_msg(k1.malformed_pkts == k0.malformed_pkts + 1,
		      "no reset after %llu bytes past a %u byte credit", (unsigned long long)sent,
		      buf);
	ck_assert_int_eq(sim_wait_reset(c, FX_T), 0);
	/* The host peer gets an exact prefix, then EOF. */
	got = hp_read_full(fd, b, 8u << 20, FX_T);
	fprintf(stderr, "t_credit_overrun: reset after %llu bytes, host got %zd\n",
		(unsigned long long)sent, got);
	ck_assert_int_ge(got, 0);
	ck_assert_uint_le((uint64_t)got, sent);
	ck_assert_msg((uint64_t)got + buf >= sent, "lost %llu bytes, more than buf_alloc",
		      (unsigned long long)(sent - (uint64_t)got));
	{
		uint8_t *ref = malloc((size_t)got + 8);

		st = 77;
		hp_fill(&st, ref, (size_t)got);
		ck_assert_int_eq(memcmp(ref, b, (size_t)got), 0);
		free(ref);
	}
	still_moving(fd2, d, 5);
	free(b);
	close(fd);
	close(fd2);
	sim_abort(c);
	sim_close(d, FX_T);
	close(lfd);
	close(lfd2);
	fx_teardown(&fx);
}
END_TEST

/* One host SEQPACKET message (0 for an empty one, or EOF), waiting up to @timeout_ms. */
static ssize_t host_recv_msg(int fd, void *buf, size_t cap, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t r;

	if (poll(&p, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	r = recv(fd, buf, cap, MSG_DONTWAIT);
	return r < 0 ? -errno : r;
}

/*
 * Length of message @i of t_seqpacket_small_msgs: 2000 empty ones (a
 * backlog of no bytes at all), then a third empty, the rest of 1 or 2 bytes,
 * some of 100 (in 3 packets).
 */
static uint32_t small_msg_len(unsigned int i, unsigned int n)
{
	if (i == n - 1)
		return 5; /* ends with data: an early EOF cannot pass for an empty message */
	if (i < 2000 || i % 3 == 0)
		return 0;
	if (i % 500 == 499)
		return 100;
	return 1 + (i % 7 == 1);
}

/* A zero-length RW packet of @c (costs no credit, so the driver's count stays right). */
static void send_empty_rw(struct fx *fx, struct sim_conn *c, uint32_t flags)
{
	struct sim_conn_info ci;
	struct virtio_vsock_hdr h;

	sim_conn_info(c, &ci);
	sim_hdr_init(fx->drv, &h, ci.local_port, ci.peer_port, VIRTIO_VSOCK_TYPE_SEQPACKET,
		     VIRTIO_VSOCK_OP_RW);
	h.flags = flags;
	h.buf_alloc = 256 * 1024; /* the driver's default */
	h.fwd_cnt = ci.fwd_cnt;
	ck_assert_int_ge(sim_send_pkt(fx->drv, &h, NULL, 0, SIM_SHAPE_LINEAR, FX_T), 0);
}

static void small_msg_fill(uint8_t *b, unsigned int i, uint32_t len)
{
	uint32_t j;

	for (j = 0; j < len; j++)
		b[j] = (uint8_t)(i * 31u + j);
}

/*
 * SEQPACKET guest to host, many small and zero-length messages within the
 * credit we advertised, to a host peer that reads nothing until the guest
 * has sent them all (issue 22, finding 5): every message arrives with its
 * boundaries and contents, in order, and the connection is not reset. The
 * backlog used to keep a 4-byte length per message in its byte ring, which
 * credit does not count (a zero-length message costs no credit at all), so
 * a slow reader's connection was reset with ENOBUFS. Before the last
 * message, two assembled from fragments: an empty one (RW 0, then RW 0 with
 * EOM) and "abc" (RW 0, then RW "abc" with EOM).
 */
START_TEST(t_seqpacket_small_msgs)
{
	enum { N = 8000, BUF = 8192 };
	struct fx_opts o = { .conn_buf_size = BUF, .drv.tx_pkt_max = 40 };
	struct vsock_dev_counters k0, k1;
	struct sim_conn_info ci;
	struct sim_conn *c;
	uint8_t b[128], want[128];
	uint64_t total = 0;
	struct fx fx;
	unsigned int i, empties = 0;
	int lfd, fd;

	for (i = 0; i < N; i++)
		total += small_msg_len(i, N);
	ck_assert_uint_le(total, BUF); /* all of it within the credit: no waiting */
	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_SEQPACKET, &c, &lfd);
	sim_conn_info(c, &ci);
	ck_assert_uint_eq(ci.peer_buf_alloc, BUF);
	fx_counters(&fx, &k0);
	for (i = 0; i < N; i++) {
		uint32_t len = small_msg_len(i, N);

		if (i == N - 1) {
			send_empty_rw(&fx, c, 0);
			send_empty_rw(&fx, c, VIRTIO_VSOCK_SEQ_EOM);
			send_empty_rw(&fx, c, 0);
			ck_assert_int_eq(sim_send_msg(c, "abc", 3, false, FX_T), 3);
		}
		small_msg_fill(b, i, len);
		ck_assert_int_eq(sim_send_msg(c, b, len, false, FX_T), (ssize_t)len);
		empties += !len;
	}
	/* Every packet taken by the device before the host reads anything. */
	ck_assert_int_eq(sim_wait_tx_idle(fx.drv, FX_T), 0);
	for (i = 0; i < N; i++) {
		uint32_t len = small_msg_len(i, N);
		ssize_t r;

		if (i == N - 1) {
			ck_assert_int_eq(host_recv_msg(fd, b, sizeof(b), FX_T), 0);
			ck_assert_int_eq(host_recv_msg(fd, b, sizeof(b), FX_T), 3);
			ck_assert_int_eq(memcmp(b, "abc", 3), 0);
		}
		r = host_recv_msg(fd, b, sizeof(b), FX_T);
		ck_assert_msg(r == (ssize_t)len, "message %u of %u: %zd bytes, not %u", i, N, r,
			      len);
		small_msg_fill(want, i, len);
		ck_assert_int_eq(memcmp(b, want, len), 0);
	}
	fx_counters(&fx, &k1);
	sim_conn_info(c, &ci);
	fprintf(stderr, "t_seqpacket_small_msgs: %u messages (%u empty), %llu bytes\n", N, empties,
		(unsigned long long)total);
	ck_assert(!ci.reset);
	ck_assert_uint_eq(k1.conn_resets, k0.conn_resets);
	ck_assert_uint_eq(k1.malformed_pkts, k0.malformed_pkts);
	/* still open both ways */
	ck_assert_int_eq(sim_send_msg(c, "end", 3, false, FX_T), 3);
	ck_assert_int_eq(host_recv_msg(fd, b, sizeof(b), FX_T), 3);
	ck_assert_int_eq(send(fd, "ok", 2, MSG_EOR), 2);
	ck_assert_int_eq(sim_recv_msg(c, b, sizeof(b), NULL, FX_T), 2);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

struct hwriter {
	int fd;
	size_t len;
	uint64_t seed;
	ssize_t rc;
};

static void *host_write(void *arg)
{
	struct hwriter *w = arg;
	uint8_t *b = malloc(w->len);
	uint64_t st = w->seed;

	hp_fill(&st, b, w->len);
	w->rc = hp_write_all(w->fd, b, w->len, 3 * FX_T);
	free(b);
	return NULL;
}

/*
 * Buffered bytes, host to guest: the device reads the host socket only as
 * far as the guest's credit; the rest stays in the host socket (the host
 * writer blocks), and comes once the guest reads.
 */
START_TEST(t_h2g_credit_bound)
{
	const uint32_t credit = 65536;
	const size_t len = 1u << 20;
	struct fx_opts o = { .drv.buf_alloc = credit };
	struct hwriter w = { .len = len, .seed = 31 };
	struct sim_conn_info ci;
	struct sim_conn *c;
	uint8_t *b = malloc(65536);
	uint64_t h = HP_HASH_INIT;
	int64_t end;
	size_t got = 0;
	pthread_t t;
	struct fx fx;
	int lfd;

	fx_setup(&fx, &o);
	w.fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	ck_assert_int_eq(pthread_create(&t, NULL, host_write, &w), 0);
	end = hp_now_ms() + FX_T;
	do {
		sim_conn_info(c, &ci);
		if (ci.rx_cnt >= credit)
			break;
		usleep(2000);
	} while (hp_now_ms() < end);
	ck_assert_uint_eq(ci.rx_cnt, credit);
	usleep(300 * 1000); /* nothing more may come while the guest does not read */
	sim_conn_info(c, &ci);
	ck_assert_uint_eq(ci.rx_cnt, credit);
	ck_assert_uint_eq(ci.rx_queued, credit);
	while (got < len) {
		ssize_t r = sim_recv(c, b, 65536, FX_T);

		ck_assert_int_gt(r, 0);
		h = hp_hash(h, b, (size_t)r);
		got += (size_t)r;
	}
	pthread_join(t, NULL);
	ck_assert_int_eq(w.rc, (ssize_t)len);
	ck_assert_uint_eq(got, len);
	ck_assert(h == fx_pattern_hash(len, 31));
	free(b);
	close(w.fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/*
 * Queued control replies: with no RX buffers, 2000 packets that each want
 * an RST (strays, REQUESTs to a port nobody listens on), 500 stray RSTs
 * and 500 CREDIT_REQUESTs on a live connection. At most RAW_MAX RSTs are
 * kept (the rest dropped and counted), at most one CREDIT_UPDATE per
 * connection; once the guest gives buffers, that is what comes, and the
 * connection still works.
 */
START_TEST(t_reply_flood)
{
	struct fx_opts o = {
		.drv = { .no_rx_refill = true, .rx_start_empty = true, .no_auto_rst = true }
	};
	static const uint16_t ops[] = { VIRTIO_VSOCK_OP_CREDIT_UPDATE, VIRTIO_VSOCK_OP_REQUEST,
					VIRTIO_VSOCK_OP_CREDIT_REQUEST, VIRTIO_VSOCK_OP_SHUTDOWN };
	struct vsock_dev_counters k0, k1;
	struct sim_conn_info c0, c1;
	struct sim_conn *c;
	struct sim_pkt p;
	unsigned int n = 0, i;
	struct fx fx;
	int lfd, fd, rc;

	fx_setup(&fx, &o);
	ck_assert_int_eq(sim_rx_refill(fx.drv, 8), 8);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	sim_conn_info(c, &c0);
	fx_counters(&fx, &k0);
	for (i = 0; i < 2000; i++) {
		send_ctl(&fx, 30000 + i, PORT + 7, ops[i % 4]);
		if (i < 500) {
			send_ctl(&fx, 40000 + i, PORT + 7, VIRTIO_VSOCK_OP_RST);
			ck_assert_int_eq(sim_credit_request(c), 0);
		}
	}
	ck_assert_int_eq(sim_wait_tx_idle(fx.drv, FX_T), 0);
	fx_counters(&fx, &k1);
	/*
	 * 2000 strays or refused REQUESTs wanting an RST and 500 stray RSTs
	 * wanting none; dropped: the RSTs that found no room in the queue
	 */
	ck_assert_uint_eq((k1.stray_pkts - k0.stray_pkts) + (k1.conns_refused - k0.conns_refused),
			  2500);
	ck_assert_uint_ge(k1.dropped_pkts - k0.dropped_pkts, 2000 - RAW_MAX - 8);
	ck_assert_uint_le(k1.dropped_pkts - k0.dropped_pkts, 2000 - RAW_MAX);
	ck_assert_uint_le(sim_rx_posted(fx.drv), 8);
	sim_rx_set_refill(fx.drv, true);
	rc = sim_rx_refill(fx.drv, 256); /* -ENOSPC: refill on posted them all already */
	ck_assert_msg(rc > 0 || rc == -ENOSPC, "sim_rx_refill: %d", rc);
	while (sim_pkt_recv(fx.drv, &p, 1000) == 0) {
		ck_assert_uint_eq(p.hdr.op, VIRTIO_VSOCK_OP_RST);
		ck_assert_uint_ge(p.hdr.dst_port, 30000);
		ck_assert_uint_lt(p.hdr.dst_port, 32000);
		sim_pkt_free(&p);
		n++;
	}
	fprintf(stderr, "t_reply_flood: %u RSTs delivered, %llu packets dropped\n", n,
		(unsigned long long)(k1.dropped_pkts - k0.dropped_pkts));
	ck_assert_uint_ge(n, RAW_MAX); /* the queue was full: pushed past */
	ck_assert_uint_le(n, RAW_MAX + 8);
	sim_conn_info(c, &c1);
	ck_assert_uint_le(c1.credit_updates_rx - c0.credit_updates_rx, 9);
	ck_assert_uint_ge(c1.credit_updates_rx - c0.credit_updates_rx, 1);
	still_moving(fd, c, 3);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* Half-open: a host-initiated REQUEST the guest never answers is reset after 2 s. */
START_TEST(t_request_unanswered)
{
	struct fx_opts o = { .drv.no_auto_rst = true };
	struct sim_conn *c;
	struct sim_pkt p, q;
	int64_t t0, dt;
	struct fx fx;
	int lfd, fd;

	fx_setup(&fx, &o);
	t0 = hp_now_ms();
	ck_assert_int_eq(hp_connect(fx.uds, PORT, NULL, FX_T), -ECONNREFUSED);
	dt = hp_now_ms() - t0;
	ck_assert_msg(dt >= CONNECT_TIMEOUT_MS - 100, "closed after %lld ms", (long long)dt);
	ck_assert_int_eq(sim_pkt_recv(fx.drv, &p, FX_T), 0);
	ck_assert_uint_eq(p.hdr.op, VIRTIO_VSOCK_OP_REQUEST);
	ck_assert_uint_eq(p.hdr.dst_port, PORT);
	ck_assert_int_eq(sim_pkt_recv(fx.drv, &q, FX_T), 0);
	ck_assert_uint_eq(q.hdr.op, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(q.hdr.src_port, p.hdr.src_port);
	ck_assert_uint_eq(q.hdr.dst_port, PORT);
	sim_pkt_free(&p);
	sim_pkt_free(&q);
	fd = fx_guest_connect(&fx, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	still_moving(fd, c, 9);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/*
 * Half-open: the host peer closed, we sent SHUTDOWN RCV|SEND, and the guest
 * neither reads what we sent nor answers with RST: reset after the stall
 * timeout (10 s without the guest consuming anything).
 */
START_TEST(t_shutdown_unanswered)
{
	static uint8_t b[10000];
	struct sim_conn_info ci;
	struct sim_conn *c, *d;
	int lfd, lfd2, fd, fd2;
	int64_t t0, dt;
	struct fx fx;

	fx_setup(&fx, NULL);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	fd2 = fx_guest_connect(&fx, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, &d, &lfd2);
	ck_assert_int_eq(hp_write_all(fd, b, sizeof(b), FX_T), (ssize_t)sizeof(b));
	close(fd);
	ck_assert_int_eq(sim_wait_peer_shutdown(c, 3, FX_T), 0);
	t0 = hp_now_ms();
	ck_assert_int_eq(sim_wait_reset(c, STALL_TIMEOUT_MS + FX_T), 0);
	dt = hp_now_ms() - t0;
	ck_assert_msg(dt >= STALL_TIMEOUT_MS - 1000, "reset after %lld ms", (long long)dt);
	sim_conn_info(c, &ci);
	ck_assert_uint_eq(ci.rx_queued, sizeof(b)); /* it never read */
	still_moving(fd2, d, 11);
	sim_abort(c);
	close(fd2);
	sim_close(d, FX_T);
	close(lfd);
	close(lfd2);
	fx_teardown(&fx);
}
END_TEST

/*
 * Half-open, host side: clients that never write their CONNECT line hold
 * one of the 64 pending slots for 2 s at most; a 65th is closed at once.
 */
START_TEST(t_connect_line_timeout)
{
	struct sim_listener *l;
	int idle[PENDING_MAX], x, i, fd;
	struct sim_conn *c;
	int64_t t0, dt;
	struct fx fx;

	fx_setup(&fx, NULL);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	t0 = hp_now_ms();
	for (i = 0; i < PENDING_MAX; i++) {
		idle[i] = hp_connect_raw(fx.uds);
		ck_assert_int_ge(idle[i], 0);
	}
	x = hp_connect_raw(fx.uds);
	ck_assert_int_ge(x, 0);
	ck_assert_int_eq(hp_wait_eof(x, FX_T), 0);
	ck_assert(hp_quiet(idle[0], 0)); /* the first ones are still waiting */
	for (i = 0; i < PENDING_MAX; i++)
		ck_assert_int_eq(hp_wait_eof(idle[i], FX_T), 0);
	dt = hp_now_ms() - t0;
	ck_assert_msg(dt >= CONNECT_TIMEOUT_MS - 100, "idle clients closed after %lld ms",
		      (long long)dt);
	for (i = 0; i < PENDING_MAX; i++)
		close(idle[i]);
	close(x);
	fd = fx_host_connect(&fx, l, PORT, &c, NULL);
	still_moving(fd, c, 13);
	close(fd);
	sim_close(c, FX_T);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/*
 * The device closed @fd without a byte: EOF, or ECONNRESET when it closed
 * with our CONNECT line still unread (AF_UNIX reports that as a reset).
 */
static bool closed_without_ok(int fd)
{
	int rc = hp_wait_eof(fd, FX_T);

	ck_assert_msg(rc == 0 || rc == -ECONNRESET, "not closed: %d", rc);
	return true;
}

/*
 * Before the device starts (no DRIVER_OK), and again after a reset, a host
 * client waits host_wait_ms at most, then is closed without OK; one that
 * connects within the wait is served once the driver starts the device.
 */
START_TEST(t_wait_before_start)
{
	struct fx_opts o = { .no_attach = true, .host_wait_ms = 600 };
	struct sim_listener *l;
	struct sim_conn *c;
	char line[64];
	int64_t t0, dt;
	struct fx fx;
	int a, b;

	fx_setup(&fx, &o);
	a = hp_connect_raw(fx.uds);
	ck_assert_int_ge(a, 0);
	t0 = hp_now_ms();
	ck_assert_int_eq(hp_write_all(a, "CONNECT 6000\n", 13, FX_T), 13);
	ck_assert(closed_without_ok(a));
	dt = hp_now_ms() - t0;
	ck_assert_msg(dt >= 500, "closed after %lld ms", (long long)dt);
	close(a);

	b = hp_connect_raw(fx.uds);
	ck_assert_int_ge(b, 0);
	ck_assert_int_eq(hp_write_all(b, "CONNECT 6000\n", 13, FX_T), 13);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	ck_assert_int_eq(sim_drv_attach(fx.drv, fx.dev), 0);
	ck_assert_int_eq(sim_accept(l, FX_T, &c), 0);
	ck_assert_int_gt(hp_read_line(b, line, sizeof(line), FX_T), 3);
	ck_assert_int_eq(strncmp(line, "OK ", 3), 0);
	still_moving(b, c, 17);
	close(b);
	sim_close(c, FX_T);
	sim_unlisten(l);

	/* driver reset: the device is stopped again */
	ck_assert_int_eq(sim_drv_reset(fx.drv), 0);
	a = hp_connect_raw(fx.uds);
	ck_assert_int_ge(a, 0);
	t0 = hp_now_ms();
	ck_assert_int_eq(hp_write_all(a, "CONNECT 6000\n", 13, FX_T), 13);
	ck_assert(closed_without_ok(a));
	dt = hp_now_ms() - t0;
	ck_assert_msg(dt >= 500, "closed after %lld ms", (long long)dt);
	close(a);
	fx_teardown(&fx);
}
END_TEST

/* ---- file descriptors ---- */

static int highest_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int max = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) > max)
			max = atoi(e->d_name);
	closedir(d);
	return max;
}

static int64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

/*
 * EMFILE: with the process out of fds, a host client is closed (not left in
 * the backlog, where the listener would stay readable and the control or
 * lobby thread would spin), a guest REQUEST gets an RST, and the process
 * uses next to no CPU meanwhile. _i = 0: device started; 1: not started
 * (the lobby). Once fds are back, everything works.
 */
START_TEST(t_emfile)
{
	struct fx_opts o = { .no_attach = _i == 1, .host_wait_ms = 60000 };
	struct rlimit old, low;
	struct sim_listener *l;
	struct sim_conn *c, *g;
	int dups[4096], ndup = 0, lfd, lfd2, fd, fd2, a, rc, i;
	int64_t t0, c0, cpu, wall;
	struct fx fx;

	fx_setup(&fx, &o);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	lfd2 = hp_listen_port(fx.uds, PORT + 1, 16, 0);
	ck_assert_int_ge(lfd2, 0);
	lfd = -1;
	fd = -1;
	c = NULL;
	if (_i == 0)
		fd = fx_guest_connect(&fx, PORT + 2, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	a = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(a, 0);

	/* No fd left for anybody in this process. */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)highest_fd() + 32;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (ndup < 4096 && (dups[ndup] = dup(2)) >= 0)
		ndup++;
	ck_assert_int_lt(ndup, 4096);
	ck_assert_int_eq(errno, EMFILE);

	t0 = hp_now_ms();
	c0 = cpu_us();
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fx.uds);
		ck_assert_int_eq(connect(a, (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	rc = hp_wait_eof(a, FX_T);
	ck_assert_msg(rc == 0 || rc == -ECONNRESET, "host client not refused: %d", rc);
	if (_i == 0)
		ck_assert_int_eq(sim_connect(fx.drv, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &g),
				 -ECONNRESET);
	/* Stay out of fds for 2 s in all: a spinning thread would burn ~2 s of CPU. */
	while (hp_now_ms() - t0 < 2000)
		usleep(50 * 1000);
	cpu = cpu_us() - c0;
	wall = (hp_now_ms() - t0) * 1000;
	fprintf(stderr, "t_emfile(%d): %lld us of CPU in %lld us out of fds\n", _i, (long long)cpu,
		(long long)wall);
	ck_assert_msg(cpu * 10 < wall, "%lld us of CPU in %lld us while out of fds", (long long)cpu,
		      (long long)wall);

	for (i = 0; i < ndup; i++)
		close(dups[i]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	close(a);

	if (_i == 1)
		ck_assert_int_eq(sim_drv_attach(fx.drv, fx.dev), 0);
	fd2 = fx_host_connect(&fx, l, PORT, &g, NULL);
	still_moving(fd2, g, 19);
	close(fd2);
	sim_close(g, FX_T);
	if (c) {
		still_moving(fd, c, 21);
		close(fd);
		sim_close(c, FX_T);
		close(lfd);
	}
	ck_assert_int_eq(sim_connect(fx.drv, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &g), 0);
	fd = hp_accept(lfd2, FX_T);
	ck_assert_int_ge(fd, 0);
	still_moving(fd, g, 23);
	close(fd);
	sim_close(g, FX_T);
	close(lfd2);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/* A regular file at uds_path is refused with -ENOTSOCK and left alone. */
START_TEST(t_uds_path_not_socket)
{
	struct vsock_dev_config cfg = { .guest_cid = 3 };
	struct vsock_dev *dev = NULL;
	char path[108];
	FILE *f;

	hp_tmp_path(path, sizeof(path), "notsock");
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("keep me\n", f);
	fclose(f);
	cfg.uds_path = path;
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), -ENOTSOCK);
	ck_assert_int_eq(access(path, F_OK), 0);
	unlink(path);
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), 0);
	vsock_dev_destroy(dev);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_limits");

	FX_ADD(s, t_conn_cap_flood, 60);
	FX_ADD(s, t_credit_overrun, 60);
	FX_ADD(s, t_seqpacket_small_msgs, 60);
	FX_ADD(s, t_h2g_credit_bound, 60);
	FX_ADD(s, t_reply_flood, 60);
	FX_ADD(s, t_request_unanswered, 60);
	FX_ADD(s, t_shutdown_unanswered, 90);
	FX_ADD(s, t_connect_line_timeout, 60);
	FX_ADD(s, t_wait_before_start, 60);
	FX_ADD_LOOP(s, t_emfile, 2, 60);
	FX_ADD(s, t_uds_path_not_socket, 30);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
