// SPDX-License-Identifier: MIT
/*
 * Device tests, datagrams (VIRTIO_VSOCK_F_DGRAM; devices/virtio_vsock
 * README "Datagrams"): the simulated driver sends and receives DGRAM RW
 * packets as the datagram RFC's guest would, host programs use plain
 * AF_UNIX SOCK_DGRAM sockets.
 *
 * Guest to host and back with boundaries, the sender's guest port in the
 * recvfrom() address and a sendto() reply to it; the host's first datagram
 * through the gateway; guest to guest through the router; each drop reason
 * counted; malformed datagrams dropped, counted, nothing reset; without
 * MRG_RXBUF a datagram larger than one RX buffer dropped; a stream keeps
 * its pace under a datagram flood on the same queues.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fixture.h"

#define HOST_PORT 5000
#define GUEST_PORT 1000

/* "<uds>_dgram_<port>" (host-owned), "<uds>_dgram_g<port>" (device-owned), "<uds>_dgram". */
static socklen_t dg_addr(struct sockaddr_un *sa, const char *uds, const char *kind, long port)
{
	char path[160];

	if (port < 0)
		snprintf(path, sizeof(path), "%s_dgram", uds);
	else
		snprintf(path, sizeof(path), "%s_dgram_%s%ld", uds, kind, port);
	ck_assert_uint_lt(strlen(path), sizeof(sa->sun_path));
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, strlen(path));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sa->sun_path) + 1);
}

/* A host program's socket bound at "<uds>_dgram_<port>" (port < 0: unbound). */
static int host_sock(struct fx *fx, long port)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), big = 1 << 20;
	struct sockaddr_un sa;
	socklen_t len;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (port >= 0) {
		len = dg_addr(&sa, fx->uds, "", port);
		unlink(sa.sun_path);
		ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, len), 0);
	}
	return fd;
}

static void host_unlink(struct fx *fx, long port)
{
	struct sockaddr_un sa;

	dg_addr(&sa, fx->uds, "", port);
	unlink(sa.sun_path);
}

/* recv() with a timeout: the datagram's length, or -errno. */
static ssize_t host_recvfrom(int fd, void *buf, size_t cap, struct sockaddr_un *from,
			     socklen_t *flen, int timeout_ms)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	ssize_t r;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = recvfrom(fd, buf, cap, 0, (struct sockaddr *)from, flen);
	return r < 0 ? -errno : r;
}

static ssize_t host_sendto(int fd, const void *buf, size_t len, const struct sockaddr_un *to,
			   socklen_t tlen)
{
	ssize_t r = sendto(fd, buf, len, 0, (const struct sockaddr *)to, tlen);

	return r < 0 ? -errno : r;
}

static void fill(uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + seed);
}

/* The guest's next datagram is @len bytes of @data to guest port @dst_port. */
static void guest_expect(struct fx *fx, const void *data, uint32_t len, uint32_t dst_port)
{
	struct sim_pkt pkt;

	ck_assert_int_eq(sim_dgram_recv(fx->drv, &pkt, FX_T), 0);
	ck_assert_uint_eq(pkt.hdr.type, VIRTIO_VSOCK_TYPE_DGRAM);
	ck_assert_uint_eq(pkt.hdr.dst_port, dst_port);
	ck_assert_uint_eq(pkt.hdr.len, len);
	ck_assert(!memcmp(pkt.payload, data, len));
	sim_pkt_free(&pkt);
}

static void dgram_opts(struct fx_opts *o, bool mrg)
{
	memset(o, 0, sizeof(*o));
	o->dgram = true;
	o->mrg = mrg;
}

static void counters(struct fx *fx, struct vsock_dev_counters *c)
{
	fx_counters(fx, c);
}

/* The 4 tx and 5 rx drop counters added up. */
static uint64_t drops(const struct vsock_dev_counters *c)
{
	return c->dgram_tx_drop_malformed + c->dgram_tx_drop_no_dest + c->dgram_tx_drop_full +
	       c->dgram_tx_drop_err + c->dgram_rx_drop_no_buf + c->dgram_rx_drop_too_big +
	       c->dgram_rx_drop_bad_addr + c->dgram_rx_drop_err + c->dgram_rx_drop_no_dest;
}

