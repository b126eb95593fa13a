// SPDX-License-Identifier: MIT
/* Unit tests: TX packet header copy and validation. */
#include <check.h>

#include "fake_ring.h"
#include "iov.h"
#include "packet.h"

#define GUEST_CID 3

static struct fake f;

static void setup(void)
{
	fake_init(&f, 0);
}

static void teardown(void)
{
	fake_fini(&f);
}

static struct virtio_vsock_hdr good_hdr(uint32_t len)
{
	struct virtio_vsock_hdr h = {
		.src_cid = GUEST_CID,
		.dst_cid = VSOCK_CID_HOST,
		.src_port = 1234,
		.dst_port = 5678,
		.len = len,
		.type = VIRTIO_VSOCK_TYPE_STREAM,
		.op = VIRTIO_VSOCK_OP_RW,
		.buf_alloc = 0x40000,
		.fwd_cnt = 0xfffffff0u,
	};

	return h;
}

/*
 * Put header + payload at BUF_GPA and describe them with descriptors of the
 * given sizes (the last one takes the rest), then pop the chain.
 */
static int put_and_pop(const struct virtio_vsock_hdr *h, const void *payload, uint32_t plen,
		       const uint32_t *sizes, unsigned int nsizes)
{
	struct virtio_vsock_hdr le = *h;
	struct vring_desc *d = fake_desc(&f);
	uint8_t *buf = fake_hva(&f, BUF_GPA);
	uint32_t total = sizeof(le) + plen, off = 0;
	unsigned int i;

	pkt_hdr_to_le(&le);
	memcpy(buf, &le, sizeof(le));
	memcpy(buf + sizeof(le), payload, plen);
	for (i = 0; i < nsizes; i++) {
		uint32_t sz = i + 1 == nsizes ? total - off : sizes[i];
		bool last = i + 1 == nsizes;

		fake_set_desc(&f, d, i, BUF_GPA + off, sz, last ? 0 : VRING_DESC_F_NEXT, i + 1);
		off += sz;
	}
	fake_avail(&f, 0);
	return vq_pop(&f.vq, &f.c);
}

START_TEST(header_split_over_descriptors)
{
	/* 1-byte, 9-byte and 30-byte pieces of the header, then payload pieces. */
	static const uint32_t sizes[] = { 1, 9, 30, 7, 3, 0 };
	struct virtio_vsock_hdr h = good_hdr(20);
	const char payload[20] = "0123456789abcdefghij";
	struct vsock_pkt p;
	char got[20];

	ck_assert_int_eq(put_and_pop(&h, payload, 20, sizes, 6), 1);
	ck_assert_uint_eq(f.c.n_out, 6);
	ck_assert_int_eq(pkt_parse_tx(&f.c, GUEST_CID, false, false, &p), PKT_OK);
	ck_assert_uint_eq(p.hdr.src_port, 1234);
	ck_assert_uint_eq(p.hdr.dst_port, 5678);
	ck_assert_uint_eq(p.hdr.fwd_cnt, 0xfffffff0u);
	ck_assert_uint_eq(p.hdr.len, 20);
	ck_assert_uint_eq(iov_read(f.c.iov, f.c.n_out, p.payload_off, got, 20), 20);
	ck_assert(!memcmp(got, payload, 20));
}
END_TEST

START_TEST(one_descriptor_packet)
{
	static const uint32_t sizes[] = { 0 };
	struct virtio_vsock_hdr h = good_hdr(5);
	struct vsock_pkt p;

	ck_assert_int_eq(put_and_pop(&h, "hello", 5, sizes, 1), 1);
	ck_assert_int_eq(pkt_parse_tx(&f.c, GUEST_CID, false, false, &p), PKT_OK);
	ck_assert_uint_eq(p.payload_off, 44);
}
END_TEST

