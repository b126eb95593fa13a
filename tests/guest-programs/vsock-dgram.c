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
 *
 * Through a real vsock device (tests/uml/dgram/dgram_e2e.py drives the host side):
 * vsock-dgram host P N MRG ONE_RX
 *   g2h       N datagrams of sizes from dev_size() (MRG 1: 1 B .. 64 KiB; MRG 0: at
 *             most ONE_RX, the payload one RX buffer holds) from port E2E_PORT to
 *             (2, P), each answered by the host with the same bytes from (2, P)
 *   host-first  a datagram the host sent through the gateway to port E2E_PORT + 1
 *             (seed 1000, 3000 bytes), answered from that port (seed 1001, 200 bytes)
 *   big-then-small  the host sends ONE_RX + 1 bytes (MRG 1: 64 KiB; seed 1002) then
 *             ONE_RX bytes (MRG 1: 1 byte; seed 1003): MRG 1 both arrive, MRG 0 only
 *             the second (the device drops the first, dgram_rx_drop_too_big)
 *   peek-trunc  a datagram (seed 1004, MRG 1: 20000 bytes, MRG 0: ONE_RX) peeked with
 *             MSG_PEEK|MSG_TRUNC into 100 bytes (its length and first bytes), then read
 *   unbound-host-port  10 bytes (seed 1020) to (2, P + 1), where nobody is bound, then
 *             3 bytes (seed 1021) to (2, P): the host waits for these
 *   host-full  64 datagrams (seed 1100 + i, 100 + i bytes) to (2, P), whose socket the
 *             host no longer reads, then 4 bytes (seed 1199) to (2, P + 2)
 * vsock-dgram peer P PEER_CID N a|b MRG ONE_RX
 *   ready     "READY" from port E2E_PORT to (2, P); waits for "GO" from (2, P)
 *   g2g       round 1 guest a sends N datagrams (dev_size(), seed 3000 + i) to
 *             (PEER_CID, E2E_PORT) and b echoes each; round 2 the other way (4000 + i)
 *   big-then-small  a sends a datagram to CID PEER_CID + 2 (no such guest: the device
 *             drops it), then b ONE_RX + 1 (MRG 1: 64 KiB; seed 5000) then ONE_RX (MRG 1:
 *             1; seed 5001) bytes: as for host, checked on b
 * Both modes end by printing the transport's dgram_rx_drops module parameter.
 *
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

