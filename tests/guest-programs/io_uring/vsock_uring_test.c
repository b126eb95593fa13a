// SPDX-License-Identifier: MIT
/*
 * vsock_uring_test - io_uring receives over AF_VSOCK and the receive-queue
 * hint (msg_inq) of guest-kernel-patches/series/msg-inq-*.patch.
 *
 * A guest program, linked statically with liburing. It checks, through
 * io_uring completions:
 *   - the hint after a partial read (bytes left, IORING_CQE_F_SOCK_NONEMPTY),
 *     after a read that drains the queue (0, no flag), and at end of stream
 *     (1 once the peer has shut down, so the receive that sees EOF happens);
 *   - that SOCK_SEQPACKET leaves the hint alone (io_uring's -1, no flag);
 *   - that a multishot receive armed on a non-empty queue keeps working once
 *     it stops retrying (the first-issue path that must arm poll);
 *   - Unix and TCP multishot ping-pongs still deliver everything and never
 *     flag a drained queue;
 *   - kernel receive calls per delivered message in a ping-pong of 4 KiB
 *     messages, the queue drained between messages, with multishot RECV and
 *     RECVMSG over provided buffers: 1.00 when the speculative retry is gone,
 *     about 2 without the series.
 *
 * Receive calls and the exact hint come from the test-only probe
 * (guest-kernel-patches/test-only/recv-count-*.patch): getsockopt() options
 * SO_VM_SOCKETS_TEST_RECV_CALLS and SO_VM_SOCKETS_TEST_LAST_INQ. Without it
 * (the line "# receive probe ...: absent") the count and exact-hint checks
 * are left out and only the CQE flag checks run.
 *
 * Peer: by default everything runs over vsock loopback (CID 1) inside the
 * guest, the ping-pong against an echo thread. With --peer-cid CID --port P
 * the ping-pongs connect to (CID, P) instead, whose listener must echo every
 * byte back (skiff-vsock's host side: a Unix socket server at <uds>_<P>);
 * the loopback-only cases are then skipped.
 *
 * Usage: vsock_uring_test [--peer-cid CID] [--port P] [--messages N]
 *                         [--max-calls-per-cqe X] [--bench] [--only NAME]
 *                         [--timeout S] [--list]
 *   --messages N   ping-pong length (default 5000)
 *   --max-calls-per-cqe X   ping-pong limit on receive calls per data CQE
 *                  (default 1.05)
 *   --bench        run only the RECV ping-pong and print its metric line;
 *                  exit 0 if it completed (for A/B timing: run it 25 times
 *                  per kernel and compare the cpu_s and wall_s medians)
 *   --only NAME    run only the cases whose name starts with NAME
 *
 * Output, one record per line (TAP-like, parseable):
 *   ok N NAME | not ok N NAME: REASON | skip N NAME: REASON
 *   metric test=NAME messages=N cqes=N recv_calls=N calls_per_msg=F
 *          calls_per_cqe=F cpu_s=F wall_s=F        (one line)
 *   cpu_s is the CPU time of the thread that sends each message and reaps
 *   the echo through io_uring (receive work runs in its task context);
 *   wall_s is the ping-pong's elapsed time.
 *   # summary pass=N fail=N skip=N
 * Exit status: 0 all ran cases passed, 1 a case failed, 2 bad usage.
 *
 * Expected results. Patched kernel (test-only probe + msg-inq series): all
 * pass, calls_per_msg 1.00 (N + 1 calls for N messages: the +1 is the
 * receive that finds the queue empty when the request is armed).
 * Baseline kernel (test-only probe only): this test FAILS by design:
 * stream_partial_read_* (no SOCK_NONEMPTY, hint 0 instead of 3072),
 * stream_eof_* (hint 0 instead of 1, no flag), seqpacket_hint (hint is
 * whatever io_uring's msghdr held, not -1), stream_data_before_arm_* (4
 * calls instead of 2) and pingpong_* (calls_per_cqe about 2.0).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#include "uring_util.h"

#define MSG_BYTES 4096u
#define NBUFS 16u
#define BUF_BYTES 8192u /* a whole message plus the RECVMSG header */
#define BGID 7
#define TAG 0x5c1d

