// SPDX-License-Identifier: MIT
/* Test vhost-user frontend; see vu_frontend.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "vu_frontend.h"

size_t fe_build(void *buf, uint32_t req, uint32_t flags, const void *payload, uint32_t size)
{
	struct vu_hdr h = { .request = req, .flags = flags | VU_VERSION, .size = size };

	memcpy(buf, &h, sizeof(h));
	if (size)
		memcpy((char *)buf + sizeof(h), payload, size);
	return sizeof(h) + size;
}

int fe_send(int sock, uint32_t req, uint32_t flags, const void *payload, uint32_t size,
	    const int *fds, unsigned int nfds)
{
	struct vu_hdr h = { .request = req, .flags = flags | VU_VERSION, .size = size };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)(uintptr_t)payload, .iov_len = size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	ssize_t n;

	if (nfds > 16)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	return (size_t)n == sizeof(h) + size ? 0 : -EIO;
}

static int read_all(int sock, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(sock, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

int fe_recv(int sock, uint32_t req, void *payload, uint32_t cap, uint32_t *size)
{
	uint8_t rest[512];
	struct vu_hdr h;
	int ret;

	ret = read_all(sock, &h, sizeof(h));
	if (ret)
		return ret;
	if (h.flags != (VU_VERSION | VU_FLAG_REPLY) || h.request != req || h.size > sizeof(rest))
		return -EPROTO;
	ret = read_all(sock, rest, h.size);
	if (ret)
		return ret;
	memcpy(payload, rest, h.size < cap ? h.size : cap);
	*size = h.size;
	return 0;
}

int fe_recv_u64(int sock, uint32_t req, uint64_t *v)
{
	uint32_t size;
	int ret = fe_recv(sock, req, v, sizeof(*v), &size);

	if (ret)
		return ret;
	return size == sizeof(*v) ? 0 : -EPROTO;
}

int fe_set(int sock, uint32_t req, const void *payload, uint32_t size, const int *fds,
	   unsigned int nfds)
{
	uint64_t ack;
	int ret = fe_send(sock, req, VU_FLAG_NEED_REPLY, payload, size, fds, nfds);

	if (!ret)
		ret = fe_recv_u64(sock, req, &ack);
	if (!ret && ack)
		ret = -(int)ack;
	return ret;
}

int fe_set_fd(int sock, uint32_t req, unsigned int q, int fd)
{
	uint64_t v = q | (fd < 0 ? VU_VRING_NOFD_MASK : 0);

	return fe_set(sock, req, &v, sizeof(v), &fd, fd < 0 ? 0 : 1);
}

int fe_set_state(int sock, uint32_t req, unsigned int q, uint32_t num)
{
	struct vu_vring_state s = { .index = q, .num = num };

	return fe_set(sock, req, &s, sizeof(s), NULL, 0);
}

int fe_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

static int guest_rings(struct fe_guest *g, unsigned int nrings)
{
	uint64_t base = (uint64_t)(uintptr_t)g->mem;
	unsigned int q;
	int ret = 0;

	for (q = 0; q < nrings && !ret; q++) {
		struct vu_vring_addr a = {
			.index = q,
			.desc_user_addr = base + FE_GUEST_RING(q),
			.avail_user_addr = base + FE_GUEST_RING(q) + 0x400,
			.used_user_addr = base + FE_GUEST_RING(q) + 0x800,
			.log_guest_addr = ~0ull,
		};

		g->kick[q] = eventfd(0, EFD_CLOEXEC);
		g->call[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (g->kick[q] < 0 || g->call[q] < 0)
			return -errno;
		ret = fe_set_fd(g->sock, VU_REQ_SET_VRING_CALL, q, g->call[q]);
		if (!ret)
			ret = fe_set_state(g->sock, VU_REQ_SET_VRING_NUM, q, FE_GUEST_QSIZE);
		if (!ret)
			ret = fe_set_state(g->sock, VU_REQ_SET_VRING_BASE, q, 0);
		if (!ret)
			ret = fe_set(g->sock, VU_REQ_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
		if (!ret)
			ret = fe_set_fd(g->sock, VU_REQ_SET_VRING_KICK, q, g->kick[q]);
		if (!ret)
			ret = fe_set_state(g->sock, VU_REQ_SET_VRING_ENABLE, q, 1);
	}
	return ret;
}

int fe_guest_up(struct fe_guest *g, const char *path, uint64_t features, unsigned int nrings)
{
	struct vu_mem_table t = { .nregions = 1 };
	uint64_t v;
	unsigned int q;
	int ret;

	memset(g, 0, sizeof(*g));
	g->memfd = -1;
	g->mem = MAP_FAILED;
	for (q = 0; q < 3; q++)
		g->kick[q] = g->call[q] = -1;
	g->sock = fe_connect(path);
	if (g->sock < 0)
		return g->sock;
	g->memfd = memfd_create("fe-guest", MFD_CLOEXEC);
	if (g->memfd < 0 || ftruncate(g->memfd, FE_GUEST_MEM) < 0) {
		ret = -errno;
		goto err;
	}
	g->mem = mmap(NULL, FE_GUEST_MEM, PROT_READ | PROT_WRITE, MAP_SHARED, g->memfd, 0);
	if (g->mem == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
	t.regions[0].memory_size = FE_GUEST_MEM;
	t.regions[0].userspace_addr = (uint64_t)(uintptr_t)g->mem;
	ret = fe_send(g->sock, VU_REQ_SET_OWNER, 0, NULL, 0, NULL, 0);
	v = 1ull << VU_PROTOCOL_F_REPLY_ACK;
	if (!ret)
		ret = fe_send(g->sock, VU_REQ_SET_PROTOCOL_FEATURES, 0, &v, sizeof(v), NULL, 0);
	v = features | (1ull << VU_F_PROTOCOL_FEATURES);
	if (!ret)
		ret = fe_set(g->sock, VU_REQ_SET_FEATURES, &v, sizeof(v), NULL, 0);
	if (!ret)
		ret = fe_set(g->sock, VU_REQ_SET_MEM_TABLE, &t, sizeof(t), &g->memfd, 1);
	if (!ret)
		ret = guest_rings(g, nrings);
	if (!ret)
		return 0;
err:
	fe_guest_close(g);
	return ret;
}

void fe_guest_close(struct fe_guest *g)
{
	unsigned int q;

	if (g->sock >= 0)
		close(g->sock);
	if (g->memfd >= 0)
		close(g->memfd);
	if (g->mem != MAP_FAILED && g->mem)
		munmap(g->mem, FE_GUEST_MEM);
	for (q = 0; q < 3; q++) {
		if (g->kick[q] >= 0)
			close(g->kick[q]);
		if (g->call[q] >= 0)
			close(g->call[q]);
	}
	memset(g, 0, sizeof(*g));
	g->sock = g->memfd = -1;
	for (q = 0; q < 3; q++)
		g->kick[q] = g->call[q] = -1;
}
