// SPDX-License-Identifier: MIT
/*
 * The control thread: queue kicks, the TX queue (guest to host), and the
 * host side's listener with its CONNECT lines. Everything here runs on that
 * one thread, so its state (struct ctl, ctl.h) needs no lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "ctl.h"
#include "dev.h"
#include "dev_step.h"
#include "iov.h"

#define TX_BUDGET 256 /* chains per turn before looking at other events */
#define TX_USED_BATCH 64

/* The device whose control thread this is (NULL on other threads). */
static __thread const struct vsock_dev *tls_ctl_dev;

bool ctl_is_current(const struct vsock_dev *dev)
{
	return tls_ctl_dev == dev;
}

void dev_signal(void *opaque, unsigned int q)
{
	struct vsock_dev *dev = opaque;

	if (dev->cfg.notify) {
		dev->cfg.notify(dev->cfg.notify_opaque, q);
	} else if (dev->vring[q].call_fd >= 0) {
		uint64_t one = 1;
		ssize_t r = write(dev->vring[q].call_fd, &one, sizeof(one));

		(void)r;
	}
}

void dev_reply_rst(struct vsock_dev *dev, const struct virtio_vsock_hdr *in)
{
	struct virtio_vsock_hdr h;

	pkt_rst_reply(&h, in, in->type); /* @in: from the guest's CID to CID 2 (pkt_parse_tx()) */
	rawq_put(&dev->raw, &h);
}

/* Write the TX batch (conn_tx_flush()), the pumps' wake-ups held until c->lock is let go. */
static void ctl_tx_flush(struct vsock_dev *dev)
{
	if (!dev->ctl.txb.c)
		return;
	pump_defer_wakes();
	conn_tx_flush(&dev->ctl.txb);
	pump_flush_wakes();
}

/* killq_fired() callback (under the kill queue's lock): @e is due, keep it for timer_tick(). */
static void collect_due(struct killq_entry *e, void *arg)
{
	struct conn **due = arg, *c = conn_of_kq(e);

	conn_get(c);
	c->due_next = *due;
	*due = c;
}

/*
 * The timerfd fired: reset the connections whose deadline passed (the kill
 * queue), close CONNECT lines that are late, retry a paused listener, and
 * arm the timer for the earliest deadline left.
 */
static void timer_tick(struct vsock_dev *dev)
{
	struct conn *due = NULL, *c;
	int64_t now = killq_now(&dev->kq), next;

	killq_fired(&dev->kq, now, collect_due, &due);
	while (due) {
		c = due;
		due = c->due_next;
		pthread_mutex_lock(&c->lock);
		conn_expire(c, now);
		pthread_mutex_unlock(&c->lock);
		conn_put(c);
	}
	next = ctl_expire_pending(dev, now);
	if (dev->ctl.listen_paused && now >= dev->ctl.listen_retry_ms) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &dev->ctl.src_listen };

		/* Out of fds a while ago: try the listener again. */
		if (!epoll_ctl(dev->ctl.epfd, EPOLL_CTL_MOD, dev->listen_fd, &ev))
			dev->ctl.listen_paused = false;
		else
			dev->ctl.listen_retry_ms = now + DEV_ACCEPT_BACKOFF_MS;
	}
	if (dev->ctl.listen_paused && dev->ctl.listen_retry_ms < next)
		next = dev->ctl.listen_retry_ms;
	killq_rearm(&dev->kq, next);
}

/* Forget every deadline (threads stopped: reset, destroy). */
void ctl_drop_timed(struct vsock_dev *dev)
{
	struct killq_entry *e;

	while ((e = killq_pop(&dev->kq)))
		conn_put(conn_of_kq(e));
	killq_disarm(&dev->kq);
}

/* Refuse guest REQUEST @h: RST, counted. */
static void refuse_request(struct vsock_dev *dev, const struct virtio_vsock_hdr *h)
{
	CTR_ADD(dev, conns_refused, 1);
	dev_reply_rst(dev, h);
}

/*
 * The host socket for guest REQUEST @h: under the connection cap and the
 * fd budget, connected to "<uds>_<port>". Return: 0 with *@fd (counted in
 * host_fds); -errno.
 */