enum result { PASS, FAIL, SKIP };

struct opts {
	unsigned int peer_cid; /* 0: loopback with an echo thread */
	unsigned int port;
	unsigned int messages;
	double max_calls_per_cqe;
	bool bench;
	const char *only;
	unsigned int timeout_s;
};

static struct opts o = {
	.port = 9100,
	.messages = 5000,
	.max_calls_per_cqe = 1.05,
	.timeout_s = 600,
};
static bool have_probe;
static unsigned int next_port;
static const char *cur_name;
static char cur_reason[256];

/* Record why the current case failed (the first reason wins) and fail. */
static __attribute__((format(printf, 1, 2))) enum result fail(const char *fmt, ...)
{
	va_list ap;

	if (!cur_reason[0]) {
		va_start(ap, fmt);
		vsnprintf(cur_reason, sizeof(cur_reason), fmt, ap);
		va_end(ap);
	}
	return FAIL;
}

static enum result skip(const char *why)
{
	snprintf(cur_reason, sizeof(cur_reason), "%s", why);
	return SKIP;
}

static unsigned char pattern(uint32_t msg, uint32_t off)
{
	return (unsigned char)(msg * 131u + off * 7u + 1u);
}

static void fill_msg(unsigned char *buf, uint32_t msg, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(msg, (uint32_t)i);
}

static int64_t probe_or(int fd, int opt, int64_t dflt)
{
	int64_t v;

	return probe_read(fd, opt, &v) ? dflt : v;
}

static int ring_init(struct io_uring *ring)
{
	return io_uring_queue_init(64, ring, 0);
}

static unsigned int take_port(void)
{
	return next_port++;
}

/* A 4 KiB message, read 1 KiB then the rest, single-shot. */
static enum result partial_read(bool use_msg)
{
	struct io_uring ring;
	unsigned char msg[MSG_BYTES], buf[MSG_BYTES];
	unsigned int flags;
	int c, s, res, err, revents;
	enum result r = PASS;

	err = vsock_loop_pair(SOCK_STREAM, take_port(), &c, &s);
	if (err)
		return fail("vsock loopback pair: %s", strerror(-err));
	err = ring_init(&ring);
	if (err) {
		r = fail("io_uring_queue_init: %s", strerror(-err));
		goto out_close;
	}
	fill_msg(msg, 1, sizeof(msg));
	err = send_all(s, msg, sizeof(msg));
	revents = err ? err : wait_readable(c, MSG_BYTES, 0);
	if (revents <= 0) {
		r = fail("message not readable: %s", revents ? strerror(-revents) : "timeout");
		goto out_ring;
	}

	err = uring_recv_once(&ring, c, buf, 1024, use_msg, &res, &flags);
	if (err) {
		r = fail("first receive: %s", strerror(-err));
		goto out_ring;
	}
	if (res != 1024 || memcmp(buf, msg, 1024))
		r = fail("first receive: res %d, want 1024 bytes of the message", res);
	else if (!(flags & IORING_CQE_F_SOCK_NONEMPTY))
		r = fail("partial read: flags 0x%x lack SOCK_NONEMPTY", flags);
	else if (have_probe && probe_or(c, SO_VM_SOCKETS_TEST_LAST_INQ, -2) != 3072)
		r = fail("partial read: hint %" PRId64 ", want 3072",
			 probe_or(c, SO_VM_SOCKETS_TEST_LAST_INQ, -2));
	if (r != PASS)
		goto out_ring;

