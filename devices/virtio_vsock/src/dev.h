/* SPDX-License-Identifier: MIT */
/*
 * Device internals shared by the device glue (device.c), the control thread
 * (dev_ctl.c), the connections (conn.c) and the RX pump (rx_pump.c).
 *
 * Threads (created by vsock_dev_start(), joined by stop/reset/destroy):
 *   - one control thread: TX queue (guest to host), the kicks of all
 *     queues, the uds_path listener and CONNECT lines;
 *   - rx_threads pump threads: each owns a shard of connections in its own
 *     epoll and sends every packet of those connections to the guest.
 *
 * Lock order: conn->lock first, then at most one of mux.lock, pump->lock,
 * rxq_lock, raw_lock, kq.lock (never two of those at once, never a
 * conn->lock while holding one of them). Each lock's field list is below.
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
#include "muxer.h"
#include "packet.h"
#include "rawq.h"
#include "rxq.h"
#include "skiff/vsock_dev.h"
#include "virtqueue.h"

/* Defaults and limits (see README.md). */
#define DEV_DEFAULT_MAX_CONNS 1024u
#define DEV_DEFAULT_BUF (256u * 1024u)
#define DEV_MAX_PUMPS VSOCK_MAX_RX_THREADS
#define DEV_MAX_PENDING_CONNECT 64u /* host sockets still writing CONNECT */
#define DEV_CONNECT_LINE_MAX 32u /* "CONNECT <port>\n" must fit */
#define TX_CHAIN_IOV 1024u
#define DEV_TIMER_TICK_MS 250
#define DEV_CONNECT_LINE_TIMEOUT_MS 2000 /* host client writing its CONNECT line */
#define DEV_DEFAULT_HOST_WAIT_MS 5000u /* host client waiting for the device to start */
#define DEV_ACCEPT_BACKOFF_MS DEV_TIMER_TICK_MS /* listener ignored after EMFILE */
#define DEV_FD_RESERVE 64 /* fds of the process left out of the automatic budgets */
#define DEV_FD_PER_DEVICE 32 /* ... plus these per device (its own epolls, eventfds...) */
#define DEV_FD_BUDGET_MIN 16 /* an automatic budget never goes below this */
#define HOST_PORT_MIN (1u << 30) /* local ports of host-initiated connections ... */
#define HOST_PORT_END (1u << 31) /* ... below this */

struct pump {
	struct vsock_dev *dev;
	unsigned int id;
	pthread_t thread;
	bool running;
	int epfd;
	int wake_fd; /* eventfd: work queued, RX buffers, stop */

	pthread_mutex_t lock; /* protects work, blocked, sleeping, starved */
	struct conn *work_head, *work_tail; /* connections with something to do */
	struct conn *blocked; /* waiting for RX buffers */
	bool sleeping; /* in epoll_wait with nothing to do */
	/*
	 * Found no RX buffer; waits for a kick. Written under lock only
	 * (pump_set_starved()); the pump reads it without the lock as a hint
	 * while serving (pump_starved()), so every access outside the lock is
	 * atomic. A stale value costs one round: the decision that parks a
	 * connection is made again under lock (pump_main()).
	 */
	bool starved;
	atomic_bool give_back; /* a starved pump asks for this one's reserved chains */

	/* Owned by the pump thread. */
	struct rxq_cache rc; /* reserved RX chains, used entries not published yet */
	struct conn *zombies; /* retired, reference dropped at the next loop top */
};

/* A host socket still writing its CONNECT line (control thread only). */
struct pending_connect {
	int kind; /* SRC_PENDING */
	int fd;
	int pid; /* the client's, from SO_PEERCRED (0: unknown): slots are shared by pid */
	unsigned int len;
	char buf[DEV_CONNECT_LINE_MAX];
	int64_t deadline_ms; /* killq_now(): closed without OK if no line by then */
	struct pending_connect *next;
};

