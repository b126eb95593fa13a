// SPDX-License-Identifier: MIT
/*
 * uds-peer: the host side of the end-to-end vsock tests, over skiff's hybrid
 * Unix sockets (Firecracker model, see skiff/vsock_dev.h):
 *
 *   uds-peer listen UDS PORT [plan]    listen on UDS_PORT, accept --conns
 *                                      guest-initiated connections
 *   uds-peer connect UDS PORT [plan]   open --conns host-initiated connections
 *                                      ("CONNECT PORT\n", then "OK <n>\n"), one
 *                                      after the other, so the guest accepts
 *                                      them in index order
 *
 * Plan of connection i (accept/connect order, 0-based), like the guest's
 * vsock-tool (tests/guest-programs):
 *   --send N      stream: N bytes of the pattern seed+i (pattern.h);
 *                 seqpacket: N messages, sizes cycling through --msg-sizes,
 *                 contents the pattern stream cut into messages
 *   --recv        receive until EOF; payload FNV-1a and counts are reported
 *                 (the caller compares them with the guest's); seqpacket
 *                 message sizes are checked against --msg-sizes
 *   --order both|send-first|recv-first   send-first: send, SHUT_WR, then
 *                 receive; recv-first: receive to EOF, then send, SHUT_WR
 *   --expect-refused   connect: the device must refuse each of the --conns
 *                 connections (closed or reset without "OK"); they are tried
 *                 one after the other and each one's wait is timed
 *   --oneshot     connect: a one-shot sender (socat -u FILE UNIX-CONNECT):
 *                 the CONNECT line and the data in one write, then
 *                 SHUT_WR and close, never reading "OK"
 *   --type stream|seqpacket, --conns N, --seed S, --msg-sizes A,B,..,
 *   --timeout S (default 120)
 *
 * Output: listen prints "UDS-PEER-LISTENING port=P" once listening; every run
 * ends with "UDS-PEER status=ok|fail key=value ..." (--expect-refused:
 * "UDS-PEER status=ok|fail mode=connect conns=N refused=N accepted=N
 * refuse_ns_max=NS", the longest wait from connect(2) to the refusal).
 * Exit: 0 ok, 1 fail, 2 usage, 3 timeout. A connection that ends with
 * ECONNRESET instead of EOF counts in resets= (and fails unless
 * --allow-reset).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"

#define MAX_CONNS 256
#define MAX_SIZES 32
#define CHUNK (64u * 1024u)

enum order { ORDER_BOTH, ORDER_SEND_FIRST, ORDER_RECV_FIRST };

static struct opts {
	bool listen, seqpacket, do_recv, expect_refused, allow_reset, oneshot;
	const char *uds;
	unsigned int port, conns, nsizes, timeout;
	uint64_t send_n, seed;
	uint32_t sizes[MAX_SIZES];
	enum order order;
} o = { .conns = 1, .timeout = 120, .seed = 1 };

struct conn {
	unsigned int idx;
	int fd;
	uint64_t sent, received, msgs_sent, msgs_received, send_fnv, recv_fnv;
	bool reset;
	int err;
	char detail[96];
};

static struct conn conns[MAX_CONNS];

static void fail(struct conn *c, int err, const char *what)
{
	if (c->err)
		return;
	c->err = err ? err : EPROTO;
	snprintf(c->detail, sizeof(c->detail), "%s", what);
}

static int send_all(int fd, const uint8_t *buf, size_t len, int flags)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | flags);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * --oneshot: "CONNECT <port>\n" and the first bytes of the pattern in one
 * write, as printf 'CONNECT 6003\nhello' | socat -u - UNIX-CONNECT:uds does.
 * Return: true when sent (c->sent and c->send_fnv count the data part).
 */