	err = uring_recv_once(&ring, c, buf, sizeof(buf), use_msg, &res, &flags);
	if (err) {
		r = fail("second receive: %s", strerror(-err));
		goto out_ring;
	}
	if (res != 3072 || memcmp(buf, msg + 1024, 3072))
		r = fail("second receive: res %d, want the other 3072 bytes", res);
	else if (flags & IORING_CQE_F_SOCK_NONEMPTY)
		r = fail("drained queue: flags 0x%x have SOCK_NONEMPTY", flags);
	else if (have_probe && probe_or(c, SO_VM_SOCKETS_TEST_LAST_INQ, -2) != 0)
		r = fail("drained queue: hint %" PRId64 ", want 0",
			 probe_or(c, SO_VM_SOCKETS_TEST_LAST_INQ, -2));
out_ring:
	io_uring_queue_exit(&ring);
out_close:
	close(c);
	close(s);
	return r;
}

static enum result t_partial_read_recv(void)
{
	return partial_read(false);
}

static enum result t_partial_read_recvmsg(void)
{
	return partial_read(true);
}

/*
 * The peer sends a message and shuts down before we read: the data CQE must
 * say "more to read" (terminal hint 1), and the next receive must see EOF.
 */
static enum result eof_mshot(enum mshot_op op)
{
	struct io_uring ring;
	struct buf_ring b = { 0 };
	struct mshot_cqe m;
	unsigned char msg[MSG_BYTES];
	int64_t calls0 = 0, calls;
	int c, s, err, revents;
	enum result r = PASS;

	err = vsock_loop_pair(SOCK_STREAM, take_port(), &c, &s);
	if (err)
		return fail("vsock loopback pair: %s", strerror(-err));
	err = ring_init(&ring);
	if (err) {
		r = fail("io_uring_queue_init: %s", strerror(-err));
		goto out_close;
	}
	err = buf_ring_setup(&ring, &b, BGID, NBUFS, BUF_BYTES);
	if (err) {
		r = fail("buffer ring: %s", strerror(-err));
		goto out_ring;
	}
	fill_msg(msg, 2, sizeof(msg));
	err = send_all(s, msg, sizeof(msg));
	if (!err && shutdown(s, SHUT_WR) < 0)
		err = -errno;
	/* Both the data and the shutdown must have arrived (POLLIN and POLLRDHUP). */
	revents = err ? err : wait_readable(c, MSG_BYTES, POLLRDHUP);
	if (revents <= 0 || !(revents & POLLRDHUP)) {
		r = fail("peer data and shutdown not seen: revents %d", revents);
		goto out_ring;
	}
	if (have_probe)
		calls0 = probe_or(c, SO_VM_SOCKETS_TEST_RECV_CALLS, 0);
	err = mshot_arm(&ring, &b, c, op, TAG);
	if (err) {
		r = fail("arm multishot: %s", strerror(-err));
		goto out_ring;
	}
	err = mshot_wait(&ring, &b, op, TAG, &m);
	if (err) {
		r = fail("data CQE: %s", strerror(-err));
		goto out_ring;
	}
	if (m.len != MSG_BYTES || memcmp(m.data, msg, MSG_BYTES))
		r = fail("data CQE: res %d, want the %u-byte message", m.res, MSG_BYTES);
	else if (!(m.flags & IORING_CQE_F_MORE))
		r = fail("data CQE: flags 0x%x lack MORE", m.flags);
	else if (!(m.flags & IORING_CQE_F_SOCK_NONEMPTY))
		r = fail("data CQE before EOF: flags 0x%x lack SOCK_NONEMPTY", m.flags);
	else if (have_probe && probe_or(c, SO_VM_SOCKETS_TEST_LAST_INQ, -2) != 1)
		r = fail("data CQE before EOF: hint %" PRId64 ", want 1",
			 probe_or(c, SO_VM_SOCKETS_TEST_LAST_INQ, -2));
	if (m.bid >= 0)
		buf_ring_recycle(&b, (unsigned int)m.bid);
	if (r != PASS)
		goto out_ring;

