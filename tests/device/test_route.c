// SPDX-License-Identifier: MIT
/*
 * Device tests, guest-to-guest routing (devices/virtio_vsock/src/router.c):
 * two simulated guests, CIDs 3 and 4, with a device each in one routing
 * group of this process. Data both ways byte-exact, with and without
 * MRG_RXBUF; credit kept end to end with a slow reader; RST for an unknown
 * CID and for a CID of another group; stop, reset or destroy of one device
 * resets the peer's connections; a malformed packet resets both ends; a
 * 64 KiB RW packet split into 4 KiB packets for a destination without
 * MRG_RXBUF (SEQPACKET EOM on the last piece only); a spoofed src_cid never
 * leaves the sender; the forward queue cap stalls the sender's TX, loses
 * nothing and resumes; SEQPACKET to a guest that did not negotiate it is refused.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 7000
#define CID_A 3
#define CID_B 4

/* Both guests accept other guests' packets; @b_mrg: B negotiates MRG_RXBUF. */
static void setup2(struct fx *a, struct fx *b, struct fx_opts *oa, struct fx_opts *ob)
{
	oa->drv.guest_cid = CID_A;
	oa->drv.peer_guests = true;
	ob->drv.guest_cid = CID_B;
	ob->drv.peer_guests = true;
	fx_setup(a, oa);
	fx_setup(b, ob);
}

static void connect_ab(struct fx *a, struct fx *b, uint32_t port, uint16_t type,
		       struct sim_conn **ca, struct sim_conn **cb)
{
	struct sim_listener *l;
	int rc;

	ck_assert_int_eq(sim_listen(b->drv, port, type, 4, &l), 0);
	rc = sim_connect_cid(a->drv, CID_B, port, type, FX_T, ca);
	ck_assert_msg(rc == 0, "connect to cid %d: %d", CID_B, rc);
	ck_assert_int_eq(sim_accept(l, FX_T, cb), 0);
}

struct mover {
	struct sim_conn *c;
	uint8_t *buf;
	size_t len;
	size_t got;
	unsigned int read_step; /* bytes per recv (0: as much as there is) */
	unsigned int pause_us; /* between reads: a slow reader */
	ssize_t rc;
	pthread_t t;
};

static void *send_main(void *arg)
{
	struct mover *m = arg;

	m->rc = sim_send(m->c, m->buf, m->len, 30000);
	return NULL;
}

static void *recv_main(void *arg)
{
	struct mover *m = arg;

	m->rc = 0;
	while (m->got < m->len) {
		size_t cap = m->len - m->got;
		ssize_t n;

		if (m->read_step && cap > m->read_step)
			cap = m->read_step;
		n = sim_recv(m->c, m->buf + m->got, cap, 30000);
		if (n <= 0) {
			m->rc = n ? n : -EPIPE;
			break;
		}
		m->got += (size_t)n;
		if (m->pause_us)
			usleep(m->pause_us); /* a reading rate, not a synchronisation */
	}
	return NULL;
}

static uint8_t *pattern(size_t len, uint64_t seed)
{
	uint8_t *p = malloc(len);

	ck_assert_ptr_nonnull(p);
	hp_fill(&seed, p, len);
	return p;
}

/* Move @len bytes each way at once and compare byte for byte. */
static void both_ways(struct sim_conn *ca, struct sim_conn *cb, size_t len, unsigned int step,
		      unsigned int pause_us)
{
	struct mover s1 = { .c = ca, .len = len }, r1 = { .c = cb, .len = len };
	struct mover s2 = { .c = cb, .len = len }, r2 = { .c = ca, .len = len };
	uint8_t *x = pattern(len, 11), *y = pattern(len, 22);

	s1.buf = x;
	s2.buf = y;
	r1.buf = calloc(1, len);
	r2.buf = calloc(1, len);
	r1.read_step = r2.read_step = step;
	r1.pause_us = r2.pause_us = pause_us;
	pthread_create(&s1.t, NULL, send_main, &s1);
	pthread_create(&s2.t, NULL, send_main, &s2);
	pthread_create(&r1.t, NULL, recv_main, &r1);
	pthread_create(&r2.t, NULL, recv_main, &r2);
	pthread_join(s1.t, NULL);
	pthread_join(s2.t, NULL);
	pthread_join(r1.t, NULL);
	pthread_join(r2.t, NULL);
	ck_assert_int_eq(s1.rc, (ssize_t)len);
	ck_assert_int_eq(s2.rc, (ssize_t)len);
	ck_assert_msg(r1.rc == 0 && r1.got == len, "A->B: rc %zd, %zu of %zu", r1.rc, r1.got, len);
	ck_assert_msg(r2.rc == 0 && r2.got == len, "B->A: rc %zd, %zu of %zu", r2.rc, r2.got, len);
	ck_assert_msg(!memcmp(r1.buf, x, len), "A->B bytes differ");
	ck_assert_msg(!memcmp(r2.buf, y, len), "B->A bytes differ");
	free(x);
	free(y);
	free(r1.buf);
	free(r2.buf);
}