/* The feature is offered only when configured; the driver negotiates it. */
START_TEST(t_feature)
{
	struct vsock_dev_counters c;
	struct sockaddr_un gw;
	struct fx_opts o;
	struct sim_pkt pkt;
	socklen_t gwlen;
	struct fx fx;
	int fd;

	memset(&o, 0, sizeof(o));
	fx_setup(&fx, &o);
	ck_assert(!(vsock_dev_features(fx.dev) & (1ull << VIRTIO_VSOCK_F_DGRAM)));
	ck_assert_int_eq(sim_dgram_send(fx.drv, 2, 1, 2, "x", 1, 100), -EOPNOTSUPP);
	fx_teardown(&fx);
	dgram_opts(&o, false);
	fx_setup(&fx, &o);
	ck_assert(vsock_dev_features(fx.dev) & (1ull << VIRTIO_VSOCK_F_DGRAM));
	ck_assert(sim_drv_features(fx.drv) & (1ull << VIRTIO_VSOCK_F_DGRAM));
	fx_teardown(&fx);
	/* Offered, not accepted: the host's datagrams never reach that guest. */
	dgram_opts(&o, false);
	o.drv.features = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_VSOCK_F_STREAM);
	fx_setup(&fx, &o);
	ck_assert(!(sim_drv_features(fx.drv) & (1ull << VIRTIO_VSOCK_F_DGRAM)));
	fd = host_sock(&fx, 6010);
	gwlen = dg_addr(&gw, fx.uds, "", -1);
	ck_assert_int_eq(host_sendto(fd, "SEND 5\nx", 8, &gw, gwlen), 8);
	FX_WAIT_EQ(&fx, dgram_rx_drop_no_dest, 1);
	ck_assert_int_eq(sim_dgram_recv(fx.drv, &pkt, 50), -ETIMEDOUT);
	fx_counters(&fx, &c);
	ck_assert_uint_eq(c.dgram_rx_pkts + c.rx_pkts, 0);
	close(fd);
	host_unlink(&fx, 6010);
	fx_teardown(&fx);
}
END_TEST

/*
 * Guest to host: sizes 0 .. 64 KiB arrive one datagram each, in order, from
 * "<uds>_dgram_g<guest port>"; a sendto() to that address reaches the guest
 * port, from the host port the replier is bound at.
 */
START_TEST(t_g2h_and_reply)
{
	static const uint32_t sizes[] = { 0, 1, 100, 4096, 4097, 65536 };
	const unsigned int n = sizeof(sizes) / sizeof(sizes[0]);
	struct vsock_dev_counters c;
	struct sockaddr_un from, want;
	uint8_t *buf = malloc(70000), *got = malloc(70000);
	struct fx_opts o;
	struct sim_pkt pkt;
	socklen_t flen;
	uint64_t bytes = 0;
	unsigned int i;
	struct fx fx;
	int fd;

	dgram_opts(&o, true);
	fx_setup(&fx, &o);
	fd = host_sock(&fx, HOST_PORT);
	for (i = 0; i < n; i++) {
		fill(buf, sizes[i], i);
		ck_assert_int_eq(sim_dgram_send(fx.drv, 2, GUEST_PORT + i % 2, HOST_PORT, buf,
						sizes[i], FX_T),
				 0);
		bytes += sizes[i];
	}
	for (i = 0; i < n; i++) {
		flen = sizeof(from);
		ck_assert_int_eq(host_recvfrom(fd, got, 70000, &from, &flen, FX_T), sizes[i]);
		fill(buf, sizes[i], i);
		ck_assert(!memcmp(got, buf, sizes[i]));
		dg_addr(&want, fx.uds, "g", GUEST_PORT + i % 2);
		ck_assert_str_eq(from.sun_path, want.sun_path);
	}
	/* Reply to the last sender's address: guest port GUEST_PORT + 1. */
	ck_assert_int_eq(host_sendto(fd, "pong!", 5, &from, flen), 5);
	ck_assert_int_eq(sim_dgram_recv(fx.drv, &pkt, FX_T), 0);
	ck_assert_uint_eq(pkt.hdr.src_cid, 2);
	ck_assert_uint_eq(pkt.hdr.dst_cid, sim_drv_guest_cid(fx.drv));
	ck_assert_uint_eq(pkt.hdr.src_port, HOST_PORT);
	ck_assert_uint_eq(pkt.hdr.dst_port, GUEST_PORT + 1);
	ck_assert_uint_eq(pkt.hdr.type, VIRTIO_VSOCK_TYPE_DGRAM);
	ck_assert_uint_eq(pkt.hdr.len, 5);
	ck_assert(!memcmp(pkt.payload, "pong!", 5));
	sim_pkt_free(&pkt);
	/* A 64 KiB reply spans mergeable buffers, one packet. */
	fill(buf, 65536, 9);
	ck_assert_int_eq(host_sendto(fd, buf, 65536, &from, flen), 65536);
	guest_expect(&fx, buf, 65536, GUEST_PORT + 1);
	FX_WAIT_EQ(&fx, dgram_rx_pkts, 2);
	FX_WAIT_EQ(&fx, dgram_tx_pkts, n);
	counters(&fx, &c);
	ck_assert_uint_eq(c.dgram_tx_bytes, bytes);
	ck_assert_uint_eq(c.dgram_rx_bytes, 5 + 65536);
	ck_assert_uint_eq(drops(&c), 0);
	ck_assert_uint_eq(c.malformed_pkts, 0);
	close(fd);
	host_unlink(&fx, HOST_PORT);
	fx_teardown(&fx);
	free(buf);
	free(got);
}
END_TEST

/*
 * The host's first datagram to a guest port: "SEND <port>\n" on the
 * gateway; from then on the guest port's own socket exists and takes
 * unframed datagrams; the guest's answer comes from it.
 */
