/* SPDX-License-Identifier: MIT */
/*
 * One vsock connection between a guest socket and a host Unix socket.
 *
 * Protocol primer (virtio 1.2 5.10.6, Linux net/vmw_vsock/virtio_transport_common.c)
 * ---------------------------------------------------------------------------
 * A connection is named by (guest CID, guest port) on one side and
 * (host CID 2, local port) on the other. Every packet carries a 44-byte
 * header: CIDs and ports, len (payload bytes), type (STREAM or SEQPACKET),
 * op, flags, and the sender's receive credit: buf_alloc (its buffer size) and
 * fwd_cnt (bytes it has consumed so far, a free-running u32).
 *
 *   REQUEST          opens (either side); answered by RESPONSE, or RST to refuse.
 *   RESPONSE         accepts. It is always the first packet the device sends
 *                    on a guest-initiated connection.
 *   RW               payload. For SEQPACKET, flag EOM ends a message and EOR a
 *                    record.
 *   SHUTDOWN         half-close: flag RCV "I will not read any more", SEND "I
 *                    will not write any more". Both set: the sender is closing
 *                    and waits for an RST.
 *   RST              the connection is gone. Never answered.
 *   CREDIT_UPDATE    "here is my buf_alloc / fwd_cnt" with no payload.
 *   CREDIT_REQUEST   "send me a CREDIT_UPDATE".
 *
 * Credit: a sender may have at most buf_alloc bytes unconsumed by the peer:
 * sent - peer_fwd_cnt <= peer_buf_alloc, all u32 arithmetic modulo 2^32.
 * Any packet for a connection refreshes the sender's credit view; a packet
 * for no connection gets an RST (unless it is an RST).
 *
 * In skiff: guest-to-host bytes are written to the host socket straight from
 * guest memory; what the socket does not take is kept in a backlog of at most
 * buf_alloc bytes (the credit we advertised, so a guest that respects credit
 * never makes us drop), and fwd_cnt counts only bytes the host socket took.
 * Host-to-guest bytes are read by the connection's RX pump thread straight
 * into guest RX buffers, never more than the guest's credit.
 *
 * What the device still owes the guest is a set of pending kinds (request,
 * response, credit update, data, shutdown, rst), served in that order by the
 * connection's pump thread, so a RESPONSE always comes first and control
 * packets never wait behind bulk data.
 *
 * Host side mapping (Firecracker hybrid sockets):
 *   - guest STREAM to host port P: SOCK_STREAM connect to "<uds_path>_<P>";
 *   - guest SEQPACKET to host port P: SOCK_SEQPACKET connect to the same path
 *     (the host app listens with SOCK_SEQPACKET there); message boundaries
 *     (EOM) map to Unix seqpacket messages both ways. EOR has no Unix
 *     equivalent: it is passed through as EOM;
 *   - host app connects to uds_path, writes "CONNECT <P>\n", gets
 *     "OK <local port>\n": always a STREAM connection.
 *   - guest SHUTDOWN SEND becomes shutdown(SHUT_WR) once the backlog is
 *     written, RCV becomes shutdown(SHUT_RD); host EOF becomes SHUTDOWN SEND
 *     (plus RCV when the host closed entirely) once all data went to the guest.
 */
#ifndef SKIFF_VSOCK_CONN_H
#define SKIFF_VSOCK_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "counters.h"
#include "killq.h"
#include "packet.h"
#include "rxq.h"
#include "txbuf.h"

struct vsock_dev;
struct pump;
struct conn;

/* Timeouts (README "Limits and defaults"). */
#define DEV_CONNECT_TIMEOUT_MS 2000 /* guest answer to a host-initiated REQUEST */
#define DEV_CLOSE_TIMEOUT_MS 2000 /* guest RST after our SHUTDOWN RCV|SEND */
#define DEV_STALL_TIMEOUT_MS 10000 /* ... while it still has our data unread and reads none */

#define TXB_IOV 1024u /* iovecs of one batched TX sendmsg() (IOV_MAX) */
#define TXB_MAX_BYTES (256u * 1024u) /* bytes of one batched TX sendmsg() */

enum conn_state {
	CONN_HOST_CONNECTING, /* host-initiated: REQUEST owed or sent, awaiting RESPONSE */
	CONN_ESTABLISHED,
	CONN_CLOSED, /* out of the table; RST may still be owed; awaiting retirement */
};

