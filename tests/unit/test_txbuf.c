// SPDX-License-Identifier: MIT
/*
 * Unit tests: the guest-to-host backlog alone (txbuf.c): the byte ring
 * (append and consume across the wrap point, iovec views of one and two
 * segments, reserve beyond the capacity), the SEQPACKET records (message
 * boundaries, empty messages, the record limit, a record half sent) and the
 * zero-length edge cases. No connection, thread or socket.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "txbuf.h"

/* Append @len bytes of @src, given as one iovec per @seg bytes (a scattered guest payload). */
static void append(struct txbuf *b, const uint8_t *src, uint32_t len, uint32_t seg, bool msg)
{
	struct iovec v[64];
	unsigned int n = 0;
	uint32_t off;

	ck_assert_uint_le((len + seg - 1) / seg, 64);
	for (off = 0; off < len; off += seg)
		v[n++] = (struct iovec){ (void *)(uintptr_t)(src + off),
					 len - off < seg ? len - off : seg };
	ck_assert_int_eq(txbuf_reserve(b, len), 0);
	if (msg)
		txbuf_msg_append_iov(b, v, n, 0, len);
	else
		txbuf_append_iov(b, v, n, 0, len);
}

/* Copy out @len bytes at @skip through txbuf_iov(); Return: the segment count. */
static unsigned int peek(const struct txbuf *b, uint32_t skip, uint32_t len, uint8_t *dst)
{
	struct iovec v[2];
	unsigned int n = txbuf_iov(b, skip, len, v), i;
	size_t got = 0;

	for (i = 0; i < n; i++) {
		memcpy(dst + got, v[i].iov_base, v[i].iov_len);
		got += v[i].iov_len;
	}
	ck_assert_uint_eq(got, len);
	return n;
}

static void pattern(uint8_t *p, uint32_t len, uint8_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7u);
}

START_TEST(empty_allocates_nothing)
{
	struct txbuf b;
	struct iovec v[2];

	txbuf_init(&b, 64, txbuf_rec_limit(64));
	ck_assert(!txbuf_busy(&b));
	ck_assert_int_eq(txbuf_reserve(&b, 0), 0);
	ck_assert_ptr_null(b.ring); /* a zero-byte reserve allocates nothing */
	ck_assert_uint_eq(txbuf_iov(&b, 0, 0, v), 0); /* no ring yet: still fine */
	txbuf_consume(&b, 0);
	txbuf_append_iov(&b, NULL, 0, 0, 0);
	ck_assert_uint_eq(txbuf_len(&b), 0);
	ck_assert(!txbuf_busy(&b));
	txbuf_release(&b);
	txbuf_release(&b); /* twice is fine: empty and initialised */
	ck_assert_uint_eq(b.cap, 64);
}
END_TEST

/*
 * A stream of bytes through a 32-byte ring that never empties, so the head
 * walks round it: every append and consume lands on every wrap offset.
 * Checked against the stream's own numbering (byte k is k * 7 + 1).
 */
START_TEST(wrap_append_consume)
{
	uint8_t src[32], out[32];
	uint32_t in = 0, taken = 0, k;
	unsigned int round, wraps = 0;
	struct txbuf b;

	txbuf_init(&b, 32, txbuf_rec_limit(32));
	for (round = 0; round < 200; round++) {
		uint32_t add = (round * 5u) % 17u + 1, held, take;
		struct iovec v[2];

		if (add > 32 - txbuf_len(&b))
			add = 32 - txbuf_len(&b);
		for (k = 0; k < add; k++)
			src[k] = (uint8_t)((in + k) * 7u + 1);
		append(&b, src, add, 3, false);
		in += add;
		held = txbuf_len(&b);
		ck_assert_uint_eq(held, in - taken);
		if (txbuf_iov(&b, 0, held, v) == 2)
			wraps++;
		peek(&b, 0, held, out);
		for (k = 0; k < held; k++)
			ck_assert_uint_eq(out[k], (uint8_t)((taken + k) * 7u + 1));
		if (held > 2) { /* a view from inside */
			peek(&b, 1, held - 2, out);
			ck_assert_uint_eq(out[0], (uint8_t)((taken + 1) * 7u + 1));
		}
		take = held > 1 ? (round * 3u) % (held - 1) + 1 : 0; /* never all */
		txbuf_consume(&b, take);
		taken += take;
		ck_assert(txbuf_busy(&b));
	}
	ck_assert_uint_gt(wraps, 20); /* the wrap point was crossed, many times */
	txbuf_consume(&b, txbuf_len(&b));
	ck_assert_uint_eq(b.head, 0); /* an emptied ring starts over at 0 */
	ck_assert(!txbuf_busy(&b));
	txbuf_release(&b);
}
END_TEST