	err = mshot_wait(&ring, &b, op, TAG, &m);
	if (err) {
		r = fail("EOF CQE: %s", strerror(-err));
		goto out_ring;
	}
	/* RECV ends with res 0; RECVMSG with a buffer holding only its header. */
	if (m.res < 0 || m.len || (op == MSHOT_RECV && m.res) || (m.flags & IORING_CQE_F_MORE))
		r = fail("EOF CQE: res %d flags 0x%x, want no payload and no MORE", m.res, m.flags);
	if (m.bid >= 0)
		buf_ring_recycle(&b, (unsigned int)m.bid);
	calls = have_probe ? probe_or(c, SO_VM_SOCKETS_TEST_RECV_CALLS, 0) - calls0 : 2;
	if (r == PASS && calls != 2)
		r = fail("%" PRId64 " receive calls, want 2 (data, EOF)", calls);
out_ring:
	io_uring_queue_exit(&ring);
	buf_ring_free(&b);
out_close:
	close(c);
	close(s);
	return r;
}

static enum result t_eof_recv(void)
{
	return eof_mshot(MSHOT_RECV);
}

static enum result t_eof_recvmsg(void)
{
	return eof_mshot(MSHOT_RECVMSG);
}

/*
 * Data already queued when the multishot receive is armed: its first issue
 * reads it inline and, the queue now empty, must arm poll rather than retry;
 * a second message must still arrive. Receive calls: 2 (4 with the retry).
 */
static enum result data_before_arm(enum mshot_op op)
{
	struct io_uring ring;
	struct buf_ring b = { 0 };
	struct mshot_cqe m;
	unsigned char msg[MSG_BYTES];
	int64_t calls0 = 0, calls;
	uint32_t i;
	int c, s, err, revents;
	enum result r = PASS;

	err = vsock_loop_pair(SOCK_STREAM, take_port(), &c, &s);
	if (err)
		return fail("vsock loopback pair: %s", strerror(-err));
	err = ring_init(&ring);
	if (err) {
		r = fail("io_uring_queue_init: %s", strerror(-err));
		goto out_close;
	}
	err = buf_ring_setup(&ring, &b, BGID, NBUFS, BUF_BYTES);
	if (err) {
		r = fail("buffer ring: %s", strerror(-err));
		goto out_ring;
	}
	if (have_probe)
		calls0 = probe_or(c, SO_VM_SOCKETS_TEST_RECV_CALLS, 0);
	for (i = 0; i < 2 && r == PASS; i++) {
		fill_msg(msg, 10 + i, sizeof(msg));
		err = send_all(s, msg, sizeof(msg));
		if (i == 0) {
			revents = err ? err : wait_readable(c, MSG_BYTES, 0);
			if (revents <= 0) {
				r = fail("message not readable: %d", revents);
				break;
			}
			err = mshot_arm(&ring, &b, c, op, TAG);
		}
		if (err) {
			r = fail("send/arm: %s", strerror(-err));
			break;
		}
		err = mshot_wait(&ring, &b, op, TAG, &m);
		if (err) {
			r = fail("message %u: %s", i, strerror(-err));
			break;
		}
		if (m.len != MSG_BYTES || memcmp(m.data, msg, MSG_BYTES) ||
		    !(m.flags & IORING_CQE_F_MORE))
			r = fail("message %u: res %d flags 0x%x, want %u bytes with MORE", i, m.res,
				 m.flags, MSG_BYTES);
		else if (m.flags & IORING_CQE_F_SOCK_NONEMPTY)
			r = fail("message %u: drained queue flagged SOCK_NONEMPTY", i);
		if (m.bid >= 0)
			buf_ring_recycle(&b, (unsigned int)m.bid);
	}
	calls = have_probe ? probe_or(c, SO_VM_SOCKETS_TEST_RECV_CALLS, 0) - calls0 : 2;
	if (r == PASS && calls != 2)
		r = fail("%" PRId64 " receive calls for 2 messages, want 2", calls);
out_ring:
	io_uring_queue_exit(&ring);
	buf_ring_free(&b);
out_close:
	close(c);
	close(s);
	return r;
}