static int request_socket(struct vsock_dev *dev, const struct virtio_vsock_hdr *h, int *fd)
{
	int type = h->type == VIRTIO_VSOCK_TYPE_SEQPACKET ? SOCK_SEQPACKET : SOCK_STREAM;
	int ret;

	if (__atomic_load_n(&dev->mux.count, __ATOMIC_RELAXED) >= dev->mux.max || !dev->uds_path[0])
		return -ENOSPC;
	if (!dev_fd_take(dev))
		return -EMFILE;
	ret = uds_connect_port(dev->uds_path, h->dst_port, type, fd);
	if (ret)
		atomic_fetch_sub(&dev->host_fds, 1);
	return ret;
}

/* Guest REQUEST for a port nobody has a connection on: connect "<uds>_<port>". */
static void guest_connect(struct vsock_dev *dev, const struct virtio_vsock_hdr *h)
{
	struct conn *c;
	int fd;

	if (request_socket(dev, h, &fd)) {
		refuse_request(dev, h);
		return;
	}
	c = conn_new(&dev->cenv, dev_pump_of(dev, h->dst_port, h->src_port), fd, h->type,
		     h->dst_port, h->src_port, h);
	if (!c) {
		dev_fd_close(dev, fd);
		refuse_request(dev, h);
		return;
	}
	if (mux_insert(&dev->mux, c)) {
		conn_put(c);
		refuse_request(dev, h);
		return;
	}
	conn_opened(c);
	pthread_mutex_lock(&c->lock);
	if (pump_watch(c))
		conn_reset(c, true);
	else
		conn_schedule(c);
	pthread_mutex_unlock(&c->lock);
	conn_put(c);
}

/*
 * A guest datagram, checked by pkt_parse_tx() with result @e: to the host
 * side, to another guest through the router, or dropped and counted. It
 * never resets anything and never waits.
 */
static void handle_tx_dgram(struct vsock_dev *dev, const struct vq_chain *ch,
			    const struct vsock_pkt *pkt, enum pkt_err e)
{
	unsigned int n;

	if (e == PKT_ERR_DST_CID && route_cid_ok(dev->cfg.guest_cid, pkt->hdr.dst_cid)) {
		route_tx(dev->route, ch, pkt); /* counts it delivered or dropped */
		return;
	}
	if (e != PKT_OK) {
		CTR_ADD(dev, malformed_pkts, 1);
		CTR_ADD(dev, dgram_tx_drop_malformed, 1);
		return;
	}
	n = iov_slice(ch->iov, ch->n_out, pkt->payload_off, pkt->hdr.len, dev->ctl.tx_payload,
		      TX_CHAIN_IOV);
	dgram_tx(&dev->dg, &pkt->hdr, dev->ctl.tx_payload, n, killq_now(&dev->kq));
}

