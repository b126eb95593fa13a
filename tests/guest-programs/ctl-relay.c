// SPDX-License-Identifier: MIT
/*
 * ctl-relay: carries one TCP connection over vsock, for vsock_test's control
 * channel between two skiff guests that have no network device (issue 21,
 * tests/skiff-linux/vsock_test_g2g.sh). Static, runs in the test guests'
 * initramfs.
 *
 * vsock_test's client and server talk over TCP (--control-host,
 * --control-port) while their tests run over AF_VSOCK. In a skiff guest the
 * only network is the loopback device, so each guest runs one relay:
 *
 *   server guest:  ctl-relay vsock-to-tcp VPORT 127.0.0.1:PORT
 *                  accepts one vsock connection on VPORT, connects to the
 *                  vsock_test server's TCP control port on its own loopback
 *   client guest:  ctl-relay tcp-to-vsock PORT CID:VPORT
 *                  listens on 127.0.0.1:PORT for the vsock_test client,
 *                  connects to CID:VPORT (the other guest's relay)
 *
 * The control connection then crosses the device under test as one more
 * vsock stream, on its own port (never vsock_test's test port, 1234 by
 * default). The outgoing side is retried (ECONNREFUSED, ECONNRESET,
 * ETIMEDOUT: the far end is not listening yet) every 100 ms until the
 * deadline, so the two guests and both vsock_test ends can start in any
 * order. Bytes are copied both ways until both directions reached EOF; an EOF
 * on one side becomes shutdown(SHUT_WR) on the other, so vsock_test sees its
 * peer's close as it would over TCP.
 *
 * Options: --timeout S  the whole relay's bound, accept and connect
 *                       included (default 600); then exit 1.
 * Output: "CTL-RELAY listening ..." once listening, "CTL-RELAY connected ..."
 * once both sides are up, "CTL-RELAY done a2b=N b2a=N" at the end, errors
 * as "CTL-RELAY-ERROR ...". Exit status: 0 both directions ended with EOF,
 * 1 error or timeout, 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#define RELAY_BUF 65536
#define RETRY_MS 100

struct endpoint {
	int family; /* AF_INET or AF_VSOCK */
	union {
		struct sockaddr_in in;
		struct sockaddr_vm vm;
	} addr;
	socklen_t len;
};

static long long deadline_ms;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(void)
{
	long long left = deadline_ms - now_ms();

	return left > 0 ? (int)(left > 1000000 ? 1000000 : left) : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: ctl-relay vsock-to-tcp VPORT HOST:PORT [--timeout S]\n"
			"       ctl-relay tcp-to-vsock PORT CID:VPORT [--timeout S]\n");
	exit(2);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || end == s || *end || *out > max)
		return -EINVAL;
	return 0;
}

/* "A.B.C.D:PORT" (AF_INET) or "CID:PORT" (AF_VSOCK); 0 or -EINVAL. */
static int parse_endpoint(const char *s, int family, struct endpoint *ep)
{
	const char *colon = strrchr(s, ':');
	char host[64];
	unsigned long port, cid;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, colon - s);
	host[colon - s] = '\0';
	memset(ep, 0, sizeof(*ep));
	ep->family = family;
	if (family == AF_INET) {
		if (parse_uint(colon + 1, 65535, &port) || !port ||
		    inet_pton(AF_INET, host, &ep->addr.in.sin_addr) != 1)
			return -EINVAL;
		ep->addr.in.sin_family = AF_INET;
		ep->addr.in.sin_port = htons((unsigned short)port);
		ep->len = sizeof(ep->addr.in);
		return 0;
	}
	if (parse_uint(host, 0xffffffffUL, &cid) || parse_uint(colon + 1, 0xffffffffUL, &port))
		return -EINVAL;
	ep->addr.vm.svm_family = AF_VSOCK;
	ep->addr.vm.svm_cid = (unsigned int)cid;
	ep->addr.vm.svm_port = (unsigned int)port;
	ep->len = sizeof(ep->addr.vm);
	return 0;
}

/* Listen on @ep and accept one connection within the deadline; fd or -1. */
static int accept_one(const struct endpoint *ep, const char *what)
{
	int one = 1, lfd, fd = -1;
	struct pollfd p;

	lfd = socket(ep->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		printf("CTL-RELAY-ERROR socket(%s): %s\n", what, strerror(errno));
		return -1;
	}
	if (ep->family == AF_INET)
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)&ep->addr, ep->len) < 0 || listen(lfd, 1) < 0) {
		printf("CTL-RELAY-ERROR listen(%s): %s\n", what, strerror(errno));
		goto out;
	}
	printf("CTL-RELAY listening %s\n", what);
	fflush(stdout);
	p = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (;;) {
		int n = poll(&p, 1, left_ms());

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			printf("CTL-RELAY-ERROR no connection on %s before the deadline\n", what);
			goto out;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0 || (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED))
			break;
	}
	if (fd < 0)
		printf("CTL-RELAY-ERROR accept(%s): %s\n", what, strerror(errno));
out:
	close(lfd);
	return fd;
}

