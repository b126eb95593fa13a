// SPDX-License-Identifier: MIT
/*
 * vsock-dgram: SOCK_DGRAM over AF_VSOCK, checked inside a test guest over the
 * loopback transport (CID 1), so no vsock device is needed (issue 18,
 * guest-kernel-patches/series/README-dgram.md).
 *
 * Usage: vsock-dgram patched|baseline
 *   patched   every case below must pass on the kernel with the dgram series
 *   baseline  Linux 6.1 without it: socket(AF_VSOCK, SOCK_DGRAM) must fail
 *             with ENODEV (datagrams need the VMCI transport there), while a
 *             stream socket still opens
 * Output: "DGRAM-CASE <name> ok" or "DGRAM-CASE <name> FAIL: <why>" per case,
 * then "DGRAM status=ok" or "DGRAM status=fail". Exit 0 ok, 1 fail.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/sock_diag.h>
#include <linux/vm_sockets.h>

#include "pattern.h"

#ifndef SO_MEMINFO
#define SO_MEMINFO 55
#endif

#define LOCAL_CID 1 /* VMADDR_CID_LOCAL: the loopback transport */
#define BASE_PORT 41000u
#define MAX_DGRAM 65536

static int failures;
static const char *cur_case;

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("DGRAM-CASE %s FAIL: ", cur_case);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %d %s)\n", errno, strerror(errno));
	failures++;
}

/* Unnamed members (reserved bytes, flags) are zero. */
static struct sockaddr_vm vm_addr(unsigned int cid, unsigned int port)
{
	return (struct sockaddr_vm){ .svm_family = AF_VSOCK, .svm_cid = cid, .svm_port = port };
}

/* A datagram socket bound to (CID any, @port), or -1. */
static int dgram_bound(unsigned int port)
{
	struct sockaddr_vm a = vm_addr(VMADDR_CID_ANY, port);
	int fd = socket(AF_VSOCK, SOCK_DGRAM, 0);

	if (fd < 0) {
		fail("socket(SOCK_DGRAM)");
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		fail("bind port %u", port);
		close(fd);
		return -1;
	}
	return fd;
}

static int send_to(int fd, unsigned int port, const void *buf, size_t len)
{
	struct sockaddr_vm a = vm_addr(LOCAL_CID, port);

	return sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a));
}

/* Wait up to 2 s for a datagram on @fd. */
static int wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 2000) == 1 && (p.revents & POLLIN);
}