static void handle_tx_chain(struct vsock_dev *dev, const struct vq_chain *ch)
{
	bool dgram = dev_has_feature(dev, VIRTIO_VSOCK_F_DGRAM);
	struct vsock_pkt pkt;
	struct conn *c;
	unsigned int n;
	enum pkt_err e;

	e = pkt_parse_tx(ch, dev->cfg.guest_cid, dev_has_feature(dev, VIRTIO_VSOCK_F_SEQPACKET),
			 dgram, &pkt);
	if (dgram && e != PKT_ERR_SHORT && e != PKT_ERR_WRITABLE &&
	    pkt.hdr.type == VIRTIO_VSOCK_TYPE_DGRAM) {
		handle_tx_dgram(dev, ch, &pkt, e);
		return;
	}
	if (e == PKT_ERR_DST_CID && route_cid_ok(dev->cfg.guest_cid, pkt.hdr.dst_cid)) {
		route_tx(dev->route, ch, &pkt); /* valid, for another guest (router.c) */
		return;
	}
	if (e != PKT_OK) {
		ctl_tx_flush(dev);
		CTR_ADD(dev, malformed_pkts, 1);
		/*
		 * A bad packet that names a live connection resets that one;
		 * a datagram (DGRAM not negotiated) names none.
		 */
		if (pkt.hdr.type == VIRTIO_VSOCK_TYPE_DGRAM && e != PKT_ERR_SHORT &&
		    e != PKT_ERR_WRITABLE)
			return;
		if ((e == PKT_ERR_TYPE || e == PKT_ERR_OP || e == PKT_ERR_LEN) &&
		    pkt.hdr.src_cid == dev->cfg.guest_cid && pkt.hdr.dst_cid == VSOCK_CID_HOST &&
		    (c = mux_lookup(&dev->mux, pkt.hdr.dst_port, pkt.hdr.src_port))) {
			pthread_mutex_lock(&c->lock);
			conn_reset(c, true);
			pthread_mutex_unlock(&c->lock);
			conn_put(c);
		} else if ((e == PKT_ERR_TYPE || e == PKT_ERR_OP || e == PKT_ERR_LEN) &&
			   pkt.hdr.src_cid == dev->cfg.guest_cid &&
			   route_cid_ok(dev->cfg.guest_cid, pkt.hdr.dst_cid)) {
			route_tx_bad(dev->route, &pkt.hdr); /* same rule for a guest-to-guest one */
		}
		return;
	}
	n = iov_slice(ch->iov, ch->n_out, pkt.payload_off, pkt.hdr.len, dev->ctl.tx_payload,
		      TX_CHAIN_IOV);
	c = mux_lookup(&dev->mux, pkt.hdr.dst_port, pkt.hdr.src_port);
	/* The batch goes first: it holds earlier bytes, and of one connection only. */
	if (dev->ctl.txb.c && (c != dev->ctl.txb.c || pkt.hdr.op != VIRTIO_VSOCK_OP_RW))
		ctl_tx_flush(dev);
	if (!c) {
		if (pkt.hdr.op == VIRTIO_VSOCK_OP_REQUEST) {
			guest_connect(dev, &pkt.hdr);
		} else {
			/* Of no connection (often one that just closed): as Linux, RST. */
			CTR_ADD(dev, stray_pkts, 1);
			if (pkt.hdr.op != VIRTIO_VSOCK_OP_RST)
				dev_reply_rst(dev, &pkt.hdr);
		}
		return;
	}
	pump_defer_wakes(); /* until c->lock is let go: see pump_defer_wakes() */
	conn_handle_tx(c, &pkt.hdr, dev->ctl.tx_payload, n, &dev->ctl.txb);
	pump_flush_wakes();
	conn_put(c);
}

static void tx_publish(struct vsock_dev *dev, struct vring_used_elem *used, unsigned int *n)
{
	ctl_tx_flush(dev); /* the guest may reuse the buffers once they are used */
	if (!*n)
		return;
	used_publish(&dev->ctl.txq, NULL, used, *n, true, &dev->tx_irq);
	*n = 0;
}

/* Process the TX queue. Return: true when chains are left (budget used up). */
static bool process_tx(struct vsock_dev *dev)
{
	struct vring_used_elem used[TX_USED_BATCH];
	unsigned int n_used = 0, budget = TX_BUDGET;
	bool more = false;

	vq_disable_notify(&dev->ctl.txq);
	while (budget && !route_tx_held(dev->route)) {
		int r;

		dev->ctl.tx_chain.iov = dev->ctl.tx_iov;
		dev->ctl.tx_chain.cap = TX_CHAIN_IOV;
		r = vq_pop(&dev->ctl.txq, &dev->ctl.tx_chain);
		if (r == 0) {
			if (vq_enable_notify(&dev->ctl.txq))
				continue;
			break;
		}
		if (r == -EIO) {
			if (!dev->ctl.tx_broken_warned)
				fprintf(stderr,
					"skiff-vsock: TX ring broken; stopped until reset\n");
			dev->ctl.tx_broken_warned = true;
			break;
		}
		budget--;
		CTR_ADD(dev, tx_pkts, 1);
		if (r < 0)
			CTR_ADD(dev, malformed_pkts, 1);
		else
			handle_tx_chain(dev, &dev->ctl.tx_chain);
		used[n_used].id = dev->ctl.tx_chain.head;
		used[n_used].len = 0;
		if (++n_used == TX_USED_BATCH)
			tx_publish(dev, used, &n_used);
	}
	if (!budget)
		more = true;
	tx_publish(dev, used, &n_used);
	return more;
}

