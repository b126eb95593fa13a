// SPDX-License-Identifier: MIT
/*
 * vsock-tool: the guest side of skiff's end-to-end vsock tests (static, runs in the
 * UML and QEMU guests' initramfs), and with uds: addresses their host side too.
 *
 *   vsock-tool connect CID:PORT [plan options]   open --conns connections, run the plan
 *   vsock-tool listen PORT [plan options]        accept --conns connections, run the plan
 *   vsock-tool fetch CID:PORT [--connect-timeout MS]   copy what the peer sends to stdout
 *
 * On the host, the same plans run over skiff's hybrid Unix sockets (DESIGN.md, host side):
 *   vsock-tool connect uds:PATH:PORT   connect to the device's socket PATH, send
 *                                      "CONNECT PORT\n", expect "OK <n>\n", run the plan
 *   vsock-tool listen uds:PATH         listen on PATH (e.g. <uds_path>_<port>)
 * --type picks the Unix socket type the same way.
 *
 * The plan of one connection (i = connection index, 0-based):
 *   --send N       stream: send N bytes of pattern seed+i (pattern.h);
 *                  seqpacket: send N messages, sizes cycling through --msg-sizes,
 *                  contents the same pattern stream cut into messages
 *   --recv N       expect exactly that from the peer (pattern peer-seed+i), then EOF
 *                  (unless --no-eof); every byte and every message length is checked
 *   --order both|send-first|recv-first   both: send and receive at once (2 threads)
 *   --shut-wr      shutdown(SHUT_WR) after the last send (half-close)
 *   --echo         send back everything received until EOF, then shut down
 *   --pingpong N   N round trips of --chunk bytes (stream) or one message (seqpacket)
 *                  against an echoing peer; reports RTT
 *   --expect-error NAME   connect() must fail with errno NAME (e.g. ECONNRESET)
 *   --hold         keep the connections open after the plan, until killed
 *   --reboot       after the plan, reboot(RB_AUTOBOOT) with the connections open
 * Several connections: the sender of connection i uses seed+i. Connections are accepted
 * in no particular order, so a receiver of --conns N > 1 identifies each one by its first
 * 8 bytes (the first pattern word of peer-seed+j, j < N, each j once); host peers should
 * do the same. Seqpacket does so only if the first message has 8 bytes or more,
 * otherwise the index is the accept (listen) or start (connect) order.
 * Other options: --type stream|seqpacket, --conns N, --seed S, --peer-seed S (default:
 * --seed), --chunk BYTES (read/write size, default 64K), --msg-sizes A,B,..,
 * --eor (send with MSG_EOR, require MSG_EOR on receipt), --rcvlowat N, --buf-size BYTES
 * (SO_VM_SOCKETS_BUFFER_SIZE), --recv-rate BYTES (stream: read at most that many bytes per
 * second, a slow reader), --recv-stall MS (stream: sleep that long once, after the first
 * bytes arrive),
 * --connect-timeout MS, --timeout S (default 60),
 * --verbose (one VSOCK-CONN line per connection). Sizes take K, M, G suffixes (binary).
 *
 * Output: listen prints "VSOCK-TOOL-LISTENING port=P" (uds: "... path=PATH") once it
 * listens. Every run ends
 * with one line "VSOCK-TOOL status=ok|fail key=value ..." (see print_summary()).
 * Exit status: 0 ok, 1 fail, 2 usage, 3 timeout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#include "pattern.h"

#define MAX_SIZES 32
#define MAX_CONNS 1024

enum mode { MODE_CONNECT, MODE_LISTEN, MODE_FETCH };
enum order { ORDER_BOTH, ORDER_SEND_FIRST, ORDER_RECV_FIRST };

struct opts {
	enum mode mode;
	unsigned int cid;
	unsigned int port;
	int type;
	unsigned int conns;
	bool do_send, do_recv;
	uint64_t send_n, recv_n;
	bool no_eof, shut_wr, echo, hold, do_reboot, eor, verbose;
	enum order order;
	uint64_t seed, peer_seed;
	bool peer_seed_set;
	size_t chunk;
	size_t sizes[MAX_SIZES];
	unsigned int nsizes;
	size_t max_size;
	uint64_t pingpong;
	int expect_errno;
	int rcvlowat;
	uint64_t buf_size;
	uint64_t recv_rate; /* bytes per second, 0: as fast as possible */
	unsigned int recv_stall_ms;
	unsigned int connect_timeout_ms;
	unsigned int timeout_s;
	bool uds; /* host side: hybrid Unix sockets instead of AF_VSOCK */
	struct sockaddr_un uds_sa; /* uds: the socket path */
};

/* One connection's outcome; written only by the threads of that connection. */
struct conn {
	const struct opts *o;
	unsigned int idx;
	int fd;
	uint64_t sent, received, msgs_sent, msgs_received;
	uint64_t send_fnv, recv_fnv;
	uint64_t connect_ns;
	uint64_t recv_seed; /* the peer's seed this connection's data matched */
	uint64_t *rtt;
	int err; /* positive errno of the first failure, 0 if none */
	const char *where; /* what failed: connect, send, recv, ... */
	char detail[64]; /* one token, no spaces */
	/* The sender thread of ORDER_BOTH reports here and is merged after join. */
	int send_err;
	const char *send_where;
	char send_detail[64];
};

