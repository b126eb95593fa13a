// SPDX-License-Identifier: MIT
/*
 * Harness: whole vhost-user sessions (issue 22) against one real backend
 * and device (vhost_user/vu_backend.c, vu_mem.c, vu_fd.c and the device
 * model with its threads), driven the way vu_server.c drives them: one
 * request at a time through vu_backend_handle_one(), the frontend dropped
 * when it fails or when the backend's fault fd fires. Where the
 * vhost_user harness fuzzes framing, this one fuzzes the order of valid
 * requests and what rides on them: fd types, vring life cycles
 * (GET_VRING_BASE, SET_VRING_KICK/CALL, ENABLE), memory tables replaced or
 * shrunk under a running device, descriptor chains and kicks while the
 * rings are live, disconnects and RESET_OWNER mid-session.
 *
 * Input: up to 96 operations, each a u8 opcode (modulo 20) and its
 * arguments (bytes past the end read as zeros):
 *    0 sel           GET_FEATURES / GET_PROTOCOL_FEATURES / GET_QUEUE_NUM
 *    1 bits          SET_FEATURES: bit 0 VERSION_1, 1 EVENT_IDX, 2
 *                    INDIRECT_DESC, 3 STREAM, 4 SEQPACKET, 5 MRG_RXBUF,
 *                    6 PROTOCOL_FEATURES, 7 a bit never offered
 *    2 bits          SET_PROTOCOL_FEATURES (REPLY_ACK, SLAVE_REQ, CONFIG)
 *    3 flags         SET_MEM_TABLE: bit 0 a fresh memfd, bit 1 GPA 1 MiB,
 *                    bit 2 two regions, bit 3 a region past the file's end,
 *                    bit 4 a user address no ring uses
 *    4 q log2 flag   SET_VRING_NUM (q modulo 4: index 3 is out of range)
 *    5 q d a u       SET_VRING_ADDR, u16 offsets into the memfd
 *    6 q u16         SET_VRING_BASE
 *    7 q kind        SET_VRING_KICK } kind modulo 8: eventfd, no fd, pipe
 *    8 q kind        SET_VRING_CALL } read end at EOF, full pipe's write
 *    9 q kind        SET_VRING_ERR  } end, socket, memfd, timerfd,
 *                                     blocking eventfd
 *   10 q on          SET_VRING_ENABLE (on modulo 3)
 *   11 q             GET_VRING_BASE
 *   12 q             kick vring q (the frontend's eventfd)
 *   13 q n hdr segs  a descriptor chain on vring q: n (1..4) descriptors,
 *                    each u16 offset, u16 length, u8 flags; a 44-byte vsock
 *                    header at the first; then avail idx + 1 and a kick
 *   14               the frontend disconnects; a new one connects
 *   15 kind          SET_SLAVE_REQ_FD
 *   16               RESET_OWNER
 *   17 u16           the frontend shrinks its memfd to that many bytes
 *                    (SIGBUS guard), then kicks every vring
 *   18 off size      GET_CONFIG
 *   19               let the device threads run (200 us)
 *
 * Checked besides ASan/UBSan/LSan: replies well formed and for the request
 * sent; kick fds other than eventfds, call fds other than eventfds,
 * sockets and pipe write ends, slave fds other than sockets refused
 * (finding 4); no fd the backend closed is ever read by the device: every
 * fd number that closes during an operation is taken by a canary pipe
 * holding one byte, which must still be there at the end (finding 3); a
 * memory fault drops the frontend and the process lives on (finding 7);
 * no fd leaks across inputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "skiff/vhost_user.h"
#include "vu_frontend.h"
#include "vu_proto.h"

#define MEM_SIZE 0x10000u
#define MAX_OPS 96
#define MAX_FD 1024
#define HOST_PORT 1234

enum fd_kind {
	K_EVENTFD,
	K_NOFD,
	K_PIPE_EOF,
	K_PIPE_FULL,
	K_SOCKET,
	K_MEMFD,
	K_TIMERFD,
	K_EVENTFD_BLOCKING,
};

static struct vsock_dev *g_dev;
static struct vu_backend *g_vb;
static int g_host_listen = -1;

/* One session's frontend side. */
struct session {
	int sock, be; /* frontend end, backend end */
	int memfd;
	uint8_t *mem; /* the frontend's mapping, MEM_SIZE bytes */
	size_t mem_len; /* what is still backed (after a shrink) */
	uint64_t gpa;
	int kick[3]; /* eventfds the backend took as kicks, our copies */
	struct {
		uint64_t desc, avail, used; /* offsets into mem */
		uint16_t num, avail_idx;
	} ring[3];
	int canaries[MAX_FD];
	unsigned int n_canaries;
	int held[MAX_OPS]; /* read ends of full pipes, closed at the end */
	unsigned int n_held;
	int scan_end; /* fd numbers scanned for canaries: [0, scan_end) */
};

