// SPDX-License-Identifier: MIT
/*
 * Device tests, host clients as people use them (issue 22, findings 8 and 9):
 *
 *   one-shot senders   "CONNECT <port>\n" and data, then shutdown(SHUT_WR)
 *                      or close, with or without reading "OK" (or leaving
 *                      it unread): the guest gets every byte, then EOF
 *                      (not an RST)
 *   churn              many sequential host connections less than 250 ms
 *                      apart: each closed connection gives its fd back when
 *                      it closes, the process's fd count stays flat
 *   deadlines          a CONNECT the guest never answers is closed after
 *                      2 s while other clients keep arriving every 100 ms
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 6003
#define CONNECT_TIMEOUT_MS 2000 /* DEV_CONNECT_TIMEOUT_MS */

enum oneshot_mode {
	OS_SHUT_WR_READ_OK, /* shutdown(SHUT_WR), read "OK", wait for EOF, close */
	/*
	 * shutdown(SHUT_WR), wait until "OK" is there, close without reading
	 * it: with the guest's credit at 4 KiB most of the data is still in
	 * the device's socket then, and its reads end in ECONNRESET.
	 */
	OS_OK_UNREAD,
	OS_SHUT_WR_CLOSE, /* shutdown(SHUT_WR), close without reading "OK" */
	OS_CLOSE, /* close right after the write */
	OS_CLOSE_BEFORE_START, /* the same while the device is not started yet (lobby) */
	OS_MODES
};

static const size_t oneshot_len[] = { 5, 4096, 65536 };
#define N_LEN ((int)(sizeof(oneshot_len) / sizeof(oneshot_len[0])))

/*
 * A one-shot sender (socat -u FILE UNIX-CONNECT:uds): "CONNECT 6003\n" and
 * the payload in one write, then it stops writing or goes away. The guest
 * accepts, reads all of it, then EOF; no connection is counted as reset.
 * _i: mode x payload length.
 */
START_TEST(t_oneshot_sender)
{
	enum oneshot_mode mode = (enum oneshot_mode)(_i / N_LEN);
	size_t len = oneshot_len[_i % N_LEN], hdr, got = 0;
	struct fx_opts o = { .no_attach = mode == OS_CLOSE_BEFORE_START,
			     .drv.buf_alloc = mode == OS_OK_UNREAD ? 4096 : 0 };
	struct vsock_dev_counters k;
	struct sim_listener *l;
	struct sim_conn *c;
	uint8_t *msg, *buf;
	uint64_t st = 1000 + (uint64_t)_i;
	char line[64];
	struct fx fx;
	ssize_t r;
	int fd;

	msg = malloc(len + 32);
	buf = malloc(65536);
	ck_assert_ptr_nonnull(msg);
	ck_assert_ptr_nonnull(buf);
	hdr = (size_t)snprintf((char *)msg, 32, "CONNECT %u\n", PORT);
	hp_fill(&st, msg + hdr, len);

	fx_setup(&fx, &o);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	fd = hp_connect_raw(fx.uds);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(hp_write_all(fd, msg, hdr + len, FX_T), (ssize_t)(hdr + len));
	if (mode == OS_SHUT_WR_READ_OK || mode == OS_OK_UNREAD || mode == OS_SHUT_WR_CLOSE)
		ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	if (mode == OS_OK_UNREAD) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		ck_assert_int_eq(poll(&pf, 1, FX_T), 1); /* "OK" came */
	}
	if (mode != OS_SHUT_WR_READ_OK) {
		close(fd);
		fd = -1;
	}
	if (mode == OS_CLOSE_BEFORE_START)
		ck_assert_int_eq(sim_drv_attach(fx.drv, fx.dev), 0);
	ck_assert_int_eq(sim_accept(l, FX_T, &c), 0);
	if (fd >= 0) {
		ck_assert_int_gt(hp_read_line(fd, line, sizeof(line), FX_T), 3);
		ck_assert_int_eq(strncmp(line, "OK ", 3), 0);
	}
	while (got < len) {
		r = sim_recv(c, buf, 65536, FX_T);
		ck_assert_msg(r > 0, "mode %d, %zu bytes: sim_recv %zd after %zu bytes", mode, len,
			      r, got);
		ck_assert_uint_le(got + (size_t)r, len);
		ck_assert_int_eq(memcmp(buf, msg + hdr + got, (size_t)r), 0);
		got += (size_t)r;
	}
	ck_assert_int_eq(sim_recv(c, buf, 65536, FX_T), 0); /* then EOF */
	ck_assert_int_eq(sim_close(c, FX_T), 0);
	if (fd >= 0) {
		ck_assert_int_eq(hp_wait_eof(fd, FX_T), 0);
		close(fd);
	}
	fx_wait_quiet(&fx);
	fx_counters(&fx, &k);
	ck_assert_uint_eq(k.rx_bytes, len);
	ck_assert_uint_eq(k.conn_resets, 0);
	ck_assert_uint_eq(k.dropped_pkts, 0);
	sim_unlisten(l);
	fx_teardown(&fx);
	free(msg);
	free(buf);
}
END_TEST

/*
 * Churn: 300 host connections one after the other, as fast as they go
 * (well under 250 ms apart), each moving a few bytes both ways and closed
 * by one side or the other. A closed connection's fd is released when it
 * closes: the process never holds more than a few fds above its base.
 */
