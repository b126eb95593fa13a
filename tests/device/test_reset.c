// SPDX-License-Identifier: MIT
/*
 * Device tests, life cycle: device reset mid-transfer (every host fd closed,
 * the device usable again), reset with pending CONNECTs, stop/start keeping
 * connections, and an idle device with open connections in awkward states
 * using ~0 CPU.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 9000

/* Read and drop until EOF or reset. Return: 0; -ETIMEDOUT. */
static int drain_to_eof(int fd)
{
	char buf[65536];

	for (;;) {
		ssize_t r = hp_read_full(fd, buf, sizeof(buf), FX_T);

		if (r == -ETIMEDOUT)
			return r;
		if (r < (ssize_t)sizeof(buf))
			return 0; /* EOF (short read) or an error such as ECONNRESET */
	}
}

/*
 * Reset while 4 connections move data both ways, with a live but never
 * accepted connection and a half-written CONNECT pending: every host fd is
 * closed, nothing leaks, and the device works again after re-attach.
 */
START_TEST(t_reset_mid_transfer)
{
	struct fx_opts o = { .mrg = _i };
	struct fx_pair p[4];
	struct sim_listener *l, *l2;
	struct sim_conn *c;
	struct fx fx;
	int lfd, i, base, pend, queued;
	uint32_t hp;

	fx_setup(&fx, &o);
	base = fx_count_fds();
	lfd = hp_listen_port(fx.uds, PORT, 8, 0);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 8, &l), 0);
	ck_assert_int_eq(sim_listen(fx.drv, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, 1, &l2), 0);
	for (i = 0; i < 4; i++) {
		if (i & 1) {
			p[i].fd = fx_host_connect(&fx, l, PORT, &p[i].c, NULL);
		} else {
			ck_assert_int_eq(
				sim_connect(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &p[i].c),
				0);
			p[i].fd = hp_accept(lfd, FX_T);
			ck_assert_int_ge(p[i].fd, 0);
		}
	}
	queued = hp_connect(fx.uds, PORT + 1, &hp, FX_T); /* never accepted by the guest */
	ck_assert_int_ge(queued, 0);
	pend = hp_connect_raw(fx.uds);
	ck_assert_int_ge(pend, 0);
	ck_assert_int_eq(hp_write_all(pend, "CONNECT 90", 10, FX_T), 10);

	for (i = 0; i < 4; i++)
		fx_pair_start(&fx, &p[i], 256u << 20, 256u << 20, 100 + 2 * i);
	FX_WAIT(&fx, tx_bytes, 4u << 20, FX_T);
	FX_WAIT(&fx, rx_bytes, 4u << 20, FX_T);

	ck_assert_int_eq(sim_drv_reset(fx.drv), 0);
	FX_WAIT_EQ(&fx, dev_resets, 1);
	/* every host socket of the device sees EOF or a reset */
	for (i = 0; i < 4; i++)
		ck_assert_msg(drain_to_eof(p[i].fd) == 0, "conn %d: host fd still open", i);
	ck_assert_int_eq(drain_to_eof(queued), 0);
	ck_assert_int_eq(drain_to_eof(pend), 0);
	/* every thread ends, each with an error rather than its full length */
	for (i = 0; i < 4; i++) {
		int k;

		shutdown(p[i].fd, SHUT_RDWR);
		for (k = 0; k < 4; k++)
			pthread_join(p[i].j[k].t, NULL);
		ck_assert(p[i].j[0].rc < 0 || p[i].j[3].rc < 0);
	}
	for (i = 0; i < 4; i++) {
		close(p[i].fd);
		sim_abort(p[i].c);
	}
	close(queued);
	close(pend);
	close(lfd);
	sim_unlisten(l2);
	/* the device closed every fd it had for those connections */
	ck_assert_int_eq(fx_wait_fds(base, FX_T), base);

	/* usable again: new connections both ways */
	ck_assert_int_eq(sim_drv_attach(fx.drv, fx.dev), 0);
	{
		int fd, lfd2;

		fd = fx_host_connect(&fx, l, PORT, &c, NULL);
		fx_xfer_h2g(fd, c, 1 << 20, 7);
		fx_xfer_g2h(fd, c, 1 << 20, 8);
		close(fd);
		sim_close(c, FX_T);
		fd = fx_guest_connect(&fx, PORT + 2, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd2);
		fx_xfer_h2g(fd, c, 1 << 20, 9);
		fx_xfer_g2h(fd, c, 1 << 20, 10);
		close(fd);
		sim_close(c, FX_T);
		close(lfd2);
	}
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/*
 * Reset with a CONNECT waiting for a device that never started: that host
 * socket is closed, and counted as refused (closed without "OK"; skiff's
 * guests reset the device at probe, so early host clients end this way).
 */
