// SPDX-License-Identifier: MIT
/* Device glue: every function of skiff/vsock_dev.h. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "dev.h"

/*
 * The automatic fd budgets (cfg.max_host_fds 0): the process's
 * RLIMIT_NOFILE soft limit, as last seen by vsock_dev_create(), shared
 * equally by the devices alive now.
 */
static _Atomic long proc_nofile;
static _Atomic int live_devices;

int dev_fd_budget(const struct vsock_dev *dev)
{
	long n = atomic_load(&live_devices), lim = atomic_load(&proc_nofile), share;
	long most = (long)dev->cfg.max_conns + 2 * DEV_MAX_PENDING_CONNECT;

	if (dev->cfg.max_host_fds)
		return (int)(dev->cfg.max_host_fds > INT32_MAX ? INT32_MAX : dev->cfg.max_host_fds);
	if (n < 1)
		n = 1;
	share = (lim - DEV_FD_RESERVE) / n - DEV_FD_PER_DEVICE;
	if (share < DEV_FD_BUDGET_MIN)
		share = DEV_FD_BUDGET_MIN;
	return (int)(share < most ? share : most);
}

bool dev_fd_take(struct vsock_dev *dev)
{
	if (atomic_fetch_add(&dev->host_fds, 1) < dev_fd_budget(dev))
		return true;
	atomic_fetch_sub(&dev->host_fds, 1);
	return false;
}

bool dev_fd_admit(struct vsock_dev *dev, int fd)
{
	if (dev_fd_take(dev))
		return true;
	CTR_ADD(dev, conns_refused, 1);
	close(fd); /* over this device's fd budget */
	return false;
}

void dev_fd_close(struct vsock_dev *dev, int fd)
{
	close(fd);
	atomic_fetch_sub(&dev->host_fds, 1);
}

/* ---- what a connection needs from the device (struct conn_ops) ---- */

static void op_schedule(struct conn *c)
{
	pump_enqueue(c);
}

static void op_unlist(struct conn *c)
{
	mux_remove(&c->dev->mux, c);
}

static int op_credit_now(struct conn *c, const struct virtio_vsock_hdr *h)
{
	return rxq_send_hdr(&c->dev->ctl.rx, h);
}

static int op_accepted(struct conn *c)
{
	return uds_send_ok(c->fd, c->local_port);
}

static void op_close_fd(struct conn *c, int fd)
{
	dev_fd_close(c->dev, fd);
}

static const struct conn_ops dev_conn_ops = {
	.schedule = op_schedule,
	.set_out = pump_set_out,
	.unlist = op_unlist,
	.credit_now = op_credit_now,
	.accepted = op_accepted,
	.close_fd = op_close_fd,
};

static void note_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	atomic_store(&proc_nofile, rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT32_MAX ?
					   (long)INT32_MAX :
					   (long)rl.rlim_cur);
}

static unsigned int default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	if (n > 4)
		n = 4;
	return (unsigned int)n;
}

static int pump_init(struct vsock_dev *dev, struct pump *p, unsigned int id)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	p->dev = dev;
	p->id = id;
	rxq_cache_init(&p->rc, &dev->rx);
	rxq_cache_init(&p->dg_rc, &dev->rx);
	p->wake_fd = -1;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		return -errno;
	p->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->wake_fd < 0 || epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wake_fd, &ev))
		return -errno;
	return -pthread_mutex_init(&p->lock, NULL);
}

