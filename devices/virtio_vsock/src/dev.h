/* SPDX-License-Identifier: MIT */
/*
 * The device: struct vsock_dev puts together the layers below it (rxq,
 * rawq, conn, muxer, killq, router) and its threads (pump.h, ctl.h,
 * lobby.h); included by the thread shells (rx_pump.c, dev_ctl.c,
 * host_lobby.c) and the public API (device.c) only. README.md shows the
 * layers and the locks.
 *
 * Threads (created by vsock_dev_start(), joined by stop/reset/destroy):
 *   - one control thread: TX queue (guest to host), the kicks of all
 *     queues, the uds_path listener and CONNECT lines;
 *   - rx_threads pump threads: each owns a shard of connections in its own
 *     epoll and sends every packet of those connections to the guest.
 *
 * Lock order: conn->lock first, then at most one of mux.lock, pump->lock,
 * rx.lock, raw.lock, kq.lock (never two of those at once, never a
 * conn->lock while holding one of them). Each lock's fields are in the
 * header of its layer; README.md has the table.
 */
#ifndef SKIFF_VSOCK_DEV_H_INTERNAL
#define SKIFF_VSOCK_DEV_H_INTERNAL

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"
#include "killq.h"
#include "conn.h"
#include "counters.h"
#include "dgram.h"
#include "muxer.h"
#include "packet.h"
#include "ctl.h"
#include "host_uds.h"
#include "lobby.h"
#include "pump.h"
#include "rawq.h"
#include "router.h"
#include "rxq.h"
#include "skiff/vsock_dev.h"
#include "virtqueue.h"

/* Defaults and limits (see README.md). */
#define DEV_DEFAULT_MAX_CONNS 1024u
#define DEV_DEFAULT_BUF (256u * 1024u)
#define DEV_MAX_PUMPS VSOCK_MAX_RX_THREADS
#define DEV_TIMER_TICK_MS 250
#define DEV_CONNECT_LINE_TIMEOUT_MS 2000 /* host client writing its CONNECT line */
#define DEV_DEFAULT_HOST_WAIT_MS 5000u /* host client waiting for the device to start */
#define DEV_ACCEPT_BACKOFF_MS DEV_TIMER_TICK_MS /* listener ignored after EMFILE */
#define DEV_FD_RESERVE 64 /* fds of the process left out of the automatic budgets */
#define DEV_FD_PER_DEVICE 32 /* ... plus these per device (its own epolls, eventfds...) */
#define DEV_FD_BUDGET_MIN 16 /* an automatic budget never goes below this */
#define HOST_PORT_MIN (1u << 30) /* local ports of host-initiated connections ... */
#define HOST_PORT_END (1u << 31) /* ... below this */

struct vsock_dev {
	/* Set at create, then read-only. */
	struct vsock_dev_config cfg; /* defaults filled in */
	char uds_path[108];
	int listen_fd;
	uint64_t features_offered;

	/* Control-call state (transport thread; threads stopped when written). */
	uint64_t features;
	struct guest_mem gm;
	struct vsock_vring_config vring[VSOCK_VQ_NUM];
	bool vring_set[VSOCK_VQ_NUM];
	bool started;

	struct rxq rx; /* the RX virtqueue and its pool of chains (rxq.h; its own lock) */
	struct vq_irq tx_irq; /* how the TX queue's interrupt is raised (used_publish()) */

	struct rawq raw; /* conn-less replies (RSTs) for pump 0 (rawq.h; its own lock) */

	struct muxer mux;
	struct conn_env cenv; /* what the connections need from the device (conn_new()) */
	unsigned int n_pumps;
	struct pump *pumps; /* [n_pumps] (pump.h) */

	struct ctl ctl; /* the control thread (ctl.h) */
	atomic_bool stopping; /* the threads are asked to end */
	/*
	 * The kill queue (killq.h): connections with a deadline (each conn's
	 * kq entry), and the one-shot timerfd armed at the earliest deadline,
	 * theirs or the control thread's own (CONNECT lines, a paused
	 * listener). kq.lock protects the list and every conn's kq entry.
	 */
	struct killq kq;
	int spare_fd; /* reserve for refusing clients at EMFILE (uds_accept()) */
	struct lobby lobby; /* the lobby thread (lobby.h) */

	struct dev_counters ctr;
	/*
	 * Host fds held for host clients and connections (pending CONNECTs,
	 * lobby, connections until their last reference), against the budget
	 * (dev_fd_budget()).
	 */
	_Atomic int host_fds;

	struct route_member *route; /* guest-to-guest routing (router.c) */
	struct dgram_host dg; /* datagram sockets of the host side (dgram.h; control thread) */
};

#define CTR_ADD(dev, field, n) CTR(&(dev)->ctr, field, n)

static inline bool dev_has_feature(const struct vsock_dev *dev, unsigned int bit)
{
	return dev->features & (1ull << bit);
}

/*
 * dev_polls_queues() - the transport gave the TX or RX queue no kick fd, so
 * the control thread polls them (1 ms) instead of waiting for kicks (tests).
 */
static inline bool dev_polls_queues(const struct vsock_dev *dev)
{
	return dev->vring[VSOCK_VQ_TX].kick_fd < 0 || dev->vring[VSOCK_VQ_RX].kick_fd < 0;
}

/* dev_spawn() - create a device thread: cfg.spawn, or pthread_create(3). */
static inline int dev_spawn(struct vsock_dev *dev, enum vsock_thread_kind kind, pthread_t *t,
			    void *(*fn)(void *), void *arg)
{
	if (dev->cfg.spawn)
		return dev->cfg.spawn(dev->cfg.spawn_opaque, kind, t, fn, arg);
	return pthread_create(t, NULL, fn, arg);
}

/* dev_pump_of() - the pump that owns the connection of ports (@local_port, @peer_port). */
static inline struct pump *dev_pump_of(struct vsock_dev *dev, uint32_t local_port,
				       uint32_t peer_port)
{
	return &dev->pumps[(local_port * 31u + peer_port) % dev->n_pumps];
}

/*
 * dev_fd_budget() - how many host fds @dev may hold now: cfg.max_host_fds,
 * or its share of the process's fd limit (device.c).
 */
int dev_fd_budget(const struct vsock_dev *dev);
/* dev_fd_take() - count one more host fd if the budget allows. Return: false when over. */
bool dev_fd_take(struct vsock_dev *dev);
/*
 * dev_fd_admit() - count host client @fd, just accepted, if the budget
 * allows; else close it (EOF, never "OK") and count the refusal.
 * Return: whether it was admitted.
 */
bool dev_fd_admit(struct vsock_dev *dev, int fd);
/* dev_fd_close() - close a host fd counted by dev_fd_take(). */
void dev_fd_close(struct vsock_dev *dev, int fd);

/*
 * dev_signal() - raise the interrupt of queue @q of device @opaque (notify
 * callback or call_fd); the signal of struct vq_irq.
 */
void dev_signal(void *opaque, unsigned int q);

/* dev_reply_rst() - rawq_put() of an RST answering guest packet @h. */
void dev_reply_rst(struct vsock_dev *dev, const struct virtio_vsock_hdr *h);

#endif
