// SPDX-License-Identifier: MIT
/*
 * dgram-bench: one side of one datagram throughput measurement (issue 18, the benchmark
 * bench/guest/dgram_bench.py drives). Linked statically, so that the same binary runs in
 * the UML guest and on the host.
 *
 *   dgram-bench send --proto P --to ADDR --size S [--senders N] [--seconds T]
 *                    [--bind ADDR] [--await-hello]
 *       N threads, each with its own socket, send S-byte datagrams to ADDR as fast as the
 *       socket lets them (blocking sends) for T seconds (default 1). --bind: sender i binds
 *       ADDR + i (below). --await-hello: each sender first waits (30 s at most) for one
 *       datagram on its bound socket and sends to the address it came from instead of
 *       --to (the host learns a guest's address so, as a real program would).
 *   dgram-bench recv --proto P --bind ADDR --size S [--seconds T] [--idle-ms M]
 *                    [--first-wait-ms F] [--hello ADDR] [--hello-count N] [--rcvbuf B]
 *       one socket bound to ADDR receives until M ms (default 1000) passed without a
 *       datagram, once the first one came; T + 5 s in all after it. When none came in F
 *       ms (default 30000), it reports 0 datagrams (all lost: a measurement, not a
 *       failure; a sender that never reached its peer fails on its own side). --hello: until the first datagram arrives, every 200 ms, send a 5-byte
 *       "HELLO" from the bound socket to ADDR + 0 .. ADDR + N - 1 (--await-hello's peers).
 *       --rcvbuf: SO_RCVBUF (default: the kernel's).
 *   dgram-bench limit --size S [--senders N] [--seconds T]
 *       the host's own limit for the same payloads: an AF_UNIX SOCK_DGRAM socketpair (N
 *       = 1), or N senders to one bound socket in the abstract namespace, in one process,
 *       a receiving thread draining it.
 *
 * Protocols and addresses (P, ADDR):
 *   vsock  CID:PORT, CID "any" = VMADDR_CID_ANY (AF_VSOCK SOCK_DGRAM: the patched
 *          guest kernel, guest-kernel-patches/series/README-dgram.md)
 *   udp    A.B.C.D:PORT
 *   unix   a path (AF_UNIX SOCK_DGRAM: skiff's host side, devices/virtio_vsock/README.md,
 *          Datagrams; U_dgram_<P> is host port P). ADDR + i adds i to the number the path
 *          ends in, as the port of the other two.
 *
 * Every datagram starts with a 16-byte header (magic, sender index, sequence number);
 * S is 16 .. 65536. The receiver counts a datagram whose length is not S or whose header
 * is wrong as bad, and one whose sequence number is not above its sender's last as
 * reordered; it reports seq_span, the sum over senders of the highest sequence number
 * seen + 1, a lower bound of what was sent.
 *
 * Output, one line:
 *   DGRAM-BENCH status=ok|fail mode=M proto=P size=S senders=N msgs=K bytes=B ns=T
 *     blocked=W errs=E bad=X reorder=Y seq_span=Z utime_us=U stime_us=V [err=NAME where=W]
 * msgs, bytes: datagrams sent (send), received (recv, limit: by the receiver); ns: send,
 * from the first send to the last one's return; recv and limit, from the first datagram
 * received to the last; blocked: sends that returned EAGAIN (a 200 ms SO_SNDTIMEO),
 * ENOBUFS or EINTR and were not counted as sent; errs: sends refused with ECONNREFUSED
 * (nobody bound at an AF_UNIX or vsock destination, or a connected UDP socket's ICMP
 * error), not counted either; utime_us, stime_us: this process's CPU time (getrusage)
 * over the run. recv prints "DGRAM-BENCH-BOUND" on a line of its own first, once its
 * socket is bound (a harness starts the sender then).
 * Exit status: 0 ok, 1 failure, 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "skiff/cli.h"

#include <linux/vm_sockets.h>

#define MAX_SIZE 65536u
#define MIN_SIZE 16u
#define MAX_SENDERS 64u
#define MAGIC 0x736b6467u /* "skdg" */
#define HELLO_WAIT_S 30

