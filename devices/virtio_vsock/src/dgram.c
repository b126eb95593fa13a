// SPDX-License-Identifier: MIT
/*
 * Guest <-> host datagrams over AF_UNIX SOCK_DGRAM: the device's sockets,
 * their bound and reclaim, both directions. See dgram.h.
 */
#include "dgram.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define DGRAM_BUF_LEN (VIRTIO_VSOCK_MAX_PKT_BUF_SIZE + DGRAM_GATEWAY_LINE_MAX)

static int watch(struct dgram_host *d, struct dgram_sock *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };

	s->kind = d->kind;
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, s->fd, &ev) ? -errno : 0;
}

/* Close @s's fd and remove its path (the path is the device's own). */
static void sock_close(struct dgram_host *d, struct dgram_sock *s)
{
	struct sockaddr_un sa;
	socklen_t len;

	if (s->fd < 0)
		return;
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
	if (!dgram_addr(d->uds, s->gateway ? DGRAM_PATH_GATEWAY : DGRAM_PATH_GUEST, s->port, &sa,
			&len))
		unlink(sa.sun_path);
}

static void sock_free(struct dgram_host *d, struct dgram_sock *s)
{
	struct dgram_sock **pp;

	for (pp = &d->socks; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	sock_close(d, s);
	d->n_socks--;
	s->next = d->dead; /* an event for it may still be in the caller's batch */
	d->dead = s;
}

void dgram_reap(struct dgram_host *d)
{
	while (d->dead) {
		struct dgram_sock *s = d->dead;

		d->dead = s->next;
		free(s);
	}
}

int dgram_init(struct dgram_host *d, const char *uds, uint64_t guest_cid, struct dev_counters *ctr,
	       int epfd, int kind)
{
	struct sockaddr_un sa;
	socklen_t len;
	int ret;

	memset(d, 0, sizeof(*d));
	d->gw.fd = -1;
	d->gw.gateway = true;
	d->guest_cid = guest_cid;
	d->ctr = ctr;
	d->epfd = epfd;
	d->kind = kind;
	if (!uds || !uds[0])
		return 0;
	if (strlen(uds) > DGRAM_UDS_PATH_MAX)
		return -ENAMETOOLONG;
	strcpy(d->uds, uds);
	d->buf = malloc(DGRAM_BUF_LEN);
	if (!d->buf)
		return -ENOMEM;
	ret = dgram_addr(uds, DGRAM_PATH_GATEWAY, 0, &sa, &len);
	if (!ret) {
		ret = dgram_bind(&sa, len);
		if (ret >= 0) {
			d->gw.fd = ret;
			ret = watch(d, &d->gw);
		}
	}
	if (ret) {
		sock_close(d, &d->gw);
		free(d->buf);
		d->buf = NULL;
		d->uds[0] = 0;
	}
	return ret;
}

void dgram_fini(struct dgram_host *d)
{
	while (d->socks)
		sock_free(d, d->socks);
	dgram_reap(d);
	sock_close(d, &d->gw);
	free(d->buf);
	d->buf = NULL;
}

/* Move @s to the front (most recently used) and note the time. */
static void touch(struct dgram_host *d, struct dgram_sock *s, int64_t now_ms)
{
	struct dgram_sock **pp;

	s->last_ms = now_ms;
	if (d->socks == s)
		return;
	for (pp = &d->socks; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	s->next = d->socks;
	d->socks = s;
}

/* Make room for one more socket: idle ones go, and at the cap the least recently used. */
static void reclaim(struct dgram_host *d, int64_t now_ms)
{
	struct dgram_sock *s, *next, *lru = NULL;

	for (s = d->socks; s; s = next) {
		next = s->next;
		if (now_ms - s->last_ms >= DGRAM_IDLE_MS)
			sock_free(d, s);
		else
			lru = s;
	}
	if (d->n_socks >= DGRAM_MAX_SOCKS && lru)
		sock_free(d, lru);
}

/* Guest port @port's socket, made and bound at "<uds>_dgram_g<port>" if needed. NULL: failed. */
static struct dgram_sock *port_sock(struct dgram_host *d, uint32_t port, int64_t now_ms)
{
	struct dgram_sock *s;
	struct sockaddr_un sa;
	socklen_t len;
	int fd;

	for (s = d->socks; s; s = s->next) {
		if (s->port == port) {
			touch(d, s, now_ms);
			return s;
		}
	}
	reclaim(d, now_ms);
	if (dgram_addr(d->uds, DGRAM_PATH_GUEST, port, &sa, &len))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	fd = dgram_bind(&sa, len);
	if (fd < 0) {
		free(s);
		return NULL;
	}
	s->fd = fd;
	s->port = port;
	s->last_ms = now_ms;
	if (watch(d, s)) {
		close(fd);
		unlink(sa.sun_path);
		free(s);
		return NULL;
	}
	s->next = d->socks;
	d->socks = s;
	d->n_socks++;
	return s;
}

void dgram_tx(struct dgram_host *d, const struct virtio_vsock_hdr *h, const struct iovec *iov,
	      unsigned int n, int64_t now_ms)
{
	struct dgram_sock *s;
	struct sockaddr_un to;
	socklen_t to_len;

	if (!d->uds[0] || dgram_addr(d->uds, DGRAM_PATH_HOST, h->dst_port, &to, &to_len)) {
		CTR(d->ctr, dgram_tx_drop_no_dest, 1);
		return;
	}
	s = port_sock(d, h->src_port, now_ms);
	if (!s) {
		CTR(d->ctr, dgram_tx_drop_err, 1);
		return;
	}
	switch (dgram_send(s->fd, &to, to_len, iov, n)) {
	case DGRAM_SENT:
		CTR(d->ctr, dgram_tx_pkts, 1);
		CTR(d->ctr, dgram_tx_bytes, h->len);
		break;
	case DGRAM_NO_DEST:
		CTR(d->ctr, dgram_tx_drop_no_dest, 1);
		break;
	case DGRAM_FULL:
		CTR(d->ctr, dgram_tx_drop_full, 1);
		break;
	default:
		CTR(d->ctr, dgram_tx_drop_err, 1);
		break;
	}
}

/*
 * One datagram of @r bytes (its true length, MSG_TRUNC) in d->buf from
 * @from, read on @s: to the guest, or counted away.
 */
static void rx_one(struct dgram_host *d, struct dgram_sock *s, struct rxq_cache *rc,
		   const struct sockaddr_un *from, socklen_t from_len, size_t r, int64_t now_ms)
{
	struct virtio_vsock_hdr h = { 0 };
	size_t off = 0, got = r < DGRAM_BUF_LEN ? r : DGRAM_BUF_LEN;
	uint32_t src, dst = s->port;
	int ret;

	if (!d->guest_dgram) {
		CTR(d->ctr, dgram_rx_drop_no_dest, 1); /* a guest that cannot take it */
		return;
	}
	if (dgram_src_port(d->uds, from, from_len, &src)) {
		CTR(d->ctr, dgram_rx_drop_bad_addr, 1);
		return;
	}
	if (s->gateway) {
		struct dgram_sock *ps;

		if (dgram_parse_gateway(d->buf, got, &dst, &off)) {
			CTR(d->ctr, dgram_rx_drop_bad_addr, 1);
			return;
		}
		ps = port_sock(d, dst, now_ms); /* the guest's replies come from there */
		if (!ps) {
			CTR(d->ctr, dgram_rx_drop_err, 1);
			return;
		}
	} else {
		touch(d, s, now_ms);
	}
	if (r - off > VIRTIO_VSOCK_MAX_PKT_BUF_SIZE) {
		CTR(d->ctr, dgram_rx_drop_too_big, 1);
		return;
	}
	h.src_cid = VSOCK_CID_HOST;
	h.dst_cid = d->guest_cid;
	h.src_port = src;
	h.dst_port = dst;
	h.len = (uint32_t)(r - off);
	h.type = VIRTIO_VSOCK_TYPE_DGRAM;
	h.op = VIRTIO_VSOCK_OP_RW;
	ret = rxq_dgram_put(rc, &h, d->buf + off, h.len);
	if (!ret) {
		CTR(d->ctr, dgram_rx_pkts, 1);
		CTR(d->ctr, dgram_rx_bytes, h.len);
	} else if (ret == -EMSGSIZE) {
		CTR(d->ctr, dgram_rx_drop_too_big, 1);
	} else {
		CTR(d->ctr, dgram_rx_drop_no_buf, 1);
	}
}

void dgram_rx(struct dgram_host *d, struct dgram_sock *s, struct rxq_cache *rc, int64_t now_ms)
{
	unsigned int i;

	for (i = 0; i < DGRAM_RX_BUDGET && s->fd >= 0; i++) {
		struct sockaddr_un from;
		socklen_t from_len = sizeof(from);
		ssize_t r;

		memset(&from, 0, sizeof(from));
		r = recvfrom(s->fd, d->buf, DGRAM_BUF_LEN, MSG_DONTWAIT | MSG_TRUNC,
			     (struct sockaddr *)&from, &from_len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r < 0) {
			CTR(d->ctr, dgram_rx_drop_err, 1);
			if (++s->errs < DGRAM_MAX_ERRS)
				return; /* level-triggered: tried again on the next round */
			/* Broken: never spun on. */
			if (s->gateway) {
				fprintf(stderr, "skiff-vsock: datagram gateway: %s; closed\n",
					strerror(errno));
				sock_close(d, s);
			} else {
				sock_free(d, s); /* made again when the guest port sends */
			}
			return;
		}
		s->errs = 0;
		rx_one(d, s, rc, &from, from_len, (size_t)r, now_ms);
	}
}
