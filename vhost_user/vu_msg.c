// SPDX-License-Identifier: MIT
/*
 * vhost-user framing. The stream is read by exact lengths: the 12-byte
 * header, then its payload, so a read never swallows the next message even
 * when the frontend wrote several in one go (UML does). A frontend sends a
 * message and its fds with one sendmsg(2), so the fds arrive with the
 * header's bytes; fds arriving with payload bytes are kept as well.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vu_msg.h"

void vu_msg_close_fds(struct vu_msg *msg)
{
	unsigned int i;

	for (i = 0; i < msg->nfds; i++) {
		if (msg->fds[i] >= 0)
			close(msg->fds[i]);
		msg->fds[i] = -1;
	}
	msg->nfds = 0;
}

/* Take the fds of every SCM_RIGHTS block in @mh; -EPROTO if over the cap. */
static int take_fds(struct msghdr *mh, struct vu_msg *msg)
{
	struct cmsghdr *c;
	int ret = 0;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n, i;
		int fd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (msg->nfds < VU_MAX_FDS) {
				msg->fds[msg->nfds++] = fd;
			} else {
				close(fd);
				ret = -EPROTO;
			}
		}
	}
	if (mh->msg_flags & MSG_CTRUNC)
		ret = -EPROTO;
	return ret;
}

/* Read exactly @len bytes; @first: EOF before any byte is a clean close. */
static int read_exact(int sock, void *buf, size_t len, struct vu_msg *msg, int first)
{
	size_t got = 0;

	while (got < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * VU_MAX_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = (char *)buf + got, .iov_len = len - got };
		struct msghdr mh = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		ssize_t n;
		int ret;

		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -ETIMEDOUT;
			return -errno;
		}
		ret = take_fds(&mh, msg);
		if (ret)
			return ret;
		if (n == 0)
			return (first && got == 0) ? -ECONNRESET : -EPROTO;
		got += (size_t)n;
	}
	return 0;
}

int vu_msg_recv(int sock, struct vu_msg *msg)
{
	int ret;

	memset(&msg->hdr, 0, sizeof(msg->hdr));
	msg->nfds = 0;
	ret = read_exact(sock, &msg->hdr, sizeof(msg->hdr), msg, 1);
	if (ret)
		goto err;
	if (msg->hdr.size > sizeof(msg->p)) {
		ret = -EPROTO;
		goto err;
	}
	memset(&msg->p, 0, sizeof(msg->p));
	ret = read_exact(sock, &msg->p, msg->hdr.size, msg, 0);
	if (ret)
		goto err;
	return 0;
err:
	vu_msg_close_fds(msg);
	return ret;
}

int vu_msg_reply(int sock, const struct vu_hdr *req, const void *payload, uint32_t len)
{
	struct vu_hdr hdr = {
		.request = req->request,
		.flags = VU_VERSION | VU_FLAG_REPLY,
		.size = len,
	};
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)(uintptr_t)payload, .iov_len = len },
	};
	size_t total = sizeof(hdr) + len, sent = 0;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	while (sent < total) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		sent += (size_t)n;
		/* Short write on a stream socket: advance the iovecs. */
		while (n > 0 && mh.msg_iovlen) {
			if ((size_t)n >= mh.msg_iov->iov_len) {
				n -= (ssize_t)mh.msg_iov->iov_len;
				mh.msg_iov++;
				mh.msg_iovlen--;
			} else {
				mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + n;
				mh.msg_iov->iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}
