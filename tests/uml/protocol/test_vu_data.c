// SPDX-License-Identifier: MIT
/*
 * Data through the whole vhost-user path, without a VM: the simulated
 * driver (tests/support) plays the guest, its device calls are relayed as
 * vhost-user requests (relay_dev.c) to skiff-vsock's backend serving the
 * real device model in a server thread, and host peers use the hybrid Unix
 * sockets. Also: the frontend dies mid-transfer, a new one attaches.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_peer.h"
#include "relay_dev.h"
#include "sim_driver.h"
#include "skiff/vhost_user.h"
#include "vu_frontend.h"

#define TMO 20000 /* ms: generous, for a loaded 2-core machine */
#define CID 5

static struct vsock_dev *dev;
static struct vu_backend *vb;
static struct sim_drv *drv;
static char uds[100], vsock_path[100];
static int listen_fd = -1, stop_fd = -1, serve_ret;
static pthread_t server;

static void *server_main(void *p)
{
	serve_ret = vu_server_serve(listen_fd, vb, stop_fd);
	return NULL;
}

static void start_all(bool mrg)
{
	struct vsock_dev_config cfg = { .guest_cid = CID, .mrg_rxbuf = mrg, .rx_threads = 2 };
	struct sim_drv_config dc = { .guest_cid = CID };

	hp_tmp_path(uds, sizeof(uds), "vud");
	hp_tmp_path(vsock_path, sizeof(vsock_path), "vus");
	cfg.uds_path = uds;
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), 0);
	ck_assert_int_eq(vu_backend_create(dev, false, &vb), 0);
	ck_assert_int_eq(vu_server_listen(vsock_path, &listen_fd), 0);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(stop_fd, 0);
	ck_assert_int_eq(pthread_create(&server, NULL, server_main, NULL), 0);
	ck_assert_int_eq(sim_drv_create(&dc, &drv), 0);
	ck_assert_int_eq(relay_connect(vsock_path), 0);
	ck_assert_int_eq(sim_drv_attach(drv, relay_dev()), 0);
	ck_assert_uint_eq(!!(sim_drv_features(drv) & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)), mrg);
}

static void check_driver_clean(void)
{
	struct sim_drv_stats st;
	char err[256];

	sim_drv_get_stats(drv, &st);
	sim_drv_last_error(drv, err, sizeof(err));
	ck_assert_msg(st.proto_errors == 0 && st.credit_violations == 0, "driver saw: %s", err);
	ck_assert_uint_eq(relay_nacks(), 0);
}