/* Pending kinds, served by the pump in the order RST, REQUEST, RESPONSE, CREDIT, CREDIT_REQ,
 * data, SHUTDOWN. */
#define PEND_RST (1u << 0)
#define PEND_REQUEST (1u << 1)
#define PEND_RESPONSE (1u << 2)
#define PEND_CREDIT (1u << 3)
#define PEND_SHUTDOWN (1u << 4) /* after data: flags in shut_to_send */
#define PEND_CREDIT_REQ (1u << 5) /* a CREDIT_REQUEST: the RX packet bound wants a fwd_cnt */

/*
 * RX packets in flight. Credit meters bytes only, but a Linux guest from
 * 6.12.92 on (net/vmw_vsock/virtio_transport_common.c,
 * virtio_transport_inc_rx_pkt()) also charges every queued skb
 * SKB_TRUESIZE(0) (576 bytes on x86-64 and arm64) against buf_alloc and
 * resets the connection when (queued + 1) x that exceeds it: 455 packets
 * at the default 256 KiB. A host writing a few bytes at a time to a slow
 * reader makes that many small packets long before the credit runs out.
 * So the device keeps a connection's RW packets the guest has not wholly
 * consumed (known from fwd_cnt) at most conn_rx_pkt_limit(): buf_alloc /
 * CONN_PKT_CHARGE (2048 bytes, well over the guest's charge), at least 1,
 * at most CONN_PKT_RING. At the limit the data waits and the host bytes
 * gather in the host socket, to go out in fewer, larger packets once the
 * guest's fwd_cnt moves. Guests say little about fwd_cnt (Linux sends a
 * CREDIT_UPDATE when its free space falls under 64 KiB or, since 6.8, when
 * its queue runs dry), so the device asks with a CREDIT_REQUEST at three
 * quarters of the limit, and while held at the limit again every
 * CONN_PKT_POLL_MIN_MS, doubling up to CONN_PKT_POLL_MAX_MS.
 */
#define CONN_PKT_CHARGE 2048u
#define CONN_PKT_RING 256u
#define CONN_PKT_POLL_MIN_MS 1u
#define CONN_PKT_POLL_MAX_MS 64u

#define CONN_SHUT_BOTH (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)

/*
 * conn_shut_both() - whether SHUTDOWN flags @flags say RCV and SEND: that
 * side is closing and waits for an RST (the close handshake).
 */
static inline bool conn_shut_both(uint32_t flags)
{
	return (flags & CONN_SHUT_BOTH) == CONN_SHUT_BOTH;
}

/*
 * What a connection needs from the layers above it (the pump, the table,
 * the control thread, the device's fd budget), one const table per device
 * (struct conn_env). The state machine calls these and nothing else above
 * it; a unit test passes its own.
 */
struct conn_ops {
	/*
	 * schedule() - put @c on its pump's work list (a reference taken
	 * while it is there) and wake the pump: it has packets to send or
	 * host bytes to read. Any thread, c->lock may be held.
	 */
	void (*schedule)(struct conn *c);
	/*
	 * set_out() - add (re-arm: after EAGAIN, or bytes queued) or remove
	 * the host socket's EPOLLOUT interest; caller holds c->lock.
	 * Return: 0, or -errno when adding failed (the caller resets @c).
	 */
	int (*set_out)(struct conn *c, bool on);
	/* unlist() - take @c out of the connection table (drops the table's reference). */
	void (*unlist)(struct conn *c);
	/*
	 * credit_now() - put header-only packet @h (host order) on the RX
	 * queue at once, from the control thread. Return: 0; -EAGAIN when no
	 * RX chain is at hand (the pump sends it then).
	 */
	int (*credit_now)(struct conn *c, const struct virtio_vsock_hdr *h);
	/*
	 * accepted() - the guest accepted host-initiated @c: tell the host
	 * client (the hybrid protocol's "OK <port>" line). Return: 0;
	 * -EPIPE or -ECONNRESET when the client reads no more; another
	 * -errno (the caller resets @c).
	 */
	int (*accepted)(struct conn *c);
	/* close_fd() - the last reference went: close host fd @fd (and uncount it). */
	void (*close_fd)(struct conn *c, int fd);
};

