// SPDX-License-Identifier: MIT
/* Host-side peers for device tests: see host_peer.h. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "host_peer.h"

int64_t hp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void hp_tmp_path(char *buf, size_t cap, const char *tag)
{
	static unsigned int seq;

	snprintf(buf, cap, "/tmp/skt-%s-%d-%u", tag, (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	unlink(buf);
}

static int make_addr(struct sockaddr_un *a, const char *uds, long port)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (port >= 0)
		n = snprintf(a->sun_path, sizeof(a->sun_path), "%s_%ld", uds, port);
	else
		n = snprintf(a->sun_path, sizeof(a->sun_path), "%s", uds);
	return n < 0 || (size_t)n >= sizeof(a->sun_path) ? -ENAMETOOLONG : 0;
}

int hp_listen_port(const char *uds, uint32_t port, int backlog, int seqpacket)
{
	struct sockaddr_un a;
	int fd, rc = make_addr(&a, uds, port);

	if (rc)
		return rc;
	unlink(a.sun_path);
	fd = socket(AF_UNIX, (seqpacket ? SOCK_SEQPACKET : SOCK_STREAM) | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, backlog) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

static int wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int rc;

	do {
		rc = poll(&p, 1, timeout_ms);
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	return rc ? 0 : -ETIMEDOUT;
}

int hp_accept(int lfd, int timeout_ms)
{
	int rc = wait_fd(lfd, POLLIN, timeout_ms), fd;

	if (rc)
		return rc;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int hp_connect_raw(const char *uds)
{
	struct sockaddr_un a;
	int fd, rc = make_addr(&a, uds, -1);

	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

ssize_t hp_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	int64_t end = hp_now_ms() + timeout_ms;
	size_t n = 0;

	while (n + 1 < cap) {
		char ch;
		ssize_t r;
		int64_t left = end - hp_now_ms();
		int rc = wait_fd(fd, POLLIN, left < 0 ? 0 : (int)left);

		if (rc)
			return rc;
		r = read(fd, &ch, 1);
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		if (ch == '\n') {
			buf[n] = 0;
			return (ssize_t)n;
		}
		buf[n++] = ch;
	}
	buf[n] = 0;
	return n ? -EPROTO : 0;
}

int hp_connect(const char *uds, uint32_t port, uint32_t *host_port, int timeout_ms)
{
	char cmd[32], line[64];
	unsigned long hp;
	char *end;
	ssize_t n;
	int fd = hp_connect_raw(uds);

	if (fd < 0)
		return fd;
	n = snprintf(cmd, sizeof(cmd), "CONNECT %u\n", port);
	if (hp_write_all(fd, cmd, (size_t)n, timeout_ms) != n) {
		close(fd);
		return -EIO;
	}
	n = hp_read_line(fd, line, sizeof(line), timeout_ms);
	if (n <= 0) {
		close(fd);
		return n == 0 || n == -ECONNRESET ? -ECONNREFUSED : (int)n;
	}
	if (strncmp(line, "OK ", 3) != 0) {
		close(fd);
		return -EPROTO;
	}
	errno = 0;
	hp = strtoul(line + 3, &end, 10);
	if (errno || *end || end == line + 3 || hp > UINT32_MAX) {
		close(fd);
		return -EPROTO;
	}
	if (host_port)
		*host_port = (uint32_t)hp;
	return fd;
}

ssize_t hp_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	const char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t w = send(fd, p + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			int rc = wait_fd(fd, POLLOUT, timeout_ms);

			if (rc)
				return rc;
			continue;
		}
		if (w < 0)
			return -errno;
		done += (size_t)w;
	}
	return (ssize_t)len;
}

ssize_t hp_read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t r = recv(fd, p + done, len - done, MSG_DONTWAIT);

		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			int rc = wait_fd(fd, POLLIN, timeout_ms);

			if (rc)
				return rc;
			continue;
		}
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

int hp_wait_eof(int fd, int timeout_ms)
{
	char b;
	ssize_t r;
	int rc = wait_fd(fd, POLLIN, timeout_ms);

	if (rc)
		return rc;
	r = recv(fd, &b, 1, MSG_DONTWAIT);
	if (r == 0)
		return 0;
	if (r < 0)
		return -errno;
	return -EPROTO;
}

int hp_quiet(int fd, int ms)
{
	return wait_fd(fd, POLLIN, ms) == -ETIMEDOUT;
}

uint64_t hp_hash(uint64_t h, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t hp_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

void hp_fill(uint64_t *state, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len >= 8) {
		uint64_t v = hp_rand(state);

		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = hp_rand(state);

		memcpy(p, &v, len);
	}
}
