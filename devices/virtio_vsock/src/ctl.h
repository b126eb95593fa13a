/* SPDX-License-Identifier: MIT */
/*
 * The control thread (dev_ctl.c): queue kicks, the TX queue (guest to
 * host), the uds_path listener and the host clients' CONNECT lines, and
 * the kill queue's timerfd. Its state is its own (no lock): only that
 * thread touches struct ctl while it runs, the transport thread while it
 * does not.
 */
#ifndef SKIFF_VSOCK_CTL_H
#define SKIFF_VSOCK_CTL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "conn.h"
#include "rxq.h"
#include "skiff/vsock_dev.h"
#include "virtqueue.h"

struct vsock_dev;

#define DEV_MAX_PENDING_CONNECT 64u /* host sockets still writing CONNECT */
#define DEV_CONNECT_LINE_MAX 32u /* "CONNECT <port>\n" must fit */
#define TX_CHAIN_IOV 1024u /* iovecs of one TX chain */

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

/* Tags of the control thread's epoll sources. */
enum {
	SRC_WAKE,
	SRC_LISTEN,
	SRC_KICK_RX,
	SRC_KICK_TX,
	SRC_KICK_EVENT,
	SRC_PENDING,
	SRC_TIMER,
	SRC_DGRAM, /* a struct dgram_sock (dgram.h) */
};

struct ctl_src {
	int kind;
};

/* The control thread's state. */
struct ctl {
	pthread_t thread;
	bool running;
	/* Since the last start: the control work runs on pump 0's thread. */
	bool on_pump0;
	int epfd;
	int wake_fd; /* eventfd: stop, or a routed packet held back may move */
	struct ctl_src src_wake, src_listen, src_kick[VSOCK_VQ_NUM], src_timer;
	struct vq txq;
	struct vq evq;
	int64_t listen_retry_ms; /* when a paused listener is tried again */
	struct pending_connect *pending; /* drained on reset */
	unsigned int n_pending;
	bool listen_paused; /* listener out of epoll after EMFILE */
	uint32_t next_host_port;
	bool tx_broken_warned;
	struct vq_chain tx_chain;
	struct iovec tx_iov[TX_CHAIN_IOV];
	struct iovec tx_payload[TX_CHAIN_IOV];
	struct tx_batch txb; /* conn_handle_tx(), conn_tx_flush() */
	struct rxq_cache rx; /* rxq_send_hdr() (credit updates at once), empty between calls */
	struct rxq_cache dg_rc; /* rxq_dgram_put() (host datagrams), empty between calls */
};

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

#endif
