// SPDX-License-Identifier: MIT
/*
 * The RX pump (host to guest): dev->n_pumps pumps, each owning a shard of
 * connections in its own epoll, each on a thread of its own (pump_main())
 * but pump 0 when the control work runs on its thread (VSOCK_CTL_ON_PUMP0:
 * dev_ctl.c's loop then drives it through the pump_turn_*() calls). A
 * pump reserves RX descriptor chains in batches under dev->rx.lock, reads
 * from host sockets straight into them
 * (readv onto the chains' writable iovecs, no bounce buffer for streams),
 * and publishes the used entries and one interrupt per batch.
 *
 * Per connection the pump sends, in order (conn_rx_next()): RST, REQUEST,
 * RESPONSE, CREDIT_UPDATE, data, SHUTDOWN; control packets therefore never
 * wait behind bulk data of their connection, and a connection gets at most
 * PUMP_BUDGET packets before the others get their turn.
 *
 * When the RX queue has no buffers the pump marks itself starved and stops
 * reading host sockets until the guest kicks the RX queue (or another pump
 * returns chains): no spinning. Host sockets are watched edge-triggered; a
 * connection with unread data stays on the work list instead.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "dev.h"
#include "pump.h"
#include "dev_step.h"
#include "iov.h"

#define PUMP_BUDGET 16 /* packets per connection per turn */
#define PKT_MAX_CHAINS 64 /* room kept in the used-entry list for one packet */

enum serve_result { SERVE_DONE, SERVE_REQUEUE, SERVE_BLOCKED };

void pump_wake(struct pump *p)
{
	uint64_t one = 1;
	ssize_t r = write(p->wake_fd, &one, sizeof(one));

	(void)r; /* EAGAIN: the counter is already non-zero, the pump will wake */
}

static void list_append(struct pump *p, struct conn *c)
{
	c->work_next = NULL;
	if (p->work_tail)
		p->work_tail->work_next = c;
	else
		p->work_head = c;
	p->work_tail = c;
}

/*
 * Wake-ups held back by this thread while it holds a conn->lock (see
 * pump_defer_wakes()): at most one pump is remembered; a second one is
 * woken at once.
 */
static __thread bool defer_wakes;
static __thread struct pump *deferred_wake;

void pump_defer_wakes(void)
{
	defer_wakes = true;
}

void pump_flush_wakes(void)
{
	struct pump *p = deferred_wake;

	defer_wakes = false;
	deferred_wake = NULL;
	if (p)
		pump_wake(p);
}

void pump_enqueue(struct conn *c)
{
	struct pump *p = c->pump;
	bool wake = false;

	pthread_mutex_lock(&p->lock);
	if (!c->on_work) {
		conn_get(c);
		c->on_work = true;
		list_append(p, c);
		wake = p->sleeping;
		p->sleeping = false;
	}
	pthread_mutex_unlock(&p->lock);
	if (!wake)
		return;
	if (defer_wakes) {
		if (deferred_wake && deferred_wake != p)
			pump_wake(deferred_wake);
		deferred_wake = p;
		return;
	}
	pump_wake(p);
}

int pump_watch(struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c };

	/*
	 * The pump owns @c from here on, watched or not: it sends the RST the
	 * caller owes after a failure, and retires @c like any other (retire()
	 * and forget_conn() drop this reference exactly once; their
	 * EPOLL_CTL_DEL of an fd that never got in fails harmlessly).
	 */
	conn_get(c);
	if (epoll_ctl(c->pump->epfd, EPOLL_CTL_ADD, c->fd, &ev))
		return -errno;
	return 0;
}

int pump_set_out(struct conn *c, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c };

	/*
	 * On: always, even when armed already. The caller met EAGAIN (or
	 * queued bytes), and EPOLL_CTL_MOD polls the socket again, so room
	 * made since then is reported at once, not only at the next edge
	 * (which never comes when the reader already emptied the socket).
	 */
	if (c->retired || (!on && !c->out_armed))
		return 0;
	if (on)
		ev.events |= EPOLLOUT;
	if (epoll_ctl(c->pump->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		return on ? -errno : 0; /* off: a stray EPOLLOUT costs one idle flush */
	c->out_armed = on;
	return 0;
}

/* Unstarve every starved pump (RX kick, or chains returned to the pool). */
void pump_rx_kicked(struct vsock_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->n_pumps; i++) {
		struct pump *p = &dev->pumps[i];
		bool wake = false;

		pthread_mutex_lock(&p->lock);
		if (p->starved) {
			pump_set_starved(p, false);
			while (p->blocked) {
				struct conn *c = p->blocked;

				p->blocked = c->work_next;
				list_append(p, c);
			}
			wake = true;
			p->sleeping = false;
		}
		pthread_mutex_unlock(&p->lock);
		if (wake)
			pump_wake(p);
	}
}