/* ---- host-initiated connections ---- */

static void pending_free(struct vsock_dev *dev, struct pending_connect *pc)
{
	struct pending_connect **pp;

	for (pp = &dev->ctl.pending; *pp; pp = &(*pp)->next) {
		if (*pp == pc) {
			*pp = pc->next;
			break;
		}
	}
	if (pc->fd >= 0) {
		epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, pc->fd, NULL);
		dev_fd_close(dev, pc->fd);
	}
	dev->ctl.n_pending--;
	free(pc);
}

void ctl_drop_pending(struct vsock_dev *dev)
{
	while (dev->ctl.pending) {
		CTR_ADD(dev, conns_refused, 1); /* closed without "OK" */
		pending_free(dev, dev->ctl.pending);
	}
}

static uint32_t alloc_host_port(struct vsock_dev *dev)
{
	unsigned int tries;

	for (tries = 0; tries < 4096; tries++) {
		uint32_t p = dev->ctl.next_host_port++;

		if (dev->ctl.next_host_port >= HOST_PORT_END)
			dev->ctl.next_host_port = HOST_PORT_MIN;
		if (!mux_local_port_used(&dev->mux, p))
			return p;
	}
	return 0;
}

static void host_connect(struct vsock_dev *dev, struct pending_connect *pc, uint32_t port,
			 size_t consumed)
{
	int fd = pc->fd;
	uint32_t local;
	struct conn *c;

	pc->fd = -1;
	epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, fd, NULL);
	local = alloc_host_port(dev);
	c = local ? conn_new(&dev->cenv, dev_pump_of(dev, local, port), fd,
			     VIRTIO_VSOCK_TYPE_STREAM, local, port, NULL) :
		    NULL;
	if (!c) {
		dev_fd_close(dev, fd);
		CTR_ADD(dev, conns_refused, 1);
		goto out;
	}
	conn_set_prefix(c, pc->buf + consumed, pc->len - (uint32_t)consumed);
	if (mux_insert(&dev->mux, c)) {
		conn_put(c); /* at the cap: the host socket is closed without OK */
		CTR_ADD(dev, conns_refused, 1);
		goto out;
	}
	conn_opened(c);
	pthread_mutex_lock(&c->lock);
	if (pump_watch(c)) {
		conn_reset(c, false);
	} else {
		conn_schedule(c);
		conn_watch_deadline(c, DEV_CONNECT_TIMEOUT_MS);
	}
	pthread_mutex_unlock(&c->lock);
	conn_put(c);
out:
	pending_free(dev, pc);
}

static void handle_pending(struct vsock_dev *dev, struct pending_connect *pc)
{
	uint32_t port;
	size_t consumed;
	ssize_t r;
	int ret;

	r = read(pc->fd, pc->buf + pc->len, sizeof(pc->buf) - pc->len);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0)
		goto drop; /* closed mid-line, or an error */
	pc->len += (unsigned int)r;
	ret = uds_parse_connect(pc->buf, pc->len, sizeof(pc->buf), &port, &consumed);
	if (ret == -EAGAIN)
		return;
	if (ret) {
		CTR_ADD(dev, conns_refused, 1); /* a malformed line */
		goto drop;
	}
	host_connect(dev, pc, port, consumed);
	return;
drop:
	pending_free(dev, pc); /* closes: the host peer sees EOF, never OK */
}

int64_t ctl_expire_pending(struct vsock_dev *dev, int64_t now)
{
	struct pending_connect *pc = dev->ctl.pending, *next;
	int64_t first = INT64_MAX;

	for (; pc; pc = next) {
		next = pc->next;
		if (pc->deadline_ms <= now) {
			CTR_ADD(dev, conns_refused, 1);
			pending_free(dev, pc); /* no full line in time: EOF, never OK */
		} else if (pc->deadline_ms < first) {
			first = pc->deadline_ms;
		}
	}
	return first;
}