static void setup_once(void)
{
	static char path[108], host[120];
	struct vsock_dev_config cfg = { .guest_cid = 3, .uds_path = path, .rx_threads = 1 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	signal(SIGPIPE, SIG_IGN); /* as skiff-vsock's main() */
	snprintf(path, sizeof(path), "%s/s.sock", fz_scratch_dir());
	if (vsock_dev_create(&cfg, &g_dev) || vu_backend_create(g_dev, false, &g_vb))
		abort();
	/* A host service the guest can connect to; nobody accepts (backlog). */
	snprintf(host, sizeof(host), "%s_%u", path, HOST_PORT);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", host);
	g_host_listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (g_host_listen < 0 || bind(g_host_listen, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(g_host_listen, 64))
		abort();
}

/*
 * Which fd numbers are open. Numbers are handed out lowest first, and one
 * operation opens a few at most, so 32 past the highest one seen is enough.
 */
static void open_map(struct session *s, uint8_t map[MAX_FD / 8])
{
	int fd, end = s->scan_end;

	memset(map, 0, MAX_FD / 8);
	for (fd = 0; fd < end; fd++) {
		if (fcntl(fd, F_GETFD) < 0)
			continue;
		map[fd / 8] |= (uint8_t)(1u << (fd % 8));
		if (fd + 32 > s->scan_end)
			s->scan_end = fd + 32 < MAX_FD ? fd + 32 : MAX_FD;
	}
}

/* Every fd number that closed since @before gets a canary: a pipe with one byte. */
static void plant_canaries(struct session *s, const uint8_t before[MAX_FD / 8])
{
	int fd;

	for (fd = 0; fd < s->scan_end; fd++) {
		int p[2];

		if (!(before[fd / 8] & (1u << (fd % 8))) || fcntl(fd, F_GETFD) >= 0)
			continue;
		if (s->n_canaries == MAX_FD || pipe2(p, O_CLOEXEC))
			abort();
		if (write(p[1], "c", 1) != 1)
			abort();
		close(p[1]); /* the reader then sees the byte, then EOF */
		if (p[0] != fd) {
			/*
			 * Not dup2(): a device thread may be opening a host
			 * socket right now, which may get this number first;
			 * F_DUPFD takes it only if it is still free.
			 */
			int c = fcntl(p[0], F_DUPFD_CLOEXEC, fd);

			close(p[0]);
			if (c != fd) {
				if (c >= 0)
					close(c);
				continue;
			}
		}
		s->canaries[s->n_canaries++] = fd;
	}
}

static void check_canaries(struct session *s)
{
	unsigned int i;

	for (i = 0; i < s->n_canaries; i++) {
		int avail = -1;

		FZ_CHECK(ioctl(s->canaries[i], FIONREAD, &avail) == 0);
		/* 0: the device read from an fd number the backend had closed. */
		FZ_CHECK(avail == 1);
		close(s->canaries[i]);
	}
	s->n_canaries = 0;
}

static void map_memfd(struct session *s)
{
	s->memfd = memfd_create("fuzz-session", MFD_CLOEXEC);
	if (s->memfd < 0 || ftruncate(s->memfd, MEM_SIZE))
		abort();
	s->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, s->memfd, 0);
	if (s->mem == MAP_FAILED)
		abort();
	s->mem_len = MEM_SIZE;
}

static void unmap_memfd(struct session *s)
{
	munmap(s->mem, MEM_SIZE);
	close(s->memfd);
}

static void session_connect(struct session *s)
{
	int sv[2], big = 1 << 20;
	struct timeval tv = { .tv_sec = 5 };

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	s->sock = sv[0];
	s->be = sv[1];
}

static void forget_kicks(struct session *s)
{
	unsigned int q;

	for (q = 0; q < 3; q++) {
		if (s->kick[q] >= 0)
			close(s->kick[q]);
		s->kick[q] = -1;
	}
}

/* The frontend is gone: what vu_server.c does, then a new connection. */
static void session_drop(struct session *s)
{
	close(s->sock);
	vu_backend_disconnect(g_vb);
	FZ_CHECK(!vu_backend_started(g_vb));
	close(s->be);
	forget_kicks(s);
	session_connect(s);
}

/*
 * One request, handled; its reply read into @out (@cap bytes).
 * Return: the reply's payload size, or -1 when the frontend was dropped.
 */
static int transact(struct session *s, uint32_t req, const void *p, uint32_t size, const int *fds,
		    unsigned int nfds, void *out, uint32_t cap)
{
	uint8_t buf[sizeof(struct vu_hdr) + VU_MAX_PAYLOAD];
	struct vu_hdr h;
	ssize_t r;

	if (fe_send(s->sock, req, VU_FLAG_NEED_REPLY, p, size, fds, nfds))
		abort();
	if (vu_backend_handle_one(g_vb, s->be)) {
		session_drop(s);
		return -1;
	}
	r = recv(s->sock, buf, sizeof(buf), MSG_DONTWAIT);
	FZ_CHECK(r >= (ssize_t)sizeof(h)); /* every request asked for a reply */
	memcpy(&h, buf, sizeof(h));
	FZ_CHECK(h.flags == (VU_VERSION | VU_FLAG_REPLY));
	FZ_CHECK(h.request == req);
	FZ_CHECK(r == (ssize_t)(sizeof(h) + h.size));
	memcpy(out, buf + sizeof(h), h.size < cap ? h.size : cap);
	return (int)h.size;
}

/* A "set" request: its REPLY_ACK status, or -1 when dropped. */
static int64_t set_req(struct session *s, uint32_t req, const void *p, uint32_t size,
		       const int *fds, unsigned int nfds)
{
	uint64_t ack = 0;
	int n = transact(s, req, p, size, fds, nfds, &ack, sizeof(ack));

	if (n < 0)
		return -1;
	FZ_CHECK(n == (int)sizeof(ack));
	return (int64_t)ack;
}

/* An fd of @kind; *@keep gets our eventfd copy for K_EVENTFD (else -1). */
static int make_fd(struct session *s, enum fd_kind kind, int *keep)
{
	int p[2], fd = -1;

	*keep = -1;
	switch (kind) {
	case K_EVENTFD:
		fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (fd >= 0)
			*keep = dup(fd);
		break;
	case K_NOFD:
		return -1;
	case K_PIPE_EOF:
		if (pipe2(p, O_CLOEXEC))
			abort();
		close(p[1]);
		fd = p[0];
		break;
	case K_PIPE_FULL: {
		char junk[4096] = { 0 };

		if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
			abort();
		fcntl(p[1], F_SETPIPE_SZ, 4096);
		while (write(p[1], junk, sizeof(junk)) > 0)
			;
		fcntl(p[1], F_SETFL, O_WRONLY); /* blocking, as a careless frontend leaves it */
		/* A reader stays, so a write blocks rather than fail with EPIPE. */
		if (s->n_held == MAX_OPS)
			abort();
		s->held[s->n_held++] = p[0];
		fd = p[1];
		break;
	}
	case K_SOCKET:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p))
			abort();
		close(p[1]);
		fd = p[0];
		break;
	case K_MEMFD:
		fd = memfd_create("fuzz-not-eventfd", MFD_CLOEXEC);
		break;
	case K_TIMERFD:
		fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		break;
	case K_EVENTFD_BLOCKING:
		fd = eventfd(0, EFD_CLOEXEC);
		if (fd >= 0)
			*keep = dup(fd);
		break;
	}
	if (fd < 0)
		abort();
	return fd;
}