START_TEST(iov_one_and_two_segments)
{
	uint8_t src[16], out[16];
	struct iovec v[2];
	struct txbuf b;

	pattern(src, 16, 1);
	txbuf_init(&b, 16, txbuf_rec_limit(16));
	append(&b, src, 12, 16, false);
	txbuf_consume(&b, 10); /* head at 10, 2 bytes held */
	append(&b, src + 2, 14, 16, false); /* 6 to the end, 8 wrapped */
	ck_assert_uint_eq(txbuf_len(&b), 16); /* full */
	ck_assert_uint_eq(txbuf_iov(&b, 0, 16, v), 2);
	ck_assert_ptr_eq(v[0].iov_base, b.ring + 10);
	ck_assert_uint_eq(v[0].iov_len, 6);
	ck_assert_ptr_eq(v[1].iov_base, b.ring);
	ck_assert_uint_eq(v[1].iov_len, 10);
	ck_assert_uint_eq(peek(&b, 0, 16, out), 2);
	ck_assert_mem_eq(out, src + 10, 2);
	ck_assert_mem_eq(out + 2, src + 2, 14);
	/* Exactly up to the end of the buffer: one segment. */
	ck_assert_uint_eq(txbuf_iov(&b, 0, 6, v), 1);
	ck_assert_uint_eq(v[0].iov_len, 6);
	/* Entirely after the wrap: one segment at the ring's start. */
	ck_assert_uint_eq(txbuf_iov(&b, 6, 10, v), 1);
	ck_assert_ptr_eq(v[0].iov_base, b.ring);
	ck_assert_uint_eq(v[0].iov_len, 10);
	ck_assert_uint_eq(txbuf_iov(&b, 3, 0, v), 0); /* zero length: no segment */
	txbuf_release(&b);
}
END_TEST

START_TEST(reserve_beyond_capacity)
{
	uint8_t src[8] = { 0 };
	struct txbuf b;

	txbuf_init(&b, 8, txbuf_rec_limit(8));
	ck_assert_int_eq(txbuf_reserve(&b, 9), -ENOBUFS);
	ck_assert_ptr_nonnull(b.ring); /* allocated, but nothing held */
	ck_assert_uint_eq(txbuf_len(&b), 0);
	ck_assert_int_eq(txbuf_reserve(&b, 8), 0);
	append(&b, src, 5, 8, false);
	ck_assert_int_eq(txbuf_reserve(&b, 3), 0);
	ck_assert_int_eq(txbuf_reserve(&b, 4), -ENOBUFS);
	ck_assert_uint_eq(txbuf_len(&b), 5); /* a refused reserve changes nothing */
	ck_assert_int_eq(txbuf_reserve(&b, UINT32_MAX), -ENOBUFS);
	ck_assert_int_eq(txbuf_reserve(&b, 0), 0);
	txbuf_consume(&b, 5);
	ck_assert_int_eq(txbuf_reserve(&b, 8), 0);
	txbuf_release(&b);
	ck_assert_ptr_null(b.ring);
	ck_assert_int_eq(txbuf_reserve(&b, 8), 0); /* usable again after a release */
	txbuf_release(&b);
}
END_TEST

/* Take every complete message off @b into @lens (their sizes); Return: how many. */
static unsigned int drain_msgs(struct txbuf *b, uint32_t *lens, unsigned int max)
{
	unsigned int n = 0;

	while (txbuf_msg_ready(b)) {
		ck_assert_uint_lt(n, max);
		lens[n++] = txbuf_msg_head_len(b);
		txbuf_msg_sent(b);
	}
	return n;
}

START_TEST(seqpacket_boundaries)
{
	uint8_t src[32], out[32];
	uint32_t lens[16];
	struct txbuf b;

	pattern(src, 32, 3);
	txbuf_init(&b, 32, txbuf_rec_limit(32));
	/* Message 1: 5 + 4 bytes over two packets, then EOM. */
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	ck_assert(txbuf_msg_is_open(&b));
	append(&b, src, 5, 2, true);
	ck_assert(!txbuf_msg_ready(&b)); /* still being assembled */
	ck_assert(txbuf_busy(&b));
	append(&b, src + 5, 4, 4, true);
	txbuf_msg_close(&b);
	ck_assert(!txbuf_msg_is_open(&b));
	ck_assert(txbuf_msg_ready(&b));
	/* Message 2 (EOR ends one the same way): 3 bytes; message 3 still open. */
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	append(&b, src + 9, 3, 3, true);
	txbuf_msg_close(&b);
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	append(&b, src + 12, 6, 6, true);
	ck_assert_uint_eq(txbuf_recs(&b), 3);
	ck_assert_uint_eq(txbuf_len(&b), 18);
	/* The head message's bytes are exactly its own. */
	ck_assert_uint_eq(txbuf_msg_head_len(&b), 9);
	peek(&b, 0, 9, out);
	ck_assert_mem_eq(out, src, 9);
	/* Only complete messages come out: 9 and 3; the open one stays. */
	ck_assert_uint_eq(drain_msgs(&b, lens, 16), 2);
	ck_assert_uint_eq(lens[0], 9);
	ck_assert_uint_eq(lens[1], 3);
	ck_assert_uint_eq(txbuf_recs(&b), 1);
	ck_assert_uint_eq(txbuf_len(&b), 6);
	ck_assert(txbuf_busy(&b));
	append(&b, src + 18, 2, 2, true);
	txbuf_msg_close(&b);
	ck_assert_uint_eq(txbuf_msg_head_len(&b), 8);
	peek(&b, 0, 8, out);
	ck_assert_mem_eq(out, src + 12, 8);
	ck_assert_uint_eq(drain_msgs(&b, lens, 16), 1);
	ck_assert(!txbuf_busy(&b));
	txbuf_release(&b);
}
END_TEST

