// SPDX-License-Identifier: MIT
/*
 * Device tests, basics: set-up API, each operation and state transition,
 * counters, connection cap, SEQPACKET, two devices, interrupt paths, memory
 * layouts. The simulated driver plays the guest; host peers are real Unix
 * sockets speaking the hybrid protocol of vsock_dev.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 5000

START_TEST(t_create_args)
{
	struct vsock_dev_config cfg = { .guest_cid = 3 };
	struct vsock_dev *a = NULL, *b = NULL;
	char path[200];

	hp_tmp_path(path, sizeof(path), "args");
	cfg.uds_path = path;
	cfg.guest_cid = 2;
	ck_assert_int_eq(vsock_dev_create(&cfg, &a), -EINVAL);
	cfg.guest_cid = 0xffffffffull;
	ck_assert_int_eq(vsock_dev_create(&cfg, &a), -EINVAL);
	cfg.guest_cid = 3;
	cfg.uds_path = "";
	ck_assert_int_eq(vsock_dev_create(&cfg, &a), -EINVAL);
	cfg.uds_path = NULL; /* no host side: valid, the device only routes to other guests */
	ck_assert_int_eq(vsock_dev_create(&cfg, &a), 0);
	vsock_dev_destroy(a);
	memset(path, 0, sizeof(path));
	memcpy(path, "/tmp/", 5);
	memset(path + 5, 'x', 100);
	cfg.uds_path = path;
	ck_assert_int_eq(vsock_dev_create(&cfg, &a), -ENAMETOOLONG);

	/* a live listener owns the path: the second device must not steal it */
	hp_tmp_path(path, sizeof(path), "args");
	ck_assert_int_eq(vsock_dev_create(&cfg, &a), 0);
	ck_assert_int_eq(vsock_dev_create(&cfg, &b), -EADDRINUSE);
	ck_assert_int_eq(access(path, F_OK), 0);
	vsock_dev_destroy(a);
	ck_assert_int_ne(access(path, F_OK), 0); /* destroy unlinks uds_path */
	vsock_dev_destroy(NULL);
}
END_TEST

START_TEST(t_stale_socket_file)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fx_opts o = { 0 };
	struct sim_listener *l;
	struct sim_conn *c;
	struct fx fx;
	char path[108];
	int s, fd;

	/* leave a socket file behind, as a crashed earlier run would */
	hp_tmp_path(path, sizeof(path), "stale");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	ck_assert_int_eq(access(path, F_OK), 0);

	o.uds_path = path;
	fx_setup(&fx, &o);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	fd = fx_host_connect(&fx, l, PORT, &c, NULL);
	fx_xfer_h2g(fd, c, 1000, 1);
	close(fd);
	sim_abort(c);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

START_TEST(t_features_config)
{
	struct fx fx;
	struct fx_opts o = { .no_attach = true };
	uint64_t f, cid = 0;
	uint8_t b[4];

	fx_setup(&fx, &o);
	f = vsock_dev_features(fx.dev);
	ck_assert(f & (1ull << VIRTIO_F_VERSION_1));
	ck_assert(f & (1ull << VIRTIO_RING_F_EVENT_IDX));
	ck_assert(f & (1ull << VIRTIO_RING_F_INDIRECT_DESC));
	ck_assert(f & (1ull << VIRTIO_VSOCK_F_STREAM));
	ck_assert(f & (1ull << VIRTIO_VSOCK_F_SEQPACKET));
	ck_assert(!(f & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)));
	ck_assert_int_eq(vsock_dev_read_config(fx.dev, 0, &cid, 8), 0);
	ck_assert_uint_eq(cid, 3);
	ck_assert_int_eq(vsock_dev_read_config(fx.dev, 4, b, 4), 0);
	ck_assert_int_eq(vsock_dev_read_config(fx.dev, 6, b, 4), -EINVAL);
	ck_assert_int_eq(vsock_dev_read_config(fx.dev, 8, b, 1), -EINVAL);
	ck_assert_int_eq(vsock_dev_set_features(fx.dev, f & ~(1ull << VIRTIO_F_VERSION_1)),
			 -EINVAL);
	ck_assert_int_eq(vsock_dev_set_features(fx.dev, f | (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)),
			 -EINVAL);
	ck_assert_int_eq(vsock_dev_start(fx.dev), -EINVAL); /* no memory, no queues */
	fx_teardown(&fx);

	o.mrg = true;
	fx_setup(&fx, &o);
	ck_assert(vsock_dev_features(fx.dev) & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF));
	ck_assert_int_eq(sim_drv_attach(fx.drv, fx.dev), 0);
	ck_assert(sim_drv_features(fx.drv) & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF));
	ck_assert_int_eq(vsock_dev_start(fx.dev), -EALREADY);
	ck_assert_int_eq(vsock_dev_set_features(fx.dev, sim_drv_features(fx.drv)), -EBUSY);
	fx_teardown(&fx);
}
END_TEST