enum mode { MODE_SEND, MODE_RECV, MODE_LIMIT };
enum proto { PROTO_VSOCK, PROTO_UDP, PROTO_UNIX };

struct addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

struct opts {
	enum mode mode;
	enum proto proto;
	const char *to, *bind, *hello;
	unsigned int hello_count;
	size_t size;
	unsigned int senders;
	double seconds;
	unsigned int idle_ms, first_wait_ms;
	int rcvbuf;
	bool await_hello;
};

struct hdr {
	uint32_t magic;
	uint32_t sender;
	uint64_t seq;
};

struct result {
	uint64_t msgs, bytes, ns, blocked, errs, bad, reorder, seq_span;
	int err; /* positive errno of the failure, 0 if none */
	const char *where;
};

/* One sending thread's job and counts. */
struct sender {
	pthread_t tid;
	const struct opts *o;
	unsigned int idx;
	int fd;
	struct addr dst;
	uint64_t deadline_ns;
	uint64_t sent, blocked, errs, first_ns, last_ns;
	int err;
	const char *where;
};

static const char *const mode_names[] = { "send", "recv", "limit" };
static const char *const proto_names[] = { "vsock", "udp", "unix" };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int family_of(enum proto p)
{
	return p == PROTO_VSOCK ? AF_VSOCK : p == PROTO_UDP ? AF_INET : AF_UNIX;
}

/* "12345" at the end of @s: its start, or NULL when @s does not end in digits. */
static const char *trailing_number(const char *s)
{
	const char *e = s + strlen(s), *p = e;

	while (p > s && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return p < e ? p : NULL;
}

static int parse_port(const char *s, unsigned int off, unsigned int *port)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v + off > 0xffffffffu)
		return -EINVAL;
	*port = (unsigned int)(v + off);
	return 0;
}

/*
 * @s as an address of protocol @p, plus @off (the port, or the number the path ends in).
 * Returns 0, or -EINVAL for a malformed address or a path too long for sun_path.
 */
static int parse_addr(enum proto p, const char *s, unsigned int off, struct addr *a)
{
	char host[64];
	const char *colon = strrchr(s, ':'), *num;
	unsigned int port;

	memset(a, 0, sizeof(*a));
	if (p == PROTO_UNIX) {
		struct sockaddr_un *un = (struct sockaddr_un *)&a->ss;
		int n;

		num = trailing_number(s);
		if (off && !num)
			return -EINVAL;
		if (off) {
			if (parse_port(num, off, &port))
				return -EINVAL;
			n = snprintf(un->sun_path, sizeof(un->sun_path), "%.*s%u", (int)(num - s),
				     s, port);
		} else {
			n = snprintf(un->sun_path, sizeof(un->sun_path), "%s", s);
		}
		if (n <= 0 || (size_t)n >= sizeof(un->sun_path))
			return -EINVAL;
		un->sun_family = AF_UNIX;
		a->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
		return 0;
	}
	if (!colon || (size_t)(colon - s) >= sizeof(host) || parse_port(colon + 1, off, &port))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	if (p == PROTO_VSOCK) {
		struct sockaddr_vm *vm = (struct sockaddr_vm *)&a->ss;
		unsigned int cid;

		if (!strcmp(host, "any"))
			cid = VMADDR_CID_ANY;
		else if (parse_port(host, 0, &cid))
			return -EINVAL;
		vm->svm_family = AF_VSOCK;
		vm->svm_cid = cid;
		vm->svm_port = port;
		a->len = sizeof(*vm);
		return 0;
	}
	{
		struct sockaddr_in *in = (struct sockaddr_in *)&a->ss;

		if (port > 0xffff || inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		a->len = sizeof(*in);
	}
	return 0;
}

static int set_timeout(int fd, int opt, unsigned int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	return setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv)) ? -errno : 0;
}

