// SPDX-License-Identifier: MIT
/*
 * Device tests, malformed guest input: every bad descriptor chain or header
 * must come back in the used ring, bump malformed_pkts by exactly one, and
 * leave the device working (checked after each case on a live connection).
 * Run under ASan/UBSan in CI, which also catches out-of-bounds accesses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/virtio_ring.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 7000
#define HDR 44u

struct mctx {
	struct fx fx;
	struct sim_conn *c; /* live connection for the after-check */
	int lfd, fd;
};

static void m_setup(struct mctx *m, const struct fx_opts *o)
{
	fx_setup(&m->fx, o);
	m->fd = fx_guest_connect(&m->fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &m->c, &m->lfd);
}

static void m_alive(struct mctx *m, uint64_t seed)
{
	fx_xfer_g2h(m->fd, m->c, 5000, seed);
	fx_xfer_h2g(m->fd, m->c, 5000, seed + 1);
}

static void m_teardown(struct mctx *m)
{
	close(m->fd);
	sim_close(m->c, FX_T);
	close(m->lfd);
	fx_teardown(&m->fx);
}

/* Guest memory holding @len bytes starting with a header (ports 7777 -> 8888). */
static uint64_t hdr_buf(struct mctx *m, uint32_t len, uint16_t op, uint32_t hlen)
{
	uint64_t gpa = sim_alloc(m->fx.drv, len < HDR ? HDR : len, 16);
	struct virtio_vsock_hdr h;
	uint8_t *p = sim_gpa_ptr(m->fx.drv, gpa, len < HDR ? HDR : len);

	ck_assert_ptr_nonnull(p);
	memset(p, 0x5a, len < HDR ? HDR : len);
	sim_hdr_init(m->fx.drv, &h, 7777, 8888, VIRTIO_VSOCK_TYPE_STREAM, op);
	h.len = hlen;
	h.buf_alloc = 65536;
	memcpy(p, &h, HDR);
	return gpa;
}

static struct virtio_vsock_hdr *hdr_at(struct mctx *m, uint64_t gpa)
{
	return sim_gpa_ptr(m->fx.drv, gpa, HDR);
}

/* Submit @n raw descriptors on @q, expect them back and one malformed packet. */
static void expect_malformed(struct mctx *m, unsigned int q, const struct sim_raw_desc *d,
			     unsigned int n, const char *what)
{
	struct vsock_dev_counters c0, c1;
	uint32_t used = 0;
	int head, rc;

	fx_counters(&m->fx, &c0);
	head = sim_raw_chain(m->fx.drv, q, d, n);
	ck_assert_int_ge(head, 0);
	rc = sim_raw_wait(m->fx.drv, q, head, &used, FX_T);
	ck_assert_msg(rc == 0, "%s: chain not returned (%d)", what, rc);
	FX_WAIT(&m->fx, malformed_pkts, c0.malformed_pkts + 1, FX_T);
	fx_counters(&m->fx, &c1);
	ck_assert_msg(c1.malformed_pkts == c0.malformed_pkts + 1, "%s: malformed_pkts +%llu", what,
		      (unsigned long long)(c1.malformed_pkts - c0.malformed_pkts));
	if (q == VSOCK_VQ_TX)
		ck_assert_msg(used == 0, "%s: used len %u on a TX chain", what, used);
}

#define D(g, l, f, nx) ((struct sim_raw_desc){ .gpa = (g), .len = (l), .flags = (f), .next = (nx) })
#define NX VRING_DESC_F_NEXT
#define WR VRING_DESC_F_WRITE
#define IND VRING_DESC_F_INDIRECT
#define AUTO SIM_NEXT_AUTO

