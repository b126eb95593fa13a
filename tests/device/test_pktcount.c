// SPDX-License-Identifier: MIT
/*
 * Device tests: the number of RX packets a connection has in flight (issue 21).
 *
 * A host program writing one byte per send() makes the RX pump read a few bytes at a
 * time, and every read became one RX packet: 1 MiB arrived at a 6.1 guest in 117,730 to
 * 260,979 packets. Linux from 6.12.92 on charges each queued skb's overhead against
 * buf_alloc and resets the connection once (queued + 1) x SKB_TRUESIZE(0) exceeds it.
 * The simulated driver plays such a guest (sim_drv_config.rx_pkt_overhead, 576 bytes:
 * SKB_TRUESIZE(0) on x86-64) and counts every unconsumed RW packet as queued (stricter
 * than Linux, which may merge a small payload into the previous skb). The device must
 * keep a connection's unconsumed packets within its documented bound (conn.h:
 * conn_rx_pkt_limit(), buf_alloc / 2048, at least 1) by holding data until the guest's
 * fwd_cnt shows packets consumed, asking for it with CREDIT_REQUEST, so that the bytes
 * gather in the host socket and go out in fewer, larger packets.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 9600
#define SKB_TRUESIZE0 576u /* x86-64: SKB_DATA_ALIGN(sizeof(sk_buff)) + shinfo */

struct tiny_writer {
	int fd;
	size_t len;
	uint64_t seed;
	ssize_t rc;
};

/* The host side: @len pattern bytes, one byte per send(), as fast as the socket takes them. */
static void *tiny_write(void *arg)
{
	struct tiny_writer *w = arg;
	uint8_t *buf = malloc(w->len);
	uint64_t st = w->seed;
	size_t i;

	w->rc = 0;
	if (!buf) {
		w->rc = -ENOMEM;
		return NULL;
	}
	hp_fill(&st, buf, w->len);
	for (i = 0; i < w->len; i++) {
		ssize_t r;

		do
			r = send(w->fd, buf + i, 1, MSG_NOSIGNAL);
		while (r < 0 && errno == EINTR);
		if (r != 1) {
			w->rc = r < 0 ? -errno : -EIO;
			break;
		}
	}
	free(buf);
	return NULL;
}

/*
 * @len bytes in 1-byte writes to a guest that stalls @stall_ms after the first byte, then
 * reads 4 KiB every @gap_us. Checks every byte, that the guest never reset the
 * connection, and the most packets it ever held against the device's bound.
 */
static void tiny_writes(size_t len, unsigned int stall_ms, unsigned int gap_us, bool mrg)
{
	struct fx_opts o = { .mrg = mrg, .drv = { .rx_pkt_overhead = SKB_TRUESIZE0 } };
	struct tiny_writer w = { .len = len, .seed = 77 };
	struct vsock_dev_counters dc;
	struct sim_drv_stats ds;
	struct sim_conn_info ci;
	uint64_t h = HP_HASH_INIT;
	uint8_t buf[4096];
	struct sim_conn *c;
	struct fx fx;
	size_t got = 0;
	uint32_t bound;
	pthread_t t;
	int lfd;

	fx_setup(&fx, &o);
	w.fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	ck_assert_int_eq(pthread_create(&t, NULL, tiny_write, &w), 0);
	while (got < len) {
		ssize_t r = sim_recv(c, buf, sizeof(buf), FX_T);

		if (r <= 0) {
			sim_conn_info(c, &ci);
			sim_drv_get_stats(fx.drv, &ds);
			ck_abort_msg("guest recv after %zu of %zu bytes: %zd (reset %d, %u packets "
				     "queued, %llu reset by the packet rule)",
				     got, len, r, ci.reset, ci.rx_queued_pkts,
				     (unsigned long long)ds.pkt_overhead_resets);
		}
		h = hp_hash(h, buf, (size_t)r);
		if (!got && stall_ms)
			usleep(stall_ms * 1000u);
		got += (size_t)r;
		if (gap_us)
			usleep(gap_us);
	}
	pthread_join(t, NULL);
	ck_assert_int_eq(w.rc, 0);
	ck_assert_msg(h == fx_pattern_hash(len, 77), "hash differs");
	sim_conn_info(c, &ci);
	sim_drv_get_stats(fx.drv, &ds);
	fx_counters(&fx, &dc);
	bound = 256u * 1024 / 2048;
	ck_assert_msg(!ci.reset && !ds.pkt_overhead_resets, "the guest reset the connection");
	ck_assert_msg(ci.rx_queued_pkts_max <= bound,
		      "%u RX packets in flight at once, bound %u (%llu RX packets, %llu stalls)",
		      ci.rx_queued_pkts_max, bound, (unsigned long long)dc.rx_pkts,
		      (unsigned long long)dc.rx_pkt_limit_stalls);
	printf("tiny_writes(%zu, stall %u ms, gap %u us, mrg %d): %llu RX packets, at most %u "
	       "unconsumed (bound %u), %llu stalls at the bound\n",
	       len, stall_ms, gap_us, mrg, (unsigned long long)dc.rx_pkts, ci.rx_queued_pkts_max,
	       bound, (unsigned long long)dc.rx_pkt_limit_stalls);
	close(w.fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}

/* The guest stalls 0.5 s, then reads at about 200 KiB/s. */
START_TEST(t_tiny_writes_slow_reader)
{
	tiny_writes(128u << 10, 500, 20000, true);
}
END_TEST

/* The same without mergeable RX buffers (Linux 6.1's 4 KiB buffers). */
START_TEST(t_tiny_writes_slow_reader_no_mrg)
{
	tiny_writes(128u << 10, 500, 20000, false);
}
END_TEST

/* A guest that keeps up: reads as soon as data is there. */
START_TEST(t_tiny_writes_fast_reader)
{
	tiny_writes(256u << 10, 0, 0, true);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_pktcount");

	FX_ADD(s, t_tiny_writes_slow_reader, 60);
	FX_ADD(s, t_tiny_writes_slow_reader_no_mrg, 60);
	FX_ADD(s, t_tiny_writes_fast_reader, 60);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