/* A datagram socket of @o's protocol, bound to @o->bind + @off when @o->bind is set. */
static int open_socket(const struct opts *o, unsigned int off, const char **where)
{
	struct addr a;
	int fd, one = 1;

	fd = socket(family_of(o->proto), SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*where = "socket";
		return -errno;
	}
	if (o->proto == PROTO_UDP)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (o->bind) {
		if (parse_addr(o->proto, o->bind, off, &a)) {
			close(fd);
			*where = "bind-address";
			return -EINVAL;
		}
		if (o->proto == PROTO_UNIX)
			unlink(((struct sockaddr_un *)&a.ss)->sun_path);
		if (bind(fd, (struct sockaddr *)&a.ss, a.len)) {
			int e = -errno;

			close(fd);
			*where = "bind";
			return e;
		}
	}
	return fd;
}

static void fill(char *buf, size_t size, uint32_t sender)
{
	struct hdr h = { .magic = MAGIC, .sender = sender, .seq = 0 };

	for (size_t i = sizeof(h); i < size; i++)
		buf[i] = (char)(i * 31 + sender);
	memcpy(buf, &h, sizeof(h));
}

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	const struct opts *o = s->o;
	size_t size = o->size;
	char *buf = malloc(size);
	struct hdr h;
	uint64_t seq = 0, t;
	unsigned int n = 0;

	if (!buf) {
		s->err = ENOMEM;
		s->where = "malloc";
		return NULL;
	}
	fill(buf, size, s->idx);
	memcpy(&h, buf, sizeof(h));
	s->first_ns = now_ns();
	for (;;) {
		ssize_t r;

		if ((n++ & 7) == 0) {
			t = now_ns();
			if (t >= s->deadline_ns)
				break;
		}
		h.seq = seq;
		memcpy(buf, &h, sizeof(h));
		r = sendto(s->fd, buf, size, 0, s->dst.len ? (struct sockaddr *)&s->dst.ss : NULL,
			   s->dst.len);
		if (r == (ssize_t)size) {
			seq++;
			s->last_ns = now_ns();
			continue;
		}
		if (r >= 0) {
			s->err = EIO; /* a short datagram: cannot happen for SOCK_DGRAM */
			s->where = "sendto-short";
			break;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR) {
			s->blocked++;
			if (now_ns() >= s->deadline_ns)
				break; /* a blocked sender ends on time too */
			continue;
		}
		if (errno == ECONNREFUSED) {
			s->errs++;
			continue;
		}
		s->err = errno;
		s->where = "sendto";
		break;
	}
	s->sent = seq;
	free(buf);
	return NULL;
}