START_TEST(t_reset_before_start)
{
	struct fx_opts o = { .no_attach = true };
	struct fx fx;
	int fd;

	fx_setup(&fx, &o);
	fd = hp_connect_raw(fx.uds);
	ck_assert_int_eq(hp_write_all(fd, "CONNECT 9000\n", 13, FX_T), 13);
	ck_assert(hp_quiet(fd, 50));
	ck_assert_int_eq(vsock_dev_reset(fx.dev), 0);
	ck_assert_int_eq(drain_to_eof(fd), 0);
	close(fd);
	FX_WAIT_EQ(&fx, conns_refused, 1);
	/* the listener stays: a new host client can still connect */
	fd = hp_connect_raw(fx.uds);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fx_teardown(&fx);
}
END_TEST

/* Reset twice in a row, then destroy with live connections: no hang, no leak. */
START_TEST(t_reset_repeat)
{
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd, k;

	fx_setup(&fx, NULL);
	for (k = 0; k < 3; k++) {
		fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
		fx_xfer_g2h(fd, c, 100000, k);
		ck_assert_int_eq(sim_drv_reset(fx.drv), 0);
		ck_assert_int_eq(drain_to_eof(fd), 0);
		ck_assert_int_eq(sim_recv(c, &fd, 1, 0), -ECONNRESET);
		sim_abort(c);
		close(fd);
		close(lfd);
		ck_assert_int_eq(sim_drv_attach(fx.drv, fx.dev), 0);
	}
	FX_WAIT_EQ(&fx, dev_resets, 3);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	fx_xfer_h2g(fd, c, 100000, 9);
	/* destroy the device with the connection open: the host socket is closed */
	vsock_dev_destroy(fx.dev);
	fx.dev = NULL;
	ck_assert_int_eq(drain_to_eof(fd), 0);
	sim_abort(c);
	close(fd);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

static uint64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Context switches of the whole process (all threads): each is a wake-up. */
static uint64_t ctx_switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

/* Wait until the device's counters stop moving for 200 ms (bounded). */
static void settle(struct fx *fx, struct vsock_dev_counters *out)
{
	int64_t end = hp_now_ms() + FX_T, stable_since = hp_now_ms();
	struct vsock_dev_counters a, b;

	fx_counters(fx, &a);
	while (hp_now_ms() < end) {
		usleep(20000);
		fx_counters(fx, &b);
		if (memcmp(&a, &b, sizeof(a))) {
			a = b;
			stable_since = hp_now_ms();
		} else if (hp_now_ms() - stable_since >= 200) {
			break;
		}
	}
	*out = a;
}

/*
 * Idle device, connections open in states that tempt a busy loop: idle both
 * ways, host half-closed (EOF pending), host fully closed with the guest
 * still open, guest out of credit with host data waiting, host not reading
 * with the device holding guest data, a half-written CONNECT. Over 1 s the
 * process uses ~0 CPU and the device does nothing.
 */
START_TEST(t_idle_cpu)
{
	struct fx_opts o = { .drv.buf_alloc = 65536, .conn_buf_size = 65536, .rx_threads = 2 };
	struct vsock_dev_counters k0, k1;
	struct sim_conn *c[6];
	struct fx fx;
	uint8_t *junk = calloc(1, 1 << 20);
	int lfd, fd[6], pend, i, sz = 4096;
	uint64_t t0, used, cs0, cs;
	int64_t w0, wall;

	fx_setup(&fx, &o);
	lfd = hp_listen_port(fx.uds, PORT, 8, 0);
	for (i = 0; i < 6; i++) {
		ck_assert_int_eq(sim_connect(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c[i]),
				 0);
		fd[i] = hp_accept(lfd, FX_T);
		ck_assert_int_ge(fd[i], 0);
	}
	/* 0, 1: idle. 2: host half-closed. 3: host closed. */
	shutdown(fd[2], SHUT_WR);
	close(fd[3]);
	/* 4: host wrote more than the guest's credit; the guest does not read */
	ck_assert_int_eq(hp_write_all(fd[4], junk, 100000, FX_T), 100000);
	/* 5: the guest sent more than the host socket holds; the host does not read */
	setsockopt(fd[5], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	ck_assert_int_eq(sim_send(c[5], junk, 1 << 20, 300), -ETIMEDOUT);
	pend = hp_connect_raw(fx.uds);
	ck_assert_int_eq(hp_write_all(pend, "CONNECT 9", 9, FX_T), 9);
	ck_assert_int_eq(sim_wait_peer_shutdown(c[2], VIRTIO_VSOCK_SHUTDOWN_SEND, FX_T), 0);

	settle(&fx, &k0);
	t0 = cpu_us();
	cs0 = ctx_switches();
	w0 = hp_now_ms();
	usleep(1000000);
	used = cpu_us() - t0;
	cs = ctx_switches() - cs0;
	wall = hp_now_ms() - w0;
	fx_counters(&fx, &k1);
	ck_assert_msg(used < 20000, "idle: %llu us of CPU in %lld ms", (unsigned long long)used,
		      (long long)wall);
	/* no periodic polling either: a 1 ms poll loop would be ~1000 wake-ups */
	ck_assert_msg(cs < 50, "idle: %llu context switches in %lld ms", (unsigned long long)cs,
		      (long long)wall);
	ck_assert_uint_eq(k1.kicks, k0.kicks);
	ck_assert_uint_eq(k1.irqs_sent, k0.irqs_sent);
	ck_assert_uint_eq(k1.rx_pkts, k0.rx_pkts);
	ck_assert_uint_eq(k1.tx_pkts, k0.tx_pkts);

	/* and everything still moves afterwards */
	fx_xfer_g2h(fd[0], c[0], 200000, 1);
	fx_xfer_h2g(fd[1], c[1], 200000, 2);
	for (i = 0; i < 6; i++) {
		if (i != 3)
			close(fd[i]);
		sim_abort(c[i]);
	}
	close(pend);
	close(lfd);
	free(junk);
	fx_teardown(&fx);
}
END_TEST

/* vsock_dev_stop()/start keeps connections (vhost-user GET_VRING_BASE path). */
START_TEST(t_stop_start)
{
	uint16_t last[VSOCK_VQ_NUM];
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd;

	fx_setup(&fx, NULL);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	fx_xfer_g2h(fd, c, 100000, 1);
	ck_assert_int_eq(vsock_dev_stop(fx.dev, last), 0);
	ck_assert_int_eq(vsock_dev_stop(fx.dev, NULL), 0);
	/* host data waits while stopped */
	ck_assert_int_eq(hp_write_all(fd, "abc", 3, FX_T), 3);
	{
		char b[4];

		ck_assert_int_eq(sim_recv(c, b, sizeof(b), 100), -ETIMEDOUT);
	}
	ck_assert_int_eq(vsock_dev_start(fx.dev), 0);
	{
		char b[4];

		ck_assert_int_eq(sim_recv(c, b, 3, FX_T), 3);
		ck_assert_int_eq(memcmp(b, "abc", 3), 0);
	}
	fx_xfer_h2g(fd, c, 100000, 2);
	fx_xfer_g2h(fd, c, 100000, 3);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* Threads created through vsock_dev_config.spawn, per enum vsock_thread_kind. */
struct spawn_count {
	unsigned int n[3];
};

static int count_spawn(void *opaque, enum vsock_thread_kind kind, pthread_t *thread,
		       void *(*fn)(void *), void *arg)
{
	struct spawn_count *sc = opaque;

	ck_assert_uint_lt((unsigned int)kind, 3);
	__atomic_add_fetch(&sc->n[kind], 1, __ATOMIC_RELAXED);
	return pthread_create(thread, NULL, fn, arg);
}

static unsigned int spawned(struct spawn_count *sc, enum vsock_thread_kind kind)
{
	return __atomic_load_n(&sc->n[kind], __ATOMIC_RELAXED);
}

/*
 * Every device thread comes from the spawn hook, the lobby included (skiff's
 * seccomp sandbox relies on it: a thread made by a filtered vCPU or vu-main
 * thread would inherit a filter without clone): created with the device,
 * again after each stop and reset; the control thread at each start. With
 * the control work on pump 0 (VSOCK_CTL_ON_PUMP0), pump 0 is that control
 * thread (the sandbox gives it the control thread's filter, a superset of a
 * pump's) and only the other pumps are spawned as pumps.
 */
static void spawn_hook(unsigned int ctl_thread)
{
	struct fx_opts o = { .rx_threads = 2, .ctl_thread = ctl_thread };
	unsigned int pumps = ctl_thread == VSOCK_CTL_ON_PUMP0 ? 1 : 2;
	struct spawn_count sc = { { 0 } };
	struct fx fx;

	o.spawn = count_spawn;
	o.spawn_opaque = &sc;
	fx_setup(&fx, &o); /* create (lobby), then the driver starts it */
	ck_assert_uint_eq(spawned(&sc, VSOCK_THREAD_LOBBY), 1);
	ck_assert_uint_eq(spawned(&sc, VSOCK_THREAD_CTL), 1);
	ck_assert_uint_eq(spawned(&sc, VSOCK_THREAD_RX_PUMP), pumps);
	ck_assert_int_eq(vsock_dev_stop(fx.dev, NULL), 0);
	ck_assert_uint_eq(spawned(&sc, VSOCK_THREAD_LOBBY), 2);
	ck_assert_int_eq(vsock_dev_start(fx.dev), 0);
	ck_assert_uint_eq(spawned(&sc, VSOCK_THREAD_CTL), 2);
	ck_assert_uint_eq(spawned(&sc, VSOCK_THREAD_RX_PUMP), 2 * pumps);
	ck_assert_int_eq(vsock_dev_reset(fx.dev), 0);
	ck_assert_uint_eq(spawned(&sc, VSOCK_THREAD_LOBBY), 3);
	ck_assert_uint_eq(spawned(&sc, VSOCK_THREAD_CTL), 2);
	fx_teardown(&fx);
}

START_TEST(t_spawn_hook)
{
	spawn_hook(VSOCK_CTL_OWN);
}
END_TEST

START_TEST(t_spawn_hook_ctl_on_pump0)
{
	spawn_hook(VSOCK_CTL_ON_PUMP0);
}
END_TEST

/* A ctl_thread that is not an enum vsock_ctl_thread is refused. */
START_TEST(t_ctl_thread_invalid)
{
	struct vsock_dev_config cfg = { .guest_cid = 3, .ctl_thread = VSOCK_CTL_ON_PUMP0 + 1 };
	struct vsock_dev *dev = NULL;

	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), -EINVAL);
	ck_assert_ptr_null(dev);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_reset");

	FX_ADD_LOOP(s, t_reset_mid_transfer, 2, 40);
	FX_ADD(s, t_reset_before_start, 20);
	FX_ADD(s, t_reset_repeat, 30);
	FX_ADD(s, t_idle_cpu, 30);
	FX_ADD(s, t_stop_start, 30);
	FX_ADD(s, t_spawn_hook, 30);
	FX_ADD(s, t_spawn_hook_ctl_on_pump0, 30);
	FX_ADD(s, t_ctl_thread_invalid, 10);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