/* Free a slot for a client of @pid when all are taken (slot_victim()). Return: false: refuse it. */
static bool pending_make_room(struct vsock_dev *dev, int pid)
{
	struct pending_connect *pc, *list[DEV_MAX_PENDING_CONNECT];
	int pids[DEV_MAX_PENDING_CONNECT];
	int64_t since[DEV_MAX_PENDING_CONNECT];
	unsigned int n = 0;
	int v;

	for (pc = dev->ctl.pending; pc && n < DEV_MAX_PENDING_CONNECT; pc = pc->next) {
		list[n] = pc;
		pids[n] = pc->pid;
		since[n++] = pc->deadline_ms;
	}
	v = slot_victim(pids, since, n, DEV_MAX_PENDING_CONNECT, pid);
	if (v == SLOT_REFUSE)
		return false;
	if (v >= 0) {
		CTR_ADD(dev, conns_refused, 1);
		pending_free(dev, list[v]); /* EOF, never OK: another peer needs the slot */
	}
	return true;
}

void ctl_adopt(struct vsock_dev *dev, int fd, int pid)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct pending_connect *pc;

	if (!pending_make_room(dev, pid) || !(pc = calloc(1, sizeof(*pc)))) {
		CTR_ADD(dev, conns_refused, 1);
		dev_fd_close(dev, fd);
		return;
	}
	pc->kind = SRC_PENDING;
	pc->fd = fd;
	pc->pid = pid;
	pc->deadline_ms = killq_now(&dev->kq) + DEV_CONNECT_LINE_TIMEOUT_MS;
	ev.data.ptr = pc;
	if (epoll_ctl(dev->ctl.epfd, EPOLL_CTL_ADD, fd, &ev)) {
		CTR_ADD(dev, conns_refused, 1);
		dev_fd_close(dev, fd);
		free(pc);
		return;
	}
	pc->next = dev->ctl.pending;
	dev->ctl.pending = pc;
	dev->ctl.n_pending++;
	if (ctl_is_current(dev))
		killq_arm(&dev->kq, pc->deadline_ms); /* else ctl_start() arms it */
}

/* A client accepted on the listener: within the fd budget, a pending CONNECT. */
static void client_accepted(struct vsock_dev *dev, int fd)
{
	if (dev_fd_admit(dev, fd))
		ctl_adopt(dev, fd, uds_peer_pid(fd));
}

static void accept_all(struct vsock_dev *dev)
{
	for (;;) {
		int fd = uds_accept(dev->listen_fd, &dev->spare_fd);

		if (fd == -ECONNREFUSED) {
			CTR_ADD(dev, conns_refused, 1);
			continue; /* out of fds: that client was closed */
		}
		if (fd == -EAGAIN)
			return;
		if (fd < 0) {
			/*
			 * Out of fds and no client could even be refused:
			 * the level-triggered listener would wake us at once
			 * again. Leave it out for a while (timer_tick()).
			 */
			struct epoll_event ev = { .events = 0, .data.ptr = &dev->ctl.src_listen };

			if (!epoll_ctl(dev->ctl.epfd, EPOLL_CTL_MOD, dev->listen_fd, &ev)) {
				dev->ctl.listen_paused = true;
				dev->ctl.listen_retry_ms =
					killq_now(&dev->kq) + DEV_ACCEPT_BACKOFF_MS;
				killq_arm(&dev->kq, dev->ctl.listen_retry_ms);
			}
			return;
		}
		client_accepted(dev, fd);
	}
}

static void drain_fd(int fd)
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));

	(void)r;
}

/*
 * Consume a kick of queue @q. A kick fd that reports EOF or an error
 * (not an eventfd: the transport should have refused it) would wake this
 * level-triggered loop forever; it is taken out of the loop instead, and
 * the queue is served again after the next (re)start.
 */
static void drain_kick(struct vsock_dev *dev, unsigned int q)
{
	int fd = dev->vring[q].kick_fd;
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));

	if (r > 0)
		CTR_ADD(dev, kicks, 1);
	if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR)))
		return;
	epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, fd, NULL);
	fprintf(stderr, "skiff-vsock: kick fd of queue %u: %s; no longer watched\n", q,
		r ? strerror(errno) : "end of file");
}

void ctl_step_claim(struct vsock_dev *dev)
{
	tls_ctl_dev = dev;
}

bool ctl_step_tx(struct vsock_dev *dev)
{
	dgram_reap(&dev->dg); /* no event batch in flight here */
	return process_tx(dev);
}