/* The sender's first datagram, on its bound socket: its source becomes the destination. */
static int await_hello(struct sender *s)
{
	char buf[64];
	ssize_t r;

	if (set_timeout(s->fd, SO_RCVTIMEO, HELLO_WAIT_S * 1000))
		return -errno;
	s->dst.len = sizeof(s->dst.ss);
	r = recvfrom(s->fd, buf, sizeof(buf), 0, (struct sockaddr *)&s->dst.ss, &s->dst.len);
	if (r < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if (s->dst.len == 0 || s->dst.ss.ss_family != family_of(s->o->proto))
		return -EDESTADDRREQ; /* an unbound sender: nothing to answer */
	return 0;
}

static int run_send(const struct opts *o, struct result *res)
{
	struct sender *ss = calloc(o->senders, sizeof(*ss));
	struct addr to;
	uint64_t first = UINT64_MAX, last = 0;
	unsigned int i, started = 0;
	int ret = 0;

	if (!ss) {
		res->where = "calloc";
		return -ENOMEM;
	}
	for (i = 0; i < o->senders; i++)
		ss[i].fd = -1;
	if (!o->await_hello && parse_addr(o->proto, o->to, 0, &to)) {
		res->where = "to-address";
		free(ss);
		return -EINVAL;
	}
	for (i = 0; i < o->senders; i++) {
		ss[i].o = o;
		ss[i].idx = i;
		ss[i].fd = open_socket(o, i, &res->where);
		if (ss[i].fd < 0) {
			ret = ss[i].fd;
			goto out;
		}
		if (o->await_hello) {
			ret = await_hello(&ss[i]);
			if (ret) {
				res->where = "await-hello";
				goto out;
			}
		} else {
			ss[i].dst = to;
		}
		if (set_timeout(ss[i].fd, SO_SNDTIMEO, 200)) {
			ret = -errno;
			res->where = "SO_SNDTIMEO";
			goto out;
		}
	}
	{
		uint64_t deadline = now_ns() + (uint64_t)(o->seconds * 1e9);

		for (i = 0; i < o->senders; i++) {
			ss[i].deadline_ns = deadline;
			if (pthread_create(&ss[i].tid, NULL, sender_main, &ss[i])) {
				ret = -EAGAIN;
				res->where = "pthread_create";
				break;
			}
			started++;
		}
	}
	for (i = 0; i < started; i++) {
		pthread_join(ss[i].tid, NULL);
		res->msgs += ss[i].sent;
		res->blocked += ss[i].blocked;
		res->errs += ss[i].errs;
		if (ss[i].sent && ss[i].first_ns < first)
			first = ss[i].first_ns;
		if (ss[i].last_ns > last)
			last = ss[i].last_ns;
		if (ss[i].err && !ret) {
			ret = -ss[i].err;
			res->where = ss[i].where;
		}
	}
	res->bytes = res->msgs * o->size;
	res->ns = res->msgs ? last - first : 0;
out:
	for (i = 0; i < o->senders; i++)
		if (ss[i].fd >= 0)
			close(ss[i].fd);
	free(ss);
	return ret;
}

/* Receive state: counts and each sender's last sequence number. */
struct rx {
	size_t size;
	uint64_t msgs, bytes, bad, reorder, first_ns, last_ns;
	uint64_t next_seq[MAX_SENDERS]; /* highest seen + 1; 0: none yet */
};

static void rx_account(struct rx *rx, const char *buf, ssize_t n)
{
	struct hdr h;
	uint64_t t = now_ns();

	if (!rx->msgs)
		rx->first_ns = t;
	rx->last_ns = t;
	rx->msgs++;
	rx->bytes += (uint64_t)n;
	if ((size_t)n != rx->size) {
		rx->bad++;
		return;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != MAGIC || h.sender >= MAX_SENDERS) {
		rx->bad++;
		return;
	}
	if (h.seq < rx->next_seq[h.sender])
		rx->reorder++;
	else
		rx->next_seq[h.sender] = h.seq + 1;
}

static void rx_result(const struct rx *rx, struct result *res)
{
	res->msgs = rx->msgs;
	res->bytes = rx->bytes;
	res->bad = rx->bad;
	res->reorder = rx->reorder;
	res->ns = rx->msgs > 1 ? rx->last_ns - rx->first_ns : 0;
	for (unsigned int i = 0; i < MAX_SENDERS; i++)
		res->seq_span += rx->next_seq[i];
}

static int send_hellos(int fd, const struct opts *o)
{
	struct addr a;

	for (unsigned int i = 0; i < o->hello_count; i++) {
		if (parse_addr(o->proto, o->hello, i, &a))
			return -EINVAL;
		/* Lost hellos are sent again; a refused one is an error only at the end. */
		sendto(fd, "HELLO", 5, MSG_DONTWAIT, (struct sockaddr *)&a.ss, a.len);
	}
	return 0;
}

static int run_recv(const struct opts *o, struct result *res)
{
	static struct rx rx;
	char *buf = malloc(MAX_SIZE + 1);
	uint64_t start = now_ns(), hello_at = 0, t;
	int fd, ret = 0;

	if (!buf) {
		res->where = "malloc";
		return -ENOMEM;
	}
	rx.size = o->size;
	fd = open_socket(o, 0, &res->where);
	if (fd < 0) {
		free(buf);
		return fd;
	}
	printf("DGRAM-BENCH-BOUND\n");
	fflush(stdout);
	if (o->rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->rcvbuf, sizeof(o->rcvbuf))) {
		ret = -errno;
		res->where = "SO_RCVBUF";
		goto out;
	}
	if (set_timeout(fd, SO_RCVTIMEO, 50)) {
		ret = -errno;
		res->where = "SO_RCVTIMEO";
		goto out;
	}
	for (;;) {
		ssize_t n;

		t = now_ns();
		if (o->hello && !rx.msgs && t - hello_at >= 200000000ull) {
			if (send_hellos(fd, o)) {
				ret = -EINVAL;
				res->where = "hello-address";
				goto out;
			}
			hello_at = t;
		}
		if (!rx.msgs && t - start > o->first_wait_ms * 1000000ull)
			break; /* nothing came: every datagram was lost */
		if (rx.msgs && (t - rx.last_ns > o->idle_ms * 1000000ull ||
				t - rx.first_ns > (uint64_t)((o->seconds + 5) * 1e9)))
			break;
		n = recv(fd, buf, MAX_SIZE + 1, 0);
		if (n >= 0) {
			rx_account(&rx, buf, n);
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		    errno != ECONNREFUSED) {
			ret = -errno;
			res->where = "recv";
			goto out;
		}
	}
	rx_result(&rx, res);
out:
	close(fd);
	free(buf);
	return ret;
}