static const struct {
	const char *name;
	int e;
} errnames[] = {
	{ "ECONNRESET", ECONNRESET },	{ "ECONNREFUSED", ECONNREFUSED },
	{ "ETIMEDOUT", ETIMEDOUT },	{ "EPIPE", EPIPE },
	{ "ENOTCONN", ENOTCONN },	{ "EHOSTUNREACH", EHOSTUNREACH },
	{ "ENETUNREACH", ENETUNREACH }, { "ENODEV", ENODEV },
	{ "EMSGSIZE", EMSGSIZE },	{ "EINTR", EINTR },
	{ "EAGAIN", EAGAIN },		{ "EBADMSG", EBADMSG },
	{ "EPROTO", EPROTO },		{ "EINVAL", EINVAL },
	{ "EADDRINUSE", EADDRINUSE },	{ "ENOMEM", ENOMEM },
	{ "ENOBUFS", ENOBUFS },		{ "EAFNOSUPPORT", EAFNOSUPPORT },
	{ "ESHUTDOWN", ESHUTDOWN },	{ "ECONNABORTED", ECONNABORTED },
	{ "EOVERFLOW", EOVERFLOW },	{ "ENODATA", ENODATA },
};

/* errno value -> "ECONNRESET"; unknown values become "E<number>" in buf. */
static const char *errno_name(int e, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].e == e)
			return errnames[i].name;
	snprintf(buf, len, "E%d", e);
	return buf;
}

static int errno_parse(const char *s)
{
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (!strcmp(errnames[i].name, s))
			return errnames[i].e;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: vsock-tool connect CID:PORT | listen PORT | fetch CID:PORT "
			"[options]; see the comment at the top of vsock-tool.c\n");
	exit(2);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		usage();
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		usage();
	return v;
}

static void parse_uds(const char *s, struct opts *o, bool with_port)
{
	const char *path = s + 4, *end = path + strlen(path);

	if (with_port) {
		end = strrchr(path, ':');
		if (!end)
			usage();
		o->port = (unsigned int)parse_size(end + 1);
	}
	if (end == path || (size_t)(end - path) >= sizeof(o->uds_sa.sun_path))
		usage();
	o->uds = true;
	o->uds_sa.sun_family = AF_UNIX;
	memcpy(o->uds_sa.sun_path, path, (size_t)(end - path));
}

static void parse_cid_port(const char *s, struct opts *o)
{
	char *end;
	unsigned long cid;

	errno = 0;
	cid = strtoul(s, &end, 0);
	if (errno || end == s || *end != ':' || cid > UINT32_MAX)
		usage();
	o->cid = (unsigned int)cid;
	o->port = (unsigned int)parse_size(end + 1);
}