/* SET_VRING_KICK/CALL/ERR (or SET_SLAVE_REQ_FD when @q < 0) with an fd of @kind. */
static void set_fd(struct session *s, uint32_t req, int q, enum fd_kind kind)
{
	uint64_t v = (uint64_t)(q < 0 ? 0 : q);
	int keep, fd = make_fd(s, kind, &keep);
	bool eventfd_kind = kind == K_EVENTFD || kind == K_EVENTFD_BLOCKING;
	bool ok_type;
	int64_t ack;

	if (fd < 0)
		v |= VU_VRING_NOFD_MASK;
	if (req == VU_REQ_SET_SLAVE_REQ_FD) {
		ok_type = kind == K_SOCKET;
		ack = set_req(s, req, NULL, 0, &fd, fd < 0 ? 0 : 1);
	} else {
		ok_type = req == VU_REQ_SET_VRING_CALL ?
				  eventfd_kind || kind == K_SOCKET || kind == K_PIPE_FULL ||
					  kind == K_NOFD :
				  eventfd_kind || kind == K_NOFD;
		ack = set_req(s, req, &v, sizeof(v), &fd, fd < 0 ? 0 : 1);
	}
	if (fd >= 0)
		close(fd);
	/* A type that does not fit its use is refused (issue 22, finding 4). */
	if (ack >= 0 && !ok_type && q < 3)
		FZ_CHECK(ack != 0);
	if (req == VU_REQ_SET_VRING_KICK && q >= 0 && q < 3 && ack == 0) {
		if (s->kick[q] >= 0)
			close(s->kick[q]);
		s->kick[q] = keep;
		keep = -1;
	}
	if (keep >= 0)
		close(keep);
}