static const char *const tx_case_names[] = {
	"short header (20 bytes)",
	"short header over 3 descriptors (43 bytes)",
	"hdr.len larger than the chain",
	"hdr.len over 64 KiB",
	"address outside guest memory",
	"address + len overflows",
	"buffer runs past the end of guest memory",
	"writable TX descriptor",
	"readable then writable descriptor on TX",
	"chain loop over 2 descriptors",
	"descriptor chained to itself",
	"next == queue size",
	"next == 0xffff",
	"indirect table len not a multiple of 16",
	"indirect table len 0",
	"indirect table outside guest memory",
	"nested indirect descriptor",
	"loop inside an indirect table",
	"indirect next beyond the table",
	"indirect descriptor with NEXT",
	"unknown op 99",
	"op 0 (INVALID)",
	"unknown type 9",
	"DGRAM type, not negotiated",
	"wrong src_cid",
	"wrong dst_cid",
	"dst_cid is the guest's own",
	"zero-length descriptor",
};
#define N_TX_CASES ((int)(sizeof(tx_case_names) / sizeof(tx_case_names[0])))

START_TEST(t_tx_malformed)
{
	struct fx_opts o = { .drv.no_auto_rst = true };
	struct sim_raw_desc d[4];
	struct vring_desc *t;
	struct mctx m;
	uint64_t g, tb, end;
	unsigned int n = 1;
	uint16_t qs;

	m_setup(&m, &o);
	end = sim_drv_mem_end(m.fx.drv);
	qs = 256;
	g = hdr_buf(&m, 200, VIRTIO_VSOCK_OP_REQUEST, 0);
	switch (_i) {
	case 0:
		d[0] = D(g, 20, 0, AUTO);
		break;
	case 1:
		d[0] = D(g, 7, NX, AUTO);
		d[1] = D(g + 7, 20, NX, AUTO);
		d[2] = D(g + 27, 16, 0, AUTO);
		n = 3;
		break;
	case 2:
		hdr_at(&m, g)->op = VIRTIO_VSOCK_OP_RW;
		hdr_at(&m, g)->len = 1000;
		d[0] = D(g, HDR, NX, AUTO);
		d[1] = D(g + 100, 100, 0, AUTO);
		n = 2;
		break;
	case 3:
		g = hdr_buf(&m, HDR + 65537, VIRTIO_VSOCK_OP_RW, 65537);
		d[0] = D(g, HDR + 65537, 0, AUTO);
		break;
	case 4:
		d[0] = D(end + (1ull << 20), HDR, 0, AUTO);
		break;
	case 5:
		d[0] = D(0xfffffffffffffff0ull, HDR, 0, AUTO);
		break;
	case 6:
		d[0] = D(end - 20, HDR, 0, AUTO);
		break;
	case 7:
		d[0] = D(g, HDR, WR, AUTO);
		break;
	case 8:
		d[0] = D(g, HDR, NX, AUTO);
		d[1] = D(g + 100, 100, WR, AUTO);
		n = 2;
		break;
	case 9:
		hdr_at(&m, g)->op = VIRTIO_VSOCK_OP_RW;
		hdr_at(&m, g)->len = 100;
		d[0] = D(g, HDR, NX, AUTO);
		d[1] = D(g + 100, 50, NX, SIM_NEXT_CHAIN(0));
		n = 2;
		break;
	case 10:
		hdr_at(&m, g)->op = VIRTIO_VSOCK_OP_RW;
		hdr_at(&m, g)->len = 100;
		d[0] = D(g, HDR, NX, SIM_NEXT_CHAIN(0));
		break;
	case 11:
		d[0] = D(g, HDR, NX, qs);
		break;
	case 12:
		d[0] = D(g, HDR, NX, 0xffff);
		break;
	case 13 ... 19:
		tb = sim_alloc(m.fx.drv, 16 * 8, 16);
		t = sim_gpa_ptr(m.fx.drv, tb, 16 * 8);
		memset(t, 0, 16 * 8);
		t[0] = (struct vring_desc){ .addr = g, .len = HDR, .flags = NX, .next = 1 };
		t[1] = (struct vring_desc){ .addr = g + 100, .len = 50, .flags = 0, .next = 0 };
		hdr_at(&m, g)->op = VIRTIO_VSOCK_OP_RW;
		hdr_at(&m, g)->len = 50;
		d[0] = D(tb, 32, IND, AUTO);
		if (_i == 13)
			d[0].len = 24;
		else if (_i == 14)
			d[0].len = 0;
		else if (_i == 15)
			d[0].gpa = end + 4096;
		else if (_i == 16)
			t[1] = (struct vring_desc){
				.addr = tb, .len = 32, .flags = IND, .next = 0
			};
		else if (_i == 17)
			t[1].flags = NX, t[1].next = 0;
		else if (_i == 18)
			t[0].next = 5;
		else {
			d[0].flags = IND | NX;
			d[1] = D(g + 100, 50, 0, AUTO);
			n = 2;
		}
		break;
	case 20:
		hdr_at(&m, g)->op = 99;
		d[0] = D(g, HDR, 0, AUTO);
		break;
	case 21:
		hdr_at(&m, g)->op = 0;
		d[0] = D(g, HDR, 0, AUTO);
		break;
	case 22:
		hdr_at(&m, g)->type = 9;
		d[0] = D(g, HDR, 0, AUTO);
		break;
	case 23:
		hdr_at(&m, g)->type = VIRTIO_VSOCK_TYPE_DGRAM;
		d[0] = D(g, HDR, 0, AUTO);
		break;
	case 24:
		hdr_at(&m, g)->src_cid = 5;
		d[0] = D(g, HDR, 0, AUTO);
		break;
	case 25:
		hdr_at(&m, g)->dst_cid = 1; /* no guest CID (7 would be routed) */
		d[0] = D(g, HDR, 0, AUTO);
		break;
	case 26:
		hdr_at(&m, g)->dst_cid = 3;
		d[0] = D(g, HDR, 0, AUTO);
		break;
	default:
		d[0] = D(g, 0, 0, AUTO);
		break;
	}
	expect_malformed(&m, VSOCK_VQ_TX, d, n, tx_case_names[_i]);
	m_alive(&m, 100 + _i);
	/* the malformed packet never reached a host listener nor produced a reply other than RST */
	sim_pkt_flush(m.fx.drv);
	m_teardown(&m);
}
END_TEST