static void pump_fini(struct pump *p)
{
	if (p->epfd >= 0)
		close(p->epfd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	pthread_mutex_destroy(&p->lock);
}

int vsock_dev_create(const struct vsock_dev_config *cfg, struct vsock_dev **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct vsock_dev *dev;
	struct route_link link;
	struct vq_irq irq;
	unsigned int i;
	int ret;

	if (!cfg || !out || cfg->guest_cid < 3 || cfg->guest_cid >= 0xffffffffull ||
	    (cfg->uds_path && !cfg->uds_path[0]) || cfg->ctl_thread > VSOCK_CTL_ON_PUMP0)
		return -EINVAL;
	if ((cfg->uds_path && strlen(cfg->uds_path) > UDS_PATH_MAX) ||
	    (cfg->uds_path && cfg->dgram && strlen(cfg->uds_path) > DGRAM_UDS_PATH_MAX) ||
	    (cfg->group && strlen(cfg->group) > VSOCK_GROUP_NAME_MAX))
		return -ENAMETOOLONG;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->cfg = *cfg;
	if (cfg->uds_path)
		strcpy(dev->uds_path, cfg->uds_path); /* else "": no host side */
	dev->cfg.uds_path = dev->uds_path;
	dev->cfg.group = NULL; /* the router keeps the name */
	if (!dev->cfg.max_conns)
		dev->cfg.max_conns = DEV_DEFAULT_MAX_CONNS;
	atomic_init(&dev->host_fds, 0);
	if (!dev->cfg.conn_buf_size)
		dev->cfg.conn_buf_size = DEV_DEFAULT_BUF;
	if (!dev->cfg.rx_pkt_max || dev->cfg.rx_pkt_max > VIRTIO_VSOCK_MAX_PKT_BUF_SIZE)
		dev->cfg.rx_pkt_max = VIRTIO_VSOCK_MAX_PKT_BUF_SIZE;
	if (!dev->cfg.host_wait_ms)
		dev->cfg.host_wait_ms = DEV_DEFAULT_HOST_WAIT_MS;
	if (!dev->cfg.rx_threads)
		dev->cfg.rx_threads = default_threads();
	if (dev->cfg.rx_threads > DEV_MAX_PUMPS)
		dev->cfg.rx_threads = DEV_MAX_PUMPS;
	dev->n_pumps = dev->cfg.rx_threads;
	if (dev->cfg.ctl_thread == VSOCK_CTL_AUTO)
		dev->cfg.ctl_thread = default_threads() <= 2 ? VSOCK_CTL_ON_PUMP0 : VSOCK_CTL_OWN;
	dev->listen_fd = dev->ctl.epfd = dev->ctl.wake_fd = -1;
	dev->lobby.wake_fd = -1;
	dev->spare_fd = -1;
	dev->ctl.next_host_port = HOST_PORT_MIN;
	dev->features_offered = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) |
				(1ull << VIRTIO_RING_F_INDIRECT_DESC) |
				(1ull << VIRTIO_VSOCK_F_STREAM) |
				(1ull << VIRTIO_VSOCK_F_SEQPACKET);
	if (cfg->mrg_rxbuf)
		dev->features_offered |= 1ull << VIRTIO_VSOCK_F_MRG_RXBUF;
	if (cfg->dgram)
		dev->features_offered |= 1ull << VIRTIO_VSOCK_F_DGRAM;
	atomic_init(&dev->stopping, false);

	ret = mux_init(&dev->mux, dev->cfg.max_conns);
	if (ret)
		goto err_free;
	ret = killq_init(&dev->kq, NULL);
	if (ret)
		goto err; /* everything it undoes is in its initial state */
	irq = (struct vq_irq){
		.signal = dev_signal, .opaque = dev, .q = VSOCK_VQ_RX, .ctr = &dev->ctr
	};
	ret = rxq_init(&dev->rx, dev->n_pumps * RX_BATCH, &irq);
	if (ret)
		goto err;
	irq.q = VSOCK_VQ_TX;
	dev->tx_irq = irq;
	rxq_cache_init(&dev->ctl.rx, &dev->rx);
	rxq_cache_init(&dev->ctl.dg_rc, &dev->rx);
	dgram_init(&dev->dg, NULL, dev->cfg.guest_cid, &dev->ctr, -1, SRC_DGRAM); /* none yet */
	dev->cenv = (struct conn_env){ .ops = &dev_conn_ops,
				       .dev = dev,
				       .ctr = &dev->ctr,
				       .kq = &dev->kq,
				       .guest_cid = dev->cfg.guest_cid,
				       .buf_alloc = dev->cfg.conn_buf_size,
				       .rx_pkt_max = dev->cfg.rx_pkt_max };
#ifdef SKIFF_TEST_HOOKS
	dev->rx.test_fault = dev->cfg.test_fault;
	dev->rx.test_fault_port = dev->cfg.test_fault_port;
#endif
	dev->pumps = calloc(dev->n_pumps, sizeof(*dev->pumps));
	ret = -ENOMEM;
	if (!dev->pumps)
		goto err;
	for (i = 0; i < dev->n_pumps; i++)
		dev->pumps[i].epfd = dev->pumps[i].wake_fd = -1;
	for (i = 0; i < dev->n_pumps; i++) {
		ret = pump_init(dev, &dev->pumps[i], i);
		if (ret)
			goto err;
	}
	ret = rawq_init(&dev->raw, &dev->ctr, dev->pumps[0].wake_fd);
	if (ret)
		goto err;
	dev->ctl.epfd = epoll_create1(EPOLL_CLOEXEC);
	dev->ctl.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	dev->ctl.src_wake.kind = SRC_WAKE;
	ev.data.ptr = &dev->ctl.src_wake;
	if (dev->ctl.epfd < 0 || dev->ctl.wake_fd < 0 ||
	    epoll_ctl(dev->ctl.epfd, EPOLL_CTL_ADD, dev->ctl.wake_fd, &ev)) {
		ret = -errno;
		goto err;
	}
	if (dev->uds_path[0]) {
		ret = uds_listen(dev->uds_path, &dev->listen_fd);
		if (ret)
			goto err;
		/* -1 only loses the EMFILE refusal */
		dev->spare_fd = uds_spare_open(dev->listen_fd);
		if (cfg->dgram) {
			ret = dgram_init(&dev->dg, dev->uds_path, dev->cfg.guest_cid, &dev->ctr,
					 dev->ctl.epfd, SRC_DGRAM);
			if (ret) {
				close(dev->listen_fd);
				unlink(dev->uds_path);
				goto err;
			}
		}
	}
	link = (struct route_link){ .cid = dev->cfg.guest_cid,
				    .max_conns = dev->cfg.max_conns,
				    .ctr = &dev->ctr,
				    .raw = &dev->raw,
				    .rx_wake_fd = dev->pumps[0].wake_fd,
				    .tx_wake_fd = dev->ctl.wake_fd };
	ret = route_join(&link, cfg->group, &dev->route);
	if (ret) {
		dgram_fini(&dev->dg);
		if (dev->listen_fd >= 0) {
			close(dev->listen_fd);
			unlink(dev->uds_path);
		}
		goto err;
	}
	ret = lobby_start(dev);
	if (ret) {
		route_leave(dev->route);
		dgram_fini(&dev->dg);
		if (dev->listen_fd >= 0) {
			close(dev->listen_fd);
			unlink(dev->uds_path);
		}
		goto err;
	}
	note_nofile();
	atomic_fetch_add(&live_devices, 1);
	*out = dev;
	return 0;
err:
	if (dev->lobby.wake_fd >= 0)
		close(dev->lobby.wake_fd);
	if (dev->spare_fd >= 0)
		close(dev->spare_fd);
	if (dev->pumps)
		for (i = 0; i < dev->n_pumps; i++)
			if (dev->pumps[i].dev)
				pump_fini(&dev->pumps[i]);
	if (dev->ctl.epfd >= 0)
		close(dev->ctl.epfd);
	if (dev->ctl.wake_fd >= 0)
		close(dev->ctl.wake_fd);
	killq_fini(&dev->kq);
	free(dev->pumps);
	rxq_fini(&dev->rx);
	rawq_fini(&dev->raw);
	mux_fini(&dev->mux);
err_free:
	free(dev);
	return ret;
}

