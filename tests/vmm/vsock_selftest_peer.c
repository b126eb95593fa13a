// SPDX-License-Identifier: MIT
/* Host peer for the guest kernel's vsock boot self-test: see vsock_selftest_peer.h. */
#include "vsock_selftest_peer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define HDR_MAX 64

static uint32_t fnv1a(const uint8_t *b, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--) {
		h ^= *b++;
		h *= 16777619u;
	}
	return h;
}

static int stop_fd = -1; /* the running peer's stop_pipe[0] (one peer per process) */

/* Wait up to @ms for @events on @fd. Return: 0, -ECANCELED (stopped), -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int ms)
{
	struct pollfd pfd[2] = { { .fd = fd, .events = events },
				 { .fd = stop_fd, .events = POLLIN } };
	int n = poll(pfd, 2, ms);

	if (n < 0)
		return -errno;
	if (pfd[1].revents)
		return -ECANCELED;
	return n ? 0 : -ETIMEDOUT;
}

/* Read exactly @len bytes. Return: 0, -EPIPE on early EOF, -ETIMEDOUT or -errno. */
static int read_full(int fd, void *buf, size_t len, int ms)
{
	size_t got = 0;
	ssize_t n;
	int ret;

	while (got < len) {
		ret = wait_fd(fd, POLLIN, ms);
		if (ret)
			return ret;
		n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len, int ms)
{
	size_t done = 0;
	ssize_t n;
	int ret;

	while (done < len) {
		ret = wait_fd(fd, POLLOUT, ms);
		if (ret)
			return ret;
		n = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

static int fail(struct selftest_peer *p, int err, const char *what)
{
	snprintf(p->why, sizeof(p->why), "%s: %s", what, strerror(-err));
	return err;
}

/* One connection: header, payload, checks, reply, EOF. */
static int serve(struct selftest_peer *p, int fd)
{
	static uint8_t payload[SELFTEST_PAYLOAD], reply[HDR_MAX + SELFTEST_PAYLOAD];
	char hdr[HDR_MAX + 1], want[HDR_MAX + 1];
	size_t hlen = 0;
	uint32_t sum;
	unsigned int i;
	int ret, rlen;
	char c;

	/* The header line, a byte at a time so that no payload byte is consumed. */
	for (;;) {
		ret = read_full(fd, &c, 1, p->budget_ms);
		if (ret)
			return fail(p, ret, "reading the header");
		if (c == '\n')
			break;
		if (hlen == HDR_MAX)
			return fail(p, -EPROTO, "header longer than 64 bytes");
		hdr[hlen++] = c;
	}
	hdr[hlen] = 0;
	ret = read_full(fd, payload, sizeof(payload), p->budget_ms);
	if (ret)
		return fail(p, ret, "reading the 4096-byte payload");
	for (i = 0; i < SELFTEST_PAYLOAD; i++) {
		if (payload[i] != (uint8_t)(i * 131 + (i >> 8) + 7)) {
			snprintf(p->why, sizeof(p->why), "payload byte %u is 0x%02x, want 0x%02x",
				 i, payload[i], (uint8_t)(i * 131 + (i >> 8) + 7));
			return -EBADMSG;
		}
	}
	sum = fnv1a(payload, sizeof(payload));
	snprintf(want, sizeof(want), "skiff-selftest %u %08x", SELFTEST_PAYLOAD, sum);
	if (strcmp(hdr, want)) {
		snprintf(p->why, sizeof(p->why), "header '%s', want '%s'", hdr, want);
		return -EBADMSG;
	}

	__atomic_store_n(&p->got_message, true, __ATOMIC_RELEASE);
	if (p->hold_reply) {
		ret = wait_fd(p->gate_pipe[0], POLLIN, p->budget_ms);
		if (ret)
			return fail(p, ret, "waiting for the test to release the reply");
	}

	rlen = snprintf((char *)reply, HDR_MAX, "skiff-reply %u %08x\n", SELFTEST_PAYLOAD, sum);
	for (i = 0; i < SELFTEST_PAYLOAD; i++)
		reply[rlen + i] = payload[SELFTEST_PAYLOAD - 1 - i];
	ret = write_full(fd, reply, (size_t)rlen + SELFTEST_PAYLOAD, p->budget_ms);
	if (ret)
		return fail(p, ret, "sending the reply");
	__atomic_store_n(&p->checked, true, __ATOMIC_RELEASE);

	/* The guest reads the whole reply, then shuts down: EOF, nothing more. */
	ret = read_full(fd, &c, 1, p->budget_ms);
	if (ret == 0) {
		snprintf(p->why, sizeof(p->why), "extra byte 0x%02x after the message",
			 (unsigned char)c);
		return -EPROTO;
	}
	if (ret == -EPIPE)
		__atomic_store_n(&p->guest_closed, true, __ATOMIC_RELEASE);
	return 0;
}

static void *peer_main(void *arg)
{
	struct selftest_peer *p = arg;
	int fd, ret;

	ret = wait_fd(p->listen_fd, POLLIN, p->budget_ms);
	if (ret) {
		p->err = fail(p, ret, "waiting for the guest's connection");
		goto out;
	}
	fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		p->err = fail(p, -errno, "accept");
		goto out;
	}
	p->conn_fd = fd;
	p->err = serve(p, fd);
out:
	__atomic_store_n(&p->done, true, __ATOMIC_RELEASE);
	return NULL;
}

int selftest_peer_release(struct selftest_peer *p)
{
	return write(p->gate_pipe[1], "g", 1) == 1 ? 0 : -errno;
}

int selftest_peer_start(struct selftest_peer *p, const char *path, int budget_ms, bool hold_reply)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ret;

	memset(p, 0, sizeof(*p));
	p->budget_ms = budget_ms;
	p->err = -EINPROGRESS;
	p->conn_fd = -1;
	p->hold_reply = hold_reply;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (pipe2(p->gate_pipe, O_CLOEXEC))
		return -errno;
	if (pipe2(p->stop_pipe, O_CLOEXEC)) {
		ret = -errno;
		goto err_gate;
	}
	stop_fd = p->stop_pipe[0];
	p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->listen_fd < 0) {
		ret = -errno;
		goto err_pipe;
	}
	if (bind(p->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(p->listen_fd, 4)) {
		ret = -errno;
		goto err_close;
	}
	ret = -pthread_create(&p->thread, NULL, peer_main, p);
	if (ret)
		goto err_close;
	return 0;
err_close:
	close(p->listen_fd);
	p->listen_fd = -1;
err_pipe:
	close(p->stop_pipe[0]);
	close(p->stop_pipe[1]);
	stop_fd = -1;
err_gate:
	close(p->gate_pipe[0]);
	close(p->gate_pipe[1]);
	return ret;
}

bool selftest_peer_flag(const bool *flag)
{
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

void selftest_peer_stop(struct selftest_peer *p)
{
	if (write(p->stop_pipe[1], "x", 1) != 1)
		perror("selftest_peer_stop: write");
	pthread_join(p->thread, NULL);
	if (p->conn_fd >= 0)
		close(p->conn_fd);
	close(p->listen_fd);
	close(p->stop_pipe[0]);
	close(p->stop_pipe[1]);
	close(p->gate_pipe[0]);
	close(p->gate_pipe[1]);
	stop_fd = -1;
	p->listen_fd = p->conn_fd = -1;
}