static bool oneshot_first(struct conn *c, uint8_t *buf, uint64_t seed)
{
	int hl = snprintf((char *)buf, 32, "CONNECT %u\n", o.port);
	size_t n = o.send_n < CHUNK - 32 ? (size_t)o.send_n : CHUNK - 32;
	int r;

	skiff_pattern_fill(buf + hl, n, seed, 0);
	r = send_all(c->fd, buf, (size_t)hl + n, 0);
	if (r) {
		fail(c, -r, "send_oneshot");
		return false;
	}
	c->send_fnv = skiff_fnv1a(c->send_fnv, buf + hl, n);
	c->sent = n;
	return true;
}

static void do_send(struct conn *c)
{
	uint64_t seed = o.seed + c->idx, off = 0, k;
	uint8_t *buf = malloc(CHUNK);
	int r;

	c->send_fnv = SKIFF_FNV_INIT;
	if (!buf)
		return fail(c, ENOMEM, "alloc");
	if (!o.seqpacket) {
		if (o.oneshot && oneshot_first(c, buf, seed))
			off = c->sent;
		while (off < o.send_n) {
			size_t n = o.send_n - off < CHUNK ? (size_t)(o.send_n - off) : CHUNK;

			skiff_pattern_fill(buf, n, seed, off);
			r = send_all(c->fd, buf, n, 0);
			if (r) {
				fail(c, -r, "send");
				break;
			}
			c->send_fnv = skiff_fnv1a(c->send_fnv, buf, n);
			off += n;
			c->sent = off;
		}
	} else {
		for (k = 0; k < o.send_n; k++) {
			size_t n = o.sizes[k % o.nsizes];

			skiff_pattern_fill(buf, n, seed, off);
			r = send_all(c->fd, buf, n, 0);
			if (r) {
				fail(c, -r, "send_msg");
				break;
			}
			c->send_fnv = skiff_fnv1a(c->send_fnv, buf, n);
			off += n;
			c->sent = off;
			c->msgs_sent++;
		}
	}
	free(buf);
}

static void do_recv(struct conn *c)
{
	uint8_t *buf = malloc(CHUNK + 1);

	c->recv_fnv = SKIFF_FNV_INIT;
	if (!buf)
		return fail(c, ENOMEM, "alloc");
	for (;;) {
		ssize_t n = recv(c->fd, buf, CHUNK + 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno == ECONNRESET) {
				c->reset = true;
				if (!o.allow_reset)
					fail(c, ECONNRESET, "recv");
			} else {
				fail(c, errno, "recv");
			}
			break;
		}
		if (n == 0)
			break;
		if (o.seqpacket) {
			uint32_t want = o.sizes[c->msgs_received % o.nsizes];

			if ((size_t)n != want) {
				char d[64];

				snprintf(d, sizeof(d), "msg_%" PRIu64 "_len_%zd_want_%u",
					 c->msgs_received, n, want);
				fail(c, EBADMSG, d);
			}
			c->msgs_received++;
		}
		c->recv_fnv = skiff_fnv1a(c->recv_fnv, buf, (size_t)n);
		c->received += (uint64_t)n;
	}
	free(buf);
}

static void *send_main(void *p)
{
	struct conn *c = p;

	do_send(c);
	if (shutdown(c->fd, SHUT_WR) < 0 && errno != ENOTCONN)
		fail(c, errno, "shutdown");
	return NULL;
}

static void *conn_main(void *p)
{
	struct conn *c = p;
	pthread_t th;

	switch (o.order) {
	case ORDER_SEND_FIRST:
		send_main(c);
		if (o.do_recv)
			do_recv(c);
		break;
	case ORDER_RECV_FIRST:
		if (o.do_recv)
			do_recv(c);
		send_main(c);
		break;
	default:
		if (pthread_create(&th, NULL, send_main, c)) {
			fail(c, EAGAIN, "thread");
			break;
		}
		if (o.do_recv)
			do_recv(c);
		pthread_join(th, NULL);
	}
	close(c->fd);
	return NULL;
}

