// SPDX-License-Identifier: MIT
/*
 * rx-wake: guest side of the RX batching tests (issue 8,
 * guest-kernel-patches/series/README-rx-batch.md). Static, runs in the test
 * guests' initramfs; the host side is tests/uml/rx-batch/rx_batch_test.py.
 *
 *   rx-wake wake CID:PORT --mode recv|poll|epoll|epoll-et [--lowat L]
 *           [--bursts N] [--max-burst B] [--seed S] [--timeout-ms T]
 *     One connection. N times: ask the peer for a burst of b bytes (b a
 *     multiple of L, at most B, varying), then wait for and read exactly b
 *     bytes, with the reader blocked in recv() (SO_RCVTIMEO), poll(),
 *     epoll_wait() (level-triggered) or epoll_wait() (edge-triggered, L = 1
 *     only), with SO_RCVLOWAT = L. The peer sends nothing else until the
 *     next request, so the wake-up for the end of a burst is the last one
 *     the reader can get: if it is lost, the wait runs into its bound
 *     (T ms per burst) and the run fails, instead of hanging.
 *     With L > 1 the reader reads L bytes at a time, so what is left of a
 *     burst is always a multiple of L and a lowat wake-up is always due.
 *
 *   rx-wake flows CID:PORT [--conns C] [--bytes N] [--seed S] [--timeout-ms T]
 *     C connections at once; each asks the peer for N bytes of the pattern
 *     seed S + i (i = connection index) and reads them, all from one epoll
 *     loop, until EOF. Every byte is checked on its own connection, so data
 *     delivered to the wrong socket, reordered or lost fails the run; so
 *     does T ms without progress.
 *
 * Requests (guest to host, 12 bytes): u32 kind ('B' burst, 'F' flow, 0
 * end), u32 index (connection i, or burst number), u32 length, little endian.
 * The host answers a burst request with the next `length` bytes of the
 * pattern stream of seed S (continuing across bursts), a flow request with
 * `length` bytes of seed S + index then EOF, and closes on 0.
 *
 * Output: one line "RX-WAKE status=ok|fail test=... key=value ...". On a
 * failure, a line "RX-WAKE-ERROR ..." says what went wrong first.
 * Exit status: 0 ok, 1 fail, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#include "pattern.h"

#define MAX_CONNS 64
#define BUF_SIZE (256 * 1024)

enum wait_mode { W_RECV, W_POLL, W_EPOLL, W_EPOLL_ET };

static const char *const mode_names[] = { "recv", "poll", "epoll", "epoll-et" };

struct opts {
	bool flows;
	unsigned int cid, port;
	enum wait_mode mode;
	unsigned int lowat, bursts, max_burst, conns, timeout_ms;
	uint64_t bytes, seed;
};

static uint8_t buf[BUF_SIZE];
static uint8_t want[BUF_SIZE];

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("RX-WAKE-ERROR ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_peer(const struct opts *o)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK,
		.svm_cid = o->cid,
		.svm_port = o->port,
	};
	int fd = socket(AF_VSOCK, SOCK_STREAM, 0);

	if (fd < 0) {
		fail("socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fail("connect %u:%u: %s", o->cid, o->port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int send_req(int fd, uint32_t kind, uint32_t index, uint32_t len)
{
	uint8_t m[12];
	uint32_t v[3] = { kind, index, len };

	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			m[4 * i + j] = (uint8_t)(v[i] >> (8 * j));
	if (send(fd, m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		fail("send request: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Check got[0..n) against the pattern of seed at offset; 0 or -1. */
static int check(const uint8_t *got, size_t n, uint64_t seed, uint64_t off, const char *what)
{
	skiff_pattern_fill(want, n, seed, off);
	for (size_t i = 0; i < n; i++) {
		if (got[i] != want[i]) {
			fail("%s: byte %" PRIu64 " is 0x%02x, want 0x%02x", what, off + i, got[i],
			     want[i]);
			return -1;
		}
	}
	return 0;
}

/*
 * Wait until fd is readable or the deadline passes: 1 readable, 0 deadline
 * passed, -1 error. recv mode does not wait here (recv() itself blocks).
 */
static int wait_readable(const struct opts *o, int fd, int ep, int64_t deadline)
{
	int left = (int)(deadline - now_ms());

	if (left <= 0)
		return 0;
	if (o->mode == W_POLL) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, left);

		if (r < 0 && errno != EINTR)
			return -1;
		return r > 0;
	}
	struct epoll_event ev;
	int r = epoll_wait(ep, &ev, 1, left);

	if (r < 0 && errno != EINTR)
		return -1;
	return r > 0;
}

