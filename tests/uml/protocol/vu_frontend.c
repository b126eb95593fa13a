// SPDX-License-Identifier: MIT
/* Test vhost-user frontend; see vu_frontend.h. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
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