/*
 * Host clients accepted while the device is not started (no DRIVER_OK, no
 * vhost-user frontend), held by the lobby thread for at most host_wait_ms,
 * then closed without OK; handed to the control thread as pending CONNECTs
 * when the device starts. The lobby thread runs only while the control
 * thread does not (host_lobby.c), so the two never share the listener,
 * dev->spare_fd, dev->pending or dev->listen_paused.
 */
struct lobby {
	pthread_t thread;
	bool running;
	int wake_fd; /* eventfd: stop */
	unsigned int n;
	int fd[DEV_MAX_PENDING_CONNECT];
	int pid[DEV_MAX_PENDING_CONNECT]; /* SO_PEERCRED of each, for slot_victim() */
	int64_t since_ms[DEV_MAX_PENDING_CONNECT];
};

/* Tags of the control thread's epoll sources. */
enum { SRC_WAKE, SRC_LISTEN, SRC_KICK_RX, SRC_KICK_TX, SRC_KICK_EVENT, SRC_PENDING, SRC_TIMER };

struct ctl_src {
	int kind;
};

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

	struct vq txq; /* control thread only */
	struct vq evq; /* control thread only */

	struct rxq rx; /* the RX virtqueue and its pool of chains (rxq.h; its own lock) */
	struct vq_irq tx_irq; /* how the TX queue's interrupt is raised (used_publish()) */

	struct rawq raw; /* conn-less replies (RSTs) for pump 0 (rawq.h; its own lock) */

	struct muxer mux;
	struct conn_env cenv; /* what the connections need from the device (conn_new()) */
	unsigned int n_pumps;
	struct pump *pumps;

	/* Control thread. */
	pthread_t ctl_thread;
	bool ctl_running;
	int ctl_epfd;
	int ctl_wake_fd;
	atomic_bool stopping;
	struct ctl_src src_wake, src_listen, src_kick[VSOCK_VQ_NUM], src_timer;
	/*
	 * The kill queue (killq.h): connections with a deadline (each conn's
	 * kq entry), and the one-shot timerfd armed at the earliest deadline,
	 * theirs or the control thread's own (CONNECT lines, a paused
	 * listener). kq.lock protects the list and every conn's kq entry.
	 */
	struct killq kq;
	int64_t listen_retry_ms; /* control thread: when a paused listener is tried again */
	struct pending_connect *pending; /* control thread; drained on reset */
	unsigned int n_pending;
	int spare_fd; /* reserve for refusing clients at EMFILE (uds_accept()) */
	bool listen_paused; /* control thread: listener out of epoll after EMFILE */
	struct lobby lobby;
	uint32_t next_host_port; /* control thread */
	bool tx_broken_warned; /* control thread */
	struct vq_chain tx_chain;
	struct iovec tx_iov[TX_CHAIN_IOV];
	struct iovec tx_payload[TX_CHAIN_IOV];
	struct tx_batch txb;
	struct rxq_cache ctl_rx; /* rxq_send_hdr() (control thread), empty between calls */

	struct dev_counters ctr;
	/*
	 * Host fds held for host clients and connections (pending CONNECTs,
	 * lobby, connections until their last reference), against the budget
	 * (dev_fd_budget()).
	 */
	_Atomic int host_fds;

	struct route_member *route; /* guest-to-guest routing (router.c) */
};

#define CTR_ADD(dev, field, n) CTR(&(dev)->ctr, field, n)