START_TEST(seqpacket_empty_messages)
{
	uint8_t src[4] = { 1, 2, 3, 4 };
	uint32_t lens[16];
	struct txbuf b;

	txbuf_init(&b, 16, txbuf_rec_limit(16));
	/* No record yet: an empty message cannot be counted on one. */
	ck_assert(!txbuf_msg_empty(&b));
	ck_assert_uint_eq(txbuf_recs(&b), 0);
	/* So it gets its own record (open, nothing appended, closed). */
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	txbuf_msg_close(&b);
	ck_assert_uint_eq(txbuf_recs(&b), 1);
	ck_assert(txbuf_busy(&b)); /* no bytes, but a message is owed */
	/* Empty messages after it: counted, no new record. */
	ck_assert(txbuf_msg_empty(&b));
	ck_assert(txbuf_msg_empty(&b));
	ck_assert_uint_eq(txbuf_recs(&b), 1);
	/* A 4-byte message, then an empty one assembled (opened, closed empty): */
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	append(&b, src, 4, 4, true);
	txbuf_msg_close(&b);
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	ck_assert_uint_eq(txbuf_recs(&b), 3);
	txbuf_msg_close(&b); /* ... folded into the record before */
	ck_assert_uint_eq(txbuf_recs(&b), 2);
	/* In order: 3 empty messages, 4 bytes, 1 empty message. */
	ck_assert_uint_eq(drain_msgs(&b, lens, 16), 5);
	ck_assert_uint_eq(lens[0], 0);
	ck_assert_uint_eq(lens[1], 0);
	ck_assert_uint_eq(lens[2], 0);
	ck_assert_uint_eq(lens[3], 4);
	ck_assert_uint_eq(lens[4], 0);
	ck_assert(!txbuf_busy(&b));
	txbuf_release(&b);
}
END_TEST

START_TEST(seqpacket_record_limit)
{
	uint8_t one = 0x5a;
	uint32_t lens[8];
	struct txbuf b;
	unsigned int i;

	txbuf_init(&b, 64, 5); /* at most 5 records, whatever the bytes */
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(txbuf_msg_open(&b), 0);
		append(&b, &one, 1, 1, true);
		txbuf_msg_close(&b);
	}
	ck_assert_int_eq(txbuf_msg_open(&b), -ENOBUFS);
	ck_assert_uint_eq(txbuf_recs(&b), 5);
	ck_assert(!txbuf_msg_is_open(&b)); /* a refused open changes nothing */
	/* Empty messages still fit: they are counted on the last record. */
	ck_assert(txbuf_msg_empty(&b));
	ck_assert_uint_eq(txbuf_recs(&b), 5);
	/* One sent: room for one more record. */
	ck_assert_uint_eq(txbuf_msg_head_len(&b), 1);
	txbuf_msg_sent(&b);
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	txbuf_msg_close(&b); /* empty: folded into the record before */
	ck_assert_uint_eq(txbuf_recs(&b), 4);
	ck_assert_uint_eq(drain_msgs(&b, lens, 8), 6); /* 4 one-byte, 2 empty */
	ck_assert_uint_eq(lens[3], 1);
	ck_assert_uint_eq(lens[4], 0);
	ck_assert_uint_eq(lens[5], 0);
	txbuf_release(&b);
	/* The limit for a credit of @cap bytes, and its saturation. */
	ck_assert_uint_eq(txbuf_rec_limit(64), 66);
	ck_assert_uint_eq(txbuf_rec_limit(UINT32_MAX - 2), UINT32_MAX);
	ck_assert_uint_eq(txbuf_rec_limit(UINT32_MAX), UINT32_MAX);
}
END_TEST