/* What every connection of one device shares: set at create, then read-only. */
struct conn_env {
	const struct conn_ops *ops;
	struct vsock_dev *dev; /* for the ops; conn.c never looks inside */
	struct dev_counters *ctr;
	struct killq *kq; /* deadlines (the control thread's timerfd) */
	uint64_t guest_cid;
	uint32_t buf_alloc; /* conn_buf_size: our buf_alloc, the backlog size */
	uint32_t rx_pkt_max; /* payload of one RX packet, at most */
};

/*
 * RW payload of consecutive guest packets of one STREAM connection, still in
 * guest memory, written to the host socket with one sendmsg() when a packet
 * of another kind or connection comes, when full, and always before the TX
 * used entries of those packets are published (the guest may reuse the
 * buffers then). The control thread's (it passes its own to
 * conn_handle_tx() and conn_tx_flush()).
 */
struct tx_batch {
	struct conn *c; /* holds a reference; NULL: no batch */
	unsigned int n;
	uint32_t len;
	struct iovec iov[TXB_IOV];
};

struct conn {
	/* Immutable after conn_new(). */
	const struct conn_env *env;
	struct vsock_dev *dev; /* env->dev */
	struct pump *pump; /* owner: sends every packet of this connection */
	uint32_t local_port; /* host side (dst_port of guest packets) */
	uint32_t peer_port; /* guest side */
	uint16_t type; /* VIRTIO_VSOCK_TYPE_STREAM or _SEQPACKET */
	int fd; /* host socket, non-blocking; closed by the last conn_put() */

	int refs; /* atomic: table, pump ownership, work list, lookups */

	pthread_mutex_t lock; /* protects everything below but the fields marked otherwise */
	enum conn_state state;
	uint32_t pending; /* PEND_* */
	uint32_t shut_to_send; /* SHUTDOWN flags owed to the guest */
	uint32_t peer_shut; /* SHUTDOWN flags received from the guest */
	uint32_t local_shut; /* SHUTDOWN flags sent to the guest */
	bool host_readable; /* edge seen, not yet read to EAGAIN */
	bool host_eof; /* read returned 0 */
	bool host_hup; /* host peer closed entirely (EPOLLHUP) */
	bool host_rdhup; /* host peer stopped writing (EPOLLRDHUP/HUP/ERR seen) */
	bool want_flush; /* EPOLLOUT seen: write the backlog */
	bool rst_when_drained; /* guest sent SHUTDOWN RCV|SEND: RST after the backlog */
	/* The pump's bookkeeping (rx_pump.c), under c->lock unless said otherwise. */
	bool out_armed; /* EPOLLOUT in the pump's interest set */
	bool retired; /* removed from the pump's epoll */
	bool on_work; /* on pump->work or pump->blocked (pump->lock) */
	struct conn *work_next; /* pump->lock */
	struct conn *zombie_next; /* owning pump thread only */
	struct conn *hash_next; /* muxer lock (muxer.c) */
	bool in_table; /* muxer lock (muxer.c) */
	struct killq_entry kq; /* env->kq's lock: a deadline (killq.h); queued with a ref */
	struct conn *due_next; /* control thread: timer_tick()'s list of expired ones */
	bool counted; /* in conns_opened: conns_closed counts its fd's close */
	uint32_t deadline_fwd; /* guest fwd_cnt when the deadline was last set */

	/* Guest-to-host credit (we are the receiver). */
	uint32_t buf_alloc; /* what we advertise */
	uint32_t g2h_recv; /* payload bytes taken from the guest */
	uint32_t g2h_fwd; /* ... of which the host socket took (fwd_cnt) */
	uint32_t g2h_fwd_told; /* fwd_cnt last sent to the guest */

	/* Host-to-guest credit (the guest is the receiver). */
	uint32_t peer_buf_alloc;
	uint32_t peer_fwd_cnt;
	uint32_t h2g_sent; /* payload bytes put on the RX queue */
	/*
	 * RW packets sent and not wholly consumed by the guest, as the
	 * h2g_sent at the end of each, oldest first (a ring at pkt_head): the
	 * skbs a Linux guest holds for this connection (see CONN_PKT_CHARGE).
	 */
	uint32_t pkt_end[CONN_PKT_RING];
	uint16_t pkt_head, pkt_n;
	bool credit_req_out; /* a CREDIT_REQUEST went out, no guest packet since */
	bool pkt_polling; /* held at the packet limit: the deadline is a re-request */
	uint16_t pkt_poll_ms; /* the next re-request's delay */