/* Receive one datagram of @want bytes equal to @buf, from (1, @src_port). */
static int expect_from(int fd, const void *buf, size_t want, unsigned int src_port)
{
	static char rbuf[MAX_DGRAM + 1];
	struct sockaddr_vm from;
	socklen_t flen = sizeof(from);
	ssize_t n;

	if (!wait_in(fd)) {
		fail("no datagram within 2 s");
		return -1;
	}
	memset(&from, 0, sizeof(from));
	n = recvfrom(fd, rbuf, sizeof(rbuf), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
	if (n < 0) {
		fail("recvfrom");
		return -1;
	}
	if ((size_t)n != want || memcmp(rbuf, buf, want)) {
		fail("got %zd bytes, want %zu (or different bytes)", n, want);
		return -1;
	}
	if (flen != sizeof(from) || from.svm_family != AF_VSOCK || from.svm_cid != LOCAL_CID ||
	    from.svm_port != src_port) {
		fail("sender address len %u family %u cid %u port %u, want cid %u port %u", flen,
		     from.svm_family, from.svm_cid, from.svm_port, LOCAL_CID, src_port);
		return -1;
	}
	return 0;
}

static unsigned int local_port(int fd)
{
	struct sockaddr_vm a;
	socklen_t len = sizeof(a);

	if (getsockname(fd, (struct sockaddr *)&a, &len))
		return VMADDR_PORT_ANY;
	return a.svm_port;
}

/* Run one case; it passes when it reported no failure. */
static void run_case(const char *name, void (*fn)(void))
{
	int before = failures;

	cur_case = name;
	fn();
	if (failures == before)
		printf("DGRAM-CASE %s ok\n", name);
}

static void case_sendto(void)
{
	int a = dgram_bound(BASE_PORT), b = dgram_bound(BASE_PORT + 1);

	if (a < 0 || b < 0)
		return;
	if (send_to(b, BASE_PORT, "hello", 5) != 5)
		fail("sendto");
	else
		expect_from(a, "hello", 5, BASE_PORT + 1);
	/* And back, to the address recvfrom() reported. */
	if (send_to(a, BASE_PORT + 1, "world", 5) != 5)
		fail("sendto back");
	else
		expect_from(b, "world", 5, BASE_PORT);
	close(a);
	close(b);
}

static void case_autobind(void)
{
	int a = dgram_bound(BASE_PORT + 10);
	int c = socket(AF_VSOCK, SOCK_DGRAM, 0);
	unsigned int port;

	if (a < 0 || c < 0) {
		fail("socket");
		return;
	}
	if (local_port(c) != VMADDR_PORT_ANY)
		fail("a new socket is bound to port %u", local_port(c));
	if (send_to(c, BASE_PORT + 10, "auto", 4) != 4) {
		fail("sendto from an unbound socket");
	} else {
		port = local_port(c);
		if (port == VMADDR_PORT_ANY || port <= 1023)
			fail("auto-bound port %u", port);
		expect_from(a, "auto", 4, port);
	}
	close(a);
	close(c);
}

static void case_connect(void)
{
	struct sockaddr_vm dst = vm_addr(LOCAL_CID, BASE_PORT + 20);
	int a = dgram_bound(BASE_PORT + 20);
	int d = socket(AF_VSOCK, SOCK_DGRAM, 0);
	int e = socket(AF_VSOCK, SOCK_DGRAM, 0);

	if (a < 0 || d < 0 || e < 0) {
		fail("socket");
		return;
	}
	if (connect(d, (struct sockaddr *)&dst, sizeof(dst)))
		fail("connect");
	else if (send(d, "conn", 4, 0) != 4)
		fail("send after connect");
	else
		expect_from(a, "conn", 4, local_port(d));
	errno = 0;
	if (send(e, "x", 1, 0) != -1 || errno != EDESTADDRREQ)
		fail("send on an unconnected socket: want EDESTADDRREQ");
	close(a);
	close(d);
	close(e);
}

static void case_peek_trunc(void)
{
	int a = dgram_bound(BASE_PORT + 30), b = dgram_bound(BASE_PORT + 31);
	char big[100], buf[200];
	struct iovec iov = { .iov_base = buf, .iov_len = 10 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (a < 0 || b < 0)
		return;
	for (unsigned int i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + 1);
	if (send_to(b, BASE_PORT + 30, "peek", 4) != 4 ||
	    send_to(b, BASE_PORT + 30, big, sizeof(big)) != sizeof(big)) {
		fail("sendto");
		return;
	}
	if (!wait_in(a)) {
		fail("nothing to read");
		return;
	}
	n = recv(a, buf, sizeof(buf), MSG_PEEK);
	if (n != 4 || memcmp(buf, "peek", 4))
		fail("MSG_PEEK read %zd bytes", n);
	n = recv(a, buf, sizeof(buf), 0);
	if (n != 4 || memcmp(buf, "peek", 4))
		fail("read after MSG_PEEK: %zd bytes", n);
	/* 100 bytes into 10: truncated, MSG_TRUNC in msg_flags. */
	if (!wait_in(a)) {
		fail("second datagram missing");
		return;
	}
	n = recvmsg(a, &mh, MSG_PEEK);
	if (n != 10 || !(mh.msg_flags & MSG_TRUNC) || memcmp(buf, big, 10))
		fail("peek into 10 bytes: %zd, flags %#x", n, mh.msg_flags);
	/* MSG_TRUNC in flags: the real length is returned. */
	n = recv(a, buf, 10, MSG_TRUNC);
	if (n != (ssize_t)sizeof(big))
		fail("recv(MSG_TRUNC) returned %zd, want %zu", n, sizeof(big));
	/* The rest of a truncated datagram is gone. */
	errno = 0;
	n = recv(a, buf, sizeof(buf), MSG_DONTWAIT);
	if (n != -1 || errno != EAGAIN)
		fail("queue not empty after a truncated read: %zd", n);
	close(a);
	close(b);
}

static void case_sizes(void)
{
	int a = dgram_bound(BASE_PORT + 40), b = dgram_bound(BASE_PORT + 41);
	static char buf[MAX_DGRAM + 1];

	if (a < 0 || b < 0)
		return;
	for (unsigned int i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i ^ (i >> 8));
	errno = 0;
	if (send_to(b, BASE_PORT + 40, buf, MAX_DGRAM + 1) != -1 || errno != EMSGSIZE)
		fail("64 KiB + 1: want EMSGSIZE");
	if (send_to(b, BASE_PORT + 40, buf, MAX_DGRAM) != MAX_DGRAM)
		fail("sendto of 64 KiB");
	else
		expect_from(a, buf, MAX_DGRAM, BASE_PORT + 41);
	if (send_to(b, BASE_PORT + 40, buf, 0) != 0)
		fail("sendto of 0 bytes");
	else
		expect_from(a, buf, 0, BASE_PORT + 41);
	close(a);
	close(b);
}

/* The loopback transport's drop counter of @name (dgram_rx_drops). */
static long loopback_drops(const char *name)
{
	char line[256], *p;
	FILE *f = fopen("/sys/module/vsock_loopback/parameters/dgram_rx_drops", "r");
	long v = -1;

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		p = strstr(line, name);
		if (p && p[strlen(name)] == '=')
			v = strtol(p + strlen(name) + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

static void case_rcvbuf_drop(void)
{
	enum { N = 400, LEN = 1000 };
	int r = dgram_bound(BASE_PORT + 50), s = dgram_bound(BASE_PORT + 51);
	int rcvbuf = 16384, got = 0;
	uint32_t mem[SK_MEMINFO_VARS] = { 0 };
	socklen_t mlen = sizeof(mem);
	long before = loopback_drops("rcvbuf_full"), after;
	char buf[LEN];

	if (r < 0 || s < 0)
		return;
	if (setsockopt(r, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))) {
		fail("SO_RCVBUF");
		return;
	}
	for (int i = 0; i < N; i++) {
		memset(buf, i, sizeof(buf));
		if (send_to(s, BASE_PORT + 50, buf, LEN) != LEN) {
			fail("sendto %d", i);
			break;
		}
	}
	/* Read what was queued; the sends are done once
	 * received + dropped reaches N.
	 */
	for (int idle = 0; idle < 40;) {
		ssize_t n = recv(r, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == LEN) {
			got++;
			idle = 0;
			continue;
		}
		if (getsockopt(r, SOL_SOCKET, SO_MEMINFO, mem, &mlen)) {
			fail("SO_MEMINFO");
			break;
		}
		if (got + (int)mem[SK_MEMINFO_DROPS] >= N)
			break;
		usleep(50000);
		idle++;
	}
	after = loopback_drops("rcvbuf_full");
	printf("DGRAM-INFO rcvbuf-drop sent=%d received=%d dropped=%u counter=%ld..%ld\n", N, got,
	       mem[SK_MEMINFO_DROPS], before, after);
	if (got + (int)mem[SK_MEMINFO_DROPS] != N)
		fail("received %d + dropped %u != sent %d", got, mem[SK_MEMINFO_DROPS], N);
	if (mem[SK_MEMINFO_DROPS] == 0 || got == 0)
		fail("want some datagrams dropped and some received with a %d-byte SO_RCVBUF",
		     rcvbuf);
	if (before < 0 || after - before != (long)mem[SK_MEMINFO_DROPS])
		fail("dgram_rx_drops rcvbuf_full went %ld -> %ld", before, after);
	close(r);
	close(s);
}

static void case_no_socket(void)
{
	int s = dgram_bound(BASE_PORT + 60);
	long before = loopback_drops("no_socket"), after = before;
	char buf[8];

	if (s < 0)
		return;
	if (send_to(s, BASE_PORT + 61, "lost", 4) != 4)
		fail("sendto a port nobody bound must succeed");
	for (int i = 0; i < 40 && after == before; i++) {
		usleep(50000);
		after = loopback_drops("no_socket");
	}
	if (before < 0 || after != before + 1)
		fail("dgram_rx_drops no_socket went %ld -> %ld", before, after);
	errno = 0;
	if (recv(s, buf, sizeof(buf), MSG_DONTWAIT) != -1 || errno != EAGAIN)
		fail("something came back to the sender");
	close(s);
}

static void case_same_port(void)
{
	struct sockaddr_vm sa = vm_addr(VMADDR_CID_ANY, BASE_PORT + 70);
	struct sockaddr_vm dst = vm_addr(LOCAL_CID, BASE_PORT + 70);
	int l = socket(AF_VSOCK, SOCK_STREAM, 0);
	int d, d2, c, s = dgram_bound(BASE_PORT + 71), acc;
	char buf[8];

	if (l < 0 || s < 0) {
		fail("socket");
		return;
	}
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4)) {
		fail("stream bind/listen");
		return;
	}
	d = dgram_bound(BASE_PORT + 70);
	if (d < 0)
		return;
	d2 = socket(AF_VSOCK, SOCK_DGRAM, 0);
	errno = 0;
	if (bind(d2, (struct sockaddr *)&sa, sizeof(sa)) != -1 || errno != EADDRINUSE)
		fail("a second datagram socket on the port: want EADDRINUSE");
	close(d2);
	c = socket(AF_VSOCK, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&dst, sizeof(dst))) {
		fail("stream connect");
		return;
	}
	acc = accept(l, NULL, NULL);
	if (acc < 0 || write(c, "strm", 4) != 4 || read(acc, buf, sizeof(buf)) != 4 ||
	    memcmp(buf, "strm", 4))
		fail("stream data");
	if (send_to(s, BASE_PORT + 70, "dgrm", 4) != 4)
		fail("sendto");
	else
		expect_from(d, "dgrm", 4, BASE_PORT + 71);
	close(acc);
	close(c);
	close(d);
	close(l);
	close(s);
}