/* Wait up to @ms for a datagram on @fd. */
static int wait_in_ms(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* One received datagram and its sender. */
struct rx_dgram {
	char buf[MAX_DGRAM + 1];
	ssize_t n; /* -1: none */
	struct sockaddr_vm from;
	socklen_t flen;
};

/*
 * A datagram received early and kept for the next expect_from_addr() (peer
 * mode: the other guest's first datagram can come before the host's GO).
 */
static struct rx_dgram stash = { .n = -1 };

/* Receive one datagram into @d, waiting up to @ms. Return: 0, or -1 (failure printed). */
static int recv_dgram(int fd, struct rx_dgram *d, size_t want, int ms)
{
	if (!wait_in_ms(fd, ms)) {
		fail("no datagram of %zu bytes within %d ms", want, ms);
		return -1;
	}
	memset(&d->from, 0, sizeof(d->from));
	d->flen = sizeof(d->from);
	d->n = recvfrom(fd, d->buf, sizeof(d->buf), MSG_DONTWAIT, (struct sockaddr *)&d->from,
			&d->flen);
	if (d->n < 0) {
		fail("recvfrom");
		return -1;
	}
	return 0;
}

/* Whether @d is @want bytes equal to @buf from (@cid, @src_port). Return: 0, or -1 (printed). */
static int check_dgram(const struct rx_dgram *d, const void *buf, size_t want, unsigned int cid,
		       unsigned int src_port)
{
	if ((size_t)d->n != want || memcmp(d->buf, buf, want)) {
		fail("got %zd bytes (fnv %016llx), want %zu (fnv %016llx)", d->n,
		     (unsigned long long)skiff_fnv1a(SKIFF_FNV_INIT, (const uint8_t *)d->buf,
						     (size_t)d->n),
		     want, (unsigned long long)skiff_fnv1a(SKIFF_FNV_INIT, buf, want));
		return -1;
	}
	if (d->flen != sizeof(d->from) || d->from.svm_family != AF_VSOCK ||
	    d->from.svm_cid != cid || d->from.svm_port != src_port) {
		fail("sender address len %u family %u cid %u port %u, want cid %u port %u", d->flen,
		     d->from.svm_family, d->from.svm_cid, d->from.svm_port, cid, src_port);
		return -1;
	}
	return 0;
}

/*
 * Receive one datagram (waiting up to @ms; the stashed one first, if any) of
 * @want bytes equal to @buf, from (@cid, @src_port).
 */
static int expect_from_addr(int fd, const void *buf, size_t want, unsigned int cid,
			    unsigned int src_port, int ms)
{
	static struct rx_dgram d;
	int ret;

	if (stash.n >= 0) {
		ret = check_dgram(&stash, buf, want, cid, src_port);
		stash.n = -1;
		return ret;
	}
	if (recv_dgram(fd, &d, want, ms))
		return -1;
	return check_dgram(&d, buf, want, cid, src_port);
}

/* Wait up to 2 s for a datagram on @fd. */
static int wait_in(int fd)
{
	return wait_in_ms(fd, 2000);
}

/* Receive one datagram of @want bytes equal to @buf, from (1, @src_port), within 2 s. */
static int expect_from(int fd, const void *buf, size_t want, unsigned int src_port)
{
	return expect_from_addr(fd, buf, want, LOCAL_CID, src_port, 2000);
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

/* ---- Through a real device: the host (CID 2) and another guest ---- */

#define HOST_CID 2
#define E2E_PORT 52000u
#define E2E_WAIT_MS 20000
#define E2E_FLOOD 64

static unsigned int dev_mrg, dev_one_rx;

/* Size of datagram @i: cycles over sizes up to 64 KiB (MRG) or one RX buffer. */
static size_t dev_size(unsigned int i)
{
	static const size_t mrg[] = { 1,    2,	  7,	 64,	1000,  4095, 4096,
				      4097, 8192, 12345, 32768, 65535, 65536 };
	static const size_t one[] = { 1, 2, 7, 64, 1000, 2048 };
	const unsigned int n_one = sizeof(one) / sizeof(one[0]);

	if (dev_mrg)
		return mrg[i % (sizeof(mrg) / sizeof(mrg[0]))];
	if (i % (n_one + 1) == n_one)
		return dev_one_rx; /* the largest that fits */
	return one[i % (n_one + 1)];
}

/* Receive one datagram from (@cid, @port) within E2E_WAIT_MS equal to pattern @seed, @len. */
static int dev_expect(int fd, unsigned int cid, unsigned int port, uint64_t seed, size_t len)
{
	static uint8_t want[MAX_DGRAM];

	skiff_pattern_fill(want, len, seed, 0);
	if (expect_from_addr(fd, want, len, cid, port, E2E_WAIT_MS)) {
		printf("DGRAM-CASE %s: (that was the datagram of seed %llu)\n", cur_case,
		       (unsigned long long)seed);
		return -1;
	}
	return 0;
}

/* Send pattern @seed, @len to (@cid, @port). */
static int dev_send(int fd, unsigned int cid, unsigned int port, uint64_t seed, size_t len)
{
	static uint8_t buf[MAX_DGRAM];
	struct sockaddr_vm a = vm_addr(cid, port);

	skiff_pattern_fill(buf, len, seed, 0);
	if (sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a)) != (ssize_t)len) {
		fail("sendto cid %u port %u, %zu bytes", cid, port, len);
		return -1;
	}
	return 0;
}

static void dev_print_drops(void)
{
	char line[256] = "";
	FILE *f = fopen("/sys/module/vmw_vsock_virtio_transport/parameters/dgram_rx_drops", "r");

	if (!f || !fgets(line, sizeof(line), f)) {
		printf("DGRAM-GUEST-DROPS unreadable\n");
	} else {
		line[strcspn(line, "\n")] = 0;
		printf("DGRAM-GUEST-DROPS %s\n", line);
	}
	if (f)
		fclose(f);
}

/* The big datagram, then the small one; with MRG both arrive, else only the small one. */
static int dev_big_small_check(int fd, unsigned int cid, unsigned int port, uint64_t seed)
{
	if (dev_mrg && dev_expect(fd, cid, port, seed, MAX_DGRAM))
		return -1;
	return dev_expect(fd, cid, port, seed + 1, dev_mrg ? 1 : dev_one_rx);
}