void ctl_step_clients(struct vsock_dev *dev)
{
	struct pending_connect *pc, *next;

	accept_all(dev);
	for (pc = dev->ctl.pending; pc; pc = next) {
		next = pc->next; /* handle_pending() may free pc, and only pc */
		handle_pending(dev, pc);
	}
}

void ctl_step_dgram(struct vsock_dev *dev)
{
	struct dgram_sock *s, *next;
	int64_t now = killq_now(&dev->kq);

	dgram_rx(&dev->dg, &dev->dg.gw, &dev->ctl.dg_rc, now);
	for (s = dev->dg.socks; s; s = next) {
		next = s->next; /* a closed socket is only freed by dgram_reap() */
		dgram_rx(&dev->dg, s, &dev->ctl.dg_rc, now);
	}
	dgram_reap(&dev->dg);
	pump_dgram_short(dev);
}

/*
 * One turn of the control loop: wait up to @timeout ms (0: not at all) for
 * its epoll sources, handle them, then the TX queue if @tx_more or a kick
 * came. Return: whether TX chains are left for another turn.
 */
static bool ctl_turn(struct vsock_dev *dev, int timeout, bool tx_more)
{
	bool poll_mode = dev_polls_queues(dev);
	struct epoll_event ev[32];
	int n, i;

	dgram_reap(&dev->dg);
	n = epoll_wait(dev->ctl.epfd, ev, 32, timeout);
	if (atomic_load(&dev->stopping))
		return false;
	for (i = 0; i < n; i++) {
		struct ctl_src *src = ev[i].data.ptr;

		switch (src->kind) {
		case SRC_WAKE:
			drain_fd(dev->ctl.wake_fd);
			break;
		case SRC_LISTEN:
			accept_all(dev);
			break;
		case SRC_KICK_TX:
			drain_kick(dev, VSOCK_VQ_TX);
			tx_more = true;
			break;
		case SRC_KICK_RX:
			drain_kick(dev, VSOCK_VQ_RX);
			pump_rx_kicked(dev);
			break;
		case SRC_KICK_EVENT:
			drain_kick(dev, VSOCK_VQ_EVENT);
			break;
		case SRC_PENDING:
			handle_pending(dev, (struct pending_connect *)src);
			break;
		case SRC_TIMER:
			drain_fd(killq_fd(&dev->kq));
			timer_tick(dev);
			break;
		case SRC_DGRAM:
			dgram_rx(&dev->dg, (struct dgram_sock *)src, &dev->ctl.dg_rc,
				 killq_now(&dev->kq));
			pump_dgram_short(dev);
			break;
		}
	}
	if (poll_mode) {
		tx_more = true;
		pump_rx_kicked(dev);
	}
	/* A packet for another guest waits for room: TX resumes once placed. */
	if (route_tx_held(dev->route) && route_tx_retry(dev->route))
		tx_more = true;
	if (tx_more)
		tx_more = process_tx(dev);
	return tx_more;
}

static void *ctl_main(void *arg)
{
	struct vsock_dev *dev = arg;
	bool poll_mode = dev_polls_queues(dev);
	bool tx_more = true;

	pthread_setname_np(pthread_self(), "vsock-ctl");
	tls_ctl_dev = dev;
	while (!atomic_load(&dev->stopping))
		tx_more = ctl_turn(dev, tx_more ? 0 : (poll_mode ? 1 : -1), tx_more);
	return NULL;
}

/*
 * The control work and RX pump 0 on one thread (VSOCK_CTL_ON_PUMP0): the
 * control epoll is a source of pump 0's epoll (tagged &dev->ctl), and
 * each turn runs the control loop's turn without waiting, then pump 0's
 * work, so that the connections a guest CREDIT_UPDATE unblocked are
 * served in the same turn. It sleeps only when both have nothing to do.
 */