static enum result t_before_arm_recv(void)
{
	return data_before_arm(MSHOT_RECV);
}

static enum result t_before_arm_recvmsg(void)
{
	return data_before_arm(MSHOT_RECVMSG);
}

/* SOCK_SEQPACKET: the hint is left as io_uring set it (-1), never flagged. */
static enum result t_seqpacket_hint(void)
{
	struct io_uring ring;
	unsigned char msg[1024], buf[MSG_BYTES];
	unsigned int flags;
	int c, s, res, err, revents;
	enum result r = PASS;

	err = vsock_loop_pair(SOCK_SEQPACKET, take_port(), &c, &s);
	if (err == -ESOCKTNOSUPPORT || err == -EPROTONOSUPPORT || err == -EOPNOTSUPP)
		return skip("no vsock SOCK_SEQPACKET");
	if (err)
		return fail("vsock seqpacket pair: %s", strerror(-err));
	err = ring_init(&ring);
	if (err) {
		r = fail("io_uring_queue_init: %s", strerror(-err));
		goto out_close;
	}
	fill_msg(msg, 3, sizeof(msg));
	err = send_all(s, msg, sizeof(msg));
	revents = err ? err : wait_readable(c, sizeof(msg), 0);
	if (revents <= 0) {
		r = fail("message not readable: %d", revents);
		goto out_ring;
	}
	err = uring_recv_once(&ring, c, buf, sizeof(buf), false, &res, &flags);
	if (err)
		r = fail("receive: %s", strerror(-err));
	else if (res != (int)sizeof(msg) || memcmp(buf, msg, sizeof(msg)))
		r = fail("receive: res %d, want the %zu-byte message", res, sizeof(msg));
	else if (flags & IORING_CQE_F_SOCK_NONEMPTY)
		r = fail("seqpacket: flags 0x%x have SOCK_NONEMPTY", flags);
	else if (have_probe && probe_or(c, SO_VM_SOCKETS_TEST_LAST_INQ, -2) != -1)
		r = fail("seqpacket: hint %" PRId64 ", want -1 (left as io_uring set it)",
			 probe_or(c, SO_VM_SOCKETS_TEST_LAST_INQ, -2));
out_ring:
	io_uring_queue_exit(&ring);
out_close:
	close(c);
	close(s);
	return r;
}

struct pp_result {
	unsigned int messages;
	uint64_t cqes;
	int64_t calls; /* -1 without the probe */
	double cpu_s;
	double wall_s;
};

/*
 * run_pingpong() - @n messages of MSG_BYTES: each is sent on @wfd, then
 * received whole on @rfd through one multishot receive (@op) before the
 * next is sent, so the receive queue is empty between messages. @wfd ==
 * @rfd means the peer echoes. Checks the payload, MORE on every CQE, and
 * that the CQE completing a message never has SOCK_NONEMPTY (the queue is
 * drained then). Receive calls are counted on @rfd when @count.
 */
static enum result run_pingpong(int rfd, int wfd, enum mshot_op op, unsigned int n, bool count,
				struct pp_result *pr)
{
	struct io_uring ring;
	struct buf_ring b = { 0 };
	struct mshot_cqe m;
	unsigned char msg[MSG_BYTES];
	int64_t calls0 = 0;
	double cpu0, wall0;
	size_t got;
	uint32_t i;
	int err;
	enum result r = PASS;