static int run_wake(const struct opts *o)
{
	uint64_t off = 0, fnv = SKIFF_FNV_INIT, waits = 0, max_wait_ms = 0;
	unsigned int l = o->lowat;
	int fd, ep = -1, rc = -1;
	uint32_t b;

	fd = connect_peer(o);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &l, sizeof(l)) < 0) {
		fail("SO_RCVLOWAT %u: %s", l, strerror(errno));
		goto out;
	}
	if (o->mode == W_RECV) {
		struct timeval tv = { .tv_sec = o->timeout_ms / 1000,
				      .tv_usec = (o->timeout_ms % 1000) * 1000 };

		if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
			fail("SO_RCVTIMEO: %s", strerror(errno));
			goto out;
		}
	} else if (o->mode == W_EPOLL || o->mode == W_EPOLL_ET) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

		if (o->mode == W_EPOLL_ET)
			ev.events |= EPOLLET;
		ep = epoll_create1(0);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			fail("epoll: %s", strerror(errno));
			goto out;
		}
	}

	for (unsigned int i = 0; i < o->bursts; i++) {
		/* Burst sizes cycle through 1 .. max_burst / L units of L. */
		uint32_t units = o->max_burst / l;
		uint64_t got = 0;
		int64_t t0, deadline;

		b = l * (1 + (uint32_t)(((uint64_t)i * 7919u + 13) % units));
		if (send_req(fd, 'B', i, b) < 0)
			goto out;
		t0 = now_ms();
		deadline = t0 + o->timeout_ms;
		while (got < b) {
			size_t ask = l > 1 ? l : (size_t)(b - got);
			int flags = o->mode == W_RECV ? 0 : MSG_DONTWAIT;
			ssize_t n;

			if (ask > BUF_SIZE)
				ask = BUF_SIZE;
			if (o->mode != W_RECV) {
				int r = wait_readable(o, fd, ep, deadline);

				waits++;
				if (r < 0) {
					fail("wait: %s", strerror(errno));
					goto out;
				}
				if (!r) {
					fail("lost wake-up: %s lowat %u burst %u stuck at %" PRIu64
					     " of %u bytes for %u ms",
					     mode_names[o->mode], l, i, got, b, o->timeout_ms);
					goto out;
				}
			}
			/* Edge-triggered: drain until EAGAIN before waiting again. */
			do {
				n = recv(fd, buf, ask, flags);
				if (n > 0) {
					if (check(buf, (size_t)n, o->seed, off, "burst") < 0)
						goto out;
					fnv = skiff_fnv1a(fnv, buf, (size_t)n);
					off += (uint64_t)n;
					got += (uint64_t)n;
					if (got > b) {
						fail("burst %u: got %" PRIu64
						     " bytes, asked for %u",
						     i, got, b);
						goto out;
					}
					ask = l > 1 ? l : (size_t)(b - got);
					if (ask > BUF_SIZE)
						ask = BUF_SIZE;
				}
			} while (o->mode == W_EPOLL_ET && n > 0 && got < b);
			if (n == 0) {
				fail("burst %u: EOF at %" PRIu64 " of %u bytes", i, got, b);
				goto out;
			}
			if (n < 0 && errno == EAGAIN && o->mode == W_RECV) {
				fail("lost wake-up: recv lowat %u burst %u stuck at %" PRIu64
				     " of %u bytes for %u ms",
				     l, i, got, b, o->timeout_ms);
				goto out;
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				fail("recv: %s", strerror(errno));
				goto out;
			}
			if (now_ms() > deadline && got < b) {
				fail("lost wake-up: %s lowat %u burst %u at %" PRIu64
				     " of %u bytes after %u ms",
				     mode_names[o->mode], l, i, got, b, o->timeout_ms);
				goto out;
			}
		}
		if ((uint64_t)(now_ms() - t0) > max_wait_ms)
			max_wait_ms = (uint64_t)(now_ms() - t0);
	}
	if (send_req(fd, 0, 0, 0) < 0)
		goto out;
	rc = 0;
out:
	printf("RX-WAKE status=%s test=wake mode=%s lowat=%u bursts=%u bytes=%" PRIu64
	       " waits=%" PRIu64 " max_burst_ms=%" PRIu64 " fnv=%016" PRIx64 "\n",
	       rc ? "fail" : "ok", mode_names[o->mode], l, o->bursts, off, waits, max_wait_ms, fnv);
	if (ep >= 0)
		close(ep);
	close(fd);
	return rc;
}

struct flow {
	int fd;
	uint64_t got;
	bool eof;
};