START_TEST(t_h2g_gateway)
{
	struct sockaddr_un gw, gp, from;
	struct vsock_dev_counters c;
	struct fx_opts o;
	struct sim_pkt pkt;
	socklen_t gwlen, gplen, flen = sizeof(from);
	char buf[64];
	struct fx fx;
	int fd;

	dgram_opts(&o, false);
	fx_setup(&fx, &o);
	fd = host_sock(&fx, 6000);
	gwlen = dg_addr(&gw, fx.uds, "", -1);
	gplen = dg_addr(&gp, fx.uds, "g", 2000);
	ck_assert_int_eq(host_sendto(fd, "hello", 5, &gp, gplen), -ENOENT); /* not yet */
	ck_assert_int_eq(host_sendto(fd, "SEND 2000\nhello", 15, &gw, gwlen), 15);
	ck_assert_int_eq(sim_dgram_recv(fx.drv, &pkt, FX_T), 0);
	ck_assert_uint_eq(pkt.hdr.src_port, 6000);
	ck_assert_uint_eq(pkt.hdr.dst_port, 2000);
	ck_assert_uint_eq(pkt.hdr.len, 5);
	ck_assert(!memcmp(pkt.payload, "hello", 5));
	sim_pkt_free(&pkt);
	ck_assert_int_eq(host_sendto(fd, "again", 5, &gp, gplen), 5);
	guest_expect(&fx, "again", 5, 2000);
	ck_assert_int_eq(sim_dgram_send(fx.drv, 2, 2000, 6000, "answer", 6, FX_T), 0);
	ck_assert_int_eq(host_recvfrom(fd, buf, sizeof(buf), &from, &flen, FX_T), 6);
	ck_assert_str_eq(from.sun_path, gp.sun_path);
	/* An empty datagram through the gateway is a datagram too. */
	ck_assert_int_eq(host_sendto(fd, "SEND 2001\n", 10, &gw, gwlen), 10);
	ck_assert_int_eq(sim_dgram_recv(fx.drv, &pkt, FX_T), 0);
	ck_assert_uint_eq(pkt.hdr.dst_port, 2001);
	ck_assert_uint_eq(pkt.hdr.len, 0);
	sim_pkt_free(&pkt);
	FX_WAIT_EQ(&fx, dgram_rx_pkts, 3);
	FX_WAIT_EQ(&fx, dgram_tx_pkts, 1);
	counters(&fx, &c);
	ck_assert_uint_eq(drops(&c), 0);
	close(fd);
	host_unlink(&fx, 6000);
	fx_teardown(&fx);
}
END_TEST

