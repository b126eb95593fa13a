/* SPDX-License-Identifier: MIT */
/*
 * The guest-to-host backlog of one connection: the bytes the host socket did
 * not take yet, kept in order until it does. A plain data structure: no
 * locks (the owner serialises), no sockets, no knowledge of connections.
 *
 * - A byte ring of @cap bytes, allocated on the first txbuf_reserve() that
 *   needs room and freed by txbuf_release(). A STREAM backlog uses only
 *   this.
 * - For SEQPACKET, a queue of records on top of the ring: each record is
 *   (len, n), @n messages in order, the first of @len ring bytes, then
 *   @n - 1 empty ones (runs of zero-length messages cost no ring bytes and
 *   are counted, not stored). At most @rec_max records. The tail record may
 *   be "open": a message still being assembled (RW packets without EOM).
 *
 * The caller (conn.c) keeps the ring within @cap by its credit check; the
 * checks here (-ENOBUFS) are the last line, never a normal path.
 */
#ifndef SKIFF_VSOCK_TXBUF_H
#define SKIFF_VSOCK_TXBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct txbuf_rec {
	uint32_t len; /* ring bytes of the first message */
	uint32_t n; /* messages: the first, then n - 1 empty ones */
};

struct txbuf {
	uint32_t cap; /* ring size in bytes (limit, set at init) */
	uint32_t rec_max; /* most records (limit, set at init) */
	uint8_t *ring; /* NULL until the first byte needs room */
	uint32_t head, len; /* ring bytes held: @len from @head */
	struct txbuf_rec *recs; /* a ring of rec_cap records, grown up to rec_max */
	uint32_t rec_cap, rec_head, rec_cnt;
	bool rec_open; /* the tail record is a message still being assembled */
};

/*
 * txbuf_init() - an empty backlog of at most @cap bytes and @rec_max
 * records; nothing is allocated yet.
 */
void txbuf_init(struct txbuf *b, uint32_t cap, uint32_t rec_max);

/*
 * txbuf_release() - drop everything held and free the memory; @b stays
 * initialised (same limits) and empty, and may be used again.
 */
void txbuf_release(struct txbuf *b);

/*
 * txbuf_rec_limit() - the record limit for a backlog of @cap bytes that a
 * sender within a credit of @cap bytes can never reach: every record but
 * the head (whose message may have been sent already) and the open one
 * starts with a message of at least one byte, since an empty message is
 * counted on the record before it. (Only a run of 2^32 - 1 empty messages
 * behind one record needs a record of its own.) Return: @cap + 2,
 * saturated at UINT32_MAX.
 */
uint32_t txbuf_rec_limit(uint32_t cap);

/* txbuf_len() - ring bytes held. */
static inline uint32_t txbuf_len(const struct txbuf *b)
{
	return b->len;
}

/*
 * txbuf_busy() - whether the backlog holds anything: ring bytes, or any
 * record (a SEQPACKET message, empty ones included, or one being
 * assembled).
 */
static inline bool txbuf_busy(const struct txbuf *b)
{
	return b->len || b->rec_cnt;
}

/*
 * txbuf_reserve() - make sure @need more bytes fit in the ring (allocating
 * it, @cap bytes, on first use). @need 0 always succeeds and allocates
 * nothing. Return: 0; -ENOMEM when the ring cannot be allocated; -ENOBUFS
 * when cap - len < @need (nothing changes then).
 */
int txbuf_reserve(struct txbuf *b, uint32_t need);

/*
 * txbuf_append_iov() - append @len bytes of the iovec stream @iov/@n,
 * starting @off bytes into it, at the ring's tail (wrapping). The caller
 * reserved them (txbuf_reserve()) and the stream holds them.
 */
void txbuf_append_iov(struct txbuf *b, const struct iovec *iov, unsigned int n, size_t off,
		      uint32_t len);

/*
 * txbuf_iov() - describe @len ring bytes starting @skip bytes after the
 * head as iovecs into the ring, without copying: 1 segment, or 2 when they
 * wrap; 0 when @len is 0. @skip + @len must be within txbuf_len().
 * Return: the number of entries written to @v.
 */
unsigned int txbuf_iov(const struct txbuf *b, uint32_t skip, uint32_t len, struct iovec v[2]);

/* txbuf_consume() - drop the first @n ring bytes (n <= txbuf_len()). */
void txbuf_consume(struct txbuf *b, uint32_t n);

/* ---- SEQPACKET records ---- */

/* txbuf_recs() - records held (complete and open). */
static inline uint32_t txbuf_recs(const struct txbuf *b)
{
	return b->rec_cnt;
}

/* txbuf_msg_is_open() - whether a message is being assembled (the tail record). */
static inline bool txbuf_msg_is_open(const struct txbuf *b)
{
	return b->rec_open;
}

/*
 * txbuf_msg_open() - start a new message: a record (0 bytes, 1 message) at
 * the tail, open. The previous message must be closed.
 * Return: 0; -ENOMEM; -ENOBUFS when rec_max records are held.
 */
int txbuf_msg_open(struct txbuf *b);

/*
 * txbuf_msg_append_iov() - txbuf_append_iov() of bytes of the open
 * message (reserved by the caller), counted in its record.
 */
void txbuf_msg_append_iov(struct txbuf *b, const struct iovec *iov, unsigned int n, size_t off,
			  uint32_t len);

/*
 * txbuf_msg_close() - the open message is complete (EOM). One that is
 * empty after all is counted on the record before it when that has room,
 * so that it takes no record of its own.
 */
void txbuf_msg_close(struct txbuf *b);

/*
 * txbuf_msg_empty() - one more complete empty message after the last
 * record, counted on it, with no new record. Only when no message is open.
 * Return: false when there is no record, or the last one counts
 * UINT32_MAX messages already (nothing changes: the caller opens and
 * closes a message instead).
 */
bool txbuf_msg_empty(struct txbuf *b);

/* txbuf_msg_ready() - whether a complete message is at the head. */
static inline bool txbuf_msg_ready(const struct txbuf *b)
{
	return b->rec_cnt > (b->rec_open ? 1u : 0u);
}

/*
 * txbuf_msg_head_len() - the ring bytes of the message at the head (only
 * when txbuf_msg_ready()): its bytes are txbuf_iov(b, 0, that).
 */
uint32_t txbuf_msg_head_len(const struct txbuf *b);

/*
 * txbuf_msg_sent() - the message at the head went out (only when
 * txbuf_msg_ready()): its bytes leave the ring, and its record goes when
 * it was the record's last message.
 */
void txbuf_msg_sent(struct txbuf *b);

#endif
