// SPDX-License-Identifier: MIT
/*
 * Device tests, counters as error signals (issue 22, finding 10): each
 * counter of struct vsock_dev_counters means one thing, so that a clean
 * open/close loop leaves conn_resets, dropped_pkts and malformed_pkts at 0
 * and conns_open/host_fds back at 0, while a real reset, a refusal and a
 * stray packet each show in their own counter.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 7000
#define LOOPS 40

/*
 * Clean open/close loops, guest- and host-initiated, data both ways, each
 * side closing first in turn (the close handshake: SHUTDOWN RCV|SEND one
 * way, RST the other). _i = 1: with MRG_RXBUF and 2 pumps.
 */
START_TEST(t_clean_loop)
{
	struct fx_opts o = { .mrg = _i == 1, .rx_threads = _i == 1 ? 2 : 1 };
	struct vsock_dev_counters k;
	struct sim_listener *l;
	struct sim_conn *c;
	int lfd, fd, i, open_max = 0;
	struct fx fx;
	char b[16];

	fx_setup(&fx, &o);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	lfd = hp_listen_port(fx.uds, PORT + 1, 16, 0);
	ck_assert_int_ge(lfd, 0);
	for (i = 0; i < 4 * LOOPS; i++) {
		if (i & 2) {
			ck_assert_int_eq(
				sim_connect(fx.drv, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c),
				0);
			fd = hp_accept(lfd, FX_T);
			ck_assert_int_ge(fd, 0);
		} else {
			fd = fx_host_connect(&fx, l, PORT, &c, NULL);
		}
		ck_assert_int_eq(sim_send(c, "guest", 5, FX_T), 5);
		ck_assert_int_eq(hp_read_full(fd, b, 5, FX_T), 5);
		ck_assert_int_eq(hp_write_all(fd, "host", 4, FX_T), 4);
		ck_assert_int_eq(sim_recv(c, b, sizeof(b), FX_T), 4);
		fx_counters(&fx, &k);
		open_max = (int)k.conns_open > open_max ? (int)k.conns_open : open_max;
		fx_close_both(fd, c, i & 1);
	}
	fx_wait_quiet(&fx);
	fx_counters(&fx, &k);
	fprintf(stderr,
		"t_clean_loop(%d): opened %llu closed %llu open %llu (at most %d) resets %llu "
		"dropped %llu refused %llu stray %llu\n",
		_i, (unsigned long long)k.conns_opened, (unsigned long long)k.conns_closed,
		(unsigned long long)k.conns_open, open_max, (unsigned long long)k.conn_resets,
		(unsigned long long)k.dropped_pkts, (unsigned long long)k.conns_refused,
		(unsigned long long)k.stray_pkts);
	ck_assert_uint_eq(k.conns_opened, 4 * LOOPS);
	ck_assert_uint_eq(k.conns_closed, 4 * LOOPS);
	ck_assert_uint_eq(k.conns_open, 0);
	ck_assert_int_le(open_max, 2);
	ck_assert_uint_eq(k.conn_resets, 0);
	ck_assert_uint_eq(k.dropped_pkts, 0);
	ck_assert_uint_eq(k.malformed_pkts, 0);
	ck_assert_uint_eq(k.conns_refused, 0);
	ck_assert_uint_eq(k.stray_pkts, 0);
	close(lfd);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/* Wait until counter @field is @v (the device counts asynchronously). */
#define WAIT_EQ(fx, field, v) FX_WAIT_EQ((fx), field, (v))

/*
 * What is not clean shows, each in its counter: a guest RST out of the
 * blue (conn_resets), a host that goes away while the guest sends
 * (conn_resets), a REQUEST to a port nobody listens on and a CONNECT the
 * guest refuses (conns_refused), a packet of no connection (stray_pkts);
 * and conns_open counts a connection until its host fd is closed.
 */
START_TEST(t_errors_counted)
{
	struct fx_opts o = { .drv.no_auto_rst = true };
	struct vsock_dev_counters k;
	struct virtio_vsock_hdr h;
	struct sim_conn *c;
	struct sim_pkt p;
	int lfd, fd;
	struct fx fx;
	ssize_t r;

	fx_setup(&fx, &o);
	/* an open connection is open */
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	fx_counters(&fx, &k);
	ck_assert_uint_eq(k.conns_open, 1);
	ck_assert_uint_eq(k.host_fds, 1);
	/* abortive guest close: a reset */
	sim_abort(c);
	ck_assert_int_eq(hp_wait_eof(fd, FX_T), 0);
	WAIT_EQ(&fx, conn_resets, 1);
	close(fd);
	fx_wait_quiet(&fx);

	/* the host goes away while the guest sends: a reset */
	ck_assert_int_eq(sim_connect(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c), 0);
	fd = hp_accept(lfd, FX_T);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(shutdown(fd, SHUT_RD), 0); /* the device's writes get EPIPE */
	r = sim_send(c, "lost", 4, FX_T);
	ck_assert_int_eq(r, 4);
	ck_assert_int_eq(sim_wait_reset(c, FX_T), 0);
	WAIT_EQ(&fx, conn_resets, 2);
	sim_abort(c);
	close(fd);
	fx_wait_quiet(&fx);

	/* refusals are not resets */
	ck_assert_int_eq(sim_connect(fx.drv, PORT + 9, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c),
			 -ECONNRESET);
	WAIT_EQ(&fx, conns_refused, 1);
	sim_hdr_init(fx.drv, &h, 5555, PORT + 9, VIRTIO_VSOCK_TYPE_STREAM,
		     VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	ck_assert_int_ge(sim_send_pkt(fx.drv, &h, NULL, 0, SIM_SHAPE_LINEAR, FX_T), 0);
	WAIT_EQ(&fx, stray_pkts, 1);
	ck_assert_int_eq(sim_pkt_recv(fx.drv, &p, FX_T), 0); /* its RST */
	ck_assert_uint_eq(p.hdr.op, VIRTIO_VSOCK_OP_RST);
	sim_pkt_free(&p);
	ck_assert_int_eq(hp_connect(fx.uds, PORT + 9, NULL, FX_T), -ECONNREFUSED);
	ck_assert_int_eq(sim_pkt_recv(fx.drv, &p, FX_T), 0); /* its REQUEST; we answer RST */
	ck_assert_uint_eq(p.hdr.op, VIRTIO_VSOCK_OP_REQUEST);
	sim_pkt_free(&p);
	WAIT_EQ(&fx, conns_refused, 2);
	fx_counters(&fx, &k);
	ck_assert_uint_eq(k.conn_resets, 2);
	ck_assert_uint_eq(k.dropped_pkts, 0);
	ck_assert_uint_eq(k.conns_opened, 3); /* the refused CONNECT was one while it waited */
	fx_wait_quiet(&fx);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_counters");

	FX_ADD_LOOP(s, t_clean_loop, 2, 60);
	FX_ADD(s, t_errors_counted, 30);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
