// SPDX-License-Identifier: MIT
/* The guest-to-host backlog ring and its SEQPACKET records; see txbuf.h. */
#include "txbuf.h"

#include <errno.h>
#include <stdlib.h>

#include "iov.h"

#define TXBUF_RECS_MIN 16u /* first allocation of the record ring */

void txbuf_init(struct txbuf *b, uint32_t cap, uint32_t rec_max)
{
	*b = (struct txbuf){ .cap = cap, .rec_max = rec_max };
}

void txbuf_release(struct txbuf *b)
{
	free(b->ring);
	free(b->recs);
	txbuf_init(b, b->cap, b->rec_max);
}

uint32_t txbuf_rec_limit(uint32_t cap)
{
	return cap > UINT32_MAX - 2 ? UINT32_MAX : cap + 2;
}

int txbuf_reserve(struct txbuf *b, uint32_t need)
{
	if (!need)
		return 0;
	if (!b->ring) {
		b->ring = malloc(b->cap ? b->cap : 1);
		if (!b->ring)
			return -ENOMEM;
		b->head = b->len = 0;
	}
	return b->cap - b->len >= need ? 0 : -ENOBUFS;
}

void txbuf_append_iov(struct txbuf *b, const struct iovec *iov, unsigned int n, size_t off,
		      uint32_t len)
{
	while (len) {
		uint32_t tail = (b->head + b->len) % b->cap;
		uint32_t room = b->cap - tail;
		uint32_t chunk = len < room ? len : room;

		iov_read(iov, n, off, b->ring + tail, chunk);
		b->len += chunk;
		off += chunk;
		len -= chunk;
	}
}

unsigned int txbuf_iov(const struct txbuf *b, uint32_t skip, uint32_t len, struct iovec v[2])
{
	uint32_t start, first;

	if (!len)
		return 0;
	start = (b->head + skip) % b->cap;
	first = b->cap - start;
	if (first >= len) {
		v[0] = (struct iovec){ b->ring + start, len };
		return 1;
	}
	v[0] = (struct iovec){ b->ring + start, first };
	v[1] = (struct iovec){ b->ring, len - first };
	return 2;
}

void txbuf_consume(struct txbuf *b, uint32_t n)
{
	if (!n)
		return;
	b->head = (b->head + n) % b->cap;
	b->len -= n;
	if (!b->len)
		b->head = 0;
}

static struct txbuf_rec *rec_at(const struct txbuf *b, uint32_t i)
{
	return &b->recs[(b->rec_head + i) % b->rec_cap];
}

/* Room for one more record: grow the ring of records (doubling, up to rec_max). */
static int rec_grow(struct txbuf *b)
{
	uint32_t max = b->rec_max, cap, i;
	struct txbuf_rec *r;

	if (b->rec_cap >= max)
		return -ENOBUFS;
	if (!b->rec_cap)
		cap = max < TXBUF_RECS_MIN ? max : TXBUF_RECS_MIN;
	else
		cap = b->rec_cap > max / 2 ? max : b->rec_cap * 2;
	r = malloc((size_t)cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < b->rec_cnt; i++)
		r[i] = *rec_at(b, i);
	free(b->recs);
	b->recs = r;
	b->rec_cap = cap;
	b->rec_head = 0;
	return 0;
}

int txbuf_msg_open(struct txbuf *b)
{
	if (b->rec_cnt == b->rec_cap) {
		int ret = rec_grow(b);

		if (ret)
			return ret;
	}
	*rec_at(b, b->rec_cnt++) = (struct txbuf_rec){ .len = 0, .n = 1 };
	b->rec_open = true;
	return 0;
}

void txbuf_msg_append_iov(struct txbuf *b, const struct iovec *iov, unsigned int n, size_t off,
			  uint32_t len)
{
	txbuf_append_iov(b, iov, n, off, len);
	rec_at(b, b->rec_cnt - 1)->len += len;
}

bool txbuf_msg_empty(struct txbuf *b)
{
	struct txbuf_rec *t = b->rec_cnt ? rec_at(b, b->rec_cnt - 1) : NULL;

	if (!t || t->n == UINT32_MAX)
		return false;
	t->n++;
	return true;
}

void txbuf_msg_close(struct txbuf *b)
{
	b->rec_open = false;
	if (rec_at(b, b->rec_cnt - 1)->len || b->rec_cnt < 2)
		return;
	/* It was empty after all: count it on the record before, if that has room. */
	b->rec_cnt--;
	if (!txbuf_msg_empty(b))
		b->rec_cnt++;
}

uint32_t txbuf_msg_head_len(const struct txbuf *b)
{
	return rec_at(b, 0)->len;
}

void txbuf_msg_sent(struct txbuf *b)
{
	struct txbuf_rec *h = rec_at(b, 0);

	txbuf_consume(b, h->len);
	h->len = 0; /* what is left of the record: h->n - 1 empty messages */
	if (--h->n)
		return;
	b->rec_head = (b->rec_head + 1) % b->rec_cap;
	b->rec_cnt--;
}