	memset(pr, 0, sizeof(*pr));
	pr->calls = -1;
	err = ring_init(&ring);
	if (err)
		return fail("io_uring_queue_init: %s", strerror(-err));
	err = buf_ring_setup(&ring, &b, BGID, NBUFS, BUF_BYTES);
	if (err) {
		r = fail("buffer ring: %s", strerror(-err));
		goto out_ring;
	}
	if (count)
		calls0 = probe_or(rfd, SO_VM_SOCKETS_TEST_RECV_CALLS, 0);
	wall0 = now_s();
	cpu0 = thread_cpu_s();
	err = mshot_arm(&ring, &b, rfd, op, TAG);
	if (err) {
		r = fail("arm multishot: %s", strerror(-err));
		goto out_ring;
	}
	for (i = 0; i < n && r == PASS; i++) {
		fill_msg(msg, i, sizeof(msg));
		err = send_all(wfd, msg, sizeof(msg));
		if (err) {
			r = fail("message %u: send: %s", i, strerror(-err));
			break;
		}
		for (got = 0; got < MSG_BYTES && r == PASS;) {
			err = mshot_wait(&ring, &b, op, TAG, &m);
			if (err) {
				r = fail("message %u: CQE: %s", i, strerror(-err));
				break;
			}
			pr->cqes++;
			if (m.res <= 0 || !(m.flags & IORING_CQE_F_MORE) || m.len > MSG_BYTES - got)
				r = fail("message %u: res %d flags 0x%x after %zu bytes", i, m.res,
					 m.flags, got);
			else if (memcmp(m.data, msg + got, m.len))
				r = fail("message %u: payload differs at %zu", i, got);
			else if (got + m.len == MSG_BYTES && (m.flags & IORING_CQE_F_SOCK_NONEMPTY))
				r = fail("message %u: drained queue flagged SOCK_NONEMPTY", i);
			got += m.len;
			if (m.bid >= 0)
				buf_ring_recycle(&b, (unsigned int)m.bid);
		}
	}
	pr->cpu_s = thread_cpu_s() - cpu0;
	pr->wall_s = now_s() - wall0;
	pr->messages = i;
	if (count)
		pr->calls = probe_or(rfd, SO_VM_SOCKETS_TEST_RECV_CALLS, 0) - calls0;
out_ring:
	/* Closing the ring cancels the multishot request. */
	io_uring_queue_exit(&ring);
	buf_ring_free(&b);
	return r;
}

static void print_metric(const char *name, const struct pp_result *pr)
{
	double per_msg = pr->messages ? (double)pr->calls / pr->messages : 0;
	double per_cqe = pr->cqes ? (double)pr->calls / (double)pr->cqes : 0;

	if (pr->calls < 0)
		per_msg = per_cqe = -1;
	printf("metric test=%s messages=%u cqes=%" PRIu64 " recv_calls=%" PRId64
	       " calls_per_msg=%.4f calls_per_cqe=%.4f cpu_s=%.4f wall_s=%.4f\n",
	       name, pr->messages, pr->cqes, pr->calls, per_msg, per_cqe, pr->cpu_s, pr->wall_s);
	fflush(stdout);
}

struct echo {
	int lfd;
	int err;
};

/* Loopback peer: accept one connection and echo until EOF. */
static void *echo_main(void *p)
{
	struct echo *e = p;
	unsigned char buf[MSG_BYTES];
	ssize_t n;
	int s;

	s = accept(e->lfd, NULL, NULL);
	if (s < 0) {
		e->err = -errno;
		return NULL;
	}
	for (;;) {
		n = recv(s, buf, sizeof(buf), MSG_WAITALL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e->err = n < 0 ? -errno : 0;
			break;
		}
		e->err = send_all(s, buf, (size_t)n);
		if (e->err)
			break;
	}
	close(s);
	return NULL;
}

/* vsock ping-pong against the echo thread (loopback) or the --peer-cid. */
static enum result vsock_pingpong(enum mshot_op op, const char *name)
{
	struct pp_result pr;
	struct echo e = { .lfd = -1 };
	pthread_t th = 0;
	unsigned int port = o.port;
	int c, err;
	enum result r;