struct limit_rx {
	int fd;
	struct rx *rx;
	atomic_bool senders_done;
};

static void *limit_rx_main(void *arg)
{
	struct limit_rx *l = arg;
	char *buf = malloc(MAX_SIZE + 1);

	if (!buf)
		return (void *)1;
	for (;;) {
		bool done = atomic_load(&l->senders_done);
		ssize_t n = recv(l->fd, buf, MAX_SIZE + 1, done ? MSG_DONTWAIT : 0);

		if (n > 0) {
			rx_account(l->rx, buf, n);
			continue;
		}
		if (n == 0)
			continue; /* run_limit()'s wake-up */
		if (errno == EAGAIN && done)
			break;
		if (errno != EAGAIN && errno != EINTR)
			break;
	}
	free(buf);
	return NULL;
}

static int run_limit(const struct opts *o, struct result *res)
{
	static struct rx rx;
	struct sender *ss = calloc(o->senders, sizeof(*ss));
	struct limit_rx l = { .fd = -1, .rx = &rx };
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	socklen_t un_len;
	pthread_t rt;
	void *rt_ret = NULL;
	unsigned int i, started = 0;
	uint64_t deadline;
	int sv[2], ret = 0, n;

	if (!ss) {
		res->where = "calloc";
		return -ENOMEM;
	}
	rx.size = o->size;
	for (i = 0; i < o->senders; i++)
		ss[i].fd = -1;
	if (o->senders == 1) {
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
			res->where = "socketpair";
			free(ss);
			return -errno;
		}
		l.fd = sv[0];
		ss[0].fd = sv[1];
	} else {
		/* Abstract namespace: sun_path[0] = 0, no file. */
		n = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, "dgram-bench-%d",
			     (int)getpid());
		un_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
		l.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (l.fd < 0 || bind(l.fd, (struct sockaddr *)&un, un_len)) {
			ret = -errno;
			res->where = "bind";
			goto out;
		}
		for (i = 0; i < o->senders; i++) {
			ss[i].fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (ss[i].fd < 0 || connect(ss[i].fd, (struct sockaddr *)&un, un_len)) {
				ret = -errno;
				res->where = "connect";
				goto out;
			}
		}
	}
	for (i = 0; i < o->senders; i++) {
		ss[i].o = o;
		ss[i].idx = i;
		/* sendto() with no address on a connected socket. */
		ss[i].dst.len = 0;
		if (set_timeout(ss[i].fd, SO_SNDTIMEO, 200)) {
			ret = -errno;
			res->where = "SO_SNDTIMEO";
			goto out;
		}
	}
	if (pthread_create(&rt, NULL, limit_rx_main, &l)) {
		ret = -EAGAIN;
		res->where = "pthread_create";
		goto out;
	}
	deadline = now_ns() + (uint64_t)(o->seconds * 1e9);
	for (i = 0; i < o->senders; i++) {
		ss[i].deadline_ns = deadline;
		if (pthread_create(&ss[i].tid, NULL, sender_main, &ss[i]))
			break;
		started++;
	}
	for (i = 0; i < started; i++) {
		pthread_join(ss[i].tid, NULL);
		if (ss[i].err && !ret) {
			ret = -ss[i].err;
			res->where = ss[i].where;
		}
	}
	atomic_store(&l.senders_done, true);
	/* Wake a receiver blocked in recv() with nothing left: an empty datagram, skipped. */
	send(ss[0].fd, "", 0, MSG_DONTWAIT);
	pthread_join(rt, &rt_ret);
	if (rt_ret && !ret) {
		ret = -ENOMEM;
		res->where = "receiver";
	}
	if (started < o->senders && !ret) {
		ret = -EAGAIN;
		res->where = "pthread_create";
	}
	rx_result(&rx, res);