/* Send a connection-less header-only packet. Return: 0, or -EAGAIN when out of RX buffers. */
static int emit_hdr(struct pump *p, struct virtio_vsock_hdr *h)
{
	if (!rxq_first_usable(&p->rc, PKT_MAX_CHAINS))
		return -EAGAIN;
	rxq_put(&p->rc, h, 0);
	return 0;
}

/* Take @c out of the pump's epoll; its reference is dropped at the next loop top. */
static void retire(struct pump *p, struct conn *c)
{
	if (c->retired)
		return;
	epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	c->retired = true;
	c->zombie_next = p->zombies;
	p->zombies = c;
}

/* Ask every pump but @except to put its reserved, unused chains in the pool. */
static void ask_give_back(struct vsock_dev *dev, const struct pump *except)
{
	unsigned int i;

	for (i = 0; i < dev->n_pumps; i++) {
		struct pump *q = &dev->pumps[i];

		if (q == except)
			continue;
		/* Already asked: that wake-up is pending, or seen before the pump sleeps. */
		if (!atomic_exchange(&q->give_back, true))
			pump_wake(q);
	}
}

bool pump_starve(struct pump *p)
{
	struct vsock_dev *dev = p->dev;

	pthread_mutex_lock(&p->lock);
	pump_set_starved(p, true);
	pthread_mutex_unlock(&p->lock);
	/* Re-check after asking for a kick (rxq_slot()): buffers may have come. */
	if (rxq_slot(&p->rc, 0)) {
		pthread_mutex_lock(&p->lock);
		pump_set_starved(p, false);
		pthread_mutex_unlock(&p->lock);
		return false;
	}
	/*
	 * The other pumps may hold reserved chains while idle (they keep
	 * them, see pump_main()): ask them to return theirs to the pool,
	 * which wakes the starved pumps (pump_rx_kicked()).
	 */
	ask_give_back(dev, p);
	return true;
}

void pump_dgram_short(struct vsock_dev *dev)
{
	/* A plain load first: pump 0 calls this every round, and it is rarely set. */
	if (atomic_load_explicit(&dev->rx.dgram_short, memory_order_relaxed) &&
	    atomic_exchange(&dev->rx.dgram_short, false))
		ask_give_back(dev, NULL);
}

static enum serve_result serve(struct pump *p, struct conn *c)
{
	enum serve_result res = SERVE_DONE;
	int budget = PUMP_BUDGET, ret;

	pthread_mutex_lock(&c->lock);
	if (c->retired)
		goto out;
	conn_want_flush(c);
	while (budget > 0) {
		if (pump_starved(p) && conn_rx_wanted(c)) {
			res = SERVE_BLOCKED;
			break;
		}
		ret = conn_rx_next(c, &p->rc);
		if (ret == 1)
			break; /* nothing more to send now */
		if (ret == -EAGAIN) {
			if (!pump_starve(p))
				continue;
			res = SERVE_BLOCKED;
			break;
		}
		budget--;
	}
	if (!budget)
		res = SERVE_REQUEUE;
	if (conn_retirable(c)) {
		retire(p, c);
		res = SERVE_DONE;
	}
	/*
	 * The packets of @c go into the used ring before its lock is let go:
	 * the control thread may put a CREDIT_UPDATE of @c on the RX queue at
	 * once (conn_handle_tx(): struct conn_ops credit_now), and the guest takes the fwd_cnt of every
	 * packet as it comes (Linux virtio_transport_space_update()), so a
	 * packet of ours published after that update would take its credit
	 * back, and a guest waiting for credit would wait forever.
	 */
	rxq_publish(&p->rc);
out:
	pthread_mutex_unlock(&c->lock);
	return res;
}

/* Pump 0 also sends the RSTs owed for packets of no connection. */
static bool serve_raw(struct pump *p)
{
	struct vsock_dev *dev = p->dev;

	for (;;) {
		struct virtio_vsock_hdr h;

		if (pump_starved(p))
			return false;
		if (!rawq_peek(&dev->raw, &h))
			return true;
		if (emit_hdr(p, &h)) {
			if (!pump_starve(p))
				continue;
			return false;
		}
		rawq_pop(&dev->raw);
	}
}

/* Pump 0: then the packets other guests routed to this one (router.c). */
static void serve_routed(struct pump *p)
{
	unsigned int budget = ROUTE_RX_BUDGET;

	while (!pump_starved(p) &&
	       route_rx_serve(p->dev->route, &p->rc, &p->dg_rc, &budget) == -EAGAIN &&
	       !pump_starve(p))
		;
	pump_dgram_short(p->dev); /* this pump's own chains too, at its idle turn */
}

static void free_zombies(struct pump *p)
{
	while (p->zombies) {
		struct conn *c = p->zombies;

		p->zombies = c->zombie_next;
		conn_put(c);
	}
}