static inline bool dev_has_feature(const struct vsock_dev *dev, unsigned int bit)
{
	return dev->features & (1ull << bit);
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

/* rx_pump.c */
int pump_start(struct vsock_dev *dev, struct pump *p);
void pump_stop(struct pump *p);
/* pump_wake() - make the pump look at its work list (thread safe). */
void pump_wake(struct pump *p);
/* pump_enqueue() - add @c to its pump's work list (takes a reference) and wake it. */
void pump_enqueue(struct conn *c);
/*
 * pump_defer_wakes() / pump_flush_wakes() - around a conn->lock section of
 * the calling thread: pump_enqueue() then leaves the eventfd write to
 * pump_flush_wakes(), called after the unlock. A pump woken earlier would
 * first block on that same conn->lock (a futex sleep and a second wake-up).
 */
void pump_defer_wakes(void);
void pump_flush_wakes(void);
/*
 * pump_watch() - hand @c to its pump: take the pump's ownership reference
 * (always, dropped when the pump retires @c or forget_conn() drops it), then
 * add @c's fd to the pump's epoll. Caller holds c->lock.
 * Return: 0, or -errno of EPOLL_CTL_ADD (ENOMEM; ENOSPC at the per-user
 * fs.epoll.max_user_watches): @c is the pump's all the same, and the caller
 * resets it (conn_reset()), which the pump then retires.
 */
int pump_watch(struct conn *c);
/*
 * pump_set_out() - add (re-arm, after EAGAIN or a backlog append) or remove
 * EPOLLOUT interest for @c (caller holds c->lock).
 * Return: 0, or -errno (ENOMEM) of EPOLL_CTL_MOD when adding failed: the
 * backlog would never be written, the caller resets @c.
 */
int pump_set_out(struct conn *c, bool on);
/*
 * pump_starved() - whether @p found no RX buffer, read without p->lock: a
 * hint (see struct pump); any thread.
 */
static inline bool pump_starved(const struct pump *p)
{
	return __atomic_load_n(&p->starved, __ATOMIC_RELAXED);
}

/* pump_set_starved() - mark @p starved or not; the caller holds p->lock. */
static inline void pump_set_starved(struct pump *p, bool starved)
{
	__atomic_store_n(&p->starved, starved, __ATOMIC_RELAXED);
}

/* pump_rx_kicked() - the guest added RX buffers: wake starved pumps. */
void pump_rx_kicked(struct vsock_dev *dev);
/*
 * rx_return_all() - threads stopped: forget every reserved, unused RX chain.
 * With @give_back, un-pop them when they are the last ones popped, or else
 * return them to the driver empty (used length 0): rxq_return_pool().
 */
void rx_return_all(struct vsock_dev *dev, bool give_back);
/*
 * pump_starve() - @p found no RX chain: mark it starved (an RX kick or
 * chains returned to the pool unstarve it: pump_rx_kicked()), re-check the
 * queue, which may have got buffers meanwhile, and if still empty ask the
 * other pumps for the chains they keep. Pump @p's thread.
 * Return: true when @p stays starved; false when chains came (go on).
 */
bool pump_starve(struct pump *p);

/* dev_ctl.c */
/* ctl_is_current() - whether the calling thread is @dev's control thread. */
bool ctl_is_current(const struct vsock_dev *dev);
int ctl_start(struct vsock_dev *dev);
void ctl_stop(struct vsock_dev *dev);
void ctl_drop_pending(struct vsock_dev *dev);
void ctl_drop_timed(struct vsock_dev *dev);
/*
 * ctl_adopt() - make accepted host client @fd (counted by dev_fd_take(),
 * peer @pid) a pending CONNECT (it has DEV_CONNECT_LINE_TIMEOUT_MS from now
 * to write its line). When DEV_MAX_PENDING_CONNECT are pending already,
 * slot_victim() picks whose client goes: the oldest of another peer that
 * holds more slots, else this one. Control thread, or any thread while the
 * control thread is stopped.
 */
void ctl_adopt(struct vsock_dev *dev, int fd, int pid);
/*
 * ctl_expire_pending() - close (without OK) the pending CONNECTs whose
 * deadline is not after @now_ms. Same threads as ctl_adopt().
 * Return: the earliest deadline left, or INT64_MAX.
 */
int64_t ctl_expire_pending(struct vsock_dev *dev, int64_t now_ms);

/* host_lobby.c: see struct lobby. Transport thread, device not started. */
int lobby_start(struct vsock_dev *dev);
/* lobby_stop() - join the lobby thread; with @handover, held clients become pending CONNECTs. */
void lobby_stop(struct vsock_dev *dev, bool handover);
/* lobby_drop() - close every held client (reset, destroy; thread stopped). */
void lobby_drop(struct vsock_dev *dev);

/* host_uds.c */
#include "host_uds.h"

/* router.c */
#include "router.h"

#endif