static int run_flows(const struct opts *o)
{
	struct flow fl[MAX_CONNS];
	unsigned int open = 0, done = 0;
	uint64_t total = 0;
	int ep, rc = -1;
	int64_t last;

	ep = epoll_create1(0);
	if (ep < 0) {
		fail("epoll_create1: %s", strerror(errno));
		return -1;
	}
	for (unsigned int i = 0; i < o->conns; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };

		fl[i].fd = connect_peer(o);
		fl[i].got = 0;
		fl[i].eof = false;
		if (fl[i].fd < 0)
			goto out;
		open++;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fl[i].fd, &ev) < 0) {
			fail("epoll_ctl: %s", strerror(errno));
			goto out;
		}
	}
	/* All connections are up before any asks: the flows run at once. */
	for (unsigned int i = 0; i < o->conns; i++)
		if (send_req(fl[i].fd, 'F', i, (uint32_t)o->bytes) < 0)
			goto out;

	last = now_ms();
	while (done < o->conns) {
		struct epoll_event evs[MAX_CONNS];
		int n = epoll_wait(ep, evs, MAX_CONNS, 1000);

		if (n < 0 && errno != EINTR) {
			fail("epoll_wait: %s", strerror(errno));
			goto out;
		}
		if (n <= 0 && now_ms() - last > o->timeout_ms) {
			fail("no progress for %u ms: %u of %u flows done", o->timeout_ms, done,
			     o->conns);
			for (unsigned int i = 0; i < o->conns; i++)
				fail("flow %u: %" PRIu64 " of %" PRIu64 " bytes%s", i, fl[i].got,
				     o->bytes, fl[i].eof ? ", EOF" : "");
			goto out;
		}
		for (int k = 0; k < n; k++) {
			unsigned int i = evs[k].data.u32;
			struct flow *f = &fl[i];
			ssize_t r = recv(f->fd, buf, BUF_SIZE, MSG_DONTWAIT);
			char what[32];

			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r < 0) {
				fail("flow %u: recv: %s", i, strerror(errno));
				goto out;
			}
			last = now_ms();
			if (r == 0) {
				if (f->got != o->bytes) {
					fail("flow %u: EOF after %" PRIu64 " of %" PRIu64 " bytes",
					     i, f->got, o->bytes);
					goto out;
				}
				f->eof = true;
				done++;
				epoll_ctl(ep, EPOLL_CTL_DEL, f->fd, NULL);
				continue;
			}
			if (f->got + (uint64_t)r > o->bytes) {
				fail("flow %u: %" PRIu64 " bytes, more than the %" PRIu64 " asked",
				     i, f->got + (uint64_t)r, o->bytes);
				goto out;
			}
			snprintf(what, sizeof(what), "flow %u", i);
			if (check(buf, (size_t)r, o->seed + i, f->got, what) < 0)
				goto out;
			f->got += (uint64_t)r;
			total += (uint64_t)r;
		}
	}
	rc = 0;
out:
	printf("RX-WAKE status=%s test=flows conns=%u bytes=%" PRIu64 " done=%u\n",
	       rc ? "fail" : "ok", o->conns, total, done);
	for (unsigned int i = 0; i < open; i++)
		close(fl[i].fd);
	close(ep);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rx-wake wake CID:PORT --mode recv|poll|epoll|epoll-et [--lowat L]\n"
		"               [--bursts N] [--max-burst B] [--seed S] [--timeout-ms T]\n"
		"       rx-wake flows CID:PORT [--conns C] [--bytes N] [--seed S] [--timeout-ms T]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "lowat", required_argument, NULL, 'l' },
		{ "bursts", required_argument, NULL, 'n' },
		{ "max-burst", required_argument, NULL, 'b' },
		{ "conns", required_argument, NULL, 'c' },
		{ "bytes", required_argument, NULL, 'B' },
		{ "seed", required_argument, NULL, 's' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.mode = W_RECV,
		.lowat = 1,
		.bursts = 100,
		.max_burst = 8192,
		.conns = 8,
		.bytes = 256 * 1024,
		.seed = 11,
		.timeout_ms = 15000,
	};
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		usage();
	if (!strcmp(argv[1], "flows"))
		o.flows = true;
	else if (strcmp(argv[1], "wake"))
		usage();
	if (sscanf(argv[2], "%u:%u", &o.cid, &o.port) != 2)
		usage();
	optind = 3;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm': {
			unsigned int k;

			for (k = 0; k < 4; k++)
				if (!strcmp(optarg, mode_names[k]))
					break;
			if (k == 4)
				usage();
			o.mode = (enum wait_mode)k;
			break;
		}
		case 'l':
			o.lowat = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			o.bursts = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			o.max_burst = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			o.conns = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'B':
			o.bytes = strtoull(optarg, NULL, 0);
			break;
		case 's':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			o.timeout_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (!o.lowat || o.lowat > o.max_burst || o.max_burst > BUF_SIZE || !o.timeout_ms ||
	    !o.conns || o.conns > MAX_CONNS || o.bytes > UINT32_MAX ||
	    (o.mode == W_EPOLL_ET && o.lowat != 1))
		usage();
	return (o.flows ? run_flows(&o) : run_wake(&o)) ? 1 : 0;
}
