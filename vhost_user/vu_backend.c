// SPDX-License-Identifier: MIT
/*
 * vhost-user backend for the vsock device model: request handling.
 *
 * Protocol source: QEMU docs/interop/vhost-user.rst. What the frontends we
 * serve actually send: Linux 6.1 arch/um/drivers/virtio_uml.c (SET_OWNER,
 * features, protocol features with REPLY_ACK on every "set" request,
 * SET_SLAVE_REQ_FD, SET_MEM_TABLE with identity user addresses, per vring
 * CALL (a pipe), NUM, BASE, ADDR, then KICK and ENABLE, GET_CONFIG; on
 * teardown ENABLE 0 on each vring) and QEMU 7.2 hw/virtio/vhost-user.c with
 * vhost-user-vsock (only vrings 0 and 1; GET_VRING_BASE on stop).
 *
 * Reply policy: requests that have their own reply (GET_*) always get it;
 * any other request gets the REPLY_ACK u64 (0, or a positive errno) when
 * it set need_reply. A request that fails without need_reply drops the
 * frontend (it could not learn of the failure otherwise), except an
 * unsupported request code, which is logged and ignored. Every fd that came
 * with a rejected message is closed.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "skiff/vhost_user.h"
#include "vu_fd.h"
#include "vu_mem.h"
#include "vu_msg.h"
#include "vu_proto.h"

#define VU_PROTOCOL_FEATURES                                                     \
	((1ull << VU_PROTOCOL_F_REPLY_ACK) | (1ull << VU_PROTOCOL_F_SLAVE_REQ) | \
	 (1ull << VU_PROTOCOL_F_CONFIG))

/* Error lines logged per frontend connection, then quiet. */
#define VU_LOG_BUDGET 32

/* One vring as the frontend described it. */
struct vu_ring {
	bool num_set;
	bool addr_set;
	bool kick_set; /* SET_VRING_KICK seen since the last GET_VRING_BASE */
	bool enabled; /* SET_VRING_ENABLE 1 */
	uint16_t num;
	uint16_t base; /* next avail index: SET_VRING_BASE or the last stop */
	uint64_t desc_ua; /* frontend user addresses, translated at start */
	uint64_t avail_ua;
	uint64_t used_ua;
	int kick_fd; /* -1: none / polling */
	int call_fd; /* -1: none */
	int err_fd; /* kept only to be closed */
};

struct vu_backend {
	struct vsock_dev *dev;
	bool verbose;
	bool features_set; /* SET_FEATURES seen */
	uint64_t features; /* acked, as sent (bit 30 included) */
	uint64_t protocol_features;
	struct vu_mem mem;
	struct vu_ring rings[VSOCK_VQ_NUM];
	int slave_fd;
	int fault_fd; /* eventfd: the SIGBUS guard saw our memory fault */
	/*
	 * vsock_dev_start() succeeded, no stop since. Written only by the
	 * thread serving the frontend; vu_backend_started() may read it from
	 * any thread, so it is stored and loaded atomically.
	 */
	bool started;
	unsigned int passed; /* bit q: vring q was given to the device at start */
	bool dev_has_mem; /* the device holds our current table */
	bool dev_has_features; /* the device holds our acked features */
	unsigned int log_budget;
	/*
	 * Written by the thread serving the frontend, read by
	 * vu_backend_get_stats() on any thread: updated and read atomically
	 * (stat_inc(), each field on its own).
	 */
	struct vu_backend_stats stats;
};

static void stat_inc(uint64_t *ctr)
{
	__atomic_add_fetch(ctr, 1, __ATOMIC_RELAXED);
}

