// SPDX-License-Identifier: MIT
/*
 * Device-level checks of the public API that the device suite does not
 * focus on: argument checking, the uds_path listener's stale/live rules,
 * two devices in one process, reset with live and pending connections, and
 * idle CPU. Uses the simulated driver (tests/support). Label "device".
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "host_peer.h"
#include "sim_driver.h"
#include "skiff/vsock_dev.h"

#define T 10000

struct dut {
	char uds[108];
	struct vsock_dev *dev;
	struct sim_drv *drv;
};

static void dut_up(struct dut *d, const char *tag, uint64_t cid)
{
	struct vsock_dev_config cfg = { .guest_cid = cid, .rx_threads = 2, .mrg_rxbuf = true };
	struct sim_drv_config dc = { .guest_cid = cid };

	hp_tmp_path(d->uds, sizeof(d->uds), tag);
	cfg.uds_path = d->uds;
	ck_assert_int_eq(vsock_dev_create(&cfg, &d->dev), 0);
	ck_assert_int_eq(sim_drv_create(&dc, &d->drv), 0);
	ck_assert_int_eq(sim_drv_attach(d->drv, d->dev), 0);
}

static void dut_down(struct dut *d)
{
	struct sim_drv_stats st;

	vsock_dev_destroy(d->dev);
	sim_drv_get_stats(d->drv, &st);
	ck_assert_uint_eq(st.proto_errors, 0);
	ck_assert_uint_eq(st.credit_violations, 0);
	sim_drv_destroy(d->drv);
}

/* Guest connects to host port @port, host accepts; both directions move @len bytes. */
static void roundtrip(struct dut *d, uint32_t port, size_t len, uint64_t seed)
{
	uint8_t *a = malloc(len), *b = malloc(len);
	struct sim_conn *c;
	uint64_t st = seed;
	int lfd, fd;

	lfd = hp_listen_port(d->uds, port, 4, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(sim_connect(d->drv, port, VIRTIO_VSOCK_TYPE_STREAM, T, &c), 0);
	fd = hp_accept(lfd, T);
	ck_assert_int_ge(fd, 0);
	hp_fill(&st, a, len);
	ck_assert_int_eq(hp_write_all(fd, a, len, T), (ssize_t)len);
	for (size_t n = 0; n < len;) {
		ssize_t r = sim_recv(c, b + n, len - n, T);

		ck_assert_int_gt(r, 0);
		n += (size_t)r;
	}
	ck_assert(!memcmp(a, b, len));
	hp_fill(&st, a, len);
	ck_assert_int_eq(sim_send(c, a, len, T), (ssize_t)len);
	ck_assert_int_eq(hp_read_full(fd, b, len, T), (ssize_t)len);
	ck_assert(!memcmp(a, b, len));
	close(fd);
	sim_close(c, T);
	close(lfd);
	free(a);
	free(b);
}

START_TEST(create_checks_arguments)
{
	struct vsock_dev_config cfg = { .guest_cid = 3 };
	char longp[120];
	struct vsock_dev *dev;

	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), 0); /* no path: no host side */
	vsock_dev_destroy(dev);
	cfg.uds_path = "";
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), -EINVAL);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	cfg.uds_path = longp;
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), -ENAMETOOLONG);
	longp[97] = 0; /* 97 bytes + "_4294967295" does not fit 107 */
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), -ENAMETOOLONG);
	cfg.uds_path = "/tmp/x";
	cfg.guest_cid = 2;
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), -EINVAL);
	cfg.guest_cid = 0xffffffffull;
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), -EINVAL);
}
END_TEST

START_TEST(features_and_config)
{
	struct vsock_dev_config cfg = { .guest_cid = 0x1234567 };
	struct vsock_dev *dev;
	char path[108];
	uint64_t f, cid = 0;
	uint32_t lo = 0;

	hp_tmp_path(path, sizeof(path), "feat");
	cfg.uds_path = path;
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), 0);
	f = vsock_dev_features(dev);
	ck_assert(f & (1ull << VIRTIO_F_VERSION_1));
	ck_assert(f & (1ull << VIRTIO_RING_F_EVENT_IDX));
	ck_assert(f & (1ull << VIRTIO_RING_F_INDIRECT_DESC));
	ck_assert(f & (1ull << VIRTIO_VSOCK_F_SEQPACKET));
	ck_assert(!(f & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)));
	ck_assert(!(f & (1ull << VIRTIO_VSOCK_F_DGRAM)));
	ck_assert_int_eq(vsock_dev_read_config(dev, 0, &cid, 8), 0);
	ck_assert_uint_eq(cid, 0x1234567);
	ck_assert_int_eq(vsock_dev_read_config(dev, 0, &lo, 4), 0);
	ck_assert_uint_eq(lo, 0x1234567);
	ck_assert_int_eq(vsock_dev_read_config(dev, 4, &lo, 4), 0);
	ck_assert_uint_eq(lo, 0);
	ck_assert_int_eq(vsock_dev_read_config(dev, 4, &cid, 8), -EINVAL);
	ck_assert_int_eq(vsock_dev_read_config(dev, 9, &lo, 0), -EINVAL);
	ck_assert_int_eq(vsock_dev_set_features(dev, 1ull << VIRTIO_VSOCK_F_STREAM), -EINVAL);
	ck_assert_int_eq(vsock_dev_set_features(dev, f | (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)),
			 -EINVAL);
	ck_assert_int_eq(vsock_dev_set_features(dev, f), 0);
	ck_assert_int_eq(vsock_dev_start(dev), -EINVAL); /* no memory, no queues */
	vsock_dev_destroy(dev);
	ck_assert_int_eq(access(path, F_OK), -1); /* destroy unlinks uds_path */
}
END_TEST