START_TEST(short_header)
{
	struct vring_desc *d = fake_desc(&f);
	struct vsock_pkt p;

	fake_set_desc(&f, d, 0, BUF_GPA, 43, 0, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert_int_eq(pkt_parse_tx(&f.c, GUEST_CID, false, false, &p), PKT_ERR_SHORT);
}
END_TEST

START_TEST(writable_tx_descriptor)
{
	struct vring_desc *d = fake_desc(&f);
	struct vsock_pkt p;

	fake_set_desc(&f, d, 0, BUF_GPA, 44, VRING_DESC_F_NEXT, 1);
	fake_set_desc(&f, d, 1, BUF_GPA + 64, 8, VRING_DESC_F_WRITE, 0);
	fake_avail(&f, 0);
	ck_assert_int_eq(vq_pop(&f.vq, &f.c), 1);
	ck_assert_int_eq(pkt_parse_tx(&f.c, GUEST_CID, false, false, &p), PKT_ERR_WRITABLE);
}
END_TEST

static enum pkt_err parse_with(struct virtio_vsock_hdr h, uint32_t plen, bool seqpacket, bool dgram)
{
	static const uint32_t sizes[] = { 0 };
	static char payload[70000];
	struct vsock_pkt p;

	ck_assert_int_eq(put_and_pop(&h, payload, plen, sizes, 1), 1);
	return pkt_parse_tx(&f.c, GUEST_CID, seqpacket, dgram, &p);
}

static enum pkt_err parse_modified(struct virtio_vsock_hdr h, uint32_t plen, bool seqpacket)
{
	return parse_with(h, plen, seqpacket, false);
}

static enum pkt_err parse_dgram(struct virtio_vsock_hdr h, uint32_t plen, bool dgram)
{
	return parse_with(h, plen, false, dgram);
}

/* DGRAM: only when negotiated, RW only, flags 0, credit fields ignored, lengths as streams. */
START_TEST(dgram_checks)
{
	struct virtio_vsock_hdr h = good_hdr(10);

	h.type = VIRTIO_VSOCK_TYPE_DGRAM;
	h.op = VIRTIO_VSOCK_OP_RW;
	h.buf_alloc = 12345; /* ignored */
	ck_assert_int_eq(parse_dgram(h, 10, false), PKT_ERR_TYPE);
	ck_assert_int_eq(parse_dgram(h, 10, true), PKT_OK);
	h.op = VIRTIO_VSOCK_OP_REQUEST;
	ck_assert_int_eq(parse_dgram(h, 10, true), PKT_ERR_OP);
	h.op = VIRTIO_VSOCK_OP_CREDIT_UPDATE;
	ck_assert_int_eq(parse_dgram(h, 10, true), PKT_ERR_OP);
	h.op = VIRTIO_VSOCK_OP_RW;
	h.flags = 1;
	ck_assert_int_eq(parse_dgram(h, 10, true), PKT_ERR_FLAGS);
	h.flags = 0;
	h.len = 11;
	ck_assert_int_eq(parse_dgram(h, 10, true), PKT_ERR_LEN);
	h.len = 65537;
	ck_assert_int_eq(parse_dgram(h, 65537, true), PKT_ERR_LEN);
	h.len = 65536;
	ck_assert_int_eq(parse_dgram(h, 65536, true), PKT_OK);
	h.src_cid = GUEST_CID + 1;
	ck_assert_int_eq(parse_dgram(h, 65536, true), PKT_ERR_SRC_CID);
	h.src_cid = GUEST_CID;
	h.dst_cid = 9; /* another guest: the caller routes it */
	ck_assert_int_eq(parse_dgram(h, 65536, true), PKT_ERR_DST_CID);
	/* A stream packet with flags is not refused for them (SHUTDOWN, SEQ_EOM use them). */
	h = good_hdr(0);
	h.flags = 3;
	ck_assert_int_eq(parse_dgram(h, 0, true), PKT_OK);
}
END_TEST

START_TEST(field_checks)
{
	struct virtio_vsock_hdr h;

	h = good_hdr(10);
	ck_assert_int_eq(parse_modified(h, 10, false), PKT_OK);
	h.len = 11; /* more than the chain holds */
	ck_assert_int_eq(parse_modified(h, 10, false), PKT_ERR_LEN);
	h = good_hdr(65537);
	ck_assert_int_eq(parse_modified(h, 65537, false), PKT_ERR_LEN);
	h = good_hdr(65536);
	ck_assert_int_eq(parse_modified(h, 65536, false), PKT_OK);
	h = good_hdr(0);
	h.type = 0;
	ck_assert_int_eq(parse_modified(h, 0, false), PKT_ERR_TYPE);
	h.type = VIRTIO_VSOCK_TYPE_DGRAM;
	ck_assert_int_eq(parse_modified(h, 0, true), PKT_ERR_TYPE);
	h.type = VIRTIO_VSOCK_TYPE_SEQPACKET;
	ck_assert_int_eq(parse_modified(h, 0, false), PKT_ERR_TYPE);
	ck_assert_int_eq(parse_modified(h, 0, true), PKT_OK);
	h = good_hdr(0);
	h.op = 0;
	ck_assert_int_eq(parse_modified(h, 0, false), PKT_ERR_OP);
	h.op = 8;
	ck_assert_int_eq(parse_modified(h, 0, false), PKT_ERR_OP);
	h = good_hdr(0);
	h.src_cid = GUEST_CID + 1;
	ck_assert_int_eq(parse_modified(h, 0, false), PKT_ERR_SRC_CID);
	h = good_hdr(0);
	h.dst_cid = 1;
	ck_assert_int_eq(parse_modified(h, 0, false), PKT_ERR_DST_CID);
	h.dst_cid = VSOCK_CID_HOST | (1ull << 32);
	ck_assert_int_eq(parse_modified(h, 0, false), PKT_ERR_DST_CID);
}
END_TEST

START_TEST(extra_bytes_ignored)
{
	struct virtio_vsock_hdr h = good_hdr(3);

	ck_assert_int_eq(parse_modified(h, 100, false), PKT_OK);
}
END_TEST

/* The one RST builder: addresses swapped, the given type, nothing else carried. */
START_TEST(rst_reply_swaps)
{
	struct virtio_vsock_hdr in = good_hdr(7), r;

	in.flags = 3;
	pkt_rst_reply(&r, &in, VIRTIO_VSOCK_TYPE_SEQPACKET);
	ck_assert_uint_eq(r.src_cid, VSOCK_CID_HOST);
	ck_assert_uint_eq(r.dst_cid, GUEST_CID);
	ck_assert_uint_eq(r.src_port, 5678);
	ck_assert_uint_eq(r.dst_port, 1234);
	ck_assert_uint_eq(r.type, VIRTIO_VSOCK_TYPE_SEQPACKET);
	ck_assert_uint_eq(r.op, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(r.len, 0);
	ck_assert_uint_eq(r.flags, 0);
	ck_assert_uint_eq(r.buf_alloc, 0);
	ck_assert_uint_eq(r.fwd_cnt, 0);
	pkt_rst(&r, 5, 6, 7, 8, VIRTIO_VSOCK_TYPE_STREAM);
	ck_assert_uint_eq(r.src_cid, 5);
	ck_assert_uint_eq(r.src_port, 6);
	ck_assert_uint_eq(r.dst_cid, 7);
	ck_assert_uint_eq(r.dst_port, 8);
	ck_assert_uint_eq(r.type, VIRTIO_VSOCK_TYPE_STREAM);
	ck_assert_uint_eq(r.op, VIRTIO_VSOCK_OP_RST);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("packet");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, header_split_over_descriptors);
	tcase_add_test(tc, one_descriptor_packet);
	tcase_add_test(tc, short_header);
	tcase_add_test(tc, writable_tx_descriptor);
	tcase_add_test(tc, field_checks);
	tcase_add_test(tc, dgram_checks);
	tcase_add_test(tc, extra_bytes_ignored);
	tcase_add_test(tc, rst_reply_swaps);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
