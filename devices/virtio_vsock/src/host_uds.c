// SPDX-License-Identifier: MIT
#include "host_uds.h"

#include <skiff/uds_listen.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int uds_listen(const char *path, int *out)
{
	if (strlen(path) > UDS_PATH_MAX)
		return -ENAMETOOLONG;
	return skiff_uds_listen(path, SOCK_NONBLOCK, 128, out);
}

int uds_parse_connect(const char *buf, size_t len, size_t max, uint32_t *port, size_t *consumed)
{
	static const char kw[] = "CONNECT ";
	const size_t kwlen = sizeof(kw) - 1;
	uint64_t v = 0;
	size_t i, ndig = 0;

	for (i = 0; i < len && i < max; i++) {
		char ch = buf[i];

		if (i < kwlen) {
			if (ch != kw[i])
				return -EINVAL;
			continue;
		}
		if (ch == '\n') {
			if (!ndig)
				return -EINVAL;
			*port = (uint32_t)v;
			*consumed = i + 1;
			return 0;
		}
		if (ch < '0' || ch > '9' || ++ndig > 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(ch - '0');
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	return len >= max ? -EINVAL : -EAGAIN;
}

int uds_connect_port(const char *path, uint32_t port, int type, int *out)
{
	struct sockaddr_un sa;
	char full[sizeof(sa.sun_path) + 16];
	int fd, ret;

	snprintf(full, sizeof(full), "%s_%u", path, port);
	ret = skiff_uds_addr(full, &sa);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do
		ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	while (ret == -EINTR);
	if (ret) {
		close(fd);
		return ret == -EINPROGRESS ? -EAGAIN : ret;
	}
	*out = fd;
	return 0;
}

/* Out of file descriptors (process or system), or of kernel memory for one. */
static bool fd_exhausted(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

int uds_spare_open(int like_fd)
{
	return fcntl(like_fd, F_DUPFD_CLOEXEC, 0);
}

int uds_accept(int listen_fd, int *spare)
{
	int fd, err;

	do
		fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd >= 0)
		return fd;
	err = errno;
	if (err == EAGAIN || err == ECONNABORTED || err == EPROTO)
		return -EAGAIN;
	if (!fd_exhausted(err) || *spare < 0)
		return -err;
	/*
	 * Out of fds: give the reserved one back, take the client off the
	 * backlog and close it (it sees EOF, never OK), then reserve again.
	 * Another thread may take the freed slot first; then the client stays
	 * in the backlog and the caller backs off.
	 */
	close(*spare);
	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		*spare = uds_spare_open(listen_fd);
		return -ECONNREFUSED;
	}
	*spare = uds_spare_open(listen_fd);
	return -err;
}

size_t uds_format_ok(char *buf, uint32_t port)
{
	return (size_t)snprintf(buf, 16, "OK %u\n", port);
}

int uds_peer_pid(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || len != sizeof(cr))
		return 0;
	return (int)cr.pid;
}

/* Slots of @who among the @n. */
static unsigned int slots_of(const int *pid, unsigned int n, int who)
{
	unsigned int i, k = 0;

	for (i = 0; i < n; i++)
		k += pid[i] == who;
	return k;
}

int slot_victim(const int *pid, const int64_t *since, unsigned int n, unsigned int cap,
		int newcomer)
{
	unsigned int i, most = 0, mine;
	int hog = 0, v = -1;

	if (n < cap)
		return SLOT_ROOM;
	for (i = 0; i < n; i++) {
		unsigned int k = slots_of(pid, n, pid[i]);

		if (k > most) {
			most = k;
			hog = pid[i];
		}
	}
	mine = slots_of(pid, n, newcomer);
	if (most <= mine)
		return SLOT_REFUSE;
	for (i = 0; i < n; i++)
		if (pid[i] == hog && (v < 0 || since[i] < since[v]))
			v = (int)i;
	return v;
}

int uds_send_ok(int fd, uint32_t port)
{
	char line[16];
	size_t n = uds_format_ok(line, port);
	ssize_t r;

	do
		r = send(fd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r == (ssize_t)n ? 0 : -EIO;
}