static void kick(struct session *s, unsigned int q)
{
	uint64_t one = 1;
	ssize_t r;

	if (q < 3 && s->kick[q] >= 0) {
		r = write(s->kick[q], &one, sizeof(one));
		(void)r;
	}
}

static void set_mem_table(struct session *s, uint8_t flags)
{
	struct vu_mem_table t = { .nregions = (flags & 4) ? 2 : 1 };
	uint64_t ua = (uint64_t)(uintptr_t)s->mem + ((flags & 16) ? 0x100000000ull : 0);
	int fds[2];

	if (flags & 1) {
		unmap_memfd(s);
		map_memfd(s);
	}
	s->gpa = (flags & 2) ? 0x100000 : 0;
	if (t.nregions == 1) {
		t.regions[0] = (struct vu_mem_region){ s->gpa, MEM_SIZE, ua, 0 };
	} else {
		t.regions[0] = (struct vu_mem_region){ s->gpa, MEM_SIZE / 2, ua, 0 };
		t.regions[1] = (struct vu_mem_region){ s->gpa + MEM_SIZE / 2, MEM_SIZE / 2,
						       ua + MEM_SIZE / 2, MEM_SIZE / 2 };
	}
	if (flags & 8)
		t.regions[t.nregions - 1].memory_size += 0x1000;
	fds[0] = fds[1] = s->memfd;
	set_req(s, VU_REQ_SET_MEM_TABLE, &t, 8 + t.nregions * sizeof(struct vu_mem_region), fds,
		t.nregions);
}

/* Offset @off of the frontend's memory, if still backed for @len bytes. */
static uint8_t *at(struct session *s, uint64_t off, size_t len)
{
	if (off > s->mem_len || len > s->mem_len - off)
		return NULL;
	return s->mem + off;
}