/* Host side drops: each reason counted once, the guest sees nothing of them. */
START_TEST(t_host_drops)
{
	struct sockaddr_un gw, gp, sa;
	struct vsock_dev_counters c;
	uint8_t *big = calloc(1, 70000);
	struct fx_opts o;
	struct sim_pkt pkt;
	socklen_t gwlen, gplen, len;
	struct fx fx;
	int fd, anon, file;

	dgram_opts(&o, true);
	fx_setup(&fx, &o);
	fd = host_sock(&fx, 6001);
	anon = host_sock(&fx, -1);
	gwlen = dg_addr(&gw, fx.uds, "", -1);
	gplen = dg_addr(&gp, fx.uds, "g", 3000);
	/* tx no_dest: nobody bound at the host port. */
	ck_assert_int_eq(sim_dgram_send(fx.drv, 2, 3000, 5999, "a", 1, FX_T), 0);
	FX_WAIT_EQ(&fx, dgram_tx_drop_no_dest, 1);
	/* rx bad_addr: an unbound sender; a bad gateway line. */
	ck_assert_int_eq(host_sendto(anon, "x", 1, &gp, gplen), 1);
	FX_WAIT_EQ(&fx, dgram_rx_drop_bad_addr, 1);
	ck_assert_int_eq(host_sendto(fd, "SENDX 1\nx", 9, &gw, gwlen), 9);
	FX_WAIT_EQ(&fx, dgram_rx_drop_bad_addr, 2);
	ck_assert_int_eq(host_sendto(fd, "SEND 99999999999\nx", 18, &gw, gwlen), 18);
	FX_WAIT_EQ(&fx, dgram_rx_drop_bad_addr, 3);
	/* rx too_big: over 64 KiB, read whole with MSG_TRUNC and dropped. */
	ck_assert_int_eq(host_sendto(fd, big, 65537, &gp, gplen), 65537);
	FX_WAIT_EQ(&fx, dgram_rx_drop_too_big, 1);
	ck_assert_int_eq(host_sendto(fd, big, 65536, &gp, gplen), 65536); /* the limit passes */
	FX_WAIT_EQ(&fx, dgram_rx_pkts, 1);
	ck_assert_int_eq(sim_dgram_recv(fx.drv, &pkt, FX_T), 0);
	ck_assert_uint_eq(pkt.hdr.len, 65536);
	sim_pkt_free(&pkt);
	/* tx err: the guest port's path is taken by a regular file (not ours to remove). */
	len = dg_addr(&sa, fx.uds, "g", 3001);
	(void)len;
	file = open(sa.sun_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ck_assert_int_ge(file, 0);
	close(file);
	ck_assert_int_eq(sim_dgram_send(fx.drv, 2, 3001, 6001, "b", 1, FX_T), 0);
	FX_WAIT_EQ(&fx, dgram_tx_drop_err, 1);
	unlink(sa.sun_path);
	/* tx no_dest: another guest's CID that no device has. */
	ck_assert_int_eq(sim_dgram_send(fx.drv, 77, 3000, 6001, "c", 1, FX_T), 0);
	FX_WAIT_EQ(&fx, dgram_tx_drop_no_dest, 2);
	ck_assert_int_eq(sim_wait_tx_idle(fx.drv, FX_T), 0);
	counters(&fx, &c);
	ck_assert_uint_eq(c.dgram_tx_pkts, 0);
	ck_assert_uint_eq(c.dgram_tx_drop_full + c.dgram_tx_drop_malformed, 0);
	ck_assert_uint_eq(c.dgram_rx_drop_no_buf + c.dgram_rx_drop_err, 0);
	ck_assert_uint_eq(c.conn_resets + c.malformed_pkts + c.stray_pkts, 0);
	ck_assert_int_eq(sim_dgram_recv(fx.drv, &pkt, 50), -ETIMEDOUT);
	close(fd);
	close(anon);
	host_unlink(&fx, 6001);
	fx_teardown(&fx);
	free(big);
}
END_TEST

/*
 * tx full: a host socket that does not read. Never blocks the TX queue:
 * every datagram is either taken or dropped and counted, at once.
 */
START_TEST(t_host_full)
{
	struct vsock_dev_counters c;
	struct fx_opts o;
	uint8_t buf[4096] = { 0 };
	struct fx fx;
	unsigned int i, n = 2000;
	int fd, small = 4096;

	dgram_opts(&o, false);
	fx_setup(&fx, &o);
	fd = host_sock(&fx, 6002);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	for (i = 0; i < n; i++)
		ck_assert_int_eq(sim_dgram_send(fx.drv, 2, 3002, 6002, buf, sizeof(buf), FX_T), 0);
	ck_assert_int_eq(sim_wait_tx_idle(fx.drv, FX_T), 0);
	counters(&fx, &c);
	ck_assert_uint_eq(c.dgram_tx_pkts + c.dgram_tx_drop_full, n);
	ck_assert_uint_gt(c.dgram_tx_drop_full, 0);
	ck_assert_uint_gt(c.dgram_tx_pkts, 0);
	close(fd);
	host_unlink(&fx, 6002);
	fx_teardown(&fx);
}
END_TEST

/* rx no_buf: the guest posted no RX buffer; a datagram never waits for one. */
START_TEST(t_no_rx_buffer)
{
	struct sockaddr_un gw;
	struct vsock_dev_counters c;
	struct fx_opts o;
	socklen_t gwlen;
	struct fx fx;
	int fd;

	dgram_opts(&o, false);
	o.drv.no_rx_refill = true;
	o.drv.rx_start_empty = true;
	fx_setup(&fx, &o);
	fd = host_sock(&fx, 6003);
	gwlen = dg_addr(&gw, fx.uds, "", -1);
	ck_assert_int_eq(host_sendto(fd, "SEND 4000\nlost", 14, &gw, gwlen), 14);
	FX_WAIT_EQ(&fx, dgram_rx_drop_no_buf, 1);
	/* Buffers now: the next one goes through, the lost one does not come back. */
	ck_assert_int_gt(sim_rx_refill(fx.drv, 128),
			 0); /* more than the quarter kept for streams */
	ck_assert_int_eq(host_sendto(fd, "SEND 4000\nfound", 15, &gw, gwlen), 15);
	guest_expect(&fx, "found", 5, 4000);
	FX_WAIT_EQ(&fx, dgram_rx_pkts, 1);
	counters(&fx, &c);
	ck_assert_uint_eq(c.dgram_rx_drop_no_buf, 1);
	close(fd);
	host_unlink(&fx, 6003);
	fx_teardown(&fx);
}
END_TEST

/*
 * Datagrams never take the last quarter of the RX queue: with 64 buffers
 * posted on a 64-entry queue and none reposted, a burst of 64 datagrams
 * gets 48 through and 16 dropped; a stream then still connects and gets
 * its data in the 16 left.
 */
START_TEST(t_rx_reserve)
{
	struct sockaddr_un gw;
	struct vsock_dev_counters c;
	struct sim_conn *conn;
	struct fx_opts o;
	socklen_t gwlen;
	char buf[32];
	struct fx fx;
	int fd, hfd, lfd, i, n;

	dgram_opts(&o, false);
	o.drv.queue_size = 64;
	o.drv.no_rx_refill = true;
	o.drv.rx_start_empty = true;
	fx_setup(&fx, &o);
	ck_assert_int_eq(sim_rx_refill(fx.drv, 64), 64);
	fd = host_sock(&fx, 6005);
	gwlen = dg_addr(&gw, fx.uds, "", -1);
	for (i = 0; i < 64; i++) {
		n = snprintf(buf, sizeof(buf), "SEND 4500\n%d", i);
		ck_assert_int_eq(host_sendto(fd, buf, (size_t)n, &gw, gwlen), n);
	}
	FX_WAIT_EQ(&fx, dgram_rx_drop_no_buf, 16);
	counters(&fx, &c);
	ck_assert_uint_eq(c.dgram_rx_pkts, 48);
	for (i = 0; i < FX_T && sim_rx_posted(fx.drv) != 16; i++)
		usleep(1000); /* the driver's thread takes the used entries */
	ck_assert_uint_eq(sim_rx_posted(fx.drv), 16);
	hfd = fx_guest_connect(&fx, HOST_PORT, VIRTIO_VSOCK_TYPE_STREAM, &conn, &lfd);
	ck_assert_int_eq(hp_write_all(hfd, "stream data", 11, FX_T), 11);
	ck_assert_int_eq(sim_recv(conn, buf, sizeof(buf), FX_T), 11);
	ck_assert(!memcmp(buf, "stream data", 11));
	sim_rx_set_refill(fx.drv, true);
	fx_close_both(hfd, conn, false);
	close(lfd);
	close(fd);
	host_unlink(&fx, 6005);
	ck_assert_uint_eq(sim_dgram_flush(fx.drv), 48);
	fx_teardown(&fx);
}
END_TEST

/*
 * A Linux 6.1 guest refills its RX queue only once fewer than half of its
 * buffers are left with the device (the simulated driver's default), and an
 * idle pump keeps the chains it reserved for its last stream: two pumps of a
 * 256-entry queue hold 128. Datagrams, which never take the last quarter,
 * then had 64 chains in all, and the guest, still holding 192 of 256 out,
 * never refilled: host-to-guest datagrams stopped for good until a stream
 * moved again. Now a datagram that finds too few chains makes the pumps put
 * theirs in the pool (pump_dgram_short()). Small streams first make both
 * pumps reserve; then 1024 host datagrams of 4000 bytes, four times the queue,
 * each sent once the previous one arrived; one that is dropped (no buffer)
 * is sent again, at most 7 resends in the whole run.
 */
START_TEST(t_rx_idle_pumps_give_back)
{
	static uint8_t buf[4000];
	struct vsock_dev_counters c;
	struct sockaddr_un gp;
	struct sim_conn *conn;
	struct fx_opts o;
	struct sim_pkt pkt;
	socklen_t gplen;
	unsigned int i, resent = 0;
	struct fx fx;
	int fd, hfd, lfd;

	dgram_opts(&o, true);
	o.rx_threads = 2;
	fx_setup(&fx, &o);
	/*
	 * One byte on each of 2 connections, one per pump (dev_pump_of(): host
	 * port * 31 + guest port, odd for one and even for the other, the
	 * driver's ports being consecutive): each pump reserves a batch of 64
	 * chains for its first packet and keeps what its few packets leave.
	 */
	for (i = 0; i < 2; i++) {
		hfd = fx_guest_connect(&fx, HOST_PORT + 2 * i, VIRTIO_VSOCK_TYPE_STREAM, &conn,
				       &lfd);
		ck_assert_int_eq(hp_write_all(hfd, "x", 1, FX_T), 1);
		ck_assert_int_eq(sim_recv(conn, buf, sizeof(buf), FX_T), 1);
		fx_close_both(hfd, conn, false);
		close(lfd);
	}
	fd = host_sock(&fx, 6006);
	ck_assert_int_eq(sim_dgram_send(fx.drv, 2, 4600, 6006, "hi", 2, FX_T), 0);
	ck_assert_int_eq(host_recvfrom(fd, buf, sizeof(buf), NULL, NULL, FX_T), 2);
	gplen = dg_addr(&gp, fx.uds, "g", 4600);
	for (i = 0; i < 1024; i++) {
		uint64_t dropped;
		int waited = 0;

		fill(buf, sizeof(buf), i);
		counters(&fx, &c);
		dropped = c.dgram_rx_drop_no_buf;
		ck_assert_int_eq(host_sendto(fd, buf, sizeof(buf), &gp, gplen),
				 (ssize_t)sizeof(buf));
		while (sim_dgram_recv(fx.drv, &pkt, 20)) {
			counters(&fx, &c);
			if (c.dgram_rx_drop_no_buf != dropped) {
				ck_assert_uint_lt(++resent, 8);
				dropped = c.dgram_rx_drop_no_buf;
				ck_assert_int_eq(host_sendto(fd, buf, sizeof(buf), &gp, gplen),
						 (ssize_t)sizeof(buf));
			}
			waited += 20;
			ck_assert_msg(waited < FX_T,
				      "datagram %u of 1024: not delivered, %u resent", i, resent);
		}
		ck_assert_uint_eq(pkt.hdr.len, sizeof(buf));
		ck_assert(!memcmp(pkt.payload, buf, sizeof(buf)));
		sim_pkt_free(&pkt);
	}
	FX_WAIT_EQ(&fx, dgram_rx_pkts, 1024); /* counted just after it is published */
	counters(&fx, &c);
	ck_assert_uint_eq(c.dgram_rx_drop_no_buf, resent);
	close(fd);
	host_unlink(&fx, 6006);
	fx_teardown(&fx);
}
END_TEST

/*
 * Without MRG_RXBUF an RX buffer holds 4096 payload bytes: a larger
 * datagram is dropped and counted (never split), one that fits arrives.
 */
START_TEST(t_no_mrg_too_big)
{
	struct sockaddr_un gp;
	struct vsock_dev_counters c;
	uint8_t buf[8192];
	struct fx_opts o;
	socklen_t gplen;
	struct fx fx;
	int fd;

	dgram_opts(&o, false);
	fx_setup(&fx, &o);
	ck_assert(!(sim_drv_features(fx.drv) & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)));
	fd = host_sock(&fx, 6004);
	/* The guest port's socket exists once the guest sent from it. */
	ck_assert_int_eq(sim_dgram_send(fx.drv, 2, 4001, 6004, "hi", 2, FX_T), 0);
	FX_WAIT_EQ(&fx, dgram_tx_pkts, 1);
	gplen = dg_addr(&gp, fx.uds, "g", 4001);
	fill(buf, sizeof(buf), 3);
	ck_assert_int_eq(host_sendto(fd, buf, 4097, &gp, gplen), 4097);
	FX_WAIT_EQ(&fx, dgram_rx_drop_too_big, 1);
	ck_assert_int_eq(host_sendto(fd, buf, 4096, &gp, gplen), 4096);
	guest_expect(&fx, buf, 4096, 4001);
	FX_WAIT_EQ(&fx, dgram_rx_pkts, 1);
	counters(&fx, &c);
	ck_assert_uint_eq(c.dgram_rx_drop_no_buf, 0);
	close(fd);
	host_unlink(&fx, 6004);
	fx_teardown(&fx);
}
END_TEST