START_TEST(stale_socket_replaced_live_refused)
{
	struct vsock_dev_config cfg = { .guest_cid = 3 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vsock_dev *dev, *dev2;
	char path[108];
	int fd;

	hp_tmp_path(path, sizeof(path), "stale");
	cfg.uds_path = path;
	/* A socket file left by a dead process: bound, then closed. */
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), 0);
	/* A second device on the same live path is refused. */
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev2), -EADDRINUSE);
	vsock_dev_destroy(dev);
	/* A regular file is not ours to delete. */
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), -EADDRINUSE);
	unlink(path);
}
END_TEST

START_TEST(two_devices_one_process)
{
	struct dut a, b;

	dut_up(&a, "twoA", 3);
	dut_up(&b, "twoB", 4);
	roundtrip(&a, 5000, 300000, 1);
	roundtrip(&b, 5000, 300000, 2);
	roundtrip(&a, 5001, 1000, 3);
	dut_down(&a);
	roundtrip(&b, 5001, 1000, 4); /* b unaffected by a's destroy */
	dut_down(&b);
}
END_TEST

START_TEST(reset_closes_everything_and_recovers)
{
	struct vsock_dev_counters c0, c1;
	struct sim_conn *c;
	struct dut d;
	uint32_t hport;
	char buf[16];
	int lfd, fd, pend, fd2, rc;

	dut_up(&d, "reset", 3);
	lfd = hp_listen_port(d.uds, 7000, 4, 0);
	ck_assert_int_eq(sim_connect(d.drv, 7000, VIRTIO_VSOCK_TYPE_STREAM, T, &c), 0);
	fd = hp_accept(lfd, T);
	ck_assert_int_ge(fd, 0);
	/* A host client mid-CONNECT line. */
	pend = hp_connect_raw(d.uds);
	ck_assert_int_ge(pend, 0);
	ck_assert_int_eq(write(pend, "CONN", 4), 4);
	vsock_dev_get_counters(d.dev, &c0);
	ck_assert_int_eq(sim_drv_reset(d.drv), 0);
	vsock_dev_get_counters(d.dev, &c1);
	ck_assert_uint_eq(c1.dev_resets, c0.dev_resets + 1);
	rc = hp_wait_eof(fd, T);
	ck_assert_msg(rc == 0 || rc == -ECONNRESET, "host end of a live connection: %d", rc);
	rc = hp_wait_eof(pend, T);
	ck_assert_msg(rc == 0 || rc == -ECONNRESET, "pending CONNECT socket: %d", rc);
	ck_assert_int_eq(read(pend, buf, sizeof(buf)) <= 0, 1); /* never "OK" */
	close(fd);
	close(pend);
	sim_abort(c); /* the guest side of the reset connection */
	/* Usable again, host-initiated this time too. */
	ck_assert_int_eq(sim_drv_attach(d.drv, d.dev), 0);
	roundtrip(&d, 7001, 100000, 9);
	{
		struct sim_listener *l;
		struct sim_conn *g;

		ck_assert_int_eq(sim_listen(d.drv, 900, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
		fd2 = hp_connect(d.uds, 900, &hport, T);
		ck_assert_int_ge(fd2, 0);
		ck_assert_uint_ge(hport, 1u << 30);
		ck_assert_uint_lt(hport, 1u << 31);
		ck_assert_int_eq(sim_accept(l, T, &g), 0);
		sim_close(g, T);
		close(fd2);
		sim_unlisten(l);
	}
	close(lfd);
	dut_down(&d);
}
END_TEST

/* A guest that never answers a host CONNECT: the host socket is closed, without OK, in ~2 s. */
START_TEST(host_connect_times_out)
{
	struct vsock_dev_config cfg = { .guest_cid = 3 };
	struct sim_drv_config dc = { .guest_cid = 3, .no_auto_rst = true };
	struct dut d;
	int64_t t0, dt;
	uint32_t hport;
	int rc;

	hp_tmp_path(d.uds, sizeof(d.uds), "cto");
	cfg.uds_path = d.uds;
	ck_assert_int_eq(vsock_dev_create(&cfg, &d.dev), 0);
	ck_assert_int_eq(sim_drv_create(&dc, &d.drv), 0);
	ck_assert_int_eq(sim_drv_attach(d.drv, d.dev), 0);
	t0 = hp_now_ms();
	rc = hp_connect(d.uds, 4242, &hport, T);
	dt = hp_now_ms() - t0;
	ck_assert_msg(rc == -ECONNREFUSED, "hp_connect: %d", rc);
	ck_assert_msg(dt >= 1500 && dt < T, "closed after %lld ms", (long long)dt);
	sim_pkt_flush(d.drv); /* the REQUEST and the RST nobody matched */
	dut_down(&d);
}
END_TEST

/*
 * Many RX chains too short for a header, posted ahead of the good ones: every
 * one comes back with length 0 and is counted, and data still flows.
 */
START_TEST(many_short_rx_chains)
{
	struct vsock_dev_config cfg = { .guest_cid = 3 };
	struct sim_drv_config dc = {
		.guest_cid = 3, .rx_bufs = 8, .no_rx_refill = true, .rx_start_empty = true
	};
	struct vsock_dev_counters k0, k1;
	enum { NSHORT = 150 };
	int heads[NSHORT];
	struct sim_conn *c;
	struct dut d;
	uint32_t used;
	int i, lfd, fd;
	char buf[64];

	hp_tmp_path(d.uds, sizeof(d.uds), "short");
	cfg.uds_path = d.uds;
	ck_assert_int_eq(vsock_dev_create(&cfg, &d.dev), 0);
	ck_assert_int_eq(sim_drv_create(&dc, &d.drv), 0);
	ck_assert_int_eq(sim_drv_attach(d.drv, d.dev), 0);
	vsock_dev_get_counters(d.dev, &k0);
	for (i = 0; i < NSHORT; i++) {
		struct sim_raw_desc r = { .gpa = sim_alloc(d.drv, 16, 16),
					  .len = 10,
					  .flags = 2 /* VRING_DESC_F_WRITE */,
					  .next = SIM_NEXT_AUTO };

		heads[i] = sim_raw_chain(d.drv, VSOCK_VQ_RX, &r, 1);
		ck_assert_int_ge(heads[i], 0);
	}
	ck_assert_int_eq(sim_rx_refill(d.drv, 8), 8);
	sim_rx_set_refill(d.drv, true);
	lfd = hp_listen_port(d.uds, 6100, 4, 0);
	ck_assert_int_eq(sim_connect(d.drv, 6100, VIRTIO_VSOCK_TYPE_STREAM, T, &c), 0);
	fd = hp_accept(lfd, T);
	ck_assert_int_ge(fd, 0);
	for (i = 0; i < NSHORT; i++) {
		ck_assert_int_eq(sim_raw_wait(d.drv, VSOCK_VQ_RX, heads[i], &used, T), 0);
		ck_assert_uint_eq(used, 0);
	}
	vsock_dev_get_counters(d.dev, &k1);
	ck_assert_uint_eq(k1.malformed_pkts, k0.malformed_pkts + NSHORT);
	ck_assert_int_eq(hp_write_all(fd, "ping", 4, T), 4);
	ck_assert_int_eq(sim_recv(c, buf, sizeof(buf), T), 4);
	ck_assert(!memcmp(buf, "ping", 4));
	close(fd);
	sim_close(c, T);
	close(lfd);
	dut_down(&d);
}
END_TEST

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* With connections open (one half-closed by the host) and nothing moving, the process sleeps. */
START_TEST(idle_uses_no_cpu)
{
	struct sim_conn *c1, *c2;
	struct dut d;
	int lfd, fd1, fd2;
	double t0, used;

	dut_up(&d, "idle", 3);
	lfd = hp_listen_port(d.uds, 8000, 4, 0);
	ck_assert_int_eq(sim_connect(d.drv, 8000, VIRTIO_VSOCK_TYPE_STREAM, T, &c1), 0);
	fd1 = hp_accept(lfd, T);
	ck_assert_int_eq(sim_connect(d.drv, 8000, VIRTIO_VSOCK_TYPE_STREAM, T, &c2), 0);
	fd2 = hp_accept(lfd, T);
	ck_assert_int_ge(fd2, 0);
	shutdown(fd2, SHUT_WR); /* host EOF: HUP-ish state must not spin */
	ck_assert_int_eq(sim_wait_peer_shutdown(c2, VIRTIO_VSOCK_SHUTDOWN_SEND, T), 0);
	t0 = cpu_seconds();
	usleep(1000 * 1000);
	used = cpu_seconds() - t0;
	ck_assert_msg(used < 0.05, "idle device used %.3f s of CPU in 1 s", used);
	close(fd1);
	close(fd2);
	sim_close(c1, T);
	sim_close(c2, T);
	close(lfd);
	dut_down(&d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dev_api");
	TCase *tc = tcase_create("api");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, create_checks_arguments);
	tcase_add_test(tc, features_and_config);
	tcase_add_test(tc, stale_socket_replaced_live_refused);
	tcase_add_test(tc, two_devices_one_process);
	tcase_add_test(tc, reset_closes_everything_and_recovers);
	tcase_add_test(tc, idle_uses_no_cpu);
	tcase_add_test(tc, host_connect_times_out);
	tcase_add_test(tc, many_short_rx_chains);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