static void stop_all(void)
{
	uint64_t one = 1;

	relay_disconnect();
	ck_assert_int_eq(write(stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	ck_assert_int_eq(pthread_join(server, NULL), 0);
	ck_assert_int_eq(serve_ret, 0);
	sim_drv_reset(drv);
	sim_drv_destroy(drv);
	vu_backend_destroy(vb);
	vsock_dev_destroy(dev);
	close(listen_fd);
	close(stop_fd);
	unlink(vsock_path);
}

/* A host peer's half of a transfer, in its own thread. */
struct host_io {
	int fd;
	uint8_t *buf;
	size_t len;
	ssize_t ret;
};

static void *host_read_main(void *p)
{
	struct host_io *io = p;

	io->ret = hp_read_full(io->fd, io->buf, io->len, TMO);
	return NULL;
}

static void *host_write_main(void *p)
{
	struct host_io *io = p;

	io->ret = hp_write_all(io->fd, io->buf, io->len, TMO);
	if (io->ret == (ssize_t)io->len)
		shutdown(io->fd, SHUT_WR);
	return NULL;
}

/* Guest to host on a fresh guest connection to @port: @len bytes, checked. */
static void guest_to_host(uint32_t port, size_t len, uint64_t seed)
{
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct host_io io;
	struct sim_conn *c;
	uint64_t st = seed;
	pthread_t th;
	int lfd, fd;

	ck_assert(src && dst);
	hp_fill(&st, src, len);
	lfd = hp_listen_port(uds, port, 4, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(sim_connect(drv, port, VIRTIO_VSOCK_TYPE_STREAM, TMO, &c), 0);
	fd = hp_accept(lfd, TMO);
	ck_assert_int_ge(fd, 0);
	io = (struct host_io){ .fd = fd, .buf = dst, .len = len };
	ck_assert_int_eq(pthread_create(&th, NULL, host_read_main, &io), 0);
	ck_assert_int_eq(sim_send(c, src, len, TMO), (ssize_t)len);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(io.ret, (ssize_t)len);
	ck_assert_uint_eq(hp_hash(HP_HASH_INIT, dst, len), hp_hash(HP_HASH_INIT, src, len));
	/* Half-close from the guest: the host reads EOF. */
	ck_assert_int_eq(sim_shutdown(c, VIRTIO_VSOCK_SHUTDOWN_SEND), 0);
	ck_assert_int_eq(hp_wait_eof(fd, TMO), 0);
	close(fd);
	sim_close(c, TMO);
	close(lfd);
	free(src);
	free(dst);
}

/* Host to guest over a host-initiated CONNECT to guest port @port. */
static void host_to_guest(uint32_t port, size_t len, uint64_t seed)
{
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct sim_listener *l;
	struct host_io io;
	struct sim_conn *c;
	uint32_t hport;
	uint64_t st = seed;
	size_t got = 0;
	pthread_t th;
	int fd;

	ck_assert(src && dst);
	hp_fill(&st, src, len);
	ck_assert_int_eq(sim_listen(drv, port, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	fd = hp_connect(uds, port, &hport, TMO);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(sim_accept(l, TMO, &c), 0);
	io = (struct host_io){ .fd = fd, .buf = src, .len = len };
	ck_assert_int_eq(pthread_create(&th, NULL, host_write_main, &io), 0);
	while (got < len) {
		ssize_t n = sim_recv(c, dst + got, len - got, TMO);

		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(io.ret, (ssize_t)len);
	ck_assert_uint_eq(hp_hash(HP_HASH_INIT, dst, len), hp_hash(HP_HASH_INIT, src, len));
	/* The host's SHUT_WR reaches the guest as EOF. */
	ck_assert_int_eq(sim_recv(c, dst, 1, TMO), 0);
	sim_close(c, TMO);
	sim_unlisten(l);
	close(fd);
	free(src);
	free(dst);
}

static void data_both_ways(bool mrg)
{
	start_all(mrg);
	guest_to_host(5000, 4u << 20, 11);
	host_to_guest(6000, 4u << 20, 12);
	check_driver_clean();
	stop_all();
}

START_TEST(t_data_mrg_on)
{
	data_both_ways(true);
}
END_TEST

START_TEST(t_data_mrg_off)
{
	data_both_ways(false);
}
END_TEST

struct writer {
	int fd;
	size_t len;
	ssize_t ret;
};

static void *writer_main(void *p)
{
	struct writer *w = p;
	uint8_t *buf = calloc(1, w->len);
	uint64_t st = 3;

	hp_fill(&st, buf, w->len);
	w->ret = hp_write_all(w->fd, buf, w->len, TMO);
	free(buf);
	return NULL;
}

/* The frontend dies mid-transfer; the host peer sees the end; a new one works. */
START_TEST(t_disconnect_mid_transfer)
{
	struct writer w = { .len = 64u << 20 };
	struct vsock_dev_counters ctr;
	struct sim_listener *l;
	struct sim_conn *c;
	static uint8_t buf[65536];
	uint32_t hport;
	size_t got = 0;
	pthread_t th;
	int r;

	start_all(true);
	ck_assert_int_eq(sim_listen(drv, 7000, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	w.fd = hp_connect(uds, 7000, &hport, TMO);
	ck_assert_int_ge(w.fd, 0);
	ck_assert_int_eq(sim_accept(l, TMO, &c), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, writer_main, &w), 0);
	while (got < (1u << 20)) {
		ssize_t n = sim_recv(c, buf, sizeof(buf), TMO);

		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	/* The frontend process dies: its socket closes, nothing else. */
	relay_disconnect();
	/* The host peer's connection ends (writer fails; reads see EOF or RST). */
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_lt(w.ret, 0);
	ck_assert_int_ne(w.ret, -ETIMEDOUT);
	r = hp_wait_eof(w.fd, TMO);
	ck_assert(r == 0 || r == -ECONNRESET);
	close(w.fd);
	vsock_dev_get_counters(dev, &ctr);
	ck_assert_uint_ge(ctr.dev_resets, 1);

	/*
	 * That guest is gone with its frontend (whatever the device wrote to
	 * its rings while stopping is nobody's business now).
	 */
	sim_unlisten(l);
	sim_abort(c);
	sim_drv_reset(drv);
	sim_drv_destroy(drv);
	/* Next frontend and guest: same backend, same device, fresh session. */
	{
		struct sim_drv_config dc = { .guest_cid = CID };

		ck_assert_int_eq(sim_drv_create(&dc, &drv), 0);
	}
	ck_assert_int_eq(relay_connect(vsock_path), 0);
	ck_assert_int_eq(sim_drv_attach(drv, relay_dev()), 0);
	guest_to_host(5001, 1u << 20, 21);
	host_to_guest(6001, 1u << 20, 22);
	check_driver_clean();
	stop_all();
}
END_TEST

/*
 * QEMU 7.2 order: the device starts on SET_VRING_ENABLE, then QEMU sets up
 * its guest notifiers and sends SET_VRING_CALL for each vring, which pauses
 * and restarts the device. Host-initiated connections must work after that.
 */
START_TEST(t_call_fd_after_start)
{
	start_all(false);
	ck_assert_int_eq(relay_resend_call(VSOCK_VQ_RX), 0);
	ck_assert_int_eq(relay_resend_call(VSOCK_VQ_TX), 0);
	host_to_guest(6100, 1u << 20, 31);
	guest_to_host(5100, 1u << 20, 32);
	check_driver_clean();
	stop_all();
}
END_TEST

/* A second guest of the same process: device, backend, server thread. */
struct side {
	struct vsock_dev *dev;
	struct vu_backend *vb;
	char path[100];
	int listen_fd, stop_fd, ret;
	pthread_t thread;
};

static void *side_main(void *p)
{
	struct side *sd = p;

	sd->ret = vu_server_serve(sd->listen_fd, sd->vb, sd->stop_fd);
	return NULL;
}

static void side_start(struct side *sd, uint64_t cid)
{
	struct vsock_dev_config cfg = { .guest_cid = cid, .rx_threads = 1 };

	hp_tmp_path(sd->path, sizeof(sd->path), "vuside");
	ck_assert_int_eq(vsock_dev_create(&cfg, &sd->dev), 0);
	ck_assert_int_eq(vu_backend_create(sd->dev, false, &sd->vb), 0);
	ck_assert_int_eq(vu_server_listen(sd->path, &sd->listen_fd), 0);
	sd->stop_fd = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(sd->stop_fd, 0);
	ck_assert_int_eq(pthread_create(&sd->thread, NULL, side_main, sd), 0);
}

static void side_stop(struct side *sd)
{
	uint64_t one = 1;

	ck_assert_int_eq(write(sd->stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	ck_assert_int_eq(pthread_join(sd->thread, NULL), 0);
	ck_assert_int_eq(sd->ret, 0);
	vu_backend_destroy(sd->vb);
	vsock_dev_destroy(sd->dev);
	close(sd->listen_fd);
	close(sd->stop_fd);
	unlink(sd->path);
}

#define SIDE_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_VSOCK_F_STREAM))

/* Wait until the device's kick counter passes @than; false after TMO. */
static bool kicks_above(struct vsock_dev *d, uint64_t than)
{
	struct vsock_dev_counters c;
	int i;

	for (i = 0; i < TMO; i++) {
		vsock_dev_get_counters(d, &c);
		if (c.kicks > than)
			return true;
		usleep(1000);
	}
	return false;
}

/* The eventfds open in this process, as a bitmap of fd numbers < 1024. */
static void eventfds(uint8_t map[128])
{
	char path[64], link[64];
	int fd;

	memset(map, 0, 128);
	for (fd = 0; fd < 1024; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, "anon_inode:[eventfd]"))
			map[fd / 8] |= (uint8_t)(1u << (fd % 8));
	}
}

/*
 * Issue 22, finding 3. The event vring's kick fd, closed by GET_VRING_BASE,
 * stayed in the device (vring_set), and the next start, which passed only
 * RX and TX, watched it again: its number, reused by another socket (in
 * skiff-vsock: another guest's host client), was read by the control
 * thread. Here the number is reused by a pipe holding one byte; after a
 * restart and a TX kick the control thread has been round its loop, and
 * the byte must still be there.
 */
START_TEST(t_stale_event_kick)
{
	uint8_t before[128], after[128];
	struct vsock_dev_counters c;
	struct vu_vring_state st = { .index = VSOCK_VQ_EVENT };
	struct fe_guest g;
	struct side sd;
	uint64_t one = 1;
	int fd, stale = -1, p[2], avail;
	uint32_t size;

	side_start(&sd, 7);
	ck_assert_int_eq(fe_guest_up(&g, sd.path, SIDE_FEATURES, 3), 0);
	ck_assert(vu_backend_started(sd.vb));
	eventfds(before);
	ck_assert_int_eq(fe_send(g.sock, VU_REQ_GET_VRING_BASE, 0, &st, sizeof(st), NULL, 0), 0);
	ck_assert_int_eq(fe_recv(g.sock, VU_REQ_GET_VRING_BASE, &st, sizeof(st), &size), 0);
	eventfds(after);
	for (fd = 0; fd < 1024; fd++)
		if ((before[fd / 8] & ~after[fd / 8]) & (1u << (fd % 8)))
			stale = fd;
	ck_assert_int_ge(stale, 0); /* the backend closed the event kick fd */
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_eq(dup2(p[0], stale), stale);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	/* Any request restarts the device, with RX and TX. */
	ck_assert_int_eq(fe_set_state(g.sock, VU_REQ_SET_VRING_ENABLE, VSOCK_VQ_RX, 1), 0);
	ck_assert(vu_backend_started(sd.vb));
	vsock_dev_get_counters(sd.dev, &c);
	ck_assert_int_eq(write(g.kick[VSOCK_VQ_TX], &one, sizeof(one)), (ssize_t)sizeof(one));
	ck_assert(kicks_above(sd.dev, c.kicks));
	ck_assert_int_eq(ioctl(stale, FIONREAD, &avail), 0);
	ck_assert_int_eq(avail, 1);
	fe_guest_close(&g);
	close(stale);
	close(p[0]);
	close(p[1]);
	side_stop(&sd);
}
END_TEST

struct shrink {
	struct fe_guest *g;
	int ret;
};

/* The bad guest: shrink the memory file, kick TX, wait to be dropped. */
static void *shrink_main(void *p)
{
	struct shrink *sh = p;
	struct pollfd pf = { .fd = sh->g->sock, .events = POLLIN };
	uint64_t one = 1;
	char c;

	sh->ret = -1;
	if (ftruncate(sh->g->memfd, 0) ||
	    write(sh->g->kick[VSOCK_VQ_TX], &one, sizeof(one)) != (ssize_t)sizeof(one))
		return NULL;
	/* The backend drops us: EOF on the socket. */
	if (poll(&pf, 1, TMO) == 1 && read(sh->g->sock, &c, 1) == 0)
		sh->ret = 0;
	return NULL;
}

/*
 * Issue 22, finding 7 (SIGBUS part). A frontend that shrinks its memory
 * file after SET_MEM_TABLE made the next access of a device thread raise
 * SIGBUS, which ended the whole process, every guest with it. Now that
 * guest's frontend is dropped (its memory fault counted), while the other
 * guest of the process moves checked data both ways, and the bad guest's
 * device serves the next frontend.
 */
START_TEST(t_sigbus_one_guest)
{
	struct vu_backend_stats vs;
	struct fe_guest g;
	struct shrink sh = { .g = &g };
	struct side sd;
	pthread_t th;

	start_all(false);
	side_start(&sd, 8);
	ck_assert_int_eq(fe_guest_up(&g, sd.path, SIDE_FEATURES, 2), 0);
	ck_assert(vu_backend_started(sd.vb));
	ck_assert_int_eq(pthread_create(&th, NULL, shrink_main, &sh), 0);
	guest_to_host(5200, 4u << 20, 41);
	host_to_guest(6200, 4u << 20, 42);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(sh.ret, 0);
	fe_guest_close(&g);
	vu_backend_get_stats(sd.vb, &vs);
	ck_assert_uint_eq(vs.mem_faults, 1);
	/* The good guest still moves data; the bad one can come back. */
	guest_to_host(5201, 1u << 20, 43);
	check_driver_clean();
	ck_assert_int_eq(fe_guest_up(&g, sd.path, SIDE_FEATURES, 2), 0);
	ck_assert(vu_backend_started(sd.vb));
	fe_guest_close(&g);
	side_stop(&sd);
	stop_all();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("vhost_user_data");
	TCase *tc = tcase_create("data");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t_data_mrg_on);
	tcase_add_test(tc, t_data_mrg_off);
	tcase_add_test(tc, t_disconnect_mid_transfer);
	tcase_add_test(tc, t_call_fd_after_start);
	tcase_add_test(tc, t_stale_event_kick);
	tcase_add_test(tc, t_sigbus_one_guest);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