/* Connect to @ep, retrying while the far end is not there yet; fd or -1. */
static int connect_retry(const struct endpoint *ep, const char *what)
{
	for (;;) {
		int fd = socket(ep->family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			printf("CTL-RELAY-ERROR socket(%s): %s\n", what, strerror(errno));
			return -1;
		}
		if (connect(fd, (const struct sockaddr *)&ep->addr, ep->len) == 0)
			return fd;
		int err = errno;

		close(fd);
		if (err != ECONNREFUSED && err != ECONNRESET && err != ETIMEDOUT && err != EINTR &&
		    err != ENODEV) {
			printf("CTL-RELAY-ERROR connect(%s): %s\n", what, strerror(err));
			return -1;
		}
		if (left_ms() <= RETRY_MS) {
			printf("CTL-RELAY-ERROR connect(%s): %s until the deadline\n", what,
			       strerror(err));
			return -1;
		}
		usleep(RETRY_MS * 1000);
	}
}

/* One direction of the copy: a buffer between reading @from and writing @to. */
struct pipe_dir {
	int from, to;
	char buf[RELAY_BUF];
	size_t len, off;
	bool eof; /* read side ended; shutdown(to, SHUT_WR) once drained */
	bool done;
	unsigned long long bytes;
};

/* Move what can move without blocking; 0, or -1 on a socket error (reported). */
static int pipe_step(struct pipe_dir *d, short rev_from, short rev_to)
{
	if (!d->eof && d->len == 0 && (rev_from & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = recv(d->from, d->buf, sizeof(d->buf), MSG_DONTWAIT);

		if (n > 0) {
			d->len = (size_t)n;
			d->off = 0;
		} else if (n == 0) {
			d->eof = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			printf("CTL-RELAY-ERROR recv: %s\n", strerror(errno));
			return -1;
		}
	}
	if (d->len && (rev_to & (POLLOUT | POLLERR))) {
		ssize_t n = send(d->to, d->buf + d->off, d->len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			d->off += (size_t)n;
			d->len -= (size_t)n;
			d->bytes += (unsigned long long)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			printf("CTL-RELAY-ERROR send: %s\n", strerror(errno));
			return -1;
		}
	}
	if (d->eof && !d->len && !d->done) {
		shutdown(d->to, SHUT_WR);
		d->done = true;
	}
	return 0;
}

static int relay(int a, int b)
{
	static struct pipe_dir ab, ba;

	ab = (struct pipe_dir){ .from = a, .to = b };
	ba = (struct pipe_dir){ .from = b, .to = a };
	while (!ab.done || !ba.done) {
		struct pollfd p[2] = { { .fd = a }, { .fd = b } };
		int n;

		/* Read only into an empty buffer; write only what is buffered. */
		if (!ab.eof && !ab.len)
			p[0].events |= POLLIN;
		if (!ba.eof && !ba.len)
			p[1].events |= POLLIN;
		if (ab.len)
			p[1].events |= POLLOUT;
		if (ba.len)
			p[0].events |= POLLOUT;
		/* A hung-up socket with nothing asked of it must not wake poll(). */
		for (int i = 0; i < 2; i++)
			if (!p[i].events)
				p[i].fd = -1;
		n = poll(p, 2, left_ms());
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			printf("CTL-RELAY-ERROR %s\n",
			       n ? strerror(errno) : "deadline while relaying");
			return -1;
		}
		if (pipe_step(&ab, p[0].revents, p[1].revents) ||
		    pipe_step(&ba, p[1].revents, p[0].revents))
			return -1;
	}
	printf("CTL-RELAY done a2b=%llu b2a=%llu\n", ab.bytes, ba.bytes);
	return 0;
}

int main(int argc, char **argv)
{
	struct endpoint in_ep, out_ep;
	unsigned long timeout_s = 600, port;
	int a, b, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4 && argc != 6)
		usage();
	if (argc == 6 &&
	    (strcmp(argv[4], "--timeout") || parse_uint(argv[5], 86400, &timeout_s) || !timeout_s))
		usage();
	deadline_ms = now_ms() + (long long)timeout_s * 1000;
	if (parse_uint(argv[2], 0xffffffffUL, &port))
		usage();
	memset(&in_ep, 0, sizeof(in_ep));
	if (!strcmp(argv[1], "vsock-to-tcp")) {
		in_ep.family = AF_VSOCK;
		in_ep.addr.vm.svm_family = AF_VSOCK;
		in_ep.addr.vm.svm_cid = VMADDR_CID_ANY;
		in_ep.addr.vm.svm_port = (unsigned int)port;
		in_ep.len = sizeof(in_ep.addr.vm);
		if (parse_endpoint(argv[3], AF_INET, &out_ep))
			usage();
	} else if (!strcmp(argv[1], "tcp-to-vsock")) {
		if (!port || port > 65535)
			usage();
		in_ep.family = AF_INET;
		in_ep.addr.in.sin_family = AF_INET;
		in_ep.addr.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		in_ep.addr.in.sin_port = htons((unsigned short)port);
		in_ep.len = sizeof(in_ep.addr.in);
		if (parse_endpoint(argv[3], AF_VSOCK, &out_ep))
			usage();
	} else {
		usage();
	}
	a = accept_one(&in_ep, argv[1]);
	if (a < 0)
		return 1;
	b = connect_retry(&out_ep, argv[3]);
	if (b < 0) {
		close(a);
		return 1;
	}
	printf("CTL-RELAY connected %s -> %s\n", argv[1], argv[3]);
	rc = relay(a, b);
	close(a);
	close(b);
	return rc ? 1 : 0;
}
