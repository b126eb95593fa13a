// SPDX-License-Identifier: MIT
/* AF_UNIX SOCK_DGRAM paths, parsers and socket calls of vsock datagrams: see host_dgram.h. */
#include "host_dgram.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <skiff/uds_listen.h>

static const char *const suffix[] = {
	[DGRAM_PATH_HOST] = "_dgram_",
	[DGRAM_PATH_GUEST] = "_dgram_g",
	[DGRAM_PATH_GATEWAY] = "_dgram",
};

int dgram_addr(const char *uds, enum dgram_path_kind kind, uint32_t port, struct sockaddr_un *sa,
	       socklen_t *len)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (kind == DGRAM_PATH_GATEWAY)
		n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s%s", uds, suffix[kind]);
	else
		n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s%s%u", uds, suffix[kind], port);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
	return 0;
}

/* 1 to 10 digits in @s[0, @n), no leading zero but "0", <= UINT32_MAX. */
static int parse_port(const char *s, size_t n, uint32_t *port)
{
	uint64_t v = 0;
	size_t i;

	if (!n || n > 10 || (n > 1 && s[0] == '0'))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*port = (uint32_t)v;
	return 0;
}

int dgram_src_port(const char *uds, const struct sockaddr_un *sa, socklen_t len, uint32_t *port)
{
	size_t off = offsetof(struct sockaddr_un, sun_path), ulen = strlen(uds), plen;
	const char *p = sa->sun_path;

	if (len > sizeof(*sa))
		len = sizeof(*sa);
	if (len <= off || sa->sun_family != AF_UNIX || !p[0])
		return -EINVAL; /* unbound or abstract */
	plen = strnlen(p, len - off);
	if (plen < ulen + 7 || memcmp(p, uds, ulen) || memcmp(p + ulen, "_dgram_", 7))
		return -EINVAL;
	return parse_port(p + ulen + 7, plen - ulen - 7, port);
}

int dgram_parse_gateway(const uint8_t *buf, size_t len, uint32_t *port, size_t *consumed)
{
	const uint8_t *lf;
	size_t n = len < DGRAM_GATEWAY_LINE_MAX ? len : DGRAM_GATEWAY_LINE_MAX;

	if (n < 5 || memcmp(buf, "SEND ", 5))
		return -EINVAL;
	lf = memchr(buf, '\n', n);
	if (!lf)
		return -EINVAL;
	if (parse_port((const char *)buf + 5, (size_t)(lf - buf) - 5, port))
		return -EINVAL;
	*consumed = (size_t)(lf - buf) + 1;
	return 0;
}

int dgram_bind(const struct sockaddr_un *sa, socklen_t len)
{
	int fd, ret, sndbuf = 4 * 65536;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)); /* best effort */
	ret = bind(fd, (const struct sockaddr *)sa, len) ? -errno : 0;
	/* A stale socket file from an earlier run: the device's own rule (common/uds). */
	if (ret == -EADDRINUSE) {
		int clear = skiff_uds_clear_stale(sa, SOCK_DGRAM);

		if (!clear)
			ret = bind(fd, (const struct sockaddr *)sa, len) ? -errno : 0;
		else if (clear == -ENOTSOCK)
			ret = clear;
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

enum dgram_send_err dgram_send(int fd, const struct sockaddr_un *to, socklen_t to_len,
			       const struct iovec *iov, unsigned int n)
{
	/* sendmsg() reads both; struct msghdr just lacks the const. */
	union {
		const struct sockaddr_un *c;
		void *m;
	} name = { .c = to };
	union {
		const struct iovec *c;
		struct iovec *m;
	} vec = { .c = iov };
	static const struct iovec none;
	struct msghdr m = {
		.msg_name = name.m,
		.msg_namelen = to_len,
		.msg_iov = vec.m,
		.msg_iovlen = n,
	};
	ssize_t r;

	/* An empty datagram: one empty iovec, not none (see conn.c send_iov()). */
	if (!n) {
		vec.c = &none;
		m.msg_iov = vec.m;
		m.msg_iovlen = 1;
	}
	do
		r = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r >= 0)
		return DGRAM_SENT;
	switch (errno) {
	case EAGAIN:
	case ENOBUFS:
	case ENOMEM:
		return DGRAM_FULL;
	case ENOENT:
	case ECONNREFUSED:
	case ENOTDIR:
	case EACCES:
	case EPERM:
	case EPROTOTYPE:
		return DGRAM_NO_DEST;
	default:
		return DGRAM_ERR;
	}
}