static int dev_parse(char **arg, unsigned int n, unsigned int *v)
{
	unsigned int i;
	char *end;

	for (i = 0; i < n; i++) {
		v[i] = (unsigned int)strtoul(arg[i], &end, 10);
		if (*end || !*arg[i]) {
			fprintf(stderr, "vsock-dgram: bad number '%s'\n", arg[i]);
			return -1;
		}
	}
	return 0;
}

static int dev_end(void)
{
	dev_print_drops();
	printf("DGRAM status=%s failures=%d\n", failures ? "fail" : "ok", failures);
	return failures ? 1 : 0;
}

/*
 * A datagram of @len bytes (pattern @seed) from (2, @port) on @fd: MSG_PEEK|MSG_TRUNC
 * into 100 bytes gives its whole length and its first bytes, then it is read whole.
 */
static int dev_peek_trunc(int fd, unsigned int port, uint64_t seed, size_t len)
{
	uint8_t got[100], want[100];
	ssize_t n;

	if (!wait_in_ms(fd, E2E_WAIT_MS)) {
		fail("no datagram (seed %llu) within %d ms", (unsigned long long)seed, E2E_WAIT_MS);
		return -1;
	}
	n = recv(fd, got, sizeof(got), MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	skiff_pattern_fill(want, sizeof(want), seed, 0);
	if (n != (ssize_t)len || memcmp(got, want, sizeof(got))) {
		fail("MSG_PEEK|MSG_TRUNC into 100 bytes gave %zd, want %zu and the first bytes", n,
		     len);
		return -1;
	}
	return dev_expect(fd, HOST_CID, port, seed, len);
}

/* vsock-dgram host P N MRG ONE_RX */
static int dev_host(char **arg)
{
	unsigned int v[4], port, n, i;
	int s, r;

	if (dev_parse(arg, 4, v))
		return 2;
	port = v[0], n = v[1], dev_mrg = v[2], dev_one_rx = v[3];
	if (dev_one_rx > MAX_DGRAM)
		return 2;
	cur_case = "bind";
	s = dgram_bound(E2E_PORT);
	r = dgram_bound(E2E_PORT + 1);
	if (s < 0 || r < 0)
		return dev_end();
	cur_case = "g2h";
	for (i = 0; i < n; i++) {
		if (dev_send(s, HOST_CID, port, 100 + i, dev_size(i)) ||
		    dev_expect(s, HOST_CID, port, 100 + i, dev_size(i)))
			break;
	}
	if (i == n)
		printf("DGRAM-CASE g2h ok (%u datagrams echoed)\n", n);
	cur_case = "host-first";
	if (!dev_expect(r, HOST_CID, port, 1000, 3000) && !dev_send(r, HOST_CID, port, 1001, 200))
		printf("DGRAM-CASE host-first ok\n");
	cur_case = "big-then-small";
	if (!dev_big_small_check(r, HOST_CID, port, 1002))
		printf("DGRAM-CASE big-then-small ok (mrg %u)\n", dev_mrg);
	cur_case = "peek-trunc";
	if (!dev_peek_trunc(r, port, 1004, dev_mrg ? 20000 : dev_one_rx))
		printf("DGRAM-CASE peek-trunc ok\n");
	/* Nobody bound at the host: the device drops it (dgram_tx_drop_no_dest); END after it. */
	cur_case = "unbound-host-port";
	if (!dev_send(s, HOST_CID, port + 1, 1020, 10) && !dev_send(s, HOST_CID, port, 1021, 3))
		printf("DGRAM-CASE unbound-host-port ok\n");
	/* Into a host socket that does not read: the device drops what does not fit. */
	cur_case = "host-full";
	for (i = 0; i < E2E_FLOOD; i++) {
		if (dev_send(s, HOST_CID, port, 1100 + i, 100 + i))
			break;
	}
	if (i == E2E_FLOOD && !dev_send(s, HOST_CID, port + 2, 1199, 4))
		printf("DGRAM-CASE host-full ok\n");
	close(s);
	close(r);
	return dev_end();
}

/* Round of @n: send each and wait for its echo (@send), or echo each (!@send). */
static int dev_round(int fd, unsigned int peer, unsigned int n, uint64_t seed, int send)
{
	static uint8_t buf[MAX_DGRAM + 1];
	struct sockaddr_vm from;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (send) {
			if (dev_send(fd, peer, E2E_PORT, seed + i, dev_size(i)) ||
			    dev_expect(fd, peer, E2E_PORT, seed + i, dev_size(i)))
				return -1;
			continue;
		}
		if (dev_expect(fd, peer, E2E_PORT, seed + i, dev_size(i)))
			return -1;
		from = vm_addr(peer, E2E_PORT);
		skiff_pattern_fill(buf, dev_size(i), seed + i, 0);
		if (sendto(fd, buf, dev_size(i), 0, (struct sockaddr *)&from, sizeof(from)) !=
		    (ssize_t)dev_size(i)) {
			fail("echo sendto");
			return -1;
		}
	}
	return 0;
}