out:
	if (l.fd >= 0)
		close(l.fd);
	for (i = 0; i < o->senders; i++)
		if (ss[i].fd >= 0)
			close(ss[i].fd);
	free(ss);
	return ret;
}

static const char *errno_name(int e)
{
	switch (e) {
	case EINVAL:
		return "EINVAL";
	case ENOMEM:
		return "ENOMEM";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case ENODEV:
		return "ENODEV";
	case EADDRINUSE:
		return "EADDRINUSE";
	case EMSGSIZE:
		return "EMSGSIZE";
	case EHOSTUNREACH:
		return "EHOSTUNREACH";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case EAFNOSUPPORT:
		return "EAFNOSUPPORT";
	case EDESTADDRREQ:
		return "EDESTADDRREQ";
	case EAGAIN:
		return "EAGAIN";
	case ENOENT:
		return "ENOENT";
	default:
		return "errno";
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: dgram-bench send --proto vsock|udp|unix --to ADDR --size S "
			"[--senders N] [--seconds T] [--bind ADDR] [--await-hello]\n"
			"       dgram-bench recv --proto P --bind ADDR --size S [--seconds T] "
			"[--idle-ms M] [--first-wait-ms F] [--hello ADDR] [--hello-count N] "
			"[--rcvbuf B]\n"
			"       dgram-bench limit --size S [--senders N] [--seconds T]\n");
}