/* Guest-initiated STREAM: REQUEST -> RESPONSE, RW both ways, guest close. */
START_TEST(t_guest_connect)
{
	struct vsock_dev_counters c0, c1;
	struct sim_conn_info ci;
	struct sim_conn *c;
	struct fx fx;
	char buf[64];
	int lfd, fd;

	fx_setup(&fx, NULL);
	fx_counters(&fx, &c0);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	sim_conn_info(c, &ci);
	ck_assert(ci.established);
	ck_assert_uint_eq(ci.peer_port, PORT);
	ck_assert_uint_eq(ci.peer_buf_alloc, 256u * 1024u); /* default conn_buf_size */
	ck_assert_int_eq(sim_send(c, "hello", 5, FX_T), 5);
	ck_assert_int_eq(hp_read_full(fd, buf, 5, FX_T), 5);
	ck_assert_int_eq(memcmp(buf, "hello", 5), 0);
	ck_assert_int_eq(hp_write_all(fd, "world!", 6, FX_T), 6);
	ck_assert_int_eq(sim_recv(c, buf, sizeof(buf), FX_T), 6);
	ck_assert_int_eq(memcmp(buf, "world!", 6), 0);
	FX_WAIT_EQ(&fx, tx_bytes, c0.tx_bytes + 5);
	FX_WAIT_EQ(&fx, rx_bytes, c0.rx_bytes + 6);
	fx_counters(&fx, &c1);
	ck_assert_uint_eq(c1.conns_opened - c0.conns_opened, 1);
	ck_assert_uint_ge(c1.tx_pkts - c0.tx_pkts, 2); /* REQUEST, RW */
	ck_assert_uint_ge(c1.rx_pkts - c0.rx_pkts, 2); /* RESPONSE, RW */
	ck_assert_uint_gt(c1.kicks, c0.kicks);
	ck_assert_uint_gt(c1.irqs_sent, c0.irqs_sent);
	ck_assert_uint_eq(c1.malformed_pkts, 0);
	/* close: SHUTDOWN both ways, the device closes the host socket and sends RST */
	ck_assert_int_eq(sim_close(c, FX_T), 0);
	ck_assert_int_eq(hp_wait_eof(fd, FX_T), 0);
	FX_WAIT(&fx, conns_closed, c0.conns_closed + 1, FX_T);
	close(fd);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* Host-initiated: CONNECT -> REQUEST to the guest, RESPONSE -> OK <port>. */
START_TEST(t_host_connect)
{
	struct sim_listener *l;
	struct sim_conn *c;
	uint32_t hport, hport2;
	struct fx fx;
	char buf[16];
	int fd, fd2;

	fx_setup(&fx, NULL);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	fd = fx_host_connect(&fx, l, PORT, &c, &hport);
	ck_assert_uint_ge(hport, 1u << 30);
	ck_assert_uint_lt(hport, 1u << 31);
	ck_assert_int_eq(sim_send(c, "ping", 4, FX_T), 4);
	ck_assert_int_eq(hp_read_full(fd, buf, 4, FX_T), 4);
	ck_assert_int_eq(hp_write_all(fd, "pong", 4, FX_T), 4);
	ck_assert_int_eq(sim_recv(c, buf, sizeof(buf), FX_T), 4);
	ck_assert_int_eq(memcmp(buf, "pong", 4), 0);
	/* a second host connection gets a different host port */
	{
		struct sim_conn *c2;

		fd2 = fx_host_connect(&fx, l, PORT, &c2, &hport2);
		ck_assert_uint_ne(hport, hport2);
		ck_assert_uint_ge(hport2, 1u << 30);
		ck_assert_uint_lt(hport2, 1u << 31);
		/* host closes: the guest sees SHUTDOWN (both) or RST, then EOF */
		close(fd2);
		ck_assert_int_le(sim_recv(c2, buf, sizeof(buf), FX_T), 0);
		sim_close(c2, FX_T);
	}
	/* guest RST: the host socket is closed */
	sim_abort(c);
	ck_assert_int_ge(hp_wait_eof(fd, FX_T), -ECONNRESET);
	close(fd);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/* No listener at <uds>_<P>, or a dead socket file there: RST within 100 ms. */
START_TEST(t_missing_listener)
{
	int64_t best[2] = { 1000000, 1000000 }, worst = 0;
	struct sim_conn *c;
	struct fx fx;
	char path[120];
	int i;

	fx_setup(&fx, NULL);
	for (i = 0; i < 6; i++) {
		int64_t t0, dt;
		int rc;

		if (i == 3) {
			/* refusing: a socket file with nobody listening */
			int fd = hp_listen_port(fx.uds, PORT + 1, 1, 0);

			ck_assert_int_ge(fd, 0);
			close(fd); /* the file stays */
		}
		t0 = hp_now_ms();
		rc = sim_connect(fx.drv, i < 3 ? PORT : PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, FX_T,
				 &c);
		dt = hp_now_ms() - t0;
		ck_assert_int_eq(rc, -ECONNRESET);
		best[i / 3] = dt < best[i / 3] ? dt : best[i / 3];
		worst = dt > worst ? dt : worst;
	}
	snprintf(path, sizeof(path), "%s_%u", fx.uds, PORT + 1);
	unlink(path);
	/* best of 3 per case is strict; the worst only guards against a hang on a loaded machine */
	ck_assert_msg(best[0] < 100, "RST for a missing listener after %lld ms",
		      (long long)best[0]);
	ck_assert_msg(best[1] < 100, "RST for a refusing socket after %lld ms", (long long)best[1]);
	ck_assert_msg(worst < 2000, "RST after %lld ms", (long long)worst);
	/* refusals, not resets: no connection was ever established */
	ck_assert_uint_ge(FX_WAIT(&fx, conns_refused, 6, FX_T), 6);
	{
		struct vsock_dev_counters k;

		fx_counters(&fx, &k);
		ck_assert_uint_eq(k.conn_resets, 0);
		ck_assert_uint_eq(k.dropped_pkts, 0);
		ck_assert_uint_eq(k.conns_open, 0);
	}
	fx_teardown(&fx);
}
END_TEST

/* CREDIT_REQUEST is answered by CREDIT_UPDATE with the device's credit. */
START_TEST(t_credit_request)
{
	struct sim_conn_info ci;
	struct sim_conn *c;
	struct fx fx;
	int64_t end;
	int lfd, fd;
	struct fx_opts o = { .conn_buf_size = 100000 };

	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	ck_assert_int_eq(sim_credit_request(c), 0);
	end = hp_now_ms() + FX_T;
	do {
		sim_conn_info(c, &ci);
		if (ci.credit_updates_rx)
			break;
		usleep(1000);
	} while (hp_now_ms() < end);
	ck_assert_uint_eq(ci.credit_updates_rx, 1);
	ck_assert_uint_eq(ci.peer_buf_alloc, 100000);
	ck_assert_uint_eq(ci.peer_fwd_cnt, 0);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/*
 * Device credit: the host does not read, so the guest may send only the
 * device's buf_alloc (plus nothing); when the host reads, CREDIT_UPDATEs let
 * the rest through; fwd_cnt counts only bytes the host socket took.
 */
START_TEST(t_device_credit)
{
	struct fx_opts o = { .conn_buf_size = 65536 };
	struct sim_conn_info ci;
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd, sz = 4096;
	uint8_t *buf = calloc(1, 1 << 20);

	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
	/* send more than the host socket and device backlog can hold: it must stall */
	ck_assert_int_eq(sim_send(c, buf, 1 << 20, 300), -ETIMEDOUT);
	sim_conn_info(c, &ci);
	ck_assert_uint_eq(ci.peer_buf_alloc, 65536);
	ck_assert_uint_le(ci.tx_cnt - ci.peer_fwd_cnt, 65536);
	ck_assert_uint_lt(ci.tx_cnt, 1 << 20);
	/* everything the guest sent reaches the host, and credit reopens */
	{
		uint32_t sent = ci.tx_cnt;

		ck_assert_int_eq(hp_read_full(fd, buf, sent, FX_T), (ssize_t)sent);
		ck_assert_int_eq(sim_send(c, buf, 200000, FX_T), 200000);
		ck_assert_int_eq(hp_read_full(fd, buf, 200000, FX_T), 200000);
		sim_conn_info(c, &ci);
		ck_assert_uint_eq(ci.tx_cnt, sent + 200000);
	}
	free(buf);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* A stray RST is never answered; any other stray packet gets an RST. */
START_TEST(t_stray_packets)
{
	struct virtio_vsock_hdr h;
	struct sim_pkt p;
	struct fx fx;
	struct fx_opts o = { .drv.no_auto_rst = true };

	struct vsock_dev_counters k0, k1;

	fx_setup(&fx, &o);
	fx_counters(&fx, &k0);
	sim_hdr_init(fx.drv, &h, 1234, 4321, VIRTIO_VSOCK_TYPE_STREAM, VIRTIO_VSOCK_OP_RST);
	ck_assert_int_ge(sim_send_pkt(fx.drv, &h, NULL, 0, SIM_SHAPE_LINEAR, FX_T), 0);
	ck_assert_int_eq(sim_wait_tx_idle(fx.drv, FX_T), 0);
	ck_assert_int_eq(sim_pkt_recv(fx.drv, &p, 300), -ETIMEDOUT);

	static const uint16_t ops[] = { VIRTIO_VSOCK_OP_RW, VIRTIO_VSOCK_OP_SHUTDOWN,
					VIRTIO_VSOCK_OP_CREDIT_UPDATE,
					VIRTIO_VSOCK_OP_CREDIT_REQUEST, VIRTIO_VSOCK_OP_RESPONSE };
	for (unsigned int i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		sim_hdr_init(fx.drv, &h, 1234 + i, 4321, VIRTIO_VSOCK_TYPE_STREAM, ops[i]);
		h.buf_alloc = 65536;
		if (ops[i] == VIRTIO_VSOCK_OP_RW)
			h.len = 3;
		ck_assert_int_ge(sim_send_pkt(fx.drv, &h, "abc", h.len, SIM_SHAPE_HDR_SEP, FX_T),
				 0);
		ck_assert_msg(sim_pkt_recv(fx.drv, &p, FX_T) == 0, "no RST for stray op %u",
			      ops[i]);
		ck_assert_uint_eq(p.hdr.op, VIRTIO_VSOCK_OP_RST);
		ck_assert_uint_eq(p.hdr.dst_port, 1234 + i);
		ck_assert_uint_eq(p.hdr.src_port, 4321);
		ck_assert_uint_eq(p.hdr.len, 0);
		sim_pkt_free(&p);
	}
	/* 6 strays (5 answered with an RST), no connection reset, nothing dropped or malformed */
	fx_counters(&fx, &k1);
	ck_assert_uint_eq(k1.stray_pkts - k0.stray_pkts, 6);
	ck_assert_uint_eq(k1.conn_resets, k0.conn_resets);
	ck_assert_uint_eq(k1.dropped_pkts, k0.dropped_pkts);
	ck_assert_uint_eq(k1.malformed_pkts, k0.malformed_pkts);
	ck_assert_uint_eq(k1.tx_pkts - k0.tx_pkts, 6);
	fx_teardown(&fx);
}
END_TEST

/* A REQUEST for a connection that already exists does not disturb it. */
START_TEST(t_duplicate_request)
{
	struct virtio_vsock_hdr h;
	struct sim_conn_info ci;
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd;

	fx_setup(&fx, NULL);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	sim_conn_info(c, &ci);
	sim_hdr_init(fx.drv, &h, ci.local_port, ci.peer_port, VIRTIO_VSOCK_TYPE_STREAM,
		     VIRTIO_VSOCK_OP_REQUEST);
	h.buf_alloc = 256 * 1024;
	ck_assert_int_ge(sim_send_pkt(fx.drv, &h, NULL, 0, SIM_SHAPE_LINEAR, FX_T), 0);
	/*
	 * Either the connection goes on, or the device resets it cleanly. A
	 * CREDIT_REQUEST behind it tells which: CREDIT_UPDATE or RST.
	 */
	if (sim_credit_request(c) == 0) {
		int64_t end = hp_now_ms() + FX_T;

		do {
			sim_conn_info(c, &ci);
			if (ci.reset || ci.credit_updates_rx)
				break;
			usleep(1000);
		} while (hp_now_ms() < end);
		ck_assert(ci.reset || ci.credit_updates_rx);
	} else {
		sim_conn_info(c, &ci);
		ck_assert(ci.reset);
	}
	if (!ci.reset) {
		fx_xfer_g2h(fd, c, 50000, 1);
		fx_xfer_h2g(fd, c, 50000, 2);
	}
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/*
 * A configured conn_buf_size is the buf_alloc of both types (_i 0: STREAM,
 * 1: SEQPACKET). 1 MiB is 4 times the guest's own buffer (256 KiB): a Linux
 * guest sends at most min(ours, its own) unacknowledged
 * (virtio_transport_tx_buf_size(), as the simulated driver does), so the
 * device must tell the credit as that window fills, not ours. It used to
 * wait for half of its own 1 MiB, and the stream stopped after 256 KiB.
 */
START_TEST(t_conn_buf_size_set)
{
	struct fx_opts o = { .conn_buf_size = 1024 * 1024 };
	uint16_t type = _i ? VIRTIO_VSOCK_TYPE_SEQPACKET : VIRTIO_VSOCK_TYPE_STREAM;
	struct sim_conn_info ci;
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd;

	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, PORT, type, &c, &lfd);
	sim_conn_info(c, &ci);
	ck_assert_uint_eq(ci.peer_buf_alloc, 1024u * 1024u);
	if (type == VIRTIO_VSOCK_TYPE_STREAM) {
		fx_xfer_g2h(fd, c, 4 << 20, 5);
		fx_xfer_h2g(fd, c, 1 << 20, 6);
	}
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* A SEQPACKET connect to a host STREAM listener (and vice versa) is refused with RST. */
START_TEST(t_type_mismatch)
{
	struct sim_conn *c;
	struct fx fx;
	int lfd;

	fx_setup(&fx, NULL);
	lfd = hp_listen_port(fx.uds, PORT, 4, _i);
	ck_assert_int_eq(sim_connect(fx.drv, PORT,
				     _i ? VIRTIO_VSOCK_TYPE_STREAM : VIRTIO_VSOCK_TYPE_SEQPACKET,
				     FX_T, &c),
			 -ECONNRESET);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* SEQPACKET: message boundaries and EOM both ways, EOR passed as EOM. */
START_TEST(t_seqpacket)
{
	static const size_t sizes[] = { 1, 1000, 4096, 70000, 3 };
	struct sim_conn_info ci;
	struct sim_conn *c;
	struct fx fx;
	uint8_t *a = malloc(80000), *b = malloc(80000);
	uint64_t st = 7;
	uint32_t flags;
	int lfd, fd;
	unsigned int i;

	fx_setup(&fx, NULL);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_SEQPACKET, &c, &lfd);
	sim_conn_info(c, &ci);
	ck_assert_uint_eq(ci.peer_buf_alloc, 256u * 1024u); /* default conn_buf_size */
	for (i = 0; i < 5; i++) {
		hp_fill(&st, a, sizes[i]);
		ck_assert_int_eq(sim_send_msg(c, a, sizes[i], i & 1, FX_T), (ssize_t)sizes[i]);
		/* one host message per guest message */
		ck_assert_int_eq(recv(fd, b, 80000, 0), (ssize_t)sizes[i]);
		ck_assert_int_eq(memcmp(a, b, sizes[i]), 0);
	}
	st = 99;
	for (i = 0; i < 5; i++) {
		hp_fill(&st, a, sizes[i]);
		ck_assert_int_eq(send(fd, a, sizes[i], MSG_EOR), (ssize_t)sizes[i]);
	}
	st = 99;
	for (i = 0; i < 5; i++) {
		hp_fill(&st, a, sizes[i]);
		flags = 0;
		ck_assert_int_eq(sim_recv_msg(c, b, 80000, &flags, FX_T), (ssize_t)sizes[i]);
		ck_assert_int_eq(memcmp(a, b, sizes[i]), 0);
		ck_assert(flags & VIRTIO_VSOCK_SEQ_EOM);
	}
	free(a);
	free(b);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* Connection cap: beyond max_conns, RST (guest side) / no OK (host side). */
START_TEST(t_conn_cap)
{
	struct fx_opts o = { .max_conns = 4 };
	struct sim_conn *c[5];
	struct sim_listener *l;
	struct fx fx;
	int lfd, fds[5], i, hfd;

	fx_setup(&fx, &o);
	lfd = hp_listen_port(fx.uds, PORT, 16, 0);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(sim_connect(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c[i]),
				 0);
		fds[i] = hp_accept(lfd, FX_T);
		ck_assert_int_ge(fds[i], 0);
	}
	ck_assert_int_eq(sim_connect(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c[4]),
			 -ECONNRESET);
	ck_assert_int_eq(sim_listen(fx.drv, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	hfd = hp_connect(fx.uds, PORT + 1, NULL, FX_T);
	ck_assert_int_lt(hfd, 0);
	/* the existing connections still work */
	for (i = 0; i < 4; i++)
		fx_xfer_g2h(fds[i], c[i], 10000, i + 1);
	/* and a slot freed is usable again */
	sim_close(c[0], FX_T);
	close(fds[0]);
	FX_WAIT(&fx, conns_closed, 1, FX_T);
	ck_assert_int_eq(sim_connect(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c[0]), 0);
	fds[0] = hp_accept(lfd, FX_T);
	ck_assert_int_ge(fds[0], 0);
	fx_xfer_h2g(fds[0], c[0], 10000, 9);
	for (i = 0; i < 4; i++) {
		close(fds[i]);
		sim_close(c[i], FX_T);
	}
	sim_unlisten(l);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* Two devices in one process, moving data at the same time. */
START_TEST(t_two_devices)
{
	struct fx a, b;
	struct sim_conn *ca, *cb;
	struct fx_opts oa = { .drv.guest_cid = 3 }, ob = { .drv.guest_cid = 4, .mrg = true };
	struct vsock_dev_counters ka, kb;
	int la, lb, fa, fb;

	fx_setup(&a, &oa);
	fx_setup(&b, &ob);
	fa = fx_guest_connect(&a, PORT, VIRTIO_VSOCK_TYPE_STREAM, &ca, &la);
	fb = fx_guest_connect(&b, PORT, VIRTIO_VSOCK_TYPE_STREAM, &cb, &lb);
	fx_xfer_g2h(fa, ca, 300000, 1);
	fx_xfer_h2g(fb, cb, 300000, 2);
	fx_xfer_h2g(fa, ca, 100000, 3);
	fx_xfer_g2h(fb, cb, 100000, 4);
	FX_WAIT_EQ(&a, tx_bytes, 300000);
	FX_WAIT_EQ(&a, rx_bytes, 100000);
	FX_WAIT_EQ(&b, tx_bytes, 100000);
	FX_WAIT_EQ(&b, rx_bytes, 300000);
	fx_counters(&a, &ka);
	fx_counters(&b, &kb);
	ck_assert_uint_eq(ka.malformed_pkts + kb.malformed_pkts, 0);
	close(fa);
	close(fb);
	sim_close(ca, FX_T);
	sim_close(cb, FX_T);
	close(la);
	close(lb);
	fx_teardown(&b);
	fx_teardown(&a);
}
END_TEST

/* Interrupts through the notify callback instead of call eventfds. */
START_TEST(t_notify_callback)
{
	struct fx_opts o = { .drv.notify_cb = true };
	struct sim_drv_stats st;
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd;

	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	fx_xfer_h2g(fd, c, 500000, 5);
	fx_xfer_g2h(fd, c, 500000, 6);
	sim_drv_get_stats(fx.drv, &st);
	ck_assert_uint_gt(st.irqs_per_q[VSOCK_VQ_RX], 0);
	/*
	 * Every notify() call is one interrupt the driver takes: once quiet,
	 * irqs_sent equals what the driver saw, and the device consumed at
	 * most the kicks the driver sent (eventfds coalesce).
	 */
	{
		struct vsock_dev_counters k;
		int64_t end = hp_now_ms() + FX_T;

		do {
			fx_counters(&fx, &k);
			sim_drv_get_stats(fx.drv, &st);
			if (k.irqs_sent == st.irqs)
				break;
			usleep(1000);
		} while (hp_now_ms() < end);
		ck_assert_uint_eq(k.irqs_sent, st.irqs);
		ck_assert_uint_le(k.kicks, st.kicks_sent);
		ck_assert_uint_gt(k.kicks, 0);
	}
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/*
 * EVENT_IDX from the driver side: with used_event left behind the device
 * must not interrupt on RX (and count the suppressed ones); without
 * EVENT_IDX the NO_INTERRUPT flag does the same.
 */
START_TEST(t_irq_suppression)
{
	struct fx_opts o = { 0 };
	struct vsock_dev_counters k0, k1;
	struct sim_drv_stats s0, s1;
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd;

	if (_i == 1)
		o.drv.features = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_VSOCK_F_STREAM) |
				 (1ull << VIRTIO_RING_F_INDIRECT_DESC);
	fx_setup(&fx, &o);
	ck_assert_int_eq(!!(sim_drv_features(fx.drv) & (1ull << VIRTIO_RING_F_EVENT_IDX)), _i == 0);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	sim_vq_suppress_irq(fx.drv, VSOCK_VQ_RX, true);
	usleep(20000); /* let an interrupt already in flight land before the baseline */
	fx_counters(&fx, &k0);
	sim_drv_get_stats(fx.drv, &s0);
	fx_xfer_h2g(fd, c, 1 << 20, 8);
	sim_drv_get_stats(fx.drv, &s1);
	fx_counters(&fx, &k1);
	ck_assert_uint_eq(s1.irqs_per_q[VSOCK_VQ_RX], s0.irqs_per_q[VSOCK_VQ_RX]);
	ck_assert_uint_gt(k1.irqs_suppressed, k0.irqs_suppressed);
	sim_vq_suppress_irq(fx.drv, VSOCK_VQ_RX, false);
	fx_xfer_h2g(fd, c, 100000, 9);
	sim_drv_get_stats(fx.drv, &s1);
	ck_assert_uint_gt(s1.irqs_per_q[VSOCK_VQ_RX], s0.irqs_per_q[VSOCK_VQ_RX]);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* Two memory regions: adjacent (buffers straddle, different HVAs) or with a hole. */
START_TEST(t_two_regions)
{
	struct fx_opts o = { .drv.nregions = 2, .drv.region_gap = _i ? (1ull << 30) : 0 };
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd;
	enum sim_shape s;

	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	for (s = 0; s < SIM_SHAPE_NUM; s++) {
		sim_drv_set_tx_shape(fx.drv, s);
		fx_xfer_g2h(fd, c, 3 << 20, 10 + s);
	}
	fx_xfer_h2g(fd, c, 3 << 20, 20);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_basic");

	FX_ADD(s, t_create_args, 30);
	FX_ADD(s, t_stale_socket_file, 30);
	FX_ADD(s, t_features_config, 30);
	FX_ADD(s, t_guest_connect, 30);
	FX_ADD(s, t_host_connect, 30);
	FX_ADD(s, t_missing_listener, 30);
	FX_ADD(s, t_credit_request, 30);
	FX_ADD(s, t_device_credit, 30);
	FX_ADD(s, t_stray_packets, 30);
	FX_ADD(s, t_duplicate_request, 30);
	FX_ADD_LOOP(s, t_type_mismatch, 2, 30);
	FX_ADD(s, t_seqpacket, 30);
	FX_ADD_LOOP(s, t_conn_buf_size_set, 2, 30);
	FX_ADD(s, t_conn_cap, 30);
	FX_ADD(s, t_two_devices, 30);
	FX_ADD(s, t_notify_callback, 30);
	FX_ADD_LOOP(s, t_irq_suppression, 2, 30);
	FX_ADD_LOOP(s, t_two_regions, 2, 30);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