/* Many senders at once: half sendto() from auto-bound sockets, half
 * connect() + send(). Every datagram carries (sender, seq, len) and the
 * pattern for that pair; the receiver checks each byte, that a sender's
 * datagrams keep one source port and arrive in order without duplicates,
 * and that received + dropped (SO_RCVBUF full) = sent.
 */
enum { MS_SENDERS = 8, MS_PER_SENDER = 300, MS_PORT = BASE_PORT + 90 };

struct ms_hdr {
	uint32_t sender;
	uint32_t seq;
	uint32_t len;
};

static size_t ms_len(unsigned int sender, unsigned int seq)
{
	return sizeof(struct ms_hdr) + (skiff_pattern_word(sender, seq) % 8192);
}

static void *ms_sender(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg;
	struct sockaddr_vm dst = vm_addr(LOCAL_CID, MS_PORT);
	static __thread uint8_t buf[sizeof(struct ms_hdr) + 8192];
	struct ms_hdr *h = (struct ms_hdr *)buf;
	int fd = socket(AF_VSOCK, SOCK_DGRAM, 0);
	intptr_t bad = 0;

	if (fd < 0)
		return (void *)1;
	if ((id & 1) && connect(fd, (struct sockaddr *)&dst, sizeof(dst)))
		bad = 1;
	for (unsigned int seq = 0; !bad && seq < MS_PER_SENDER; seq++) {
		size_t len = ms_len(id, seq);
		ssize_t n;

		h->sender = id;
		h->seq = seq;
		h->len = (uint32_t)len;
		skiff_pattern_fill(buf + sizeof(*h), len - sizeof(*h), id * 65536ULL + seq, 0);
		if (id & 1)
			n = send(fd, buf, len, 0);
		else
			n = sendto(fd, buf, len, 0, (struct sockaddr *)&dst, sizeof(dst));
		if (n != (ssize_t)len)
			bad = 1;
	}
	close(fd);
	return (void *)bad;
}