/*
 * Malformed datagrams: op not RW, len beyond the chain, len over 64 KiB,
 * another src_cid, flags set. Each is dropped and counted; a stream
 * connection on the very same ports is not reset and still moves data.
 */
START_TEST(t_malformed)
{
	struct vsock_dev_counters c;
	struct virtio_vsock_hdr h;
	static uint8_t payload[70000];
	struct sim_conn *conn;
	struct fx_opts o;
	struct fx fx;
	uint32_t gport;
	int fd, lfd;
	unsigned int i;

	dgram_opts(&o, true);
	o.drv.no_auto_rst = true;
	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, HOST_PORT, VIRTIO_VSOCK_TYPE_STREAM, &conn, &lfd);
	{
		struct sim_conn_info ci;

		sim_conn_info(conn, &ci);
		gport = ci.local_port;
	}
	for (i = 0; i < 5; i++) {
		uint32_t plen = 16;

		sim_hdr_init(fx.drv, &h, gport, HOST_PORT, VIRTIO_VSOCK_TYPE_DGRAM,
			     VIRTIO_VSOCK_OP_RW);
		h.len = 16;
		switch (i) {
		case 0:
			h.op = VIRTIO_VSOCK_OP_SHUTDOWN;
			h.len = 0;
			plen = 0;
			break;
		case 1:
			h.len = 17; /* one more than the chain holds */
			break;
		case 2:
			h.len = plen = 65537;
			break;
		case 3:
			h.src_cid = sim_drv_guest_cid(fx.drv) + 1;
			break;
		case 4:
			h.flags = 1;
			break;
		}
		ck_assert_int_ge(sim_send_pkt(fx.drv, &h, payload, plen, SIM_SHAPE_HDR_SEP, FX_T),
				 0);
		FX_WAIT_EQ(&fx, dgram_tx_drop_malformed, i + 1);
	}
	fx_xfer_g2h(fd, conn, 100000, 1);
	fx_xfer_h2g(fd, conn, 100000, 2);
	counters(&fx, &c);
	ck_assert_uint_eq(c.malformed_pkts, 5);
	ck_assert_uint_eq(c.conn_resets, 0);
	ck_assert_uint_eq(c.stray_pkts, 0);
	ck_assert_uint_eq(c.dgram_tx_pkts, 0);
	fx_close_both(fd, conn, false);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/* Guest to guest through the router: both ways, sender identified; a non-DGRAM guest is no destination. */