static void *ctl_pump_main(void *arg)
{
	struct vsock_dev *dev = arg;
	struct pump *p = &dev->pumps[0];
	struct epoll_event ev[PUMP_EVENTS];
	bool tx_more = true, ctl_ready = true;

	pthread_setname_np(pthread_self(), "vsock-ctl-rx0");
	tls_ctl_dev = dev;
	while (!atomic_load(&dev->stopping)) {
		bool idle = pump_turn_prepare(p);
		int n, i, m = 0;

		n = epoll_wait(p->epfd, ev, PUMP_EVENTS, idle && !tx_more ? -1 : 0);
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == &dev->ctl)
				ctl_ready = true;
			else
				ev[m++] = ev[i];
		}
		pump_turn_events(p, ev, m);
		if (atomic_load(&dev->stopping))
			break;
		if (ctl_ready || tx_more) {
			ctl_ready = false;
			tx_more = ctl_turn(dev, 0, tx_more);
		}
		pump_turn_serve(p);
	}
	pump_step_end(p);
	return NULL;
}

static int ctl_add(struct vsock_dev *dev, int fd, struct ctl_src *src, int kind)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };

	src->kind = kind;
	if (fd < 0)
		return 0;
	if (epoll_ctl(dev->ctl.epfd, EPOLL_CTL_ADD, fd, &ev) && errno != EEXIST)
		return -errno;
	return 0;
}

int ctl_start(struct vsock_dev *dev)
{
	static const int kinds[VSOCK_VQ_NUM] = { SRC_KICK_RX, SRC_KICK_TX, SRC_KICK_EVENT };
	unsigned int q;
	int ret;

	dev->ctl.listen_paused = false;
	ret = ctl_add(dev, dev->listen_fd, &dev->ctl.src_listen, SRC_LISTEN);
	if (!ret)
		ret = ctl_add(dev, killq_fd(&dev->kq), &dev->ctl.src_timer, SRC_TIMER);
	if (!ret) {
		struct pending_connect *pc;
		int64_t first = INT64_MAX;

		/* CONNECT lines, and connections kept over a stop, have deadlines. */
		for (pc = dev->ctl.pending; pc; pc = pc->next)
			if (pc->deadline_ms < first)
				first = pc->deadline_ms;
		killq_restart(&dev->kq, first);
	}
	for (q = 0; q < VSOCK_VQ_NUM && !ret; q++)
		if (dev->vring_set[q])
			ret = ctl_add(dev, dev->vring[q].kick_fd, &dev->ctl.src_kick[q], kinds[q]);
	if (ret)
		goto err;
	if (dev->ctl.on_pump0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &dev->ctl };

		if (epoll_ctl(dev->pumps[0].epfd, EPOLL_CTL_ADD, dev->ctl.epfd, &ev)) {
			ret = -errno;
			goto err;
		}
	}
	ret = -dev_spawn(dev, VSOCK_THREAD_CTL, &dev->ctl.thread,
			 dev->ctl.on_pump0 ? ctl_pump_main : ctl_main, dev);
	if (ret)
		goto err;
	dev->ctl.running = true;
	return 0;
err:
	if (dev->ctl.on_pump0)
		epoll_ctl(dev->pumps[0].epfd, EPOLL_CTL_DEL, dev->ctl.epfd, NULL);
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		if (dev->vring_set[q] && dev->vring[q].kick_fd >= 0)
			epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, dev->vring[q].kick_fd, NULL);
	epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, dev->listen_fd, NULL);
	epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, killq_fd(&dev->kq), NULL);
	return ret;
}

void ctl_stop(struct vsock_dev *dev)
{
	uint64_t one = 1;
	unsigned int q;
	ssize_t r;

	if (!dev->ctl.running)
		return;
	r = write(dev->ctl.wake_fd, &one, sizeof(one));
	(void)r;
	pthread_join(dev->ctl.thread, NULL);
	dev->ctl.running = false;
	if (dev->ctl.on_pump0)
		epoll_ctl(dev->pumps[0].epfd, EPOLL_CTL_DEL, dev->ctl.epfd, NULL);
	ctl_tx_flush(dev); /* empty already: process_tx() ends with a flush */
	/* Kick fds belong to the transport and may change before the next start. */
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		if (dev->vring_set[q] && dev->vring[q].kick_fd >= 0)
			epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, dev->vring[q].kick_fd, NULL);
	epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, dev->listen_fd, NULL);
	epoll_ctl(dev->ctl.epfd, EPOLL_CTL_DEL, killq_fd(&dev->kq), NULL);
}
