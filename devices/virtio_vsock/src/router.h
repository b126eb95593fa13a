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
 * writes (pump_wake(), a waiting sender's ctl_wake_fd) happen there. Guest
 * memory is written by pump 0 outside it (only that thread takes a queue's
 * head off, so the head stays valid), and RST replies go to dev->raw_lock
 * after it is released. The list of groups has its own mutex
 * (groups_lock), taken before a group's lock, at create and destroy only.
 */
#ifndef SKIFF_VSOCK_ROUTER_H
#define SKIFF_VSOCK_ROUTER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "packet.h"

struct vsock_dev;
struct pump;
struct vq_chain;

#define ROUTE_FWD_DATA_BYTES (512u * 1024u) /* payload queued per destination */
#define ROUTE_FWD_DATA_PKTS 128u /* RW packets queued per destination */
#define ROUTE_FWD_CTL_PKTS 1024u /* header-only packets queued per destination */
#define ROUTE_MRG_MAX_CHAINS 32u /* RX chains of one mergeable packet */
#define ROUTE_RX_BUDGET 64u /* packets pump 0 delivers per turn */

/*
 * route_join() - at create: enter group @name (NULL or "": the default
 * group), created on first use. Return: 0; -EADDRINUSE when a member of
 * that group has @dev's CID; -ENAMETOOLONG; -ENOMEM.
 */
int route_join(struct vsock_dev *dev, const char *name);

/* route_leave() - at destroy, threads stopped: route_offline(), leave, free. */
void route_leave(struct vsock_dev *dev);

/* route_online() - the device started: reachable from now on. */
void route_online(struct vsock_dev *dev);

/*
 * route_offline() - the device stopped or was reset (its threads are
 * stopped): unreachable from now on; its forward queue and held packet are
 * dropped; every tracked connection through it is forgotten here and owes
 * its peer an RST (sent by the peer's pump 0); senders waiting on its queue
 * are woken (their held packet then meets an unreachable CID).
 */
void route_offline(struct vsock_dev *dev);

/*
 * route_cid_ok() - whether @cid may name another guest: 3 .. 2^32 - 2 and
 * not @dev's own (a packet to CID 0, 1, VMADDR_CID_ANY or its own CID is
 * malformed, as before routing existed).
 */
bool route_cid_ok(const struct vsock_dev *dev, uint64_t cid);

/*
 * route_tx() - control thread of @dev: guest packet @p (valid but for its
 * dst_cid, which is not 2) on TX chain @ch. Forwards it, or answers an RST
 * (unknown or offline CID, another group, own CID, untracked connection,
 * type not negotiated by the destination, connection cap), or holds it
 * when the destination's queue is full (see route_tx_held()).
 */
void route_tx(struct vsock_dev *dev, const struct vq_chain *ch, const struct vsock_pkt *p);

/*
 * route_tx_bad() - control thread: a malformed packet (bad type, op or
 * length) from @dev's guest names the guest-to-guest connection @h: as for
 * host connections, that connection is reset, both ends (the sender now,
 * the peer through its pump 0). Nothing happens when it is not tracked.
 */
void route_tx_bad(struct vsock_dev *dev, const struct virtio_vsock_hdr *h);

/* route_tx_held() - whether @dev's TX must stay stopped (a packet is held). */
bool route_tx_held(const struct vsock_dev *dev);

/*
 * route_tx_retry() - control thread: try to queue the held packet again.
 * Return: true when a held packet was placed (or dropped) and TX may resume.
 */
bool route_tx_retry(struct vsock_dev *dev);

/* route_rx_pending() - whether pump 0 has routed packets to deliver (lock free). */
bool route_rx_pending(const struct vsock_dev *dev);

/*
 * route_rx_serve() - pump 0: deliver owed RSTs and forward-queue packets
 * to the RX virtqueue, at most ROUTE_RX_BUDGET, splitting RW payloads that
 * do not fit the guest's buffers. Out of RX chains: marks the pump starved
 * (an RX kick resumes it).
 */
void route_rx_serve(struct pump *p);

#endif