START_TEST(t_g2g)
{
	struct vsock_dev_counters ca, cb;
	struct fx a, b, d;
	struct fx_opts oa, ob, od;
	uint8_t buf[20000];
	struct sim_pkt pkt;
	unsigned int i;

	dgram_opts(&oa, true);
	dgram_opts(&ob, false);
	memset(&od, 0, sizeof(od)); /* no DGRAM */
	oa.drv.guest_cid = 3;
	ob.drv.guest_cid = 4;
	od.drv.guest_cid = 5;
	oa.drv.peer_guests = ob.drv.peer_guests = od.drv.peer_guests = true;
	fx_setup(&a, &oa);
	fx_setup(&b, &ob);
	fx_setup(&d, &od);
	for (i = 0; i < 10; i++) {
		fill(buf, 100 * i, i);
		ck_assert_int_eq(sim_dgram_send(a.drv, 4, 800, 900, buf, 100 * i, FX_T), 0);
	}
	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(sim_dgram_recv(b.drv, &pkt, FX_T), 0);
		ck_assert_uint_eq(pkt.hdr.src_cid, 3);
		ck_assert_uint_eq(pkt.hdr.dst_cid, 4);
		ck_assert_uint_eq(pkt.hdr.src_port, 800);
		ck_assert_uint_eq(pkt.hdr.dst_port, 900);
		ck_assert_uint_eq(pkt.hdr.len, 100 * i);
		fill(buf, 100 * i, i);
		ck_assert(!memcmp(pkt.payload, buf, 100 * i));
		sim_pkt_free(&pkt);
	}
	/* B to A: 20000 bytes span A's mergeable buffers; to B it would not fit one buffer. */
	fill(buf, sizeof(buf), 5);
	ck_assert_int_eq(sim_dgram_send(b.drv, 3, 900, 800, buf, sizeof(buf), FX_T), 0);
	ck_assert_int_eq(sim_dgram_recv(a.drv, &pkt, FX_T), 0);
	ck_assert_uint_eq(pkt.hdr.src_cid, 4);
	ck_assert_uint_eq(pkt.hdr.len, sizeof(buf));
	ck_assert(!memcmp(pkt.payload, buf, sizeof(buf)));
	sim_pkt_free(&pkt);
	ck_assert_int_eq(sim_dgram_send(a.drv, 4, 800, 900, buf, sizeof(buf), FX_T), 0);
	FX_WAIT_EQ(&b, dgram_rx_drop_too_big, 1);
	/* D did not negotiate DGRAM: no destination. */
	ck_assert_int_eq(sim_dgram_send(a.drv, 5, 800, 900, "x", 1, FX_T), 0);
	FX_WAIT_EQ(&a, dgram_tx_drop_no_dest, 1);
	FX_WAIT_EQ(&b, dgram_rx_pkts, 10);
	FX_WAIT_EQ(&a, dgram_rx_pkts, 1);
	fx_counters(&a, &ca);
	fx_counters(&b, &cb);
	ck_assert_uint_eq(ca.dgram_tx_pkts, 11);
	ck_assert_uint_eq(cb.dgram_rx_pkts, 10);
	ck_assert_uint_eq(cb.dgram_tx_pkts, 1);
	ck_assert_uint_eq(ca.dgram_rx_pkts, 1);
	ck_assert_uint_eq(ca.stray_pkts + cb.stray_pkts + ca.conns_refused, 0);
	fx_teardown(&d);
	fx_teardown(&b);
	fx_teardown(&a);
}
END_TEST