static const char *const req_names[] = {
	[VU_REQ_GET_FEATURES] = "GET_FEATURES",
	[VU_REQ_SET_FEATURES] = "SET_FEATURES",
	[VU_REQ_SET_OWNER] = "SET_OWNER",
	[VU_REQ_RESET_OWNER] = "RESET_OWNER",
	[VU_REQ_SET_MEM_TABLE] = "SET_MEM_TABLE",
	[VU_REQ_SET_LOG_BASE] = "SET_LOG_BASE",
	[VU_REQ_SET_LOG_FD] = "SET_LOG_FD",
	[VU_REQ_SET_VRING_NUM] = "SET_VRING_NUM",
	[VU_REQ_SET_VRING_ADDR] = "SET_VRING_ADDR",
	[VU_REQ_SET_VRING_BASE] = "SET_VRING_BASE",
	[VU_REQ_GET_VRING_BASE] = "GET_VRING_BASE",
	[VU_REQ_SET_VRING_KICK] = "SET_VRING_KICK",
	[VU_REQ_SET_VRING_CALL] = "SET_VRING_CALL",
	[VU_REQ_SET_VRING_ERR] = "SET_VRING_ERR",
	[VU_REQ_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
	[VU_REQ_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
	[VU_REQ_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
	[VU_REQ_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
	[VU_REQ_SET_SLAVE_REQ_FD] = "SET_SLAVE_REQ_FD",
	[VU_REQ_GET_CONFIG] = "GET_CONFIG",
	[VU_REQ_SET_CONFIG] = "SET_CONFIG",
};

static const char *req_name(uint32_t req)
{
	if (req < sizeof(req_names) / sizeof(req_names[0]) && req_names[req])
		return req_names[req];
	return "unknown";
}

static void __attribute__((format(printf, 2, 3)))
vu_err(struct vu_backend *vb, const char *fmt, ...)
{
	va_list ap;

	stat_inc(&vb->stats.rejected);
	if (!vb->log_budget)
		return;
	vb->log_budget--;
	va_start(ap, fmt);
	fputs("skiff-vsock: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void ring_init(struct vu_ring *r)
{
	memset(r, 0, sizeof(*r));
	r->kick_fd = -1;
	r->call_fd = -1;
	r->err_fd = -1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void ring_clear(struct vu_ring *r)
{
	close_fd(&r->kick_fd);
	close_fd(&r->call_fd);
	close_fd(&r->err_fd);
	ring_init(r);
}

int vu_backend_create(struct vsock_dev *dev, bool verbose, struct vu_backend **out)
{
	struct vu_backend *vb;
	unsigned int q;
	int ret;

	vb = calloc(1, sizeof(*vb));
	if (!vb)
		return -ENOMEM;
	vb->dev = dev;
	vb->verbose = verbose;
	vb->slave_fd = -1;
	vb->log_budget = VU_LOG_BUDGET;
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		ring_init(&vb->rings[q]);
	ret = vu_mem_guard_init();
	if (!ret) {
		vb->fault_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (vb->fault_fd < 0)
			ret = -errno;
	}
	if (ret) {
		free(vb);
		return ret;
	}
	*out = vb;
	return 0;
}

int vu_backend_fault_fd(const struct vu_backend *vb)
{
	return vb->fault_fd;
}

/* Pause the device, keeping connections; remember where each vring stopped. */
static void quiesce(struct vu_backend *vb)
{
	uint16_t last[VSOCK_VQ_NUM] = { 0 };
	unsigned int q;

	if (!vb->started)
		return;
	vsock_dev_stop(vb->dev, last);
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		if (vb->passed & (1u << q))
			vb->rings[q].base = last[q];
	__atomic_store_n(&vb->started, false, __ATOMIC_RELEASE);
}

static bool ring_enabled(const struct vu_backend *vb, const struct vu_ring *r)
{
	/* Without F_PROTOCOL_FEATURES acked, a vring is enabled once kicked. */
	if (vb->features_set && !(vb->features & (1ull << VU_F_PROTOCOL_FEATURES)))
		return true;
	return r->enabled;
}

static bool ring_ready(const struct vu_backend *vb, unsigned int q)
{
	const struct vu_ring *r = &vb->rings[q];

	return r->num_set && r->addr_set && r->kick_set && ring_enabled(vb, r);
}

static int ring_to_dev(struct vu_backend *vb, unsigned int q)
{
	const struct vu_ring *r = &vb->rings[q];
	struct vsock_vring_config c = {
		.num = r->num,
		.last_avail_idx = r->base,
		.kick_fd = r->kick_fd,
		.call_fd = r->call_fd,
	};

	if (vu_mem_uaddr_to_gpa(&vb->mem, r->desc_ua, &c.desc_gpa) ||
	    vu_mem_uaddr_to_gpa(&vb->mem, r->avail_ua, &c.avail_gpa) ||
	    vu_mem_uaddr_to_gpa(&vb->mem, r->used_ua, &c.used_gpa))
		return -EFAULT;
	return vsock_dev_set_vring(vb->dev, q, &c);
}

/*
 * Write 1 to a kick or call fd. They are non-blocking (vu_fd_check()), but
 * the file description is shared with the frontend, which could make it
 * blocking again: only write when the fd says a write fits now.
 */
static void poke(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	uint64_t one = 1;
	ssize_t r;

	if (fd < 0 || poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
		return;
	r = write(fd, &one, sizeof(one));
	(void)r;
}

/*
 * After a (re)start, as if each vring had been kicked and had interrupted
 * once: a kick the frontend sent while the device was paused, or an
 * interrupt raised on a call fd that was being replaced, must not be lost.
 * Both are harmless when spurious (the device re-reads the avail ring, the
 * driver re-reads the used ring).
 */
static void nudge(struct vu_backend *vb, unsigned int rings)
{
	unsigned int q;

	for (q = 0; q < VSOCK_VQ_NUM; q++) {
		if (!(rings & (1u << q)))
			continue;
		poke(vb->rings[q].kick_fd);
		poke(vb->rings[q].call_fd);
	}
}

/*
 * Start the device when RX and TX are ready, or restart it when the event
 * vring became ready after the start (UML enables it last).
 */
static int try_start(struct vu_backend *vb)
{
	struct vsock_mem_region regions[VSOCK_MAX_MEM_REGIONS];
	unsigned int q, passed = 0;
	int ret;

	if (vb->started) {
		if (!ring_ready(vb, VSOCK_VQ_EVENT) || (vb->passed & (1u << VSOCK_VQ_EVENT)))
			return 0;
		quiesce(vb);
	}
	if (!ring_ready(vb, VSOCK_VQ_RX) || !ring_ready(vb, VSOCK_VQ_TX) || !vb->features_set ||
	    !vb->mem.n)
		return 0;
	if (!vb->dev_has_features) {
		ret = vsock_dev_set_features(vb->dev,
					     vb->features & ~(1ull << VU_F_PROTOCOL_FEATURES));
		if (ret)
			return ret;
		vb->dev_has_features = true;
	}
	if (!vb->dev_has_mem) {
		ret = vsock_dev_set_mem(vb->dev, regions, vu_mem_regions(&vb->mem, regions));
		if (ret)
			return ret;
		vb->dev_has_mem = true;
	}
	for (q = 0; q < VSOCK_VQ_NUM; q++) {
		if (!ring_ready(vb, q)) {
			/*
			 * The device must not keep a vring we do not pass: it
			 * would watch a kick fd we may close at any time, whose
			 * number gets reused (issue 22, finding 3).
			 */
			ret = vsock_dev_clear_vring(vb->dev, q);
			if (ret)
				return ret;
			continue;
		}
		ret = ring_to_dev(vb, q);
		if (ret)
			return ret;
		passed |= 1u << q;
	}
	ret = vsock_dev_start(vb->dev);
	if (ret)
		return ret;
	__atomic_store_n(&vb->started, true, __ATOMIC_RELEASE);
	vb->passed = passed;
	nudge(vb, passed);
	stat_inc(&vb->stats.dev_starts);
	if (vb->verbose)
		fprintf(stderr, "skiff-vsock: device started (vrings 0x%x)\n", passed);
	return 0;
}

/* Stop using vring @q before the frontend changes it. */
static void ring_quiesce(struct vu_backend *vb, unsigned int q)
{
	if (vb->started && (vb->passed & (1u << q)))
		quiesce(vb);
}

static void reset_state(struct vu_backend *vb)
{
	unsigned int q;

	quiesce(vb);
	vsock_dev_reset(vb->dev);
	vu_mem_unmap(&vb->mem);
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		ring_clear(&vb->rings[q]);
	close_fd(&vb->slave_fd);
	vb->features_set = false;
	vb->features = 0;
	vb->protocol_features = 0;
	vb->passed = 0;
	vb->dev_has_mem = false;
	vb->dev_has_features = false;
	vb->log_budget = VU_LOG_BUDGET;
}

/* Whether the SIGBUS guard reported a fault on our memory; clears the report. */
static bool take_fault(struct vu_backend *vb)
{
	uint64_t v = 0;

	return read(vb->fault_fd, &v, sizeof(v)) == (ssize_t)sizeof(v) && v;
}

void vu_backend_disconnect(struct vu_backend *vb)
{
	stat_inc(&vb->stats.disconnects);
	reset_state(vb);
	/* After the reset: no device thread touches the old memory any more. */
	if (take_fault(vb))
		stat_inc(&vb->stats.mem_faults);
}

void vu_backend_destroy(struct vu_backend *vb)
{
	if (!vb)
		return;
	reset_state(vb);
	close(vb->fault_fd);
	free(vb);
}

bool vu_backend_started(const struct vu_backend *vb)
{
	return __atomic_load_n(&vb->started, __ATOMIC_ACQUIRE);
}

void vu_backend_get_stats(const struct vu_backend *vb, struct vu_backend_stats *out)
{
	out->msgs = __atomic_load_n(&vb->stats.msgs, __ATOMIC_RELAXED);
	out->rejected = __atomic_load_n(&vb->stats.rejected, __ATOMIC_RELAXED);
	out->disconnects = __atomic_load_n(&vb->stats.disconnects, __ATOMIC_RELAXED);
	out->dev_starts = __atomic_load_n(&vb->stats.dev_starts, __ATOMIC_RELAXED);
	out->mem_faults = __atomic_load_n(&vb->stats.mem_faults, __ATOMIC_RELAXED);
}

/* Take fd @i out of @msg (the message no longer closes it). */
static int take_fd(struct vu_msg *msg, unsigned int i)
{
	int fd = msg->fds[i];

	msg->fds[i] = -1;
	return fd;
}

static int expect_size(const struct vu_msg *msg, uint32_t size)
{
	return msg->hdr.size == size ? 0 : -EINVAL;
}

/* Vring index from a vring_state/addr message; -EINVAL when out of range. */
static int ring_index(uint32_t index)
{
	return index < VSOCK_VQ_NUM ? (int)index : -EINVAL;
}

static int set_mem_table(struct vu_backend *vb, struct vu_msg *msg)
{
	struct vsock_mem_region regions[VSOCK_MAX_MEM_REGIONS];
	struct vu_mem fresh = { .n = 0 };
	uint32_t n = msg->p.mem.nregions;
	unsigned int cnt;
	int ret;

	if (msg->hdr.size < 8 || n == 0 || n > VU_MAX_REGIONS ||
	    msg->hdr.size < 8 + n * sizeof(struct vu_mem_region) ||
	    msg->hdr.size > sizeof(struct vu_mem_table) || msg->nfds != n)
		return -EINVAL;
	ret = vu_mem_map_table(&msg->p.mem, msg->fds, msg->nfds, vb->fault_fd, &fresh);
	msg->nfds = 0; /* consumed, closed */
	if (ret)
		return ret;
	quiesce(vb);
	cnt = vu_mem_regions(&fresh, regions);
	ret = vsock_dev_set_mem(vb->dev, regions, cnt);
	if (ret) {
		vu_mem_unmap(&fresh);
		return ret;
	}
	/* The device holds the new table now; the old one can go. */
	vu_mem_unmap(&vb->mem);
	vb->mem = fresh;
	vb->dev_has_mem = true;
	return 0;
}

static int set_vring_state(struct vu_backend *vb, struct vu_msg *msg)
{
	int q = ring_index(msg->p.state.index);
	uint32_t num = msg->p.state.num;
	struct vu_ring *r;

	if (expect_size(msg, sizeof(struct vu_vring_state)) || q < 0)
		return -EINVAL;
	r = &vb->rings[q];
	switch (msg->hdr.request) {
	case VU_REQ_SET_VRING_NUM:
		/* virtio 1.2 2.7: a power of two, at most 32768. */
		if (num == 0 || num > 32768 || (num & (num - 1)))
			return -EINVAL;
		ring_quiesce(vb, (unsigned int)q);
		r->num = (uint16_t)num;
		r->num_set = true;
		return 0;
	case VU_REQ_SET_VRING_BASE:
		if (num > 0xffff)
			return -EINVAL;
		ring_quiesce(vb, (unsigned int)q);
		r->base = (uint16_t)num;
		return 0;
	case VU_REQ_SET_VRING_ENABLE:
		if (num > 1)
			return -EINVAL;
		if (!num)
			ring_quiesce(vb, (unsigned int)q);
		r->enabled = num;
		return 0;
	}
	return -EINVAL;
}

static int get_vring_base(struct vu_backend *vb, struct vu_msg *msg, int sock)
{
	int q = ring_index(msg->p.state.index);
	struct vu_vring_state st;

	if (expect_size(msg, sizeof(st)) || q < 0 || msg->nfds)
		return -EPROTO; /* no reply we could give makes sense */
	ring_quiesce(vb, (unsigned int)q);
	st.index = (uint32_t)q;
	st.num = vb->rings[q].base;
	/* The ring is stopped until its next SET_VRING_KICK (vhost-user.rst). */
	vb->rings[q].kick_set = false;
	close_fd(&vb->rings[q].kick_fd);
	return vu_msg_reply(sock, &msg->hdr, &st, sizeof(st));
}

static int set_vring_addr(struct vu_backend *vb, struct vu_msg *msg)
{
	const struct vu_vring_addr *a = &msg->p.addr;
	int q = ring_index(a->index);
	uint64_t gpa;
	struct vu_ring *r;

	if (expect_size(msg, sizeof(*a)) || q < 0)
		return -EINVAL;
	if (vu_mem_uaddr_to_gpa(&vb->mem, a->desc_user_addr, &gpa) ||
	    vu_mem_uaddr_to_gpa(&vb->mem, a->avail_user_addr, &gpa) ||
	    vu_mem_uaddr_to_gpa(&vb->mem, a->used_user_addr, &gpa))
		return -EFAULT;
	r = &vb->rings[q];
	ring_quiesce(vb, (unsigned int)q);
	r->desc_ua = a->desc_user_addr;
	r->avail_ua = a->avail_user_addr;
	r->used_ua = a->used_user_addr;
	r->addr_set = true;
	return 0;
}

/*
 * Check the fd a SET_VRING_KICK/CALL/ERR or SET_SLAVE_REQ_FD brought
 * (vu_fd_check()); say what was wrong with it. @q: its vring, or -1.
 */
static int check_fd(struct vu_backend *vb, const struct vu_msg *msg, int fd, int q)
{
	enum vu_fd_use use = msg->hdr.request == VU_REQ_SET_VRING_KICK ? VU_FD_KICK :
			     msg->hdr.request == VU_REQ_SET_VRING_CALL ? VU_FD_CALL :
			     msg->hdr.request == VU_REQ_SET_VRING_ERR  ? VU_FD_ERR :
									 VU_FD_SLAVE;
	static const char *const wanted[] = {
		[VU_FD_KICK] = "an eventfd",
		[VU_FD_CALL] = "an eventfd, a socket or a pipe's write end",
		[VU_FD_ERR] = "an eventfd",
		[VU_FD_SLAVE] = "a socket",
	};
	char what[64] = "";
	int ret = vu_fd_check(fd, use, what, sizeof(what));

	if (ret && q >= 0)
		vu_err(vb, "%s (vring %d): the fd is %s, not %s", req_name(msg->hdr.request), q,
		       what, wanted[use]);
	else if (ret)
		vu_err(vb, "%s: the fd is %s, not %s", req_name(msg->hdr.request), what,
		       wanted[use]);
	return ret;
}

static int set_vring_fd(struct vu_backend *vb, struct vu_msg *msg)
{
	uint64_t v = msg->p.u64;
	unsigned int q = (unsigned int)(v & VU_VRING_IDX_MASK);
	bool nofd = v & VU_VRING_NOFD_MASK;
	struct vu_ring *r;
	int fd = -1, ret;

	if (expect_size(msg, sizeof(uint64_t)) || (v & ~(VU_VRING_IDX_MASK | VU_VRING_NOFD_MASK)) ||
	    q >= VSOCK_VQ_NUM || msg->nfds != (nofd ? 0u : 1u))
		return -EINVAL;
	r = &vb->rings[q];
	if (!nofd) {
		/* Type and mode first: nothing of ours ever sees a bad fd. */
		ret = check_fd(vb, msg, msg->fds[0], q);
		if (ret)
			return ret;
		fd = take_fd(msg, 0);
	}
	/*
	 * An fd is replaced (closed) only once the device stopped using it:
	 * ring_quiesce() stops the device if it was given vring @q, and a
	 * vring it was not given is one it forgot (try_start()).
	 */
	switch (msg->hdr.request) {
	case VU_REQ_SET_VRING_KICK:
		ring_quiesce(vb, q);
		close_fd(&r->kick_fd);
		r->kick_fd = fd;
		r->kick_set = true;
		break;
	case VU_REQ_SET_VRING_CALL:
		ring_quiesce(vb, q);
		close_fd(&r->call_fd);
		r->call_fd = fd;
		break;
	default:
		close_fd(&r->err_fd);
		r->err_fd = fd;
		break;
	}
	return 0;
}

static int get_config(struct vu_backend *vb, struct vu_msg *msg, int sock)
{
	struct {
		struct vu_config_hdr h;
		uint8_t data[VU_MAX_CONFIG_SIZE];
	} __attribute__((packed)) out;
	const struct vu_config_hdr *c = &msg->p.config;

	if (msg->hdr.size < sizeof(*c) || c->size > VU_MAX_CONFIG_SIZE ||
	    msg->hdr.size != sizeof(*c) + c->size || msg->nfds)
		return -EPROTO;
	out.h = *c;
	if (vsock_dev_read_config(vb->dev, c->offset, out.data, c->size)) {
		/* An empty reply is how a backend says "no" (vhost-user.rst). */
		vu_err(vb, "GET_CONFIG offset %u size %u outside config space", c->offset, c->size);
		return vu_msg_reply(sock, &msg->hdr, NULL, 0);
	}
	return vu_msg_reply(sock, &msg->hdr, &out, (uint32_t)(sizeof(*c) + c->size));
}

static int reply_u64(int sock, const struct vu_msg *msg, uint64_t v)
{
	if (msg->hdr.size != 0 || msg->nfds)
		return -EPROTO;
	return vu_msg_reply(sock, &msg->hdr, &v, sizeof(v));
}

/* Requests without a reply of their own: 0 or -errno. */
static int handle_set(struct vu_backend *vb, struct vu_msg *msg)
{
	uint64_t offered;
	int ret;

	switch (msg->hdr.request) {
	case VU_REQ_SET_OWNER:
		return expect_size(msg, 0);
	case VU_REQ_RESET_OWNER:
		if (expect_size(msg, 0))
			return -EINVAL;
		reset_state(vb);
		return 0;
	case VU_REQ_SET_FEATURES:
		if (expect_size(msg, sizeof(uint64_t)))
			return -EINVAL;
		offered = vsock_dev_features(vb->dev) | (1ull << VU_F_PROTOCOL_FEATURES);
		if (msg->p.u64 & ~offered)
			return -EINVAL;
		quiesce(vb);
		/* Straight through: what the driver accepted is what the device runs. */
		ret = vsock_dev_set_features(vb->dev,
					     msg->p.u64 & ~(1ull << VU_F_PROTOCOL_FEATURES));
		if (ret)
			return ret;
		vb->features = msg->p.u64;
		vb->features_set = true;
		vb->dev_has_features = true;
		return 0;
	case VU_REQ_SET_PROTOCOL_FEATURES:
		if (expect_size(msg, sizeof(uint64_t)) || (msg->p.u64 & ~VU_PROTOCOL_FEATURES))
			return -EINVAL;
		vb->protocol_features = msg->p.u64;
		return 0;
	case VU_REQ_SET_MEM_TABLE:
		return set_mem_table(vb, msg);
	case VU_REQ_SET_VRING_NUM:
	case VU_REQ_SET_VRING_BASE:
	case VU_REQ_SET_VRING_ENABLE:
		return set_vring_state(vb, msg);
	case VU_REQ_SET_VRING_ADDR:
		return set_vring_addr(vb, msg);
	case VU_REQ_SET_VRING_KICK:
	case VU_REQ_SET_VRING_CALL:
	case VU_REQ_SET_VRING_ERR:
		return set_vring_fd(vb, msg);
	case VU_REQ_SET_SLAVE_REQ_FD:
		if (expect_size(msg, 0) || msg->nfds != 1 || check_fd(vb, msg, msg->fds[0], -1))
			return -EINVAL;
		/* Kept for the frontend's sake; the vsock backend sends nothing on it. */
		close_fd(&vb->slave_fd);
		vb->slave_fd = take_fd(msg, 0);
		return 0;
	case VU_REQ_SET_CONFIG:
		return -EPERM; /* the vsock config space is read-only */
	default:
		return -EOPNOTSUPP;
	}
}

/* Which requests may carry fds at all (their counts are checked later). */
static bool may_carry_fds(uint32_t req)
{
	return req == VU_REQ_SET_MEM_TABLE || req == VU_REQ_SET_VRING_KICK ||
	       req == VU_REQ_SET_VRING_CALL || req == VU_REQ_SET_VRING_ERR ||
	       req == VU_REQ_SET_SLAVE_REQ_FD;
}

static int dispatch(struct vu_backend *vb, struct vu_msg *msg, int sock)
{
	uint64_t ack;
	int ret;

	switch (msg->hdr.request) {
	case VU_REQ_GET_FEATURES:
		return reply_u64(sock, msg,
				 vsock_dev_features(vb->dev) | (1ull << VU_F_PROTOCOL_FEATURES));
	case VU_REQ_GET_PROTOCOL_FEATURES:
		return reply_u64(sock, msg, VU_PROTOCOL_FEATURES);
	case VU_REQ_GET_QUEUE_NUM:
		return reply_u64(sock, msg, VSOCK_VQ_NUM);
	case VU_REQ_GET_VRING_BASE:
		return get_vring_base(vb, msg, sock);
	case VU_REQ_GET_CONFIG:
		return get_config(vb, msg, sock);
	}

	if (msg->nfds && !may_carry_fds(msg->hdr.request))
		ret = -EINVAL;
	else
		ret = handle_set(vb, msg);
	if (!ret) {
		ret = try_start(vb);
		if (ret)
			vu_err(vb, "starting the device after %s: %s", req_name(msg->hdr.request),
			       strerror(-ret));
	} else if (msg->hdr.size == sizeof(uint64_t)) {
		vu_err(vb, "%s (0x%llx, %u fds) rejected: %s", req_name(msg->hdr.request),
		       (unsigned long long)msg->p.u64, msg->nfds, strerror(-ret));
	} else {
		vu_err(vb, "%s (size %u, %u fds) rejected: %s", req_name(msg->hdr.request),
		       msg->hdr.size, msg->nfds, strerror(-ret));
	}
	if (msg->hdr.flags & VU_FLAG_NEED_REPLY) {
		ack = ret ? (uint64_t)-ret : 0;
		return vu_msg_reply(sock, &msg->hdr, &ack, sizeof(ack));
	}
	if (ret == -EOPNOTSUPP)
		return 0;
	return ret ? -EPROTO : 0;
}

int vu_backend_handle_one(struct vu_backend *vb, int sock)
{
	struct vu_msg msg;
	int ret;

	ret = vu_msg_recv(sock, &msg);
	if (ret)
		return ret;
	stat_inc(&vb->stats.msgs);
	if (vb->verbose)
		fprintf(stderr, "skiff-vsock: <- %s (%u) flags 0x%x size %u fds %u [%08x %08x]\n",
			req_name(msg.hdr.request), msg.hdr.request, msg.hdr.flags, msg.hdr.size,
			msg.nfds, msg.hdr.size >= 8 ? msg.p.state.index : 0,
			msg.hdr.size >= 8 ? msg.p.state.num : 0);
	if ((msg.hdr.flags & VU_FLAG_VERSION_MASK) != VU_VERSION ||
	    (msg.hdr.flags & VU_FLAG_REPLY)) {
		vu_err(vb, "bad header flags 0x%x on request %u", msg.hdr.flags, msg.hdr.request);
		ret = -EPROTO;
	} else {
		ret = dispatch(vb, &msg, sock);
		if (ret == -EPROTO)
			vu_err(vb, "dropping the frontend after %s", req_name(msg.hdr.request));
	}
	vu_msg_close_fds(&msg);
	return ret;
}