static void set_fail(struct conn *c, int err, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Record the connection's first failure (later ones are consequences). */
static void set_fail(struct conn *c, int err, const char *where, const char *fmt, ...)
{
	va_list ap;

	if (c->err)
		return;
	c->err = err ? err : EPROTO;
	c->where = where;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
}

static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;
static bool seed_claimed[MAX_CONNS]; /* protected by claim_lock */

/*
 * Which connection of the peer is this? Find the unclaimed j < conns whose pattern
 * (peer-seed + j) starts with the 8 bytes in first, claim it and return its seed in
 * *seed. Returns 0, or -ENOENT if no unclaimed seed matches.
 */
static int claim_seed(const struct opts *o, const uint8_t *first, uint64_t *seed)
{
	uint8_t w[8];

	for (unsigned int j = 0; j < o->conns; j++) {
		bool mine = false;

		skiff_pattern_fill(w, sizeof(w), o->peer_seed + j, 0);
		if (memcmp(w, first, sizeof(w)))
			continue;
		pthread_mutex_lock(&claim_lock);
		if (!seed_claimed[j])
			mine = seed_claimed[j] = true;
		pthread_mutex_unlock(&claim_lock);
		if (mine) {
			*seed = o->peer_seed + j;
			return 0;
		}
	}
	return -ENOENT;
}

static size_t msg_size(const struct opts *o, uint64_t k)
{
	return o->sizes[k % o->nsizes];
}

static int send_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send the plan's data. Failures go to c (or c->send_* from the ORDER_BOTH thread). */
static void do_send(struct conn *c, int *err, const char **where, char *detail)
{
	const struct opts *o = c->o;
	uint64_t seed = o->seed + c->idx, off = 0, k;
	size_t blen = o->type == SOCK_STREAM ? o->chunk : o->max_size;
	uint8_t *buf = malloc(blen ? blen : 1);
	int ret;

	c->send_fnv = SKIFF_FNV_INIT;
	if (!buf) {
		*err = ENOMEM;
		*where = "send";
		return;
	}
	if (o->type == SOCK_STREAM) {
		while (off < o->send_n) {
			size_t n =
				o->send_n - off < o->chunk ? (size_t)(o->send_n - off) : o->chunk;

			skiff_pattern_fill(buf, n, seed, off);
			ret = send_all(c->fd, buf, n);
			if (ret) {
				*err = -ret;
				*where = "send";
				snprintf(detail, 64, "at_offset_%" PRIu64, off);
				goto out;
			}
			c->send_fnv = skiff_fnv1a(c->send_fnv, buf, n);
			off += n;
			c->sent = off;
		}
	} else {
		for (k = 0; k < o->send_n; k++) {
			size_t n = msg_size(o, k);
			ssize_t r;

			skiff_pattern_fill(buf, n, seed, off);
			do
				r = send(c->fd, buf, n, MSG_NOSIGNAL | (o->eor ? MSG_EOR : 0));
			while (r < 0 && errno == EINTR);
			if (r < 0 || (size_t)r != n) {
				*err = r < 0 ? errno : EMSGSIZE;
				*where = "send";
				snprintf(detail, 64, "msg_%" PRIu64 "_size_%zu_sent_%zd", k, n, r);
				goto out;
			}
			c->send_fnv = skiff_fnv1a(c->send_fnv, buf, n);
			off += n;
			c->sent = off;
			c->msgs_sent = k + 1;
		}
	}
	if (o->shut_wr && shutdown(c->fd, SHUT_WR) < 0) {
		*err = errno;
		*where = "shutdown";
	}
out:
	free(buf);
}

/*
 * The slow reader of --recv-stall and --recv-rate: called after each read with the bytes
 * received so far (@off) since @t0 (now_ns()); sleeps the stall once, after the first
 * bytes, and then as long as @off is ahead of the rate.
 */
static void recv_pace(const struct opts *o, uint64_t off, uint64_t t0, bool *stalled)
{
	uint64_t due_ns, el;
	struct timespec ts;

	if (o->recv_stall_ms && !*stalled) {
		*stalled = true;
		ts.tv_sec = o->recv_stall_ms / 1000;
		ts.tv_nsec = (long)(o->recv_stall_ms % 1000) * 1000000L;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	if (!o->recv_rate)
		return;
	/* off / rate seconds: in ns without overflow for any off below 2^64 / 1e9 * rate */
	due_ns = off / o->recv_rate * 1000000000ull +
		 off % o->recv_rate * 1000000000ull / o->recv_rate;
	el = now_ns() - t0;
	if (due_ns <= el)
		return;
	ts.tv_sec = (time_t)((due_ns - el) / 1000000000ull);
	ts.tv_nsec = (long)((due_ns - el) % 1000000000ull);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Receive the plan's data and check every byte, message length and the EOF. */
static void do_recv(struct conn *c)
{
	const struct opts *o = c->o;
	uint64_t seed = o->peer_seed + c->idx, off = 0, k;
	size_t blen = o->type == SOCK_STREAM ? o->chunk : o->max_size + 1;
	uint8_t *buf = malloc(blen), *want = malloc(blen);
	uint64_t t0 = now_ns();
	bool stalled = false;
	ssize_t n;

	c->recv_fnv = SKIFF_FNV_INIT;
	c->recv_seed = seed;
	if (!buf || !want) {
		set_fail(c, ENOMEM, "recv", "alloc");
		goto out;
	}
	if (o->type == SOCK_STREAM && o->conns > 1 && o->recv_n >= 8) {
		size_t got = 0;

		while (got < 8) {
			n = recv(c->fd, buf + got, 8 - got, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				set_fail(c, n < 0 ? errno : ENODATA, "recv", "first_word");
				goto out;
			}
			got += (size_t)n;
		}
		if (claim_seed(o, buf, &seed)) {
			set_fail(c, EBADMSG, "recv", "first_word_matches_no_unclaimed_seed");
			goto out;
		}
		c->recv_seed = seed;
		c->recv_fnv = skiff_fnv1a(c->recv_fnv, buf, 8);
		off = 8;
		c->received = off;
	}
	if (o->type == SOCK_STREAM) {
		while (off < o->recv_n) {
			size_t ask = o->recv_n - off < blen ? (size_t)(o->recv_n - off) : blen;

			n = recv(c->fd, buf, ask, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				set_fail(c, errno, "recv", "at_offset_%" PRIu64, off);
				goto out;
			}
			if (n == 0) {
				set_fail(c, ENODATA, "recv", "eof_at_offset_%" PRIu64, off);
				goto out;
			}
			skiff_pattern_fill(want, (size_t)n, seed, off);
			if (memcmp(buf, want, (size_t)n)) {
				size_t i = 0;

				while (buf[i] == want[i])
					i++;
				set_fail(c, EBADMSG, "recv", "mismatch_at_offset_%" PRIu64,
					 off + i);
				goto out;
			}
			c->recv_fnv = skiff_fnv1a(c->recv_fnv, buf, (size_t)n);
			off += (uint64_t)n;
			c->received = off;
			recv_pace(o, off, t0, &stalled);
		}
	} else {
		for (k = 0; k < o->recv_n; k++) {
			size_t size = msg_size(o, k);
			struct iovec iov = { .iov_base = buf, .iov_len = blen };
			struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

			n = recvmsg(c->fd, &mh, 0);
			if (n < 0 && errno == EINTR) {
				k--;
				continue;
			}
			if (n < 0) {
				set_fail(c, errno, "recv", "msg_%" PRIu64, k);
				goto out;
			}
			if (n == 0) {
				set_fail(c, ENODATA, "recv", "eof_at_msg_%" PRIu64, k);
				goto out;
			}
			if ((size_t)n != size || (mh.msg_flags & MSG_TRUNC)) {
				set_fail(c, EMSGSIZE, "recv", "msg_%" PRIu64 "_len_%zd_want_%zu", k,
					 n, size);
				goto out;
			}
			if (o->eor && !(mh.msg_flags & MSG_EOR)) {
				set_fail(c, EPROTO, "recv", "msg_%" PRIu64 "_no_MSG_EOR", k);
				goto out;
			}
			if (k == 0 && o->conns > 1 && size >= 8) {
				if (claim_seed(o, buf, &seed)) {
					set_fail(c, EBADMSG, "recv",
						 "first_word_matches_no_unclaimed_seed");
					goto out;
				}
				c->recv_seed = seed;
			}
			skiff_pattern_fill(want, size, seed, off);
			if (memcmp(buf, want, size)) {
				set_fail(c, EBADMSG, "recv", "mismatch_in_msg_%" PRIu64, k);
				goto out;
			}
			c->recv_fnv = skiff_fnv1a(c->recv_fnv, buf, size);
			off += size;
			c->received = off;
			c->msgs_received = k + 1;
		}
	}
	if (!o->no_eof) {
		do
			n = recv(c->fd, buf, blen, 0);
		while (n < 0 && errno == EINTR);
		if (n > 0)
			set_fail(c, EBADMSG, "recv", "%zd_bytes_past_the_end", n);
		else if (n < 0)
			set_fail(c, errno, "recv", "waiting_for_eof");
	}
out:
	free(buf);
	free(want);
}

/* Send back what arrives until EOF (stream) or the peer closes (seqpacket). */
static void do_echo(struct conn *c)
{
	const struct opts *o = c->o;
	size_t blen = o->type == SOCK_STREAM ? o->chunk : 1u << 20;
	uint8_t *buf = malloc(blen);
	int ret;

	if (!buf) {
		set_fail(c, ENOMEM, "echo", "alloc");
		return;
	}
	for (;;) {
		ssize_t n = recv(c->fd, buf, blen, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			set_fail(c, errno, "echo", "recv_after_%" PRIu64, c->received);
			break;
		}
		if (n == 0) {
			if (shutdown(c->fd, SHUT_WR) < 0 && errno != ENOTCONN)
				set_fail(c, errno, "echo", "shutdown");
			break;
		}
		c->received += (uint64_t)n;
		c->msgs_received++;
		ret = send_all(c->fd, buf, (size_t)n);
		if (ret) {
			set_fail(c, -ret, "echo", "send_after_%" PRIu64, c->sent);
			break;
		}
		c->sent += (uint64_t)n;
		c->msgs_sent++;
	}
	free(buf);
}

/* Round trips against an echoing peer; each reply is checked. */
static void do_pingpong(struct conn *c)
{
	const struct opts *o = c->o;
	size_t len = o->type == SOCK_STREAM ? o->chunk : msg_size(o, 0);
	uint8_t *buf = malloc(len), *rx = malloc(len + 1);
	uint64_t seed = o->seed + c->idx, i;
	int ret;

	c->rtt = calloc(o->pingpong ? o->pingpong : 1, sizeof(*c->rtt));
	if (!buf || !rx || !c->rtt) {
		set_fail(c, ENOMEM, "pingpong", "alloc");
		goto out;
	}
	for (i = 0; i < o->pingpong; i++) {
		uint64_t t0 = now_ns();
		size_t got = 0;

		skiff_pattern_fill(buf, len, seed, i * len);
		ret = send_all(c->fd, buf, len);
		if (ret) {
			set_fail(c, -ret, "pingpong", "send_%" PRIu64, i);
			goto out;
		}
		while (got < len) {
			ssize_t n = recv(c->fd, rx + got, len + 1 - got, 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				set_fail(c, n < 0 ? errno : ENODATA, "pingpong", "recv_%" PRIu64,
					 i);
				goto out;
			}
			got += (size_t)n;
			if (o->type != SOCK_STREAM)
				break;
		}
		if (got != len || memcmp(rx, buf, len)) {
			set_fail(c, EBADMSG, "pingpong", "bad_reply_%" PRIu64, i);
			goto out;
		}
		c->rtt[i] = now_ns() - t0;
		c->sent += len;
		c->received += len;
	}
	if (shutdown(c->fd, SHUT_WR) < 0)
		set_fail(c, errno, "pingpong", "shutdown");
out:
	free(buf);
	free(rx);
}

static void *send_thread(void *arg)
{
	struct conn *c = arg;

	do_send(c, &c->send_err, &c->send_where, c->send_detail);
	return NULL;
}

/* Run the plan on a connected socket. */
static void run_plan(struct conn *c)
{
	const struct opts *o = c->o;
	pthread_t th;
	int ret;

	if (o->pingpong) {
		do_pingpong(c);
		return;
	}
	if (o->echo) {
		do_echo(c);
		return;
	}
	if (o->do_send && o->do_recv && o->order == ORDER_BOTH) {
		ret = pthread_create(&th, NULL, send_thread, c);
		if (ret) {
			set_fail(c, ret, "thread", "create");
			return;
		}
		do_recv(c);
		/* A failed receive must not leave the sender blocked on a full socket. */
		if (c->err)
			shutdown(c->fd, SHUT_RDWR);
		pthread_join(th, NULL);
		if (c->send_err)
			set_fail(c, c->send_err, c->send_where, "%s", c->send_detail);
		return;
	}
	if (o->do_recv && o->order == ORDER_RECV_FIRST)
		do_recv(c);
	if (o->do_send && !c->err) {
		do_send(c, &c->send_err, &c->send_where, c->send_detail);
		if (c->send_err)
			set_fail(c, c->send_err, c->send_where, "%s", c->send_detail);
	}
	if (o->do_recv && o->order != ORDER_RECV_FIRST && !c->err)
		do_recv(c);
}

/* --connect-timeout MS on vsock socket @fd, if given. Return: 0; -errno. */
static int set_connect_timeout(const struct opts *o, int fd)
{
	struct timeval tv = { .tv_sec = o->connect_timeout_ms / 1000,
			      .tv_usec = (o->connect_timeout_ms % 1000) * 1000 };

	if (o->connect_timeout_ms &&
	    setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT_NEW, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

static int set_sockopts(const struct opts *o, int fd)
{
	if (o->uds) {
		if (o->rcvlowat &&
		    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &o->rcvlowat, sizeof(o->rcvlowat)) < 0)
			return -errno;
		return 0;
	}
	if (o->buf_size) {
		unsigned long long v = o->buf_size;

		if (setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_BUFFER_MAX_SIZE, &v, sizeof(v)) < 0 ||
		    setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_BUFFER_SIZE, &v, sizeof(v)) < 0)
			return -errno;
	}
	if (o->rcvlowat &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &o->rcvlowat, sizeof(o->rcvlowat)) < 0)
		return -errno;
	return set_connect_timeout(o, fd);
}

/* Host side: "CONNECT <port>\n" on a connected Unix socket, then "OK <n>\n" back. */
static int uds_handshake(struct conn *c)
{
	char line[64];
	size_t len = 0;
	int n = snprintf(line, sizeof(line), "CONNECT %u\n", c->o->port);
	int ret = send_all(c->fd, (const uint8_t *)line, (size_t)n);

	if (ret)
		return ret;
	/*
	 * Stream: byte by byte, so nothing after the newline is consumed here. Seqpacket:
	 * the reply is one message.
	 */
	while (len < sizeof(line) - 1) {
		size_t ask = c->o->type == SOCK_STREAM ? 1 : sizeof(line) - 1;
		ssize_t r = recv(c->fd, line + len, ask, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ECONNRESET;
		len += (size_t)r;
		if (line[len - 1] == '\n')
			break;
	}
	line[len] = 0;
	return strncmp(line, "OK ", 3) || line[len - 1] != '\n' ? -EPROTO : 0;
}

static void *connect_thread(void *arg)
{
	struct conn *c = arg;
	const struct opts *o = c->o;
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK, .svm_cid = o->cid, .svm_port = o->port };
	uint64_t t0;
	int ret;

	c->fd = socket(o->uds ? AF_UNIX : AF_VSOCK, o->type, 0);
	if (c->fd < 0) {
		set_fail(c, errno, "socket", "-");
		return NULL;
	}
	ret = set_sockopts(o, c->fd);
	if (ret) {
		set_fail(c, -ret, "setsockopt", "-");
		return NULL;
	}
	t0 = now_ns();
	if (o->uds)
		ret = connect(c->fd, (const struct sockaddr *)&o->uds_sa, sizeof(o->uds_sa));
	else
		ret = connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
	if (ret < 0) {
		c->connect_ns = now_ns() - t0;
		set_fail(c, errno, "connect", "-");
		return NULL;
	}
	if (o->uds) {
		ret = uds_handshake(c);
		if (ret) {
			c->connect_ns = now_ns() - t0;
			set_fail(c, -ret, "connect", "handshake");
			return NULL;
		}
	}
	c->connect_ns = now_ns() - t0;
	if (o->expect_errno) {
		set_fail(c, EPROTO, "connect", "connected_but_expected_an_error");
		return NULL;
	}
	run_plan(c);
	return NULL;
}

static void *accepted_thread(void *arg)
{
	struct conn *c = arg;

	run_plan(c);
	return NULL;
}

static int percentile(const uint64_t *v, uint64_t n, unsigned int pct, uint64_t *out)
{
	uint64_t idx = n ? (n - 1) * pct / 100 : 0;

	*out = n ? v[idx] : 0;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The one result line. Keys: status, mode, type, conns, ok (connections without error),
 * sent, received (bytes), msgs_sent, msgs_received, send_fnv, recv_fnv (FNV-1a of each
 * connection's bytes, XORed over connections; for one connection the plain checksum),
 * elapsed_ns, connect_ns_max; on failure error, where, conn, detail of the first failed
 * connection; with --expect-error expected and got; with --pingpong rtt_{min,p50,p99,max,
 * avg}_ns and round_trips.
 */
static bool print_summary(const struct opts *o, struct conn *cs, unsigned int n, uint64_t elapsed)
{
	static const char *const modes[] = { "connect", "listen", "fetch" };
	uint64_t sent = 0, recvd = 0, msent = 0, mrecv = 0, sfnv = 0, rfnv = 0, cmax = 0;
	unsigned int ok = 0, i;
	struct conn *bad = NULL;
	char eb[16], eb2[16];
	bool good;

	for (i = 0; i < n; i++) {
		struct conn *c = &cs[i];
		bool c_ok = o->expect_errno ?
				    c->err == o->expect_errno && !strcmp(c->where, "connect") :
				    !c->err;

		sent += c->sent;
		recvd += c->received;
		msent += c->msgs_sent;
		mrecv += c->msgs_received;
		sfnv ^= c->send_fnv;
		rfnv ^= c->recv_fnv;
		if (c->connect_ns > cmax)
			cmax = c->connect_ns;
		if (c_ok)
			ok++;
		else if (!bad)
			bad = c;
		if (o->verbose)
			printf("VSOCK-CONN idx=%u peer_seed=%" PRIu64 " status=%s sent=%" PRIu64
			       " received=%" PRIu64 " send_fnv=%016" PRIx64 " recv_fnv=%016" PRIx64
			       " error=%s where=%s"
			       " detail=%s\n",
			       c->idx, c->recv_seed, c_ok ? "ok" : "fail", c->sent, c->received,
			       c->send_fnv, c->recv_fnv,
			       c->err ? errno_name(c->err, eb, sizeof(eb)) : "none",
			       c->where ? c->where : "-", c->detail[0] ? c->detail : "-");
	}
	good = n == o->conns && ok == n;
	printf("VSOCK-TOOL status=%s mode=%s type=%s conns=%u ok=%u sent=%" PRIu64
	       " received=%" PRIu64 " msgs_sent=%" PRIu64 " msgs_received=%" PRIu64
	       " send_fnv=%016" PRIx64 " recv_fnv=%016" PRIx64 " elapsed_ns=%" PRIu64
	       " connect_ns_max=%" PRIu64,
	       good ? "ok" : "fail", modes[o->mode],
	       o->type == SOCK_STREAM ? "stream" : "seqpacket", n, ok, sent, recvd, msent, mrecv,
	       sfnv, rfnv, elapsed, cmax);
	if (o->expect_errno)
		printf(" expected=%s got=%s", errno_name(o->expect_errno, eb, sizeof(eb)),
		       n && cs[0].err ? errno_name(cs[0].err, eb2, sizeof(eb2)) : "none");
	if (bad)
		printf(" error=%s where=%s conn=%u detail=%s",
		       bad->err ? errno_name(bad->err, eb, sizeof(eb)) : "none",
		       bad->where ? bad->where : "-", bad->idx, bad->detail[0] ? bad->detail : "-");
	if (o->pingpong && n) {
		uint64_t cnt = 0, sum = 0, p50, p99;
		uint64_t *all = calloc((size_t)o->pingpong * n, sizeof(*all));

		for (i = 0; all && i < n; i++) {
			uint64_t j;

			for (j = 0; cs[i].rtt && j < o->pingpong && cs[i].rtt[j]; j++) {
				all[cnt++] = cs[i].rtt[j];
				sum += cs[i].rtt[j];
			}
		}
		if (all && cnt) {
			qsort(all, cnt, sizeof(*all), cmp_u64);
			percentile(all, cnt, 50, &p50);
			percentile(all, cnt, 99, &p99);
			printf(" round_trips=%" PRIu64 " rtt_min_ns=%" PRIu64 " rtt_p50_ns=%" PRIu64
			       " rtt_p99_ns=%" PRIu64 " rtt_max_ns=%" PRIu64 " rtt_avg_ns=%" PRIu64,
			       cnt, all[0], p50, p99, all[cnt - 1], sum / cnt);
		}
		free(all);
	}
	printf("\n");
	fflush(stdout);
	return good;
}

static void on_alarm(int sig)
{
	static const char msg[] = "VSOCK-TOOL status=fail error=ETIMEDOUT where=timeout\n";
	ssize_t r = write(STDOUT_FILENO, msg, sizeof(msg) - 1);

	(void)sig;
	(void)r;
	_exit(3);
}

static int run_fetch(const struct opts *o)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK, .svm_cid = o->cid, .svm_port = o->port };
	char buf[4096];
	int fd = socket(AF_VSOCK, SOCK_STREAM, 0);

	if (fd < 0 || set_connect_timeout(o, fd) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "vsock-tool fetch %u:%u: %s\n", o->cid, o->port, strerror(errno));
		return 1;
	}
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "vsock-tool fetch: %s\n", strerror(errno));
			return 1;
		}
		if (n == 0)
			break;
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return 1;
	}
	close(fd);
	return fflush(stdout) ? 1 : 0;
}