/* More records than the first allocation (16): the record ring grows, wrapped, in order. */
START_TEST(seqpacket_records_grow_wrapped)
{
	uint8_t src[200];
	uint32_t lens[200];
	struct txbuf b;
	unsigned int i, k = 0, got;

	pattern(src, 200, 9);
	txbuf_init(&b, 256, 100);
	/* Wrap the record ring first: 10 in, 10 out. */
	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(txbuf_msg_open(&b), 0);
		append(&b, src, 1, 1, true);
		txbuf_msg_close(&b);
	}
	ck_assert_uint_eq(drain_msgs(&b, lens, 200), 10);
	for (i = 1; i <= 60; i++) {
		ck_assert_int_eq(txbuf_msg_open(&b), 0);
		append(&b, src + (i % 50), i % 4 + 1, 2, true);
		txbuf_msg_close(&b);
	}
	ck_assert_uint_eq(txbuf_recs(&b), 60);
	got = drain_msgs(&b, lens, 200);
	ck_assert_uint_eq(got, 60);
	for (i = 1; i <= 60; i++, k++)
		ck_assert_uint_eq(lens[k], i % 4 + 1);
	ck_assert(!txbuf_busy(&b));
	txbuf_release(&b);
}
END_TEST

/* A record of several messages, sent one message at a time. */
START_TEST(seqpacket_partial_record)
{
	uint8_t src[6] = { 10, 11, 12, 13, 14, 15 }, out[6];
	struct txbuf b;

	txbuf_init(&b, 16, txbuf_rec_limit(16));
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	append(&b, src, 6, 4, true);
	txbuf_msg_close(&b);
	ck_assert(txbuf_msg_empty(&b));
	ck_assert(txbuf_msg_empty(&b)); /* record (6, 3) */
	ck_assert_int_eq(txbuf_msg_open(&b), 0); /* a second, open, record */
	append(&b, src, 2, 2, true);
	ck_assert_uint_eq(txbuf_msg_head_len(&b), 6);
	peek(&b, 0, 6, out);
	ck_assert_mem_eq(out, src, 6);
	txbuf_msg_sent(&b);
	/* The record stays, with its bytes gone: two empty messages left. */
	ck_assert_uint_eq(txbuf_recs(&b), 2);
	ck_assert_uint_eq(txbuf_len(&b), 2);
	ck_assert(txbuf_msg_ready(&b));
	ck_assert_uint_eq(txbuf_msg_head_len(&b), 0);
	txbuf_msg_sent(&b);
	ck_assert_uint_eq(txbuf_recs(&b), 2);
	txbuf_msg_sent(&b);
	ck_assert_uint_eq(txbuf_recs(&b), 1); /* only the open one */
	ck_assert(!txbuf_msg_ready(&b));
	ck_assert_uint_eq(txbuf_len(&b), 2);
	txbuf_release(&b);
	ck_assert(!txbuf_busy(&b));
	ck_assert(!txbuf_msg_is_open(&b));
}
END_TEST

/* An empty message whose record before it is full (2^32 - 1 messages) gets its own. */
START_TEST(seqpacket_empty_run_saturates)
{
	struct txbuf b;

	txbuf_init(&b, 16, txbuf_rec_limit(16));
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	txbuf_msg_close(&b);
	b.recs[b.rec_head].n = UINT32_MAX - 1; /* a long run, without 4 billion calls */
	ck_assert(txbuf_msg_empty(&b));
	ck_assert(!txbuf_msg_empty(&b)); /* the record counts UINT32_MAX now */
	ck_assert_int_eq(txbuf_msg_open(&b), 0);
	txbuf_msg_close(&b); /* cannot fold: stays a record of its own */
	ck_assert_uint_eq(txbuf_recs(&b), 2);
	ck_assert(txbuf_msg_empty(&b)); /* and counts the next ones */
	txbuf_release(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("txbuf");
	TCase *ring = tcase_create("ring"), *rec = tcase_create("records");
	SRunner *sr;
	int failed;

	tcase_add_test(ring, empty_allocates_nothing);
	tcase_add_test(ring, wrap_append_consume);
	tcase_add_test(ring, iov_one_and_two_segments);
	tcase_add_test(ring, reserve_beyond_capacity);
	tcase_add_test(rec, seqpacket_boundaries);
	tcase_add_test(rec, seqpacket_empty_messages);
	tcase_add_test(rec, seqpacket_record_limit);
	tcase_add_test(rec, seqpacket_records_grow_wrapped);
	tcase_add_test(rec, seqpacket_partial_record);
	tcase_add_test(rec, seqpacket_empty_run_saturates);
	suite_add_tcase(s, ring);
	suite_add_tcase(s, rec);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