static void case_many_senders(void)
{
	static uint8_t buf[sizeof(struct ms_hdr) + 8192 + 1], want[8192];
	unsigned int port[MS_SENDERS] = { 0 };
	int next_seq[MS_SENDERS] = { 0 };
	uint32_t mem[SK_MEMINFO_VARS] = { 0 };
	socklen_t mlen = sizeof(mem);
	int r = dgram_bound(MS_PORT), size = 4 << 20, got = 0;
	pthread_t th[MS_SENDERS];
	unsigned int i;

	if (r < 0)
		return;
	if (setsockopt(r, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		fail("SO_RCVBUFFORCE");
	for (i = 0; i < MS_SENDERS; i++)
		pthread_create(&th[i], NULL, ms_sender, (void *)(uintptr_t)i);
	for (int idle = 0; idle < 20;) {
		struct sockaddr_vm from;
		socklen_t flen = sizeof(from);
		struct ms_hdr *h = (struct ms_hdr *)buf;
		ssize_t n;

		if (!wait_in(r)) {
			idle++;
			if (!getsockopt(r, SOL_SOCKET, SO_MEMINFO, mem, &mlen) &&
			    got + (int)mem[SK_MEMINFO_DROPS] >= MS_SENDERS * MS_PER_SENDER)
				break;
			continue;
		}
		n = recvfrom(r, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
		if (n < (ssize_t)sizeof(*h) || h->sender >= MS_SENDERS || h->len != (uint32_t)n ||
		    (size_t)n != ms_len(h->sender, h->seq)) {
			fail("bad datagram: %zd bytes", n);
			break;
		}
		skiff_pattern_fill(want, n - sizeof(*h), h->sender * 65536ULL + h->seq, 0);
		if (memcmp(buf + sizeof(*h), want, n - sizeof(*h))) {
			fail("sender %u seq %u: payload differs", h->sender, h->seq);
			break;
		}
		if ((int)h->seq < next_seq[h->sender]) {
			fail("sender %u: seq %u after %d (reordered or duplicated)", h->sender,
			     h->seq, next_seq[h->sender] - 1);
			break;
		}
		next_seq[h->sender] = (int)h->seq + 1;
		if (!port[h->sender])
			port[h->sender] = from.svm_port;
		if (from.svm_cid != LOCAL_CID || from.svm_port != port[h->sender]) {
			fail("sender %u: from %u:%u, earlier port %u", h->sender, from.svm_cid,
			     from.svm_port, port[h->sender]);
			break;
		}
		got++;
		idle = 0;
	}
	for (i = 0; i < MS_SENDERS; i++) {
		void *bad;

		pthread_join(th[i], &bad);
		if (bad)
			fail("sender %u failed", i);
	}
	if (getsockopt(r, SOL_SOCKET, SO_MEMINFO, mem, &mlen))
		fail("SO_MEMINFO");
	printf("DGRAM-INFO many-senders senders=%d sent=%d received=%d dropped=%u\n", MS_SENDERS,
	       MS_SENDERS * MS_PER_SENDER, got, mem[SK_MEMINFO_DROPS]);
	if (got + (int)mem[SK_MEMINFO_DROPS] != MS_SENDERS * MS_PER_SENDER)
		fail("received %d + dropped %u != sent %d", got, mem[SK_MEMINFO_DROPS],
		     MS_SENDERS * MS_PER_SENDER);
	/* Loss is allowed (nothing throttles senders on the receiver), but
	 * not total loss.
	 */
	if (!got)
		fail("nothing received");
	close(r);
}

static void case_poll(void)
{
	int a = dgram_bound(BASE_PORT + 80), b = dgram_bound(BASE_PORT + 81);
	struct pollfd p = { .fd = a, .events = POLLIN | POLLOUT };
	char buf[4];

	if (a < 0 || b < 0)
		return;
	if (poll(&p, 1, 0) != 1 || p.revents != POLLOUT)
		fail("idle socket: revents %#x, want POLLOUT", p.revents);
	if (send_to(b, BASE_PORT + 80, "pl", 2) != 2)
		fail("sendto");
	if (!wait_in(a))
		fail("no POLLIN after a datagram arrived");
	if (recv(a, buf, sizeof(buf), 0) != 2)
		fail("recv");
	close(a);
	close(b);
}

static int baseline(void)
{
	int fd;

	cur_case = "baseline-no-dgram";
	errno = 0;
	fd = socket(AF_VSOCK, SOCK_DGRAM, 0);
	if (fd >= 0 || errno != ENODEV) {
		fail("socket(SOCK_DGRAM) returned %d, want -1 ENODEV on plain 6.1", fd);
	} else {
		printf("DGRAM-CASE %s ok (socket: ENODEV, no datagram transport)\n", cur_case);
	}
	cur_case = "baseline-stream-opens";
	fd = socket(AF_VSOCK, SOCK_STREAM, 0);
	if (fd < 0)
		fail("socket(SOCK_STREAM)");
	else
		printf("DGRAM-CASE %s ok\n", cur_case);
	close(fd);
	return failures;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "patched") && strcmp(argv[1], "baseline"))) {
		fprintf(stderr, "usage: vsock-dgram patched|baseline\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "baseline")) {
		baseline();
	} else {
		run_case("sendto", case_sendto);
		run_case("sendto-autobind", case_autobind);
		run_case("connect-send", case_connect);
		run_case("peek-trunc", case_peek_trunc);
		run_case("max-size-and-emsgsize", case_sizes);
		run_case("poll", case_poll);
		run_case("no-socket-no-reply", case_no_socket);
		run_case("rcvbuf-drop", case_rcvbuf_drop);
		run_case("stream-and-dgram-same-port", case_same_port);
		run_case("many-senders", case_many_senders);
	}
	printf("DGRAM status=%s failures=%d\n", failures ? "fail" : "ok", failures);
	return failures ? 1 : 0;
}