/* Addresses in the hole between two regions, or straddling into it. */
START_TEST(t_tx_region_hole)
{
	struct fx_opts o = { .drv.no_auto_rst = true,
			     .drv.nregions = 2,
			     .drv.region_gap = 1ull << 20 };
	struct sim_raw_desc d[2];
	struct mctx m;
	uint64_t r0 = 0;

	m_setup(&m, &o);
	r0 = sim_drv_region0_end(m.fx.drv);
	d[0] = D(_i ? r0 - 20 : r0 + 4096, HDR, 0, AUTO);
	expect_malformed(&m, VSOCK_VQ_TX, d, 1,
			 _i ? "buffer runs into the hole" : "address in the hole");
	m_alive(&m, 300 + _i);
	m_teardown(&m);
}
END_TEST

static const char *const rx_case_names[] = {
	"read-only RX descriptor",
	"RX buffer outside guest memory",
	"RX buffer address overflows",
	"RX buffer too small for a header",
	"RX chain loop",
	"RX next >= queue size",
};
#define N_RX_CASES ((int)(sizeof(rx_case_names) / sizeof(rx_case_names[0])))

/*
 * A bad RX chain at the head of the RX queue: returned with len 0, counted,
 * and the packet (here the RESPONSE) goes into the next good buffer.
 */