static int connect_one(struct conn *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[64], req[32];
	size_t n = 0;
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o.uds);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto err;
	snprintf(req, sizeof(req), "CONNECT %u\n", o.port);
	if (o.oneshot) {
		c->fd = fd; /* do_send() puts the line before the data, "OK" is never read */
		return 0;
	}
	if (send_all(fd, (const uint8_t *)req, strlen(req), 0))
		goto err;
	/* Byte by byte: nothing past the line may be taken from the stream. */
	while (n < sizeof(line) - 1) {
		ssize_t r = read(fd, line + n, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (line[n++] == '\n')
			break;
	}
	line[n] = 0;
	if (strncmp(line, "OK ", 3) || line[n - 1] != '\n') {
		close(fd);
		return -ECONNREFUSED;
	}
	c->fd = fd;
	return 0;
err:
	n = (size_t)errno;
	close(fd);
	return -(int)n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * --expect-refused: try the --conns connections one after the other; each
 * must end without "OK" (EOF or a reset). A connection that is accepted is
 * closed at once and fails the run, as does any other error (no socket at
 * UDS, ...). Return: the exit status.
 */
static int expect_refusals(void)
{
	uint64_t most = 0;
	unsigned int i, refused = 0, accepted = 0;
	int err = 0;

	for (i = 0; i < o.conns; i++) {
		struct conn c = { .idx = i, .fd = -1 };
		uint64_t t0 = now_ns(), dt;
		int r = connect_one(&c);

		dt = now_ns() - t0;
		most = dt > most ? dt : most;
		if (r == -ECONNREFUSED) {
			refused++;
		} else if (!r) {
			accepted++;
			close(c.fd);
		} else if (!err) {
			err = -r; /* the first other failure is reported */
		}
	}
	printf("UDS-PEER status=%s mode=connect conns=%u refused=%u accepted=%u refuse_ns_max=%" PRIu64,
	       refused == o.conns ? "ok" : "fail", o.conns, refused, accepted, most);
	if (err)
		printf(" error=%s", strerror(err));
	printf("\n");
	return refused == o.conns ? 0 : 1;
}

static int listen_port(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, (o.seqpacket ? SOCK_SEQPACKET : SOCK_STREAM) | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", o.uds, o.port);
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, MAX_CONNS) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static void on_alarm(int sig)
{
	static const char msg[] = "UDS-PEER status=fail error=ETIMEDOUT where=timeout\n";
	ssize_t r = write(STDOUT_FILENO, msg, sizeof(msg) - 1);

	(void)sig;
	(void)r;
	_exit(3);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'K':
		return v << 10;
	case 'M':
		return v << 20;
	case 'G':
		return v << 30;
	case 0:
		return v;
	}
	fprintf(stderr, "uds-peer: bad size '%s'\n", s);
	exit(2);
}

static void parse_sizes(const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL;

	for (tok = strtok_r(dup, ",", &save); tok && o.nsizes < MAX_SIZES;
	     tok = strtok_r(NULL, ",", &save))
		o.sizes[o.nsizes++] = (uint32_t)parse_size(tok);
	free(dup);
}