	/*
	 * Backlog of guest bytes the host socket did not take yet (txbuf.h): a
	 * ring of buf_alloc bytes (allocated on first use), so a guest within
	 * its credit always fits; for SEQPACKET plus the message records, at
	 * most txbuf_rec_limit(buf_alloc) of them.
	 */
	struct txbuf tx;

	/* Bytes that followed "CONNECT <port>\n": sent to the guest first. */
	uint8_t prefix[32];
	uint32_t prefix_len, prefix_off;

	/* SEQPACKET host-to-guest: one host message being sent in fragments. */
	uint8_t *msg;
	uint32_t msg_len, msg_off;
	bool msg_valid;
};

/* conn_of_kq() - the connection whose kill queue entry is @e. */
static inline struct conn *conn_of_kq(struct killq_entry *e)
{
	return (struct conn *)(void *)((char *)e - offsetof(struct conn, kq));
}

/*
 * conn_new() - a connection with one reference (the caller's), state
 * ESTABLISHED (guest-initiated, RESPONSE pending) or HOST_CONNECTING
 * (REQUEST pending), owned by pump @pump (opaque here). @req: the guest's
 * REQUEST (credit and ports), or NULL for host-initiated. The host socket's
 * SO_SNDBUF is raised to hold buf_alloc. Takes ownership of @fd on success.
 * Return: the connection or NULL (-ENOMEM).
 */
struct conn *conn_new(const struct conn_env *env, struct pump *pump, int fd, uint16_t type,
		      uint32_t local_port, uint32_t peer_port, const struct virtio_vsock_hdr *req);

/*
 * conn_set_prefix() - bytes (@len <= 32) that followed the host client's
 * CONNECT line: sent to the guest before anything read from the socket.
 * Before @c is shared.
 */
void conn_set_prefix(struct conn *c, const void *buf, uint32_t len);

void conn_get(struct conn *c);
/* conn_put() - drop a reference; the last one closes the fd (ops->close_fd) and frees. */
void conn_put(struct conn *c);

/*
 * conn_credit_avail() - bytes we may send to the guest now (caller holds
 * c->lock): peer_buf_alloc - (h2g_sent - peer_fwd_cnt), u32 modulo 2^32, 0
 * when the guest's counters claim more than it allowed.
 */
uint32_t conn_credit_avail(const struct conn *c);

/*
 * conn_rx_pkt_limit() - how many RW packets @c may have unconsumed by the
 * guest (caller holds c->lock): peer_buf_alloc / CONN_PKT_CHARGE, within
 * [1, CONN_PKT_RING]. See CONN_PKT_CHARGE.
 */
uint32_t conn_rx_pkt_limit(const struct conn *c);

/*
 * conn_handle_tx() - one validated guest packet for connection @c (control
 * thread; takes c->lock). @payload/@n_payload: the payload bytes (hdr.len of
 * them) in guest memory. STREAM RW payload joins the control thread's batch
 * @b while the backlog is empty (written by conn_tx_flush()); else it is
 * written to the host socket or the backlog. Updates credit, and schedules
 * replies on the owning pump (ops->schedule; the caller may defer the
 * wake-ups around the call).
 */
void conn_handle_tx(struct conn *c, const struct virtio_vsock_hdr *h, const struct iovec *payload,
		    unsigned int n_payload, struct tx_batch *b);

/*
 * conn_tx_flush() - write batch @b to its connection's host socket; what the
 * socket does not take goes to the backlog; a write error resets that
 * connection. Control thread; takes the connection's lock. No-op without a
 * batch; @b is empty after.
 */
void conn_tx_flush(struct tx_batch *b);

/*
 * conn_flush() - EPOLLOUT on the host socket: write the backlog (pump;
 * caller holds c->lock). Return: 0, or -errno of a fatal write error (the
 * caller resets).
 */
int conn_flush(struct conn *c);

/*
 * conn_want_flush() - when EPOLLOUT was seen (conn_host_event()), write the
 * backlog (conn_flush()), resetting @c on a fatal error (pump; caller holds
 * c->lock).
 */
void conn_want_flush(struct conn *c);

/*
 * conn_host_event() - the pump saw epoll events @events (EPOLLIN, EPOLLOUT,
 * EPOLLRDHUP, EPOLLHUP, EPOLLERR) on @c's host socket: note them (caller
 * holds c->lock); the pump then serves @c.
 */