static void handle_event(struct pump *p, const struct epoll_event *ev)
{
	struct conn *c = ev->data.ptr;

	if (!c) {
		uint64_t v;
		ssize_t r = read(p->wake_fd, &v, sizeof(v));

		(void)r;
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (!c->retired)
		conn_host_event(c, ev->events);
	pthread_mutex_unlock(&c->lock);
	pump_enqueue(c);
}

/*
 * Serve every connection on the work list once (parking those that wait for
 * RX buffers), then for pump 0 the conn-less RSTs and the packets from other
 * guests; publish the used entries.
 */
static void serve_work(struct pump *p)
{
	struct conn *list;

	pthread_mutex_lock(&p->lock);
	list = p->work_head;
	p->work_head = p->work_tail = NULL;
	pthread_mutex_unlock(&p->lock);
	while (list) {
		struct conn *c = list;
		enum serve_result res;

		list = c->work_next;
		pthread_mutex_lock(&p->lock);
		c->on_work = false;
		pthread_mutex_unlock(&p->lock);
		res = serve(p, c);
		if (res == SERVE_REQUEUE) {
			pump_enqueue(c);
		} else if (res == SERVE_BLOCKED) {
			pthread_mutex_lock(&p->lock);
			if (!c->on_work) {
				conn_get(c);
				c->on_work = true;
				if (p->starved) {
					c->work_next = p->blocked;
					p->blocked = c;
				} else {
					/* A kick came in meanwhile: try again. */
					list_append(p, c);
				}
			}
			pthread_mutex_unlock(&p->lock);
		}
		conn_put(c);
	}
	if (p->id == 0 && serve_raw(p))
		serve_routed(p);
	rxq_flush(&p->rc);
}

void pump_step(struct pump *p)
{
	struct epoll_event ev[PUMP_EVENTS];
	int n, i;

	free_zombies(p);
	n = epoll_wait(p->epfd, ev, PUMP_EVENTS, 0);
	for (i = 0; i < n; i++)
		handle_event(p, &ev[i]);
	serve_work(p);
}

void pump_step_end(struct pump *p)
{
	rxq_flush(&p->rc);
	if (rxq_cache_return(&p->rc))
		pump_rx_kicked(p->dev);
	free_zombies(p);
}

bool pump_turn_prepare(struct pump *p)
{
	struct vsock_dev *dev = p->dev;
	bool idle, raw;

	free_zombies(p);
	raw = p->id == 0 && (rawq_pending(&dev->raw) || route_rx_pending(dev->route));
	pthread_mutex_lock(&p->lock);
	idle = !p->work_head && !(raw && !p->starved);
	pthread_mutex_unlock(&p->lock);
	if (!idle)
		return false;
	rxq_flush(&p->rc);
	/*
	 * Keep the reserved chains for the next round unless a starved pump
	 * asked for them: moving them to the pool and back on every idle turn
	 * cost more than the rest of a small packet's path.
	 */
	if (atomic_exchange(&p->give_back, false) && rxq_cache_return(&p->rc))
		pump_rx_kicked(dev);
	pthread_mutex_lock(&p->lock);
	idle = !p->work_head;
	p->sleeping = idle;
	pthread_mutex_unlock(&p->lock);
	return idle;
}

void pump_turn_events(struct pump *p, const struct epoll_event *ev, int n)
{
	int i;

	pthread_mutex_lock(&p->lock);
	p->sleeping = false;
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < n; i++)
		handle_event(p, &ev[i]);
}

void pump_turn_serve(struct pump *p)
{
	serve_work(p);
}

static void *pump_main(void *arg)
{
	struct pump *p = arg;
	struct vsock_dev *dev = p->dev;
	struct epoll_event ev[PUMP_EVENTS];
	char name[16];

	snprintf(name, sizeof(name), "vsock-rx%u", p->id);
	pthread_setname_np(pthread_self(), name);
	while (!atomic_load(&dev->stopping)) {
		bool idle = pump_turn_prepare(p);
		int n = epoll_wait(p->epfd, ev, PUMP_EVENTS, idle ? -1 : 0);

		pump_turn_events(p, ev, n);
		if (atomic_load(&dev->stopping))
			break;
		serve_work(p);
	}
	rxq_flush(&p->rc);
	if (rxq_cache_return(&p->rc))
		pump_rx_kicked(dev);
	return NULL;
}

int pump_start(struct vsock_dev *dev, struct pump *p)
{
	int ret = -dev_spawn(dev, VSOCK_THREAD_RX_PUMP, &p->thread, pump_main, p);

	p->running = !ret;
	return ret;
}

void pump_stop(struct pump *p)
{
	if (!p->running)
		return;
	pump_wake(p);
	pthread_join(p->thread, NULL);
	p->running = false;
	free_zombies(p);
}

void rx_return_all(struct vsock_dev *dev, bool give_back)
{
	unsigned int i;

	for (i = 0; i < dev->n_pumps; i++)
		rxq_cache_return(&dev->pumps[i].rc);
	rxq_return_pool(&dev->rx, give_back);
}