static int usage(void)
{
	fprintf(stderr, "usage: uds-peer listen|connect UDS PORT [--send N] [--recv] [--conns N]\n"
			"       [--type stream|seqpacket] [--msg-sizes A,B] [--seed S]\n"
			"       [--order both|send-first|recv-first] [--expect-refused]\n"
			"       [--allow-reset] [--oneshot] [--timeout S]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "send", required_argument, NULL, 's' },
		{ "recv", no_argument, NULL, 'r' },
		{ "conns", required_argument, NULL, 'n' },
		{ "type", required_argument, NULL, 't' },
		{ "msg-sizes", required_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 'S' },
		{ "order", required_argument, NULL, 'o' },
		{ "expect-refused", no_argument, NULL, 'x' },
		{ "allow-reset", no_argument, NULL, 'R' },
		{ "oneshot", no_argument, NULL, '1' },
		{ "timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t sent = 0, recvd = 0, ms = 0, mr = 0, sf = 0, rf = 0;
	unsigned int i, ok = 0, resets = 0;
	pthread_t th[MAX_CONNS];
	struct conn *bad = NULL;
	int opt, lfd = -1;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.send_n = parse_size(optarg);
			break;
		case 'r':
			o.do_recv = true;
			break;
		case 'n':
			o.conns = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o.seqpacket = !strcmp(optarg, "seqpacket");
			break;
		case 'm':
			parse_sizes(optarg);
			break;
		case 'S':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			o.order = !strcmp(optarg, "send-first") ? ORDER_SEND_FIRST :
				  !strcmp(optarg, "recv-first") ? ORDER_RECV_FIRST :
								  ORDER_BOTH;
			break;
		case 'x':
			o.expect_refused = true;
			break;
		case 'R':
			o.allow_reset = true;
			break;
		case '1':
			o.oneshot = true;
			break;
		case 'T':
			o.timeout = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != 3 || o.conns == 0 || o.conns > MAX_CONNS)
		return usage();
	o.listen = !strcmp(argv[optind], "listen");
	if (!o.listen && strcmp(argv[optind], "connect"))
		return usage();
	o.uds = argv[optind + 1];
	o.port = (unsigned int)strtoul(argv[optind + 2], NULL, 0);
	if (!o.nsizes)
		o.sizes[o.nsizes++] = 4096;
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	alarm(o.timeout);
	if (o.expect_refused && !o.listen)
		return expect_refusals();

	if (o.listen) {
		lfd = listen_port();
		if (lfd < 0) {
			printf("UDS-PEER status=fail error=%s where=listen\n", strerror(-lfd));
			return 1;
		}
		printf("UDS-PEER-LISTENING port=%u\n", o.port);
		fflush(stdout);
	}
	for (i = 0; i < o.conns; i++) {
		struct conn *c = &conns[i];
		int r;

		c->idx = i;
		if (o.listen) {
			c->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			r = c->fd < 0 ? -errno : 0;
		} else {
			r = connect_one(c);
		}
		if (r) {
			printf("UDS-PEER status=fail error=%s where=%s conn=%u\n", strerror(-r),
			       o.listen ? "accept" : "connect", i);
			return 1;
		}
		if (pthread_create(&th[i], NULL, conn_main, c)) {
			printf("UDS-PEER status=fail error=EAGAIN where=thread\n");
			return 1;
		}
	}
	for (i = 0; i < o.conns; i++) {
		struct conn *c = &conns[i];

		pthread_join(th[i], NULL);
		sent += c->sent;
		recvd += c->received;
		ms += c->msgs_sent;
		mr += c->msgs_received;
		sf ^= o.send_n ? c->send_fnv : 0;
		rf ^= o.do_recv ? c->recv_fnv : 0;
		resets += c->reset;
		if (!c->err)
			ok++;
		else if (!bad)
			bad = c;
	}
	printf("UDS-PEER status=%s mode=%s type=%s conns=%u ok=%u sent=%" PRIu64
	       " received=%" PRIu64 " msgs_sent=%" PRIu64 " msgs_received=%" PRIu64
	       " send_fnv=%016" PRIx64 " recv_fnv=%016" PRIx64 " resets=%u",
	       ok == o.conns ? "ok" : "fail", o.listen ? "listen" : "connect",
	       o.seqpacket ? "seqpacket" : "stream", o.conns, ok, sent, recvd, ms, mr, sf, rf,
	       resets);
	if (bad)
		printf(" error=%s conn=%u detail=%s", strerror(bad->err), bad->idx, bad->detail);
	printf("\n");
	if (lfd >= 0)
		close(lfd);
	return ok == o.conns ? 0 : 1;
}