/*
 * The host's GO (seed 2001, 2 bytes, from (2, @port)). The host tells both
 * guests, in either order, so the other guest's first datagram of round 1
 * may come first: it is kept (one at most: round 1's sender waits for its
 * echo) for the round's first dev_expect().
 */
static int dev_await_go(int fd, unsigned int port, unsigned int peer)
{
	static struct rx_dgram d;
	uint8_t go[2];

	skiff_pattern_fill(go, sizeof(go), 2001, 0);
	for (;;) {
		if (recv_dgram(fd, &d, sizeof(go), E2E_WAIT_MS))
			return -1;
		if (d.from.svm_cid != peer || stash.n >= 0)
			break;
		stash = d;
	}
	if (check_dgram(&d, go, sizeof(go), HOST_CID, port)) {
		printf("DGRAM-CASE %s: (that was the datagram of seed 2001)\n", cur_case);
		return -1;
	}
	return 0;
}

/* vsock-dgram peer P PEER_CID N a|b MRG ONE_RX */
static int dev_peer(char **arg)
{
	unsigned int v[3], port, peer, n;
	int fd, a = !strcmp(arg[3], "a");

	if (dev_parse(arg + 4, 2, v))
		return 2;
	dev_mrg = v[0], dev_one_rx = v[1];
	if (dev_parse(arg, 3, v) || dev_one_rx > MAX_DGRAM || (!a && strcmp(arg[3], "b")))
		return 2;
	port = v[0], peer = v[1], n = v[2];
	cur_case = "ready";
	fd = dgram_bound(E2E_PORT);
	if (fd < 0)
		return dev_end();
	if (dev_send(fd, HOST_CID, port, 2000, 5) || dev_await_go(fd, port, peer))
		goto out;
	printf("DGRAM-CASE ready ok\n");
	cur_case = "g2g";
	if (dev_round(fd, peer, n, 3000, a) || dev_round(fd, peer, n, 4000, !a))
		goto out;
	printf("DGRAM-CASE g2g ok (%u datagrams each way)\n", n);
	cur_case = "big-then-small";
	if (a) {
		/* To no guest: dgram_tx_drop_no_dest, counted before b sees the next ones. */
		if (dev_send(fd, peer + 2, E2E_PORT, 5006, 10) ||
		    dev_send(fd, peer, E2E_PORT, 5000, dev_mrg ? MAX_DGRAM : dev_one_rx + 1) ||
		    dev_send(fd, peer, E2E_PORT, 5001, dev_mrg ? 1 : dev_one_rx))
			goto out;
	} else if (dev_big_small_check(fd, peer, E2E_PORT, 5000)) {
		goto out;
	}
	printf("DGRAM-CASE big-then-small ok (mrg %u)\n", dev_mrg);
out:
	close(fd);
	return dev_end();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 6 && !strcmp(argv[1], "host"))
		return dev_host(argv + 2);
	if (argc == 8 && !strcmp(argv[1], "peer"))
		return dev_peer(argv + 2);
	if (argc != 2 || (strcmp(argv[1], "patched") && strcmp(argv[1], "baseline"))) {
		fprintf(stderr, "usage: vsock-dgram patched|baseline\n"
				"       vsock-dgram host P N MRG ONE_RX\n"
				"       vsock-dgram peer P PEER_CID N a|b MRG ONE_RX\n");
		return 2;
	}
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