/* Decimal @s, 0 .. @max, into @out (cli_parse_uint()). Return: 0, or -EINVAL. */
static int parse_uint(const char *s, unsigned long max, unsigned int *out)
{
	uint64_t v;

	if (cli_parse_uint(s, 0, max, &v))
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "proto", required_argument, NULL, 'p' },
		{ "to", required_argument, NULL, 't' },
		{ "bind", required_argument, NULL, 'b' },
		{ "hello", required_argument, NULL, 'h' },
		{ "hello-count", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "senders", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 'T' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "first-wait-ms", required_argument, NULL, 'f' },
		{ "rcvbuf", required_argument, NULL, 'r' },
		{ "await-hello", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int u = 0;
	char *end;
	int c, i, ret;

	if (argc < 2)
		return -EINVAL;
	for (i = 0; i < 3 && strcmp(argv[1], mode_names[i]); i++)
		;
	if (i == 3)
		return -EINVAL;
	*o = (struct opts){ .mode = (enum mode)i,
			    .proto = PROTO_UNIX,
			    .senders = 1,
			    .seconds = 1,
			    .idle_ms = 1000,
			    .first_wait_ms = 30000,
			    .hello_count = 1 };
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		errno = 0;
		end = NULL;
		ret = 0;
		switch (c) {
		case 'p':
			for (i = 0; i < 3 && strcmp(optarg, proto_names[i]); i++)
				;
			if (i == 3)
				return -EINVAL;
			o->proto = (enum proto)i;
			break;
		case 't':
			o->to = optarg;
			break;
		case 'b':
			o->bind = optarg;
			break;
		case 'h':
			o->hello = optarg;
			break;
		case 'c':
			ret = parse_uint(optarg, MAX_SENDERS, &o->hello_count);
			break;
		case 's':
			ret = parse_uint(optarg, MAX_SIZE, &u);
			o->size = u;
			break;
		case 'n':
			ret = parse_uint(optarg, MAX_SENDERS, &o->senders);
			break;
		case 'T':
			o->seconds = strtod(optarg, &end);
			break;
		case 'i':
			ret = parse_uint(optarg, 3600000, &o->idle_ms);
			break;
		case 'f':
			ret = parse_uint(optarg, 3600000, &o->first_wait_ms);
			break;
		case 'r':
			ret = parse_uint(optarg, 1u << 30, &u);
			o->rcvbuf = (int)u;
			break;
		case 'a':
			o->await_hello = true;
			break;
		default:
			return -EINVAL;
		}
		if (ret || errno || (end && *end))
			return -EINVAL;
	}
	if (optind != argc || o->size < MIN_SIZE || o->size > MAX_SIZE || !o->senders ||
	    o->senders > MAX_SENDERS || !(o->seconds > 0 && o->seconds < 3600) ||
	    o->hello_count < 1 || o->hello_count > MAX_SENDERS || o->rcvbuf < 0)
		return -EINVAL;
	if (o->mode == MODE_SEND && !o->to && !o->await_hello)
		return -EINVAL;
	if (o->mode == MODE_SEND && o->await_hello && !o->bind)
		return -EINVAL;
	if (o->mode == MODE_RECV && !o->bind)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct result res = { 0 };
	struct rusage ru0, ru1;
	struct opts o;
	int ret;

	if (parse_opts(argc, argv, &o)) {
		usage();
		return 2;
	}
	getrusage(RUSAGE_SELF, &ru0);
	if (o.mode == MODE_SEND)
		ret = run_send(&o, &res);
	else if (o.mode == MODE_RECV)
		ret = run_recv(&o, &res);
	else
		ret = run_limit(&o, &res);
	getrusage(RUSAGE_SELF, &ru1);
	printf("DGRAM-BENCH status=%s mode=%s proto=%s size=%zu senders=%u msgs=%" PRIu64
	       " bytes=%" PRIu64 " ns=%" PRIu64 " blocked=%" PRIu64 " errs=%" PRIu64 " bad=%" PRIu64
	       " reorder=%" PRIu64 " seq_span=%" PRIu64 " utime_us=%lld"
	       " stime_us=%lld",
	       ret ? "fail" : "ok", mode_names[o.mode],
	       o.mode == MODE_LIMIT ? "unix" : proto_names[o.proto], o.size, o.senders, res.msgs,
	       res.bytes, res.ns, res.blocked, res.errs, res.bad, res.reorder, res.seq_span,
	       (long long)((ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1000000ll +
			   (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec)),
	       (long long)((ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000000ll +
			   (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec)));
	if (ret)
		printf(" err=%s where=%s", errno_name(-ret), res.where ? res.where : "?");
	printf("\n");
	fflush(stdout);
	return ret ? 1 : 0;
}