static int listen_socket(const struct opts *o)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
				  .svm_cid = VMADDR_CID_ANY,
				  .svm_port = o->port };
	int fd = socket(o->uds ? AF_UNIX : AF_VSOCK, o->type, 0);
	char eb[16];
	int ret;

	if (o->uds)
		unlink(o->uds_sa.sun_path);
	if (fd < 0 || set_sockopts(o, fd) < 0)
		goto fail;
	if (o->uds)
		ret = bind(fd, (const struct sockaddr *)&o->uds_sa, sizeof(o->uds_sa));
	else
		ret = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (ret < 0 || listen(fd, (int)o->conns) < 0)
		goto fail;
	if (o->uds)
		printf("VSOCK-TOOL-LISTENING path=%s\n", o->uds_sa.sun_path);
	else
		printf("VSOCK-TOOL-LISTENING port=%u\n", o->port);
	fflush(stdout);
	return fd;
fail:
	printf("VSOCK-TOOL status=fail mode=listen error=%s where=listen\n",
	       errno_name(errno, eb, sizeof(eb)));
	fflush(stdout);
	return -1;
}

static void parse_sizes(struct opts *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;

	o->nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == MAX_SIZES)
			usage();
		o->sizes[o->nsizes++] = (size_t)parse_size(tok);
	}
	free(copy);
	if (!o->nsizes)
		usage();
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	enum {
		O_SEND = 256,
		O_RECV,
		O_NO_EOF,
		O_SHUT_WR,
		O_ECHO,
		O_ORDER,
		O_SEED,
		O_PEER_SEED,
		O_CHUNK,
		O_RATE,
		O_STALL,
		O_SIZES,
		O_PING,
		O_EXPECT,
		O_HOLD,
		O_REBOOT,
		O_EOR,
		O_LOWAT,
		O_BUF,
		O_CTMO,
		O_TMO,
		O_TYPE,
		O_CONNS,
		O_VERBOSE,
	};
	static const struct option lo[] = {
		{ "send", 1, NULL, O_SEND },
		{ "recv", 1, NULL, O_RECV },
		{ "no-eof", 0, NULL, O_NO_EOF },
		{ "shut-wr", 0, NULL, O_SHUT_WR },
		{ "echo", 0, NULL, O_ECHO },
		{ "order", 1, NULL, O_ORDER },
		{ "seed", 1, NULL, O_SEED },
		{ "peer-seed", 1, NULL, O_PEER_SEED },
		{ "chunk", 1, NULL, O_CHUNK },
		{ "msg-sizes", 1, NULL, O_SIZES },
		{ "pingpong", 1, NULL, O_PING },
		{ "expect-error", 1, NULL, O_EXPECT },
		{ "hold", 0, NULL, O_HOLD },
		{ "reboot", 0, NULL, O_REBOOT },
		{ "eor", 0, NULL, O_EOR },
		{ "rcvlowat", 1, NULL, O_LOWAT },
		{ "buf-size", 1, NULL, O_BUF },
		{ "recv-rate", 1, NULL, O_RATE },
		{ "recv-stall", 1, NULL, O_STALL },
		{ "connect-timeout", 1, NULL, O_CTMO },
		{ "timeout", 1, NULL, O_TMO },
		{ "type", 1, NULL, O_TYPE },
		{ "conns", 1, NULL, O_CONNS },
		{ "verbose", 0, NULL, O_VERBOSE },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	if (argc < 3)
		usage();
	if (!strcmp(argv[1], "connect"))
		o->mode = MODE_CONNECT;
	else if (!strcmp(argv[1], "listen"))
		o->mode = MODE_LISTEN;
	else if (!strcmp(argv[1], "fetch"))
		o->mode = MODE_FETCH;
	else
		usage();
	if (!strncmp(argv[2], "uds:", 4) && o->mode != MODE_FETCH)
		parse_uds(argv[2], o, o->mode == MODE_CONNECT);
	else if (o->mode == MODE_LISTEN)
		o->port = (unsigned int)parse_size(argv[2]);
	else
		parse_cid_port(argv[2], o);

	o->type = SOCK_STREAM;
	o->conns = 1;
	o->chunk = 64 << 10;
	o->timeout_s = 60;
	o->sizes[0] = 1;
	o->sizes[1] = 17;
	o->sizes[2] = 4096;
	o->sizes[3] = 65536;
	o->nsizes = 4;
	optind = 3;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_SEND:
			o->do_send = true;
			o->send_n = parse_size(optarg);
			break;
		case O_RECV:
			o->do_recv = true;
			o->recv_n = parse_size(optarg);
			break;
		case O_NO_EOF:
			o->no_eof = true;
			break;
		case O_SHUT_WR:
			o->shut_wr = true;
			break;
		case O_ECHO:
			o->echo = true;
			break;
		case O_ORDER:
			if (!strcmp(optarg, "both"))
				o->order = ORDER_BOTH;
			else if (!strcmp(optarg, "send-first"))
				o->order = ORDER_SEND_FIRST;
			else if (!strcmp(optarg, "recv-first"))
				o->order = ORDER_RECV_FIRST;
			else
				usage();
			break;
		case O_SEED:
			o->seed = parse_size(optarg);
			break;
		case O_PEER_SEED:
			o->peer_seed = parse_size(optarg);
			o->peer_seed_set = true;
			break;
		case O_CHUNK:
			o->chunk = (size_t)parse_size(optarg);
			break;
		case O_SIZES:
			parse_sizes(o, optarg);
			break;
		case O_PING:
			o->pingpong = parse_size(optarg);
			break;
		case O_EXPECT:
			o->expect_errno = errno_parse(optarg);
			if (!o->expect_errno)
				usage();
			break;
		case O_HOLD:
			o->hold = true;
			break;
		case O_REBOOT:
			o->do_reboot = true;
			break;
		case O_EOR:
			o->eor = true;
			break;
		case O_LOWAT:
			o->rcvlowat = (int)parse_size(optarg);
			break;
		case O_BUF:
			o->buf_size = parse_size(optarg);
			break;
		case O_RATE:
			o->recv_rate = parse_size(optarg);
			break;
		case O_STALL: {
			uint64_t ms = parse_size(optarg);

			if (ms > 3600000)
				usage();
			o->recv_stall_ms = (unsigned int)ms;
			break;
		}
		case O_CTMO:
			o->connect_timeout_ms = (unsigned int)parse_size(optarg);
			break;
		case O_TMO:
			o->timeout_s = (unsigned int)parse_size(optarg);
			break;
		case O_TYPE:
			if (!strcmp(optarg, "stream"))
				o->type = SOCK_STREAM;
			else if (!strcmp(optarg, "seqpacket"))
				o->type = SOCK_SEQPACKET;
			else
				usage();
			break;
		case O_CONNS:
			o->conns = (unsigned int)parse_size(optarg);
			break;
		case O_VERBOSE:
			o->verbose = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !o->chunk || !o->conns || o->conns > MAX_CONNS)
		usage();
	if (!o->peer_seed_set)
		o->peer_seed = o->seed;
	for (unsigned int i = 0; i < o->nsizes; i++) {
		if (!o->sizes[i])
			usage();
		if (o->sizes[i] > o->max_size)
			o->max_size = o->sizes[i];
	}
}