uint64_t vsock_dev_features(const struct vsock_dev *dev)
{
	return dev->features_offered;
}

int vsock_dev_read_config(const struct vsock_dev *dev, uint32_t offset, void *buf, uint32_t len)
{
	struct virtio_vsock_config c = { .guest_cid = htole64(dev->cfg.guest_cid) };

	if (offset > sizeof(c) || len > sizeof(c) - offset)
		return -EINVAL;
	memcpy(buf, (const uint8_t *)&c + offset, len);
	return 0;
}

int vsock_dev_set_features(struct vsock_dev *dev, uint64_t features)
{
	if (dev->started)
		return -EBUSY;
	if ((features & ~dev->features_offered) || !(features & (1ull << VIRTIO_F_VERSION_1)))
		return -EINVAL;
	dev->features = features;
	return 0;
}

/* Stop the threads; remember where each queue stands for the next start. */
static void dev_pause(struct vsock_dev *dev, bool give_back)
{
	unsigned int i;

	if (!dev->started)
		return;
	atomic_store(&dev->stopping, true);
	ctl_stop(dev);
	for (i = 0; i < dev->n_pumps; i++)
		pump_stop(&dev->pumps[i]);
	rx_return_all(dev, give_back);
	dev->vring[VSOCK_VQ_RX].last_avail_idx = dev->rx.vq.last_avail;
	dev->vring[VSOCK_VQ_TX].last_avail_idx = dev->ctl.txq.last_avail;
	dev->vring[VSOCK_VQ_EVENT].last_avail_idx = dev->ctl.evq.last_avail;
	dev->started = false;
}

