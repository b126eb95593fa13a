/* SPDX-License-Identifier: MIT */
/*
 * Datagrams between one guest and the host (dgram.c): the device-owned
 * AF_UNIX SOCK_DGRAM sockets of host_dgram.h and the two directions.
 *
 *   - guest to host (dgram_tx()): a guest datagram from guest port Q to
 *     host port P is sent, never blocking, from Q's socket "U_dgram_g<Q>"
 *     to "U_dgram_<P>"; full, absent or failing: dropped and counted;
 *   - host to guest (dgram_rx()): what arrives on Q's socket, or on the
 *     gateway "U_dgram" after a "SEND <Q>\n" line, from a sender bound at
 *     "U_dgram_<P>", is put on the RX queue as one DGRAM RW packet from
 *     (2, P) to (guest, Q) by rxq_dgram_put(): now or never.
 *
 * Bounded: at most DGRAM_MAX_SOCKS guest-port sockets plus the gateway; a
 * socket idle for DGRAM_IDLE_MS is closed when another is made, and at the
 * cap the least recently used one goes. One 64 KiB receive buffer. Nothing
 * is queued in the device.
 *
 * Threads: the control thread only (or any thread while it does not run:
 * create, destroy). The sockets are watched in the control thread's epoll
 * with the tag the device gives (struct dgram_sock starts with it).
 */
#ifndef SKIFF_VSOCK_DGRAM_H
#define SKIFF_VSOCK_DGRAM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "counters.h"
#include "host_dgram.h"
#include "rxq.h"
#include "skiff/vsock_abi.h"

#define DGRAM_MAX_SOCKS 64u /* guest-port sockets per device */
#define DGRAM_IDLE_MS 60000 /* unused this long: closed when another socket is made */
#define DGRAM_RX_BUDGET 32u /* datagrams read from one socket per readiness event */
#define DGRAM_MAX_ERRS 8u /* receive errors in a row before a socket is given up */

/* One device-owned socket: a guest port's, or the gateway. */
struct dgram_sock {
	int kind; /* the control thread's epoll tag (dgram_init()); first member */
	int fd;
	bool gateway;
	uint32_t port; /* the guest port (not for the gateway) */
	int64_t last_ms; /* last datagram either way */
	unsigned int errs; /* receive errors in a row */
	struct dgram_sock *next;
};

struct dgram_host {
	char uds[108]; /* "": no host side, every guest datagram to CID 2 is dropped */
	uint64_t guest_cid;
	bool guest_dgram; /* the guest negotiated DGRAM (set while the control thread is stopped) */
	int epfd, kind; /* where and with which tag the sockets are watched */
	struct dev_counters *ctr;
	struct dgram_sock *socks; /* most recently used first */
	unsigned int n_socks;
	struct dgram_sock *dead; /* closed, freed by dgram_reap() */
	struct dgram_sock gw; /* fd -1 without a host side */
	uint8_t *buf; /* one datagram read from the host */
};

/*
 * dgram_init() - @uds ("" for none; at most DGRAM_UDS_PATH_MAX bytes) of the
 * guest @guest_cid; binds the gateway "<uds>_dgram" and watches it in
 * @epfd with tag @kind. Return: 0; -ENAMETOOLONG; -ENOMEM; -errno of
 * dgram_bind() or epoll_ctl().
 */
int dgram_init(struct dgram_host *d, const char *uds, uint64_t guest_cid, struct dev_counters *ctr,
	       int epfd, int kind);
/* dgram_fini() - close every socket and remove its path. */
void dgram_fini(struct dgram_host *d);
/*
 * dgram_reap() - free the sockets closed since the last call. A closed
 * socket's struct stays valid (fd -1) until then, so that an epoll event
 * already fetched for it is harmless: call it before epoll_wait().
 */
void dgram_reap(struct dgram_host *d);

/*
 * dgram_tx() - guest datagram @h (validated by pkt_parse_tx(): DGRAM RW to
 * CID 2) with its payload @iov[@n] to "<uds>_dgram_<dst_port>", from the
 * socket of guest port src_port (made now if needed). @now_ms: the clock of
 * last use. Counts dgram_tx_pkts/bytes or one dgram_tx_drop_* counter.
 */
void dgram_tx(struct dgram_host *d, const struct virtio_vsock_hdr *h, const struct iovec *iov,
	      unsigned int n, int64_t now_ms);

/*
 * dgram_rx() - socket @s is readable: read up to DGRAM_RX_BUDGET datagrams
 * and put each on the RX queue through @rc (empty; rxq_dgram_put()), or
 * drop and count it (dgram_rx_drop_*; every one while the guest has not
 * negotiated DGRAM, d->guest_dgram). A receive error other than EAGAIN
 * is counted (dgram_rx_drop_err) and ends the round; after DGRAM_MAX_ERRS
 * in a row the socket is closed (the gateway with a line on stderr), so a
 * broken socket is never spun on while a passing error (ENOMEM) costs
 * nothing: the datagram is still queued and read on the next round.
 */
void dgram_rx(struct dgram_host *d, struct dgram_sock *s, struct rxq_cache *rc, int64_t now_ms);

#endif
