/* SPDX-License-Identifier: MIT */
/*
 * Guest-to-guest routing (router.c): devices of one process that share a
 * group name see each other by CID. A guest TX packet whose dst_cid is
 * another started member's CID is copied into that member's forward queue
 * and put on its RX virtqueue by its pump 0, with no host socket in
 * between. The device only validates and forwards: the two guests' vsock
 * cores do credit (buf_alloc, fwd_cnt) end to end.
 *
 * Bounded memory:
 *   - per destination, a forward queue of at most ROUTE_FWD_DATA_BYTES
 *     payload bytes in ROUTE_FWD_DATA_PKTS RW packets, plus
 *     ROUTE_FWD_CTL_PKTS header-only packets; a sender whose packet does
 *     not fit keeps it (one per sender, "held") and stops consuming its
 *     TX virtqueue until the destination's pump made room and woke it;
 *   - connections are tracked from REQUEST to RST (to reset the peers of
 *     a member that stops), at most max_conns per member, each end
 *     counted; beyond, the REQUEST gets an RST.
 *
 * Locking: one mutex per group (route_group.lock) protects the member
 * list, every member's forward queue, online, waiting_on, n_waiters, the
 * connection table and the RST and track counts. It is taken with no other
 * device lock held, and nothing under it takes another lock: only eventfd
 * writes (a destination's pump 0, a waiting sender's control thread: the
 * fds of struct route_link) happen there. Guest memory is written by pump 0
 * outside it (only that thread takes a queue's head off, so the head stays
 * valid), and RST replies go to the member's rawq after it is released.
 *
 * The router knows no device: what it needs from one (CID, cap, counters,
 * the RST queue, whom to wake) is a struct route_link given at join. The list of groups has its own mutex
 * (groups_lock), taken before a group's lock, at create and destroy only.
 */
#ifndef SKIFF_VSOCK_ROUTER_H
#define SKIFF_VSOCK_ROUTER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "counters.h"
#include "packet.h"
#include "rawq.h"
#include "rxq.h"

struct route_member;
struct vq_chain;

#define ROUTE_FWD_DATA_BYTES (512u * 1024u) /* payload queued per destination */
#define ROUTE_FWD_DATA_PKTS 128u /* RW packets queued per destination */
#define ROUTE_FWD_CTL_PKTS 1024u /* header-only packets queued per destination */
#define ROUTE_MRG_MAX_CHAINS 32u /* RX chains of one mergeable packet */
#define ROUTE_RX_BUDGET 64u /* packets pump 0 delivers per turn */
#define ROUTE_FWD_DGRAM_BYTES (256u * 1024u) /* datagram payload queued per destination */
#define ROUTE_FWD_DGRAM_PKTS 64u /* datagrams queued per destination */

/* A device as the router sees it (copied at route_join(), then read-only). */
struct route_link {
	uint64_t cid; /* the guest's CID */
	unsigned int max_conns; /* tracked connections with this member as an end, at most */
	struct dev_counters *ctr;
	struct rawq *raw; /* RSTs to this guest (connection-less replies) */
	int rx_wake_fd; /* eventfd of the thread that calls route_rx_serve() (pump 0) */
	int tx_wake_fd; /* eventfd of the thread that calls route_tx*() (control thread) */
};

/*
 * route_join() - at create: enter group @name (NULL or "": the default
 * group), created on first use, as *@out. Return: 0; -EADDRINUSE when a
 * member of that group has @link's CID; -ENAMETOOLONG; -ENOMEM.
 */
int route_join(const struct route_link *link, const char *name, struct route_member **out);

/* route_leave() - at destroy, threads stopped: route_offline(), leave, free. NULL: no-op. */
void route_leave(struct route_member *m);

/*
 * route_online() - the device started: reachable from now on; @seqpacket:
 * its guest negotiated SEQPACKET (else SEQPACKET packets to it get an RST);
 * @dgram: DGRAM (else datagrams to it are dropped and counted).
 */
void route_online(struct route_member *m, bool seqpacket, bool dgram);

/*
 * route_offline() - the device stopped or was reset (its threads are
 * stopped): unreachable from now on; its forward queue and held packet are
 * dropped; every tracked connection through it is forgotten here and owes
 * its peer an RST (sent by the peer's pump 0); senders waiting on its queue
 * are woken (their held packet then meets an unreachable CID).
 */
void route_offline(struct route_member *m);

/*
 * route_cid_ok() - whether @cid may name another guest: 3 .. 2^32 - 2 and
 * not @own_cid (a packet to CID 0, 1, VMADDR_CID_ANY or its own CID is
 * malformed, as before routing existed).
 */
bool route_cid_ok(uint64_t own_cid, uint64_t cid);

/*
 * route_tx() - control thread of @me's device: guest packet @p (valid but for its
 * dst_cid, which is not 2) on TX chain @ch. Forwards it, or answers an RST
 * (unknown or offline CID, another group, own CID, untracked connection,
 * type not negotiated by the destination, connection cap), or holds it
 * when the destination's queue is full (see route_tx_held()).
 * A datagram (DGRAM RW) is never answered and never held: it is queued
 * within the destination's datagram share (ROUTE_FWD_DGRAM_*, apart from
 * the stream share, so a flood leaves streams their room) and counted in
 * dgram_tx_pkts, or dropped and counted (dgram_tx_drop_no_dest: unknown,
 * offline or non-DGRAM CID; dgram_tx_drop_full: share full).
 */
void route_tx(struct route_member *me, const struct vq_chain *ch, const struct vsock_pkt *p);

/*
 * route_tx_bad() - control thread: a malformed packet (bad type, op or
 * length) from @me's guest names the guest-to-guest connection @h: as for
 * host connections, that connection is reset, both ends (the sender now,
 * the peer through its pump 0). Nothing happens when it is not tracked.
 */
void route_tx_bad(struct route_member *me, const struct virtio_vsock_hdr *h);

/* route_tx_held() - whether @me's TX must stay stopped (a packet is held). */
bool route_tx_held(const struct route_member *me);

/*
 * route_tx_retry() - control thread: try to queue the held packet again.
 * Return: true when a held packet was placed (or dropped) and TX may resume.
 */
bool route_tx_retry(struct route_member *me);

/* route_rx_pending() - whether pump 0 has routed packets to deliver (lock free). */
bool route_rx_pending(const struct route_member *me);

/*
 * route_rx_serve() - pump 0: deliver owed RSTs and forward-queue packets
 * to the RX virtqueue through @rc, one packet per unit of *@budget (taken
 * off as they go), splitting RW payloads that do not fit the guest's
 * buffers. Datagrams go through @dg_rc (empty between calls) with
 * rxq_dgram_put(): whole, now or never (dgram_rx_pkts, or
 * dgram_rx_drop_no_buf / dgram_rx_drop_too_big). Return: 0 (nothing left,
 * or *@budget used up); -EAGAIN out of RX chains (a packet may be partly
 * delivered; the caller starves (pump_starve()) and calls again when
 * chains come).
 */
int route_rx_serve(struct route_member *me, struct rxq_cache *rc, struct rxq_cache *dg_rc,
		   unsigned int *budget);

#endif