static int dev_resume(struct vsock_dev *dev)
{
	unsigned int i;
	int ret;

	if (!dev->gm.n || !(dev->features & (1ull << VIRTIO_F_VERSION_1)) ||
	    !dev->vring_set[VSOCK_VQ_RX] || !dev->vring_set[VSOCK_VQ_TX])
		return -EINVAL;
	if (vq_setup(&dev->rx.vq, &dev->gm, &dev->vring[VSOCK_VQ_RX], dev->features) ||
	    vq_setup(&dev->ctl.txq, &dev->gm, &dev->vring[VSOCK_VQ_TX], dev->features))
		return -EINVAL;
	memset(&dev->ctl.evq, 0, sizeof(dev->ctl.evq));
	if (dev->vring_set[VSOCK_VQ_EVENT] &&
	    vq_setup(&dev->ctl.evq, &dev->gm, &dev->vring[VSOCK_VQ_EVENT], dev->features))
		return -EINVAL;
	rxq_start(&dev->rx, dev_has_feature(dev, VIRTIO_VSOCK_F_MRG_RXBUF), dev->n_pumps);
	dev->dg.guest_dgram =
		dev_has_feature(dev, VIRTIO_VSOCK_F_DGRAM); /* control thread stopped */
	dev->ctl.tx_broken_warned = false;
	atomic_store(&dev->stopping, false);
	/* A device that polls its queues (no kick fd) keeps its control thread. */
	dev->ctl.on_pump0 = dev->cfg.ctl_thread == VSOCK_CTL_ON_PUMP0 && !dev_polls_queues(dev);
	for (i = dev->ctl.on_pump0 ? 1 : 0; i < dev->n_pumps; i++) {
		ret = pump_start(dev, &dev->pumps[i]);
		if (ret)
			goto err;
	}
	ret = ctl_start(dev);
	if (ret)
		goto err;
	dev->started = true;
	return 0;
err:
	atomic_store(&dev->stopping, true);
	for (i = 0; i < dev->n_pumps; i++)
		pump_stop(&dev->pumps[i]);
	return ret;
}

int vsock_dev_set_mem(struct vsock_dev *dev, const struct vsock_mem_region *regions, unsigned int n)
{
	struct guest_mem gm;
	bool was = dev->started;
	int ret;

	ret = gm_set(&gm, regions, n);
	if (ret)
		return ret;
	dev_pause(dev, true);
	dev->gm = gm;
	if (was)
		return dev_resume(dev);
	return 0;
}

int vsock_dev_set_vring(struct vsock_dev *dev, unsigned int q,
			const struct vsock_vring_config *vring)
{
	struct vq probe;

	if (q >= VSOCK_VQ_NUM || !vring)
		return -EINVAL;
	if (dev->started)
		return -EBUSY;
	if (!vring->num || vring->num > VQ_MAX_SIZE || (vring->num & (vring->num - 1)) ||
	    (vring->desc_gpa & 15) || (vring->avail_gpa & 1) || (vring->used_gpa & 3))
		return -EINVAL;
	if (dev->gm.n && vq_setup(&probe, &dev->gm, vring, dev->features))
		return -EINVAL;
	dev->vring[q] = *vring;
	dev->vring_set[q] = true;
	return 0;
}

int vsock_dev_clear_vring(struct vsock_dev *dev, unsigned int q)
{
	if (q >= VSOCK_VQ_NUM)
		return -EINVAL;
	if (dev->started)
		return -EBUSY;
	memset(&dev->vring[q], 0, sizeof(dev->vring[q]));
	dev->vring[q].kick_fd = -1;
	dev->vring[q].call_fd = -1;
	dev->vring_set[q] = false;
	return 0;
}