/* ---- a stream under a datagram flood ---- */

/* A stream between the guest and the host, and a datagram flood next to it. */
struct flood {
	struct fx fx;
	struct sim_conn *conn;
	int fd, lfd; /* the stream's host end, its listener */
	atomic_bool stop;
	uint64_t sent, guest_got;
	pthread_t host_t, guest_t;
};

/* Host: datagrams of 1 KiB through guest port 4100's socket, as fast as they are taken. */
static void *flood_host(void *arg)
{
	struct flood *f = arg;
	struct sockaddr_un gp;
	socklen_t gplen = dg_addr(&gp, f->fx.uds, "g", 4100);
	uint8_t buf[1024] = { 1 };
	int fd = host_sock(&f->fx, 6100);
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (!atomic_load(&f->stop))
		if (sendto(fd, buf, sizeof(buf), 0, (struct sockaddr *)&gp, gplen) > 0)
			f->sent++;
	close(fd);
	return NULL;
}

/* Guest: take datagrams as they come (a reader that keeps up). */
static void *flood_guest(void *arg)
{
	struct flood *f = arg;
	struct sim_pkt pkt;

	while (!atomic_load(&f->stop)) {
		if (sim_dgram_recv(f->fx.drv, &pkt, 50))
			continue;
		f->guest_got++;
		sim_pkt_free(&pkt);
	}
	return NULL;
}

/* Guest: 1 KiB datagrams to a host socket that never reads (each one taken or dropped). */
static void *flood_guest_tx(void *arg)
{
	struct flood *f = arg;
	uint8_t buf[1024] = { 2 };

	while (!atomic_load(&f->stop))
		if (!sim_dgram_send(f->fx.drv, 2, 4200, 6200, buf, sizeof(buf), FX_T))
			f->sent++;
	return NULL;
}

static void flood_open(struct flood *f)
{
	struct fx_opts o;

	memset(f, 0, sizeof(*f));
	dgram_opts(&o, true);
	fx_setup(&f->fx, &o);
	f->fd = fx_guest_connect(&f->fx, HOST_PORT, VIRTIO_VSOCK_TYPE_STREAM, &f->conn, &f->lfd);
}

/*
 * The best of 3 transfers of 16 MiB on the stream, guest to host or host to
 * guest; the seconds taken, printed with @what.
 */
static double best_secs(struct flood *f, bool g2h, const char *what)
{
	const size_t len = 16u << 20;
	double best = 1e9;
	int i;

	for (i = 0; i < 3; i++) {
		int64_t t0 = hp_now_ms();
		double t;

		if (g2h)
			fx_xfer_g2h(f->fd, f->conn, len, (uint64_t)i);
		else
			fx_xfer_h2g(f->fd, f->conn, len, (uint64_t)i);
		t = (double)(hp_now_ms() - t0 + 1) / 1000.0;
		if (t < best)
			best = t;
	}
	fprintf(stderr, "16 MiB %s %s: %.3f s (%.0f MB/s)\n", g2h ? "g2h" : "h2g", what, best,
		len / best / 1e6);
	return best;
}

/* Stop the flood's threads, end the stream, destroy. */
static void flood_close(struct flood *f)
{
	atomic_store(&f->stop, true);
	if (f->host_t)
		pthread_join(f->host_t, NULL);
	if (f->guest_t)
		pthread_join(f->guest_t, NULL);
	fx_close_both(f->fd, f->conn, true);
	close(f->lfd);
	fx_teardown(&f->fx);
}