void conn_host_event(struct conn *c, uint32_t events);

/*
 * conn_rx_wanted() - whether @c has a packet for the guest now: a pending
 * kind or data it may send (caller holds c->lock).
 */
bool conn_rx_wanted(const struct conn *c);

/*
 * conn_rx_next() - put @c's next packet on the RX queue through @rc, in the
 * order RST, REQUEST, RESPONSE, CREDIT_UPDATE, data, SHUTDOWN (caller holds
 * c->lock; pump thread). Data: from the bytes after the CONNECT line, a
 * buffered SEQPACKET message, or the host socket read straight into the RX
 * chains, within the guest's credit. A host socket error or a SEQPACKET
 * message too large resets @c; EOF owes a SHUTDOWN.
 * Return: 0 a step was made (call again, within a budget); 1 nothing more
 * to send now; -EAGAIN out of RX buffers (nothing lost: call again when
 * there are).
 */
int conn_rx_next(struct conn *c, struct rxq_cache *rc);

/* conn_retirable() - @c is closed and owes nothing: its pump may retire it (c->lock held). */
bool conn_retirable(const struct conn *c);

/*
 * conn_watch_deadline() - give @c a deadline of @ms from now for its current
 * waiting state (HOST_CONNECTING, or our SHUTDOWN RCV|SEND sent; with data
 * of ours unread then at least DEV_STALL_TIMEOUT_MS); when it is still in
 * that state then, conn_expire() resets it. While on the kill queue
 * (env->kq, killq.h), @c holds a reference for it. Caller holds c->lock.
 */
void conn_watch_deadline(struct conn *c, unsigned int ms);
/*
 * conn_unwatch_deadline() - @c left its waiting state (answered, or closed):
 * out of the kill queue at once, so that the queue's reference does not
 * keep its fd open. Caller holds c->lock and a reference of its own.
 */
void conn_unwatch_deadline(struct conn *c);
/*
 * conn_expire() - @c's deadline passed at @now_ms (killq time; caller holds
 * c->lock): no longer waiting, it leaves the kill queue; after our SHUTDOWN
 * with the guest's fwd_cnt moved since, the clock restarts
 * (DEV_CLOSE_TIMEOUT_MS once all is read, DEV_STALL_TIMEOUT_MS while data
 * is left); else @c is reset (RST).
 */
void conn_expire(struct conn *c, int64_t now_ms);
/*
 * conn_reset() - close @c because of an error or an abortive guest RST
 * (caller holds c->lock): out of the table and the kill queue, host fd shut
 * down both ways, backlog dropped, state CLOSED; an RST is owed to the guest
 * when @send_rst. Schedules the connection on its pump for retirement.
 * Counted in conn_resets (conns_refused while HOST_CONNECTING).
 */
void conn_reset(struct conn *c, bool send_rst);
/*
 * conn_forget() - the device is reset or destroyed (threads stopped; caller
 * holds c->lock): CLOSED, nothing owed; a host client never accepted counts
 * in conns_refused.
 */
void conn_forget(struct conn *c);
/*
 * conn_describe() - one line of @c's state for a diagnostic (caller holds
 * c->lock): state, pending kinds, shutdown flags, both credit directions
 * (ours: buf_alloc, bytes received, fwd_cnt and the fwd_cnt the guest was
 * last told, backlog bytes; the guest's: buf_alloc, fwd_cnt, bytes sent,
 * credit left), host socket flags. Return: as snprintf().
 */
int conn_describe(const struct conn *c, char *buf, size_t len);
/* conn_opened() - @c is in the table: count it in conns_opened (and its fd's close in conns_closed). */
void conn_opened(struct conn *c);
/* conn_end() - conn_reset() of the normal close handshake: counted nowhere. */
void conn_end(struct conn *c, bool send_rst);

/* conn_schedule() - ops->schedule(): put @c on its pump's work list and wake the pump. */
void conn_schedule(struct conn *c);

/*
 * conn_fill_hdr() - a header from the device to the guest for @c with @op,
 * carrying our current credit (caller holds c->lock; g2h_fwd_told updated).
 */
void conn_fill_hdr(struct conn *c, struct virtio_vsock_hdr *h, uint16_t op, uint32_t flags,
		   uint32_t len);

#endif