int vsock_dev_start(struct vsock_dev *dev)
{
	int ret;

	if (dev->started)
		return -EALREADY;
	lobby_stop(dev, true); /* its clients become the control thread's */
	ret = dev_resume(dev);
	if (ret)
		lobby_start(dev);
	else
		route_online(dev->route, dev_has_feature(dev, VIRTIO_VSOCK_F_SEQPACKET),
			     dev_has_feature(dev, VIRTIO_VSOCK_F_DGRAM));
	return ret;
}

int vsock_dev_stop(struct vsock_dev *dev, uint16_t last_avail[VSOCK_VQ_NUM])
{
	unsigned int q;

	dev_pause(dev, true);
	route_offline(dev->route);
	if (last_avail)
		for (q = 0; q < VSOCK_VQ_NUM; q++)
			last_avail[q] = dev->vring[q].last_avail_idx;
	lobby_start(dev); /* best effort: without it clients wait in the backlog */
	return 0;
}

/* Drop one connection for good (threads stopped). Consumes one reference. */
static void forget_conn(struct conn *c, void *opaque)
{
	(void)opaque;
	pthread_mutex_lock(&c->lock);
	conn_forget(c);
	if (!c->retired && c->fd >= 0 && c->pump) {
		epoll_ctl(c->pump->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		c->retired = true;
		pthread_mutex_unlock(&c->lock);
		conn_put(c); /* the pump's ownership reference */
	} else {
		pthread_mutex_unlock(&c->lock);
	}
	conn_put(c);
}

static void drop_list(struct vsock_dev *dev, struct conn *list)
{
	while (list) {
		struct conn *c = list;

		list = c->work_next;
		c->on_work = false;
		conn_get(c); /* forget_conn consumes one; the list's is dropped below */
		forget_conn(c, dev);
		conn_put(c);
	}
}

/* Close every connection and every host socket but the listener (threads stopped). */
static void dev_clear(struct vsock_dev *dev)
{
	unsigned int i;
	int fd;

	ctl_drop_timed(dev);
	mux_drain(&dev->mux, forget_conn, dev);
	for (i = 0; i < dev->n_pumps; i++) {
		struct pump *p = &dev->pumps[i];

		drop_list(dev, p->work_head);
		drop_list(dev, p->blocked);
		p->work_head = p->work_tail = p->blocked = NULL;
		pump_set_starved(p, false); /* threads stopped: no lock needed */
		rxq_cache_init(&p->rc, &dev->rx);
	}
	ctl_drop_pending(dev);
	/* Host clients still in the listen backlog were CONNECTs pending: drop them. */
	while ((fd = accept4(dev->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		CTR_ADD(dev, conns_refused, 1);
		close(fd);
	}
	rawq_clear(&dev->raw);
	dev->rx.pool_n = 0;
}

int vsock_dev_reset(struct vsock_dev *dev)
{
	dev_pause(dev, false);
	lobby_stop(dev, false);
	route_offline(dev->route);
	dev_clear(dev);
	lobby_drop(dev);
	lobby_start(dev); /* best effort, as in vsock_dev_stop() */
	dev->features = 0;
	memset(dev->vring_set, 0, sizeof(dev->vring_set));
	memset(dev->vring, 0, sizeof(dev->vring));
	memset(&dev->rx.vq, 0, sizeof(dev->rx.vq));
	memset(&dev->ctl.txq, 0, sizeof(dev->ctl.txq));
	memset(&dev->ctl.evq, 0, sizeof(dev->ctl.evq));
	memset(&dev->gm, 0, sizeof(dev->gm));
	CTR_ADD(dev, dev_resets, 1);
	return 0;
}

void vsock_dev_destroy(struct vsock_dev *dev)
{
	unsigned int i;

	if (!dev)
		return;
	dev_pause(dev, false);
	lobby_stop(dev, false);
	route_leave(dev->route);
	dev->route = NULL;
	dev_clear(dev);
	lobby_drop(dev);
	if (dev->lobby.wake_fd >= 0)
		close(dev->lobby.wake_fd);
	if (dev->spare_fd >= 0)
		close(dev->spare_fd);
	for (i = 0; i < dev->n_pumps; i++)
		pump_fini(&dev->pumps[i]);
	if (dev->listen_fd >= 0) {
		close(dev->listen_fd);
		unlink(dev->uds_path);
	}
	dgram_fini(&dev->dg);
	close(dev->ctl.epfd);
	close(dev->ctl.wake_fd);
	killq_fini(&dev->kq);
	free(dev->pumps);
	rxq_fini(&dev->rx);
	rawq_fini(&dev->raw);
	mux_fini(&dev->mux);
	free(dev);
	atomic_fetch_sub(&live_devices, 1);
}

void vsock_dev_get_counters(const struct vsock_dev *dev, struct vsock_dev_counters *o)
{
	const struct dev_counters *c = &dev->ctr;

	o->tx_pkts = atomic_load(&c->tx_pkts);
	o->tx_bytes = atomic_load(&c->tx_bytes);
	o->rx_pkts = atomic_load(&c->rx_pkts);
	o->rx_bytes = atomic_load(&c->rx_bytes);
	o->kicks = atomic_load(&c->kicks);
	o->irqs_sent = atomic_load(&c->irqs_sent);
	o->irqs_suppressed = atomic_load(&c->irqs_suppressed);
	o->conn_resets = atomic_load(&c->conn_resets);
	o->dropped_pkts = atomic_load(&c->dropped_pkts);
	o->malformed_pkts = atomic_load(&c->malformed_pkts);
	o->conns_opened = atomic_load(&c->conns_opened);
	o->conns_closed = atomic_load(&c->conns_closed);
	/* closed first: opened only grows, so open never goes below 0 */
	o->conns_open = atomic_load(&c->conns_opened) - o->conns_closed;
	o->conns_refused = atomic_load(&c->conns_refused);
	o->stray_pkts = atomic_load(&c->stray_pkts);
	o->rx_pkt_limit_stalls = atomic_load(&c->rx_pkt_limit_stalls);
	o->host_fds = (uint64_t)atomic_load(&dev->host_fds);
	o->dev_resets = atomic_load(&c->dev_resets);
	o->rx_chains_max = atomic_load(&c->rx_chains_max);
	o->dgram_tx_pkts = atomic_load(&c->dgram_tx_pkts);
	o->dgram_tx_bytes = atomic_load(&c->dgram_tx_bytes);
	o->dgram_tx_drop_malformed = atomic_load(&c->dgram_tx_drop_malformed);
	o->dgram_tx_drop_no_dest = atomic_load(&c->dgram_tx_drop_no_dest);
	o->dgram_tx_drop_full = atomic_load(&c->dgram_tx_drop_full);
	o->dgram_tx_drop_err = atomic_load(&c->dgram_tx_drop_err);
	o->dgram_rx_pkts = atomic_load(&c->dgram_rx_pkts);
	o->dgram_rx_bytes = atomic_load(&c->dgram_rx_bytes);
	o->dgram_rx_drop_no_buf = atomic_load(&c->dgram_rx_drop_no_buf);
	o->dgram_rx_drop_too_big = atomic_load(&c->dgram_rx_drop_too_big);
	o->dgram_rx_drop_bad_addr = atomic_load(&c->dgram_rx_drop_bad_addr);
	o->dgram_rx_drop_err = atomic_load(&c->dgram_rx_drop_err);
	o->dgram_rx_drop_no_dest = atomic_load(&c->dgram_rx_drop_no_dest);
}

int vsock_dev_conn_dump(struct vsock_dev *dev, uint32_t host_port, uint32_t guest_port, char *buf,
			size_t len)
{
	struct conn *c = mux_lookup(&dev->mux, host_port, guest_port);
	bool starved;
	int n;

	if (!c) {
		snprintf(buf, len, "no connection %u:%u", host_port, guest_port);
		return -ENOENT;
	}
	pthread_mutex_lock(&c->lock);
	n = conn_describe(c, buf, len);
	pthread_mutex_lock(&c->pump->lock);
	starved = c->pump->starved;
	pthread_mutex_unlock(&c->pump->lock);
	if (n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "; pump %u starved %d", c->pump->id, starved);
	pthread_mutex_unlock(&c->lock);
	conn_put(c);
	return 0;
}