START_TEST(t_churn_fds)
{
	struct vsock_dev_counters k0, k1;
	struct sim_listener *l;
	struct sim_conn *c;
	int fd, base, i, most = 0, n;
	char b[8];
	struct fx fx;

	fx_setup(&fx, NULL);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	fx_counters(&fx, &k0);
	base = fx_count_fds();
	for (i = 0; i < 300; i++) {
		fd = fx_host_connect(&fx, l, PORT, &c, NULL);
		ck_assert_int_eq(hp_write_all(fd, "ping", 4, FX_T), 4);
		ck_assert_int_eq(sim_recv(c, b, sizeof(b), FX_T), 4);
		ck_assert_int_eq(sim_send(c, "pong", 4, FX_T), 4);
		ck_assert_int_eq(hp_read_full(fd, b, 4, FX_T), 4);
		fx_close_both(fd, c, i & 1);
		n = fx_count_fds();
		most = n > most ? n : most;
		/* a few may still be on their way out (the pump retires them) */
		ck_assert_msg(n <= base + 8, "connection %d: %d fds, base %d", i, n, base);
	}
	fx_wait_quiet(&fx);
	ck_assert_int_eq(fx_wait_fds(base, FX_T), base);
	fx_counters(&fx, &k1);
	fprintf(stderr, "t_churn_fds: 300 connections, at most %d fds above the base %d\n",
		most - base, base);
	ck_assert_uint_eq(k1.conns_opened - k0.conns_opened, 300);
	ck_assert_uint_eq(k1.conns_closed - k0.conns_closed, 300);
	ck_assert_uint_eq(k1.conn_resets, k0.conn_resets);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

struct eof_watch {
	int fd;
	int64_t at; /* hp_now_ms() when the device closed fd; -1: not within the wait */
	int rc;
	pthread_t t;
	atomic_bool done;
};

/* Wait for the device to close w->fd (no data before), and note when. */
static void *eof_watch_main(void *arg)
{
	struct eof_watch *w = arg;

	w->rc = hp_wait_eof(w->fd, 4 * CONNECT_TIMEOUT_MS);
	w->at = w->rc == 0 || w->rc == -ECONNRESET ? hp_now_ms() : -1;
	w->done = true;
	return NULL;
}

/*
 * Deadlines under steady arrivals: a CONNECT to a guest port where the
 * guest never answers (no listener, no RST) is closed 2 s after the
 * device sent its REQUEST, while another host client connects, is served
 * and closes every 100 ms all along. A thread of its own waits for that
 * close, so a slow arrival does not delay noticing it.
 */
START_TEST(t_deadline_under_arrivals)
{
	struct fx_opts o = { .drv.no_auto_rst = true };
	struct eof_watch w = { .at = -1 };
	struct sim_listener *l;
	struct sim_conn *c;
	struct sim_pkt p;
	int64_t t0, dt;
	struct fx fx;
	int fd, served = 0;

	fx_setup(&fx, &o);
	ck_assert_int_eq(sim_listen(fx.drv, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	w.fd = hp_connect_raw(fx.uds);
	ck_assert_int_ge(w.fd, 0);
	ck_assert_int_eq(hp_write_all(w.fd, "CONNECT 6003\n", 13, FX_T), 13);
	ck_assert_int_eq(sim_pkt_recv(fx.drv, &p, FX_T), 0); /* the REQUEST nobody answers */
	t0 = hp_now_ms();
	ck_assert_uint_eq(p.hdr.op, VIRTIO_VSOCK_OP_REQUEST);
	ck_assert_uint_eq(p.hdr.dst_port, PORT);
	sim_pkt_free(&p);
	ck_assert_int_eq(pthread_create(&w.t, NULL, eof_watch_main, &w), 0);
	while (!w.done && hp_now_ms() - t0 < 3 * CONNECT_TIMEOUT_MS) {
		int64_t next = hp_now_ms() + 100;

		fd = fx_host_connect(&fx, l, PORT + 1, &c, NULL);
		fx_close_both(fd, c, true);
		served++;
		while (hp_now_ms() < next && !w.done)
			usleep(1000);
	}
	pthread_join(w.t, NULL);
	dt = w.at < 0 ? -1 : w.at - t0;
	fprintf(stderr, "t_deadline_under_arrivals: closed after %lld ms, %d clients served\n",
		(long long)dt, served);
	ck_assert_msg(dt >= 0,
		      "an unanswered CONNECT still open after %d ms (%d clients served): %d",
		      4 * CONNECT_TIMEOUT_MS, served, w.rc);
	ck_assert_msg(dt >= CONNECT_TIMEOUT_MS - 100 && dt <= CONNECT_TIMEOUT_MS + 750,
		      "closed after %lld ms", (long long)dt);
	ck_assert_int_ge(served, 10);
	/* the guest got the RST for it */
	ck_assert_int_eq(sim_pkt_recv(fx.drv, &p, FX_T), 0);
	ck_assert_uint_eq(p.hdr.op, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(p.hdr.dst_port, PORT);
	sim_pkt_free(&p);
	close(w.fd);
	fx_wait_quiet(&fx);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_hostside");

	FX_ADD_LOOP(s, t_oneshot_sender, OS_MODES * N_LEN, 30);
	FX_ADD(s, t_churn_fds, 60);
	FX_ADD(s, t_deadline_under_arrivals, 30);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