static void put_chain(struct session *s, struct fz *f)
{
	unsigned int q = fz_u8(f) % 3, n = fz_u8(f) % 4 + 1, i;
	uint8_t hdr[44];
	uint16_t head, slot, idx;
	uint8_t *p;

	fz_bytes(f, hdr, sizeof(hdr));
	if (!s->ring[q].num)
		return;
	head = s->ring[q].avail_idx % s->ring[q].num;
	for (i = 0; i < n; i++) {
		uint16_t off = fz_u16(f), len = fz_u16(f);
		uint8_t fl = fz_u8(f);
		uint16_t d = (uint16_t)((head + i) % s->ring[q].num);
		struct {
			uint64_t addr;
			uint32_t len;
			uint16_t flags, next;
		} desc = { s->gpa + (off % MEM_SIZE), len % 0x2000, (uint16_t)(fl & 7),
			   (uint16_t)((d + 1) % s->ring[q].num) };

		if (i + 1 < n)
			desc.flags |= 1; /* NEXT */
		else
			desc.flags &= (uint16_t)~1u;
		p = at(s, s->ring[q].desc + 16ull * d, sizeof(desc));
		if (p)
			memcpy(p, &desc, sizeof(desc));
		if (i == 0 && (p = at(s, off % MEM_SIZE, sizeof(hdr))))
			memcpy(p, hdr, sizeof(hdr));
	}
	slot = s->ring[q].avail_idx % s->ring[q].num;
	idx = (uint16_t)(s->ring[q].avail_idx + 1);
	p = at(s, s->ring[q].avail + 4 + 2ull * slot, 2);
	if (p)
		memcpy(p, &head, 2);
	p = at(s, s->ring[q].avail + 2, 2);
	if (p) {
		__atomic_store_n((uint16_t *)(void *)p, idx, __ATOMIC_RELEASE);
		s->ring[q].avail_idx = idx;
	}
	kick(s, q);
}

static void one_op(struct session *s, struct fz *f)
{
	uint8_t op = fz_u8(f) % 20, a, b;
	struct vu_vring_state st;
	uint64_t v;
	int64_t ack;
	unsigned int q;

	switch (op) {
	case 0: {
		static const uint32_t gets[] = { VU_REQ_GET_FEATURES, VU_REQ_GET_PROTOCOL_FEATURES,
						 VU_REQ_GET_QUEUE_NUM };

		a = fz_u8(f) % 3;
		if (transact(s, gets[a], NULL, 0, NULL, 0, &v, sizeof(v)) >= 0 && a == 2)
			FZ_CHECK(v == 3);
		break;
	}
	case 1: {
		static const unsigned int bits[] = {
			32, 29, 28, 0, 1, 4, VU_F_PROTOCOL_FEATURES, 63
		};

		a = fz_u8(f);
		v = 0;
		for (q = 0; q < 8; q++)
			if (a & (1u << q))
				v |= 1ull << bits[q];
		set_req(s, VU_REQ_SET_FEATURES, &v, sizeof(v), NULL, 0);
		break;
	}
	case 2:
		v = fz_u8(f) & 7u;
		v = ((v & 1) ? 1ull << VU_PROTOCOL_F_REPLY_ACK : 0) |
		    ((v & 2) ? 1ull << VU_PROTOCOL_F_SLAVE_REQ : 0) |
		    ((v & 4) ? 1ull << VU_PROTOCOL_F_CONFIG : 0);
		set_req(s, VU_REQ_SET_PROTOCOL_FEATURES, &v, sizeof(v), NULL, 0);
		break;
	case 3:
		set_mem_table(s, fz_u8(f));
		break;
	case 4:
		q = fz_u8(f) % 4;
		a = fz_u8(f) % 17;
		b = fz_u8(f);
		st = (struct vu_vring_state){ q, (1u << a) + (b & 1) };
		ack = set_req(s, VU_REQ_SET_VRING_NUM, &st, sizeof(st), NULL, 0);
		if (ack == 0 && q < 3) {
			s->ring[q].num = (uint16_t)st.num;
			s->ring[q].avail_idx = 0;
		}
		break;
	case 5: {
		struct vu_vring_addr ad = { .index = fz_u8(f) % 4 };
		uint64_t ua = (uint64_t)(uintptr_t)s->mem;
		uint64_t d = fz_u16(f), av = fz_u16(f), u = fz_u16(f);

		ad.desc_user_addr = ua + d;
		ad.avail_user_addr = ua + av;
		ad.used_user_addr = ua + u;
		ad.log_guest_addr = ~0ull;
		if (set_req(s, VU_REQ_SET_VRING_ADDR, &ad, sizeof(ad), NULL, 0) == 0 &&
		    ad.index < 3) {
			s->ring[ad.index].desc = d;
			s->ring[ad.index].avail = av;
			s->ring[ad.index].used = u;
		}
		break;
	}
	case 6:
		st = (struct vu_vring_state){ fz_u8(f) % 4, fz_u16(f) };
		set_req(s, VU_REQ_SET_VRING_BASE, &st, sizeof(st), NULL, 0);
		break;
	case 7:
	case 8:
	case 9:
		q = fz_u8(f) % 4;
		set_fd(s, VU_REQ_SET_VRING_KICK + (op - 7u), (int)q, (enum fd_kind)(fz_u8(f) % 8));
		break;
	case 10:
		st = (struct vu_vring_state){ fz_u8(f) % 4, fz_u8(f) % 3 };
		set_req(s, VU_REQ_SET_VRING_ENABLE, &st, sizeof(st), NULL, 0);
		break;
	case 11:
		st = (struct vu_vring_state){ fz_u8(f) % 4, 0 };
		if (transact(s, VU_REQ_GET_VRING_BASE, &st, sizeof(st), NULL, 0, &st, sizeof(st)) >=
			    0 &&
		    st.index < 3 && s->kick[st.index] >= 0) {
			/* The vring is stopped until its next kick fd. */
			close(s->kick[st.index]);
			s->kick[st.index] = -1;
		}
		break;
	case 12:
		kick(s, fz_u8(f) % 3);
		break;
	case 13:
		put_chain(s, f);
		break;
	case 14:
		session_drop(s);
		break;
	case 15:
		set_fd(s, VU_REQ_SET_SLAVE_REQ_FD, -1, (enum fd_kind)(fz_u8(f) % 8));
		break;
	case 16:
		set_req(s, VU_REQ_RESET_OWNER, NULL, 0, NULL, 0);
		break;
	case 17:
		s->mem_len = fz_u16(f) % MEM_SIZE;
		if (ftruncate(s->memfd, (off_t)s->mem_len))
			abort();
		for (q = 0; q < 3; q++)
			kick(s, q);
		break;
	case 18: {
		struct {
			struct vu_config_hdr h;
			uint8_t data[8];
		} __attribute__((packed)) c = { .h = { fz_u8(f) % 12, fz_u8(f) % 12, 0 } };
		uint8_t out[sizeof(c)];

		transact(s, VU_REQ_GET_CONFIG, &c, (uint32_t)(sizeof(c.h) + (c.h.size % 9)), NULL,
			 0, out, sizeof(out));
		break;
	}
	case 19:
		usleep(200);
		break;
	}
}