	if (!o.peer_cid) {
		port = take_port();
		e.lfd = vsock_listen(SOCK_STREAM, port);
		if (e.lfd < 0)
			return fail("listen on port %u: %s", port, strerror(-e.lfd));
		err = pthread_create(&th, NULL, echo_main, &e);
		if (err) {
			close(e.lfd);
			return fail("echo thread: %s", strerror(err));
		}
	}
	c = vsock_connect(SOCK_STREAM, o.peer_cid ? o.peer_cid : VMADDR_CID_LOCAL, port);
	if (c < 0) {
		r = fail("connect to %u:%u: %s", o.peer_cid ? o.peer_cid : VMADDR_CID_LOCAL, port,
			 strerror(-c));
		if (!o.peer_cid) {
			/* accept() is a cancellation point. */
			pthread_cancel(th);
			pthread_join(th, NULL);
			close(e.lfd);
		}
		return r;
	}

	r = run_pingpong(c, c, op, o.messages, have_probe, &pr);
	print_metric(name, &pr);
	if (r == PASS && have_probe && pr.cqes &&
	    (double)pr.calls / (double)pr.cqes > o.max_calls_per_cqe)
		r = fail("%.4f receive calls per CQE, limit %.2f (speculative retry?)",
			 (double)pr.calls / (double)pr.cqes, o.max_calls_per_cqe);

	shutdown(c, SHUT_WR);
	close(c);
	if (!o.peer_cid) {
		pthread_join(th, NULL);
		close(e.lfd);
		if (r == PASS && e.err)
			r = fail("echo thread: %s", strerror(-e.err));
	}
	return r;
}

static enum result t_pingpong_recv(void)
{
	return vsock_pingpong(MSHOT_RECV, "pingpong_recv");
}

static enum result t_pingpong_recvmsg(void)
{
	return vsock_pingpong(MSHOT_RECVMSG, "pingpong_recvmsg");
}

/* Unix stream: no hint (-1), the retry stays; everything still arrives. */
static enum result t_unix_pingpong(void)
{
	struct pp_result pr;
	int sv[2];
	enum result r;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return fail("socketpair: %s", strerror(errno));
	r = run_pingpong(sv[0], sv[1], MSHOT_RECV, 200, false, &pr);
	close(sv[0]);
	close(sv[1]);
	return r;
}

/* TCP over 127.0.0.1: TCP fills the hint, so its retry goes too. */
static enum result t_tcp_pingpong(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	struct pp_result pr;
	int l, c = -1, s = -1;
	enum result r;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0)
		return skip("no IPv4 in this kernel");
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) < 0) {
		close(l);
		return skip("cannot listen on 127.0.0.1 (loopback interface down?)");
	}
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0) {
		r = skip("cannot connect over 127.0.0.1 (loopback interface down?)");
		goto out;
	}
	s = accept(l, NULL, NULL);
	if (s < 0) {
		r = fail("accept: %s", strerror(errno));
		goto out;
	}
	r = run_pingpong(c, s, MSHOT_RECV, 200, false, &pr);
out:
	if (s >= 0)
		close(s);
	if (c >= 0)
		close(c);
	close(l);
	return r;
}

struct test_case {
	const char *name;
	enum result (*fn)(void);
	bool loopback_only;
};