/*
 * The other direction: a guest-to-host stream on the same TX queue as a
 * guest datagram flood to a host socket that never reads (so the device
 * drops nearly all of them, at once). The TX queue is one FIFO the guest
 * fills: the device takes packets in the guest's order and cannot put the
 * stream first; what it guarantees is that no datagram ever waits (each is
 * taken or dropped at once), so the stream only shares the ring and the
 * CPU. Bound: at least 1/6 of its pace (measured 0.34-0.44 on 2 shared
 * cores, where the simulated guest's flood thread and the stream's sender
 * contend for the driver's one lock).
 */
START_TEST(t_flood_no_stall_tx)
{
	struct vsock_dev_counters c;
	double alone, flooded;
	struct flood *f = calloc(1, sizeof(*f));
	int sink;

	ck_assert_ptr_nonnull(f);
	flood_open(f);
	sink = host_sock(&f->fx, 6200);
	alone = best_secs(f, true, "alone");
	ck_assert_int_eq(pthread_create(&f->guest_t, NULL, flood_guest_tx, f), 0);
	FX_WAIT(&f->fx, dgram_tx_drop_full, 100, FX_T);
	flooded = best_secs(f, true, "under a guest datagram flood");
	atomic_store(&f->stop, true);
	pthread_join(f->guest_t, NULL);
	f->guest_t = 0;
	ck_assert_int_eq(sim_wait_tx_idle(f->fx.drv, FX_T), 0);
	counters(&f->fx, &c);
	fprintf(stderr,
		"t_flood_no_stall_tx: ratio %.2f; flood: %llu sent, %llu taken, %llu dropped\n",
		alone / flooded, (unsigned long long)f->sent, (unsigned long long)c.dgram_tx_pkts,
		(unsigned long long)c.dgram_tx_drop_full);
	ck_assert_uint_eq(c.dgram_tx_pkts + c.dgram_tx_drop_full, f->sent);
	ck_assert_msg(flooded <= 6 * alone, "stream under a flood: %.3f s, alone %.3f s", flooded,
		      alone);
	ck_assert_uint_eq(c.conn_resets, 0);
	close(sink);
	host_unlink(&f->fx, 6200);
	flood_close(f);
	free(f);
}
END_TEST

/*
 * A host-to-guest stream on the same RX queue as a datagram flood: it
 * completes, and its throughput stays within a bound of the same transfer
 * without the flood, measured in this run (best of 3 each). Bound: at least
 * 1/3 (on 2 shared cores the flood's own threads take CPU from the
 * stream's; what is checked is that the stream is not starved of RX
 * buffers: datagrams never take the last quarter of the queue).
 */
START_TEST(t_flood_no_stall)
{
	struct vsock_dev_counters c;
	double alone, flooded;
	struct flood *f = calloc(1, sizeof(*f));

	ck_assert_ptr_nonnull(f);
	flood_open(f);
	/* Guest port 4100 sends first: its socket exists. */
	ck_assert_int_eq(sim_dgram_send(f->fx.drv, 2, 4100, 6100, "hi", 1, FX_T), 0);
	FX_WAIT(&f->fx, dgram_tx_drop_no_dest, 1, FX_T);
	alone = best_secs(f, false, "alone");
	ck_assert_int_eq(pthread_create(&f->host_t, NULL, flood_host, f), 0);
	ck_assert_int_eq(pthread_create(&f->guest_t, NULL, flood_guest, f), 0);
	FX_WAIT(&f->fx, dgram_rx_pkts, 100, FX_T);
	flooded = best_secs(f, false, "under a host datagram flood");
	counters(&f->fx, &c);
	fprintf(stderr, "t_flood_no_stall: ratio %.2f; flood: %llu delivered, %llu no_buf drops\n",
		alone / flooded, (unsigned long long)c.dgram_rx_pkts,
		(unsigned long long)c.dgram_rx_drop_no_buf);
	ck_assert_uint_gt(c.dgram_rx_pkts, 100);
	ck_assert_msg(flooded <= 3 * alone, "stream under a flood: %.3f s, alone %.3f s", flooded,
		      alone);
	ck_assert_uint_eq(c.conn_resets, 0);
	host_unlink(&f->fx, 6100);
	flood_close(f);
	free(f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("device_dgram");

	FX_ADD(s, t_feature, 30);
	FX_ADD(s, t_g2h_and_reply, 30);
	FX_ADD(s, t_h2g_gateway, 30);
	FX_ADD(s, t_host_drops, 30);
	FX_ADD(s, t_host_full, 60);
	FX_ADD(s, t_no_rx_buffer, 30);
	FX_ADD(s, t_no_mrg_too_big, 30);
	FX_ADD(s, t_rx_reserve, 30);
	FX_ADD(s, t_rx_idle_pumps_give_back, 60);
	FX_ADD(s, t_malformed, 30);
	FX_ADD(s, t_g2g, 30);
	FX_ADD(s, t_flood_no_stall, 120);
	FX_ADD(s, t_flood_no_stall_tx, 120);
	return fx_run_suite(s);
}