START_TEST(t_rx_malformed)
{
	struct fx_opts o = { .drv.rx_start_empty = true, .drv.no_rx_refill = true, .mrg = _i & 1 };
	struct sim_raw_desc d[2];
	struct vsock_dev_counters c0, c1;
	struct sim_conn *c;
	struct fx fx;
	uint64_t g, end;
	uint32_t used = 99;
	unsigned int n = 1;
	int lfd, fd, head, k = _i / 2;

	fx_setup(&fx, &o);
	end = sim_drv_mem_end(fx.drv);
	g = sim_alloc(fx.drv, 8192, 16);
	switch (k) {
	case 0:
		d[0] = D(g, 4096, 0, AUTO);
		break;
	case 1:
		d[0] = D(end + 65536, 4096, WR, AUTO);
		break;
	case 2:
		d[0] = D(0xfffffffffffff000ull, 8192, WR, AUTO);
		break;
	case 3:
		d[0] = D(g, 10, WR, AUTO);
		break;
	case 4:
		d[0] = D(g, 2048, WR | NX, AUTO);
		d[1] = D(g + 2048, 2048, WR | NX, SIM_NEXT_CHAIN(0));
		n = 2;
		break;
	default:
		d[0] = D(g, 4096, WR | NX, 256);
		break;
	}
	fx_counters(&fx, &c0);
	head = sim_raw_chain(fx.drv, VSOCK_VQ_RX, d, n);
	ck_assert_int_ge(head, 0);
	ck_assert_int_eq(sim_rx_refill(fx.drv, 4), 4);
	lfd = hp_listen_port(fx.uds, PORT, 4, 0);
	ck_assert_int_eq(sim_connect(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c), 0);
	fd = hp_accept(lfd, FX_T);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(sim_raw_wait(fx.drv, VSOCK_VQ_RX, head, &used, FX_T) == 0,
		      "%s: chain not returned", rx_case_names[k]);
	ck_assert_msg(used == 0, "%s: used len %u", rx_case_names[k], used);
	FX_WAIT(&fx, malformed_pkts, c0.malformed_pkts + 1, FX_T);
	fx_counters(&fx, &c1);
	ck_assert_uint_eq(c1.malformed_pkts, c0.malformed_pkts + 1);
	sim_rx_set_refill(fx.drv, true);
	fx_xfer_h2g(fd, c, 200000, 400 + _i);
	fx_xfer_g2h(fd, c, 20000, 500 + _i);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/*
 * A malformed packet that names a live connection resets that connection
 * only: the guest gets RST, the host socket is closed, others carry on.
 */
START_TEST(t_malformed_resets_conn)
{
	struct virtio_vsock_hdr h;
	struct sim_conn_info ci;
	struct sim_raw_desc d[2];
	struct sim_conn *c2;
	struct mctx m;
	uint64_t g;
	int fd2, lfd2;

	m_setup(&m, NULL);
	fd2 = fx_guest_connect(&m.fx, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, &c2, &lfd2);
	sim_conn_info(c2, &ci);
	g = sim_alloc(m.fx.drv, 4096, 16);
	sim_hdr_init(m.fx.drv, &h, ci.local_port, ci.peer_port, VIRTIO_VSOCK_TYPE_STREAM,
		     VIRTIO_VSOCK_OP_RW);
	h.len = 3000; /* but only 100 bytes follow */
	h.buf_alloc = 256 * 1024;
	memcpy(sim_gpa_ptr(m.fx.drv, g, HDR), &h, HDR);
	d[0] = D(g, HDR, NX, AUTO);
	d[1] = D(g + 1024, 100, 0, AUTO);
	expect_malformed(&m, VSOCK_VQ_TX, d, 2,
			 "RW with len beyond the chain on a live connection");
	ck_assert_int_eq(sim_wait_reset(c2, FX_T), 0);
	ck_assert_int_ge(hp_wait_eof(fd2, FX_T), -ECONNRESET);
	ck_assert_int_ne(hp_wait_eof(fd2, FX_T), -ETIMEDOUT);
	sim_close(c2, FX_T);
	close(fd2);
	close(lfd2);
	m_alive(&m, 600);
	m_teardown(&m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_malformed");

	FX_ADD_LOOP(s, t_tx_malformed, N_TX_CASES, 30);
	FX_ADD_LOOP(s, t_tx_region_hole, 2, 30);
	FX_ADD_LOOP(s, t_rx_malformed, 2 * N_RX_CASES, 30);
	FX_ADD(s, t_malformed_resets_conn, 30);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