static const struct test_case cases[] = {
	{ "stream_partial_read_recv", t_partial_read_recv, true },
	{ "stream_partial_read_recvmsg", t_partial_read_recvmsg, true },
	{ "stream_eof_recv", t_eof_recv, true },
	{ "stream_eof_recvmsg", t_eof_recvmsg, true },
	{ "stream_data_before_arm_recv", t_before_arm_recv, true },
	{ "stream_data_before_arm_recvmsg", t_before_arm_recvmsg, true },
	{ "seqpacket_hint", t_seqpacket_hint, true },
	{ "unix_pingpong", t_unix_pingpong, false },
	{ "tcp_pingpong", t_tcp_pingpong, false },
	{ "pingpong_recv", t_pingpong_recv, false },
	{ "pingpong_recvmsg", t_pingpong_recvmsg, false },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* Does this kernel have the test-only receive probe? */
static void detect_probe(void)
{
	int64_t v;
	int fd = socket(AF_VSOCK, SOCK_STREAM, 0);

	if (fd < 0) {
		printf("# no AF_VSOCK socket: %s\n", strerror(errno));
		return;
	}
	have_probe = probe_read(fd, SO_VM_SOCKETS_TEST_RECV_CALLS, &v) == 0;
	close(fd);
	printf("# receive probe (test-only patch): %s\n",
	       have_probe ? "present" : "absent, call counts and hint values not checked");
}

static void usage(void)
{
	fprintf(stderr, "usage: vsock_uring_test [--peer-cid CID] [--port P] [--messages N]\n"
			"       [--max-calls-per-cqe X] [--bench] [--only NAME] [--timeout S]"
			" [--list]\n");
	exit(2);
}

static unsigned long parse_ul(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || !*s || *end)
		usage();
	return v;
}

static int run_bench(void)
{
	cur_name = "pingpong_recv";
	if (vsock_pingpong(MSHOT_RECV, cur_name) != PASS) {
		printf("not ok 1 %s: %s\n", cur_name, cur_reason);
		return 1;
	}
	printf("ok 1 %s\n", cur_name);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "peer-cid", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "messages", required_argument, NULL, 'n' },
		{ "max-calls-per-cqe", required_argument, NULL, 'x' },
		{ "bench", no_argument, NULL, 'b' },
		{ "only", required_argument, NULL, 'o' },
		{ "timeout", required_argument, NULL, 't' },
		{ "list", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int pass = 0, nfail = 0, nskip = 0, num = 0;
	size_t i;
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.peer_cid = (unsigned int)parse_ul(optarg);
			break;
		case 'p':
			o.port = (unsigned int)parse_ul(optarg);
			break;
		case 'n':
			o.messages = (unsigned int)parse_ul(optarg);
			break;
		case 'x':
			o.max_calls_per_cqe = strtod(optarg, NULL);
			break;
		case 'b':
			o.bench = true;
			break;
		case 'o':
			o.only = optarg;
			break;
		case 't':
			o.timeout_s = (unsigned int)parse_ul(optarg);
			break;
		case 'l':
			for (i = 0; i < N_CASES; i++)
				printf("%s\n", cases[i].name);
			return 0;
		default:
			usage();
		}
	}
	if (optind != argc || !o.messages)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A hung kernel path must not hang the test guest forever. */
	alarm(o.timeout_s);
	next_port = o.port + 1;

	printf("# vsock_uring_test: peer %s%u port %u, %u messages of %u bytes\n",
	       o.peer_cid ? "CID " : "loopback CID ", o.peer_cid ? o.peer_cid : 1, o.port,
	       o.messages, MSG_BYTES);
	detect_probe();
	if (o.bench)
		return run_bench();

	for (i = 0; i < N_CASES; i++) {
		const struct test_case *t = &cases[i];
		enum result r;

		if (o.only && strncmp(t->name, o.only, strlen(o.only)))
			continue;
		num++;
		cur_name = t->name;
		cur_reason[0] = 0;
		if (t->loopback_only && o.peer_cid)
			r = skip("needs both ends in the guest (loopback)");
		else
			r = t->fn();
		if (r == PASS) {
			pass++;
			printf("ok %u %s\n", num, t->name);
		} else if (r == SKIP) {
			nskip++;
			printf("skip %u %s: %s\n", num, t->name, cur_reason);
		} else {
			nfail++;
			printf("not ok %u %s: %s\n", num, t->name, cur_reason);
		}
	}
	printf("# summary pass=%u fail=%u skip=%u\n", pass, nfail, nskip);
	return nfail ? 1 : 0;
}