int main(int argc, char **argv)
{
	static struct opts o;
	struct conn *cs;
	pthread_attr_t attr;
	pthread_t *th;
	unsigned int i, started = 0;
	uint64_t t0;
	int lfd = -1;
	bool good;

	parse_args(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(o.timeout_s);
	if (o.mode == MODE_FETCH)
		return run_fetch(&o);

	cs = calloc(o.conns, sizeof(*cs));
	th = calloc(o.conns, sizeof(*th));
	if (!cs || !th)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	if (o.mode == MODE_LISTEN) {
		lfd = listen_socket(&o);
		if (lfd < 0)
			return 1;
	}
	t0 = now_ns();
	for (i = 0; i < o.conns; i++) {
		struct conn *c = &cs[i];
		int ret;

		c->o = &o;
		c->idx = i;
		c->fd = -1;
		if (o.mode == MODE_LISTEN) {
			c->fd = accept(lfd, NULL, NULL);
			if (c->fd < 0) {
				set_fail(c, errno, "accept", "-");
				break;
			}
			ret = pthread_create(&th[i], &attr, accepted_thread, c);
		} else {
			ret = pthread_create(&th[i], &attr, connect_thread, c);
		}
		if (ret) {
			set_fail(c, ret, "thread", "create");
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	good = print_summary(&o, cs, started < o.conns ? started + 1 : started, now_ns() - t0);
	if (o.do_reboot) {
		sync();
		reboot(RB_AUTOBOOT);
		perror("vsock-tool: reboot");
		return 1;
	}
	if (o.hold) {
		alarm(0);
		for (;;)
			pause(); /* until a signal or the guest's reboot ends it */
	}
	for (i = 0; i < o.conns; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	if (lfd >= 0)
		close(lfd);
	return good ? 0 : 1;
}