/* The device faulted on our memory: drop us, as vu_server.c does. */
static void check_fault(struct session *s)
{
	struct pollfd p = { .fd = vu_backend_fault_fd(g_vb), .events = POLLIN };

	if (poll(&p, 1, 0) == 1)
		session_drop(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct session s;
	uint8_t before[MAX_FD / 8];
	unsigned int fds_before, n = 0, q;
	struct fz f;
	int fd;

	if (!g_vb)
		setup_once();
	fds_before = fz_count_fds();
	memset(&s, 0, sizeof(s));
	for (q = 0; q < 3; q++)
		s.kick[q] = -1;
	map_memfd(&s);
	session_connect(&s);
	fz_init(&f, data, size);
	s.scan_end = 64;
	while (fz_left(&f) && n++ < MAX_OPS) {
		open_map(&s, before);
		one_op(&s, &f);
		check_fault(&s);
		plant_canaries(&s, before);
	}
	open_map(&s, before);
	close(s.sock);
	vu_backend_disconnect(g_vb);
	FZ_CHECK(!vu_backend_started(g_vb));
	close(s.be);
	forget_kicks(&s);
	for (q = 0; q < s.n_held; q++)
		close(s.held[q]);
	plant_canaries(&s, before);
	check_canaries(&s);
	unmap_memfd(&s);
	/* Guest connections to the host service: nobody accepted them. */
	while ((fd = accept4(g_host_listen, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
	FZ_CHECK(fz_count_fds() == fds_before);
	return 0;
}