/* _i: bit 0 A offers/takes MRG_RXBUF, bit 1 B does. 2 MiB each way, then a clean close. */
START_TEST(t_data_both_ways)
{
	struct fx_opts oa = { .mrg = _i & 1 }, ob = { .mrg = (_i >> 1) & 1 };
	struct sim_conn *ca, *cb;
	struct sim_conn_info ci;
	struct sim_drv_stats st;
	struct fx a, b;

	setup2(&a, &b, &oa, &ob);
	connect_ab(&a, &b, PORT, VIRTIO_VSOCK_TYPE_STREAM, &ca, &cb);
	both_ways(ca, cb, 2u << 20, 0, 0);
	sim_drv_get_stats(b.drv, &st);
	if (ob.mrg)
		ck_assert_uint_gt(st.max_num_buffers, 1); /* 64 KiB packets over 4 KiB buffers */
	else
		ck_assert_uint_le(st.max_rx_payload, 4096); /* split for 4 KiB buffers */
	/* Linux close: SHUTDOWN both ways through the device, B answers RST. */
	ck_assert_int_eq(sim_close(ca, FX_T), 0);
	sim_conn_info(cb, &ci);
	ck_assert_uint_eq(ci.peer_shutdown, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
	sim_abort(cb);
	fx_teardown(&a);
	fx_teardown(&b);
}
END_TEST

/* B advertises 16 KiB and reads 1 KiB per ms: A never goes past B's credit. */
START_TEST(t_credit_slow_reader)
{
	struct fx_opts oa = { 0 }, ob = { .drv.buf_alloc = 16384 };
	struct sim_conn *ca, *cb;
	struct sim_conn_info ia;
	struct fx a, b;

	setup2(&a, &b, &oa, &ob);
	connect_ab(&a, &b, PORT, VIRTIO_VSOCK_TYPE_STREAM, &ca, &cb);
	sim_conn_info(ca, &ia);
	ck_assert_uint_eq(ia.peer_buf_alloc, 16384); /* B's buf_alloc, forwarded as is */
	both_ways(ca, cb, 256u << 10, 1024, 1000);
	sim_abort(ca);
	ck_assert_int_eq(sim_wait_reset(cb, FX_T), 0);
	sim_abort(cb);
	fx_teardown(&a); /* asserts: no credit violation, no protocol error */
	fx_teardown(&b);
}
END_TEST

/*
 * RST for a CID nobody has (_i 0), for a member of another group (_i 1),
 * for a member not started yet (_i 2), and for an RW packet of no
 * connection (_i 3).
 */
START_TEST(t_rst_unreachable)
{
	struct fx_opts oa = { 0 }, ob = { 0 }, oc = { .group = "other" };
	struct vsock_dev_counters c0, c1;
	struct virtio_vsock_hdr h;
	struct sim_conn *ca;
	struct sim_pkt pkt;
	struct fx a, b, c;
	int rc;

	if (_i == 2)
		ob.no_attach = true;
	setup2(&a, &b, &oa, &ob);
	oc.drv.guest_cid = 5;
	oc.drv.peer_guests = true;
	fx_setup(&c, &oc);
	fx_counters(&b, &c0);
	if (_i < 3) {
		rc = sim_connect_cid(a.drv,
				     _i == 0 ? 99 :
				     _i == 1 ? 5 :
					       CID_B,
				     PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &ca);
		ck_assert_int_eq(rc, -ECONNRESET);
		if (_i == 1) {
			/* and the other way round */
			rc = sim_connect_cid(c.drv, CID_A, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T,
					     &ca);
			ck_assert_int_eq(rc, -ECONNRESET);
		}
	} else {
		sim_hdr_init(a.drv, &h, 5555, PORT, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RW);
		h.dst_cid = CID_B;
		h.len = 100;
		ck_assert_int_ge(sim_send_pkt(a.drv, &h, NULL, 100, SIM_SHAPE_HDR_SEP, FX_T), 0);
		ck_assert_int_eq(sim_pkt_recv(a.drv, &pkt, FX_T), 0);
		ck_assert_uint_eq(pkt.hdr.op, VIRTIO_VSOCK_OP_RST);
		ck_assert_uint_eq(pkt.hdr.src_cid, CID_B);
		ck_assert_uint_eq(pkt.hdr.src_port, PORT);
		ck_assert_uint_eq(pkt.hdr.dst_port, 5555);
		sim_pkt_free(&pkt);
	}
	fx_counters(&b, &c1);
	ck_assert_uint_eq(c1.rx_pkts, c0.rx_pkts); /* nothing reached B */
	fx_teardown(&c);
	fx_teardown(&b);
	fx_teardown(&a);
}
END_TEST

/* B is stopped (_i 0), reset (_i 1) or destroyed (_i 2): A's connections get RST. */
START_TEST(t_peer_gone)
{
	struct fx_opts oa = { 0 }, ob = { 0 };
	struct sim_conn *ca[3], *cb[3];
	struct sim_conn_info ci;
	struct fx a, b;
	unsigned int k;

	setup2(&a, &b, &oa, &ob);
	for (k = 0; k < 3; k++) {
		struct sim_listener *l;

		ck_assert_int_eq(sim_listen(b.drv, PORT + k, VIRTIO_VSOCK_TYPE_STREAM, 1, &l), 0);
		ck_assert_int_eq(sim_connect_cid(a.drv, CID_B, PORT + k, VIRTIO_VSOCK_TYPE_STREAM,
						 FX_T, &ca[k]),
				 0);
		ck_assert_int_eq(sim_accept(l, FX_T, &cb[k]), 0);
	}
	both_ways(ca[1], cb[1], 100000, 0, 0);
	if (_i == 0) {
		ck_assert_int_eq(vsock_dev_stop(b.dev, NULL), 0);
	} else if (_i == 1) {
		ck_assert_int_eq(sim_drv_reset(b.drv), 0);
	} else {
		vsock_dev_destroy(b.dev);
		b.dev = NULL;
	}
	for (k = 0; k < 3; k++) {
		ck_assert_int_eq(sim_wait_reset(ca[k], FX_T), 0);
		sim_conn_info(ca[k], &ci);
		ck_assert(ci.reset);
		sim_abort(ca[k]);
	}
	/* B is unreachable now: a new connection is refused at once. */
	ck_assert_int_eq(
		sim_connect_cid(a.drv, CID_B, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &ca[0]),
		-ECONNRESET);
	if (_i == 1) {
		/* B comes back: reachable again, and works. */
		for (k = 0; k < 3; k++)
			sim_abort(cb[k]); /* reset by sim_drv_reset(): freed, nothing sent */
		ck_assert_int_eq(sim_drv_attach(b.drv, b.dev), 0);
		connect_ab(&a, &b, PORT + 10, VIRTIO_VSOCK_TYPE_STREAM, &ca[0], &cb[0]);
		both_ways(ca[0], cb[0], 70000, 0, 0);
		sim_abort(ca[0]);
		ck_assert_int_eq(sim_wait_reset(cb[0], FX_T), 0);
		sim_abort(cb[0]);
	} else {
		for (k = 0; k < 3; k++)
			sim_abort(cb[k]); /* B's side: its RSTs meet a stopped or gone device */
	}
	fx_teardown(&a);
	fx_teardown(&b);
}
END_TEST

/*
 * One 64 KiB SEQPACKET message (one RW packet from A) into B: without
 * MRG_RXBUF (_i 0, 4 KiB buffers) it arrives as 16 RW packets, EOM (and
 * EOR) on the last only, so B sees one 64 KiB message; with MRG_RXBUF
 * (_i 1) as one packet over 16+ buffers.
 */
START_TEST(t_split_seqpacket)
{
	struct fx_opts oa = { .mrg = true }, ob = { .mrg = _i == 1 };
	const size_t len = 65536;
	struct sim_drv_stats s0, s1;
	struct sim_conn *ca, *cb;
	uint8_t *x = pattern(len, 33), *y = calloc(1, len + 1);
	uint32_t flags = 0;
	struct fx a, b;
	ssize_t n;

	setup2(&a, &b, &oa, &ob);
	connect_ab(&a, &b, PORT, VIRTIO_VSOCK_TYPE_SEQPACKET, &ca, &cb);
	sim_drv_get_stats(b.drv, &s0);
	ck_assert_int_eq(sim_send_msg(ca, x, len, true, FX_T), (ssize_t)len);
	n = sim_recv_msg(cb, y, len + 1, &flags, FX_T);
	ck_assert_int_eq(n, (ssize_t)len);
	ck_assert_uint_eq(flags, VIRTIO_VSOCK_SEQ_EOM | VIRTIO_VSOCK_SEQ_EOR);
	ck_assert(!memcmp(x, y, len));
	sim_drv_get_stats(b.drv, &s1);
	if (_i == 0) {
		ck_assert_uint_eq(s1.rx_pkts - s0.rx_pkts, 16);
		ck_assert_uint_eq(s1.max_rx_payload, 4096);
	} else {
		ck_assert_uint_eq(s1.rx_pkts - s0.rx_pkts, 1);
		ck_assert_uint_eq(s1.max_rx_payload, len);
		ck_assert_uint_ge(s1.max_num_buffers, 16);
	}
	/* and a second message right behind it keeps its own boundary */
	ck_assert_int_eq(sim_send_msg(ca, x, 5000, false, FX_T), 5000);
	n = sim_recv_msg(cb, y, len, &flags, FX_T);
	ck_assert_int_eq(n, 5000);
	ck_assert_uint_eq(flags, VIRTIO_VSOCK_SEQ_EOM);
	sim_abort(ca);
	ck_assert_int_eq(sim_wait_reset(cb, FX_T), 0);
	sim_abort(cb);
	free(x);
	free(y);
	fx_teardown(&a);
	fx_teardown(&b);
}
END_TEST

/* A packet from A claiming B's CID (_i 0) or a third one (_i 1) as source never leaves A. */
START_TEST(t_spoofed_src)
{
	struct fx_opts oa = { .drv.no_auto_rst = true }, ob = { 0 };
	struct vsock_dev_counters a0, a1, b0, b1;
	struct sim_drv_stats st;
	struct virtio_vsock_hdr h;
	struct fx a, b;
	int head;

	setup2(&a, &b, &oa, &ob);
	fx_counters(&a, &a0);
	fx_counters(&b, &b0);
	sim_hdr_init(a.drv, &h, 5555, PORT, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_REQUEST);
	h.src_cid = _i == 0 ? CID_B : 77;
	h.dst_cid = CID_B;
	head = sim_send_pkt(a.drv, &h, NULL, 0, SIM_SHAPE_LINEAR, FX_T);
	ck_assert_int_ge(head, 0);
	FX_WAIT_EQ(&a, malformed_pkts, a0.malformed_pkts + 1);
	ck_assert_int_eq(sim_wait_tx_idle(a.drv, FX_T), 0);
	fx_counters(&a, &a1);
	fx_counters(&b, &b1);
	ck_assert_uint_eq(b1.rx_pkts, b0.rx_pkts);
	ck_assert_uint_eq(a1.rx_pkts, a0.rx_pkts); /* no answer either */
	sim_drv_get_stats(b.drv, &st);
	ck_assert_uint_eq(st.stray_pkts, 0);
	fx_teardown(&a);
	fx_teardown(&b);
}
END_TEST

/*
 * B posts only a few RX buffers and no more: A's 64 KiB packets fill B's
 * forward queue (512 KiB), the next one is held and A's TX stops (its TX
 * chains stay unreturned, tx_pkts stays put). Then B posts buffers again:
 * all 4 MiB arrive byte-exact, A's TX drains.
 */
START_TEST(t_forward_cap)
{
	/* A's own 8 MiB too: a Linux sender's window is min(peer's, its own). */
	struct fx_opts oa = { .drv.buf_alloc = 8u << 20 }, ob = { .drv.buf_alloc = 8u << 20,
								  .drv.no_rx_refill = true,
								  .drv.rx_start_empty = true,
								  .drv.rx_bufs = 64 };
	const size_t len = 4u << 20;
	struct mover s = { .len = len }, r = { .len = len };
	struct vsock_dev_counters c0, c1;
	struct sim_conn *ca, *cb;
	struct sim_listener *l;
	struct fx a, b;
	int rc;

	setup2(&a, &b, &oa, &ob);
	ck_assert_int_eq(sim_rx_refill(b.drv, 1), 1); /* room for the REQUEST */
	ck_assert_int_eq(sim_listen(b.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 1, &l), 0);
	rc = sim_connect_cid(a.drv, CID_B, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &ca);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(sim_accept(l, FX_T, &cb), 0);
	ck_assert_uint_eq(sim_rx_posted(b.drv), 0);
	fx_counters(&a, &c0);

	s.c = ca;
	s.buf = pattern(len, 44);
	r.c = cb;
	r.buf = calloc(1, len);
	pthread_create(&s.t, NULL, send_main, &s);
	/* 8 packets fill the queue, the 9th is held: A has taken 9 and stops. */
	FX_WAIT(&a, tx_pkts, c0.tx_pkts + 9, FX_T);
	usleep(300 * 1000); /* give a wrong device time to take more */
	fx_counters(&a, &c1);
	ck_assert_uint_eq(c1.tx_pkts, c0.tx_pkts + 9);
	ck_assert_int_eq(sim_wait_tx_idle(a.drv, 10), -ETIMEDOUT);

	pthread_create(&r.t, NULL, recv_main, &r);
	sim_rx_set_refill(b.drv, true);
	ck_assert_int_gt(sim_rx_refill(b.drv, 64), 0);
	pthread_join(s.t, NULL);
	pthread_join(r.t, NULL);
	ck_assert_int_eq(s.rc, (ssize_t)len);
	ck_assert_msg(r.rc == 0 && r.got == len, "rc %zd, got %zu", r.rc, r.got);
	ck_assert(!memcmp(s.buf, r.buf, len));
	ck_assert_int_eq(sim_wait_tx_idle(a.drv, FX_T), 0);
	fx_counters(&a, &c1);
	ck_assert_uint_eq(c1.dropped_pkts, c0.dropped_pkts);
	free(s.buf);
	free(r.buf);
	sim_abort(ca);
	ck_assert_int_eq(sim_wait_reset(cb, FX_T), 0);
	sim_abort(cb);
	fx_teardown(&a);
	fx_teardown(&b);
}
END_TEST

/*
 * A malformed packet (op 99, _i 0; len beyond the chain, _i 1) from A on a
 * guest-to-guest connection: counted, and the connection is reset at both
 * ends, as a host connection would be.
 */
START_TEST(t_malformed_resets_both)
{
	struct fx_opts oa = { 0 }, ob = { 0 };
	struct vsock_dev_counters c0;
	struct virtio_vsock_hdr h;
	struct sim_conn *ca, *cb;
	struct sim_conn_info ia;
	struct fx a, b;

	setup2(&a, &b, &oa, &ob);
	connect_ab(&a, &b, PORT, VIRTIO_VSOCK_TYPE_STREAM, &ca, &cb);
	fx_counters(&a, &c0);
	sim_conn_info(ca, &ia);
	sim_hdr_init(a.drv, &h, ia.local_port, ia.peer_port, VIRTIO_VSOCK_TYPE_STREAM,
		     _i ? VIRTIO_VSOCK_OP_RW : 99);
	h.dst_cid = CID_B;
	h.len = _i ? 5000 : 0;
	ck_assert_int_ge(sim_send_pkt(a.drv, &h, NULL, _i ? 100 : 0, SIM_SHAPE_LINEAR, FX_T), 0);
	FX_WAIT_EQ(&a, malformed_pkts, c0.malformed_pkts + 1);
	ck_assert_int_eq(sim_wait_reset(ca, FX_T), 0);
	ck_assert_int_eq(sim_wait_reset(cb, FX_T), 0);
	sim_abort(ca);
	sim_abort(cb);
	fx_teardown(&a);
	fx_teardown(&b);
}
END_TEST

/* B did not negotiate SEQPACKET: A's SEQPACKET REQUEST gets an RST, STREAM still works. */
START_TEST(t_seqpacket_not_negotiated)
{
	struct fx_opts oa = { 0 }, ob = { .drv.features = (1ull << VIRTIO_F_VERSION_1) |
							  (1ull << VIRTIO_RING_F_EVENT_IDX) |
							  (1ull << VIRTIO_VSOCK_F_STREAM) };
	struct vsock_dev_counters b0, b1;
	struct sim_conn *ca, *cb;
	struct sim_listener *l;
	struct fx a, b;

	setup2(&a, &b, &oa, &ob);
	ck_assert_uint_eq(sim_drv_features(b.drv) & (1ull << VIRTIO_VSOCK_F_SEQPACKET), 0);
	ck_assert_int_eq(sim_listen(b.drv, PORT + 1, VIRTIO_VSOCK_TYPE_SEQPACKET, 1, &l), 0);
	fx_counters(&b, &b0);
	ck_assert_int_eq(
		sim_connect_cid(a.drv, CID_B, PORT + 1, VIRTIO_VSOCK_TYPE_SEQPACKET, FX_T, &ca),
		-ECONNRESET);
	fx_counters(&b, &b1);
	ck_assert_uint_eq(b1.rx_pkts, b0.rx_pkts);
	connect_ab(&a, &b, PORT, VIRTIO_VSOCK_TYPE_STREAM, &ca, &cb);
	both_ways(ca, cb, 100000, 0, 0);
	sim_abort(ca);
	ck_assert_int_eq(sim_wait_reset(cb, FX_T), 0);
	sim_abort(cb);
	fx_teardown(&a);
	fx_teardown(&b);
}
END_TEST

/* Two devices with one CID: the second gets -EADDRINUSE, unless in another group. */
START_TEST(t_cid_unique)
{
	struct vsock_dev_config cfg = { .guest_cid = 9 };
	struct vsock_dev *x, *y, *z;

	ck_assert_int_eq(vsock_dev_create(&cfg, &x), 0);
	ck_assert_int_eq(vsock_dev_create(&cfg, &y), -EADDRINUSE);
	cfg.group = "g2";
	ck_assert_int_eq(vsock_dev_create(&cfg, &y), 0);
	ck_assert_int_eq(vsock_dev_create(&cfg, &z), -EADDRINUSE);
	cfg.group = "0123456789012345678901234567890123456789012345678901234567890123";
	ck_assert_int_eq(vsock_dev_create(&cfg, &z), -ENAMETOOLONG);
	vsock_dev_destroy(x);
	cfg.group = "";
	ck_assert_int_eq(vsock_dev_create(&cfg, &x), 0); /* the CID is free again */
	vsock_dev_destroy(x);
	vsock_dev_destroy(y);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_route");

	FX_ADD(s, t_cid_unique, 30);
	FX_ADD_LOOP(s, t_data_both_ways, 4, 60);
	FX_ADD(s, t_credit_slow_reader, 60);
	FX_ADD_LOOP(s, t_rst_unreachable, 4, 30);
	FX_ADD_LOOP(s, t_peer_gone, 3, 60);
	FX_ADD_LOOP(s, t_split_seqpacket, 2, 30);
	FX_ADD_LOOP(s, t_spoofed_src, 2, 30);
	FX_ADD(s, t_forward_cap, 60);
	FX_ADD_LOOP(s, t_malformed_resets_both, 2, 30);
	FX_ADD(s, t_seqpacket_not_negotiated, 30);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
