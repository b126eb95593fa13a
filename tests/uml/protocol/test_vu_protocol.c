// SPDX-License-Identifier: MIT
/*
 * vhost-user protocol tests against a recording fake device (fake_dev.c).
 * The test is the frontend: it writes requests into one end of a
 * socketpair, lets the backend handle them from the other end, and reads
 * the replies. Sequences follow what Linux 6.1 virtio_uml and QEMU 7.2
 * vhost-user-vsock send.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "fake_dev.h"
#include "skiff/vhost_user.h"
#include "vu_frontend.h"
#include "vu_proto.h"

#define MEM_SIZE (1u << 20)
#define MEM_GPA 0x100000ull
#define QSIZE 256
#define RING_OFF(q) ((uint64_t)(q)*0x4000)
#define NR VU_FLAG_NEED_REPLY
#define PROTO_OFFERED                                                            \
	((1ull << VU_PROTOCOL_F_REPLY_ACK) | (1ull << VU_PROTOCOL_F_SLAVE_REQ) | \
	 (1ull << VU_PROTOCOL_F_CONFIG))

static struct vsock_dev *dev;
static struct fake_dev_state *fs;
static struct vu_backend *vb;
static int fe = -1, be = -1; /* frontend and backend ends */
static int memfd = -1;
static uint8_t *mem; /* the frontend's mapping; its address is the "user address" */

static void setup(void)
{
	struct vsock_dev_config cfg = { .guest_cid = 42, .uds_path = "/unused" };
	int sv[2];

	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), 0);
	fs = fake_dev_state(dev);
	ck_assert_int_eq(vu_backend_create(dev, false, &vb), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fe = sv[0];
	be = sv[1];
	memfd = memfd_create("vu-test-mem", MFD_CLOEXEC);
	ck_assert_int_ge(memfd, 0);
	ck_assert_int_eq(ftruncate(memfd, MEM_SIZE), 0);
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	ck_assert_ptr_ne(mem, MAP_FAILED);
}

static void teardown(void)
{
	vu_backend_destroy(vb);
	vsock_dev_destroy(dev);
	close(fe);
	close(be);
	close(memfd);
	if (mem)
		munmap(mem, MEM_SIZE);
	mem = NULL;
}

/* Let the backend handle one message; return its verdict. */
static int step(void)
{
	return vu_backend_handle_one(vb, be);
}

/* Send a "set" request with need_reply and return the acked status. */
static uint64_t set_req(uint32_t req, const void *p, uint32_t size, const int *fds,
			unsigned int nfds)
{
	uint64_t ack = 12345;

	ck_assert_int_eq(fe_send(fe, req, NR, p, size, fds, nfds), 0);
	ck_assert_int_eq(step(), 0);
	ck_assert_int_eq(fe_recv_u64(fe, req, &ack), 0);
	return ack;
}

static uint64_t set_u64(uint32_t req, uint64_t v)
{
	return set_req(req, &v, sizeof(v), NULL, 0);
}

static uint64_t set_state(uint32_t req, uint32_t index, uint32_t num)
{
	struct vu_vring_state s = { .index = index, .num = num };

	return set_req(req, &s, sizeof(s), NULL, 0);
}

static uint64_t get_u64(uint32_t req)
{
	uint64_t v = 0;

	ck_assert_int_eq(fe_send(fe, req, 0, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(step(), 0);
	ck_assert_int_eq(fe_recv_u64(fe, req, &v), 0);
	return v;
}

static uint64_t set_fd(uint32_t req, uint64_t v, int fd)
{
	return set_req(req, &v, sizeof(v), fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
}

static struct vu_mem_table one_region(void)
{
	struct vu_mem_table t = { .nregions = 1 };

	t.regions[0].guest_phys_addr = MEM_GPA;
	t.regions[0].memory_size = MEM_SIZE;
	t.regions[0].userspace_addr = (uint64_t)(uintptr_t)mem;
	t.regions[0].mmap_offset = 0;
	return t;
}

static uint64_t send_table(const struct vu_mem_table *t, uint32_t size, unsigned int nfds)
{
	int fds[VU_MAX_REGIONS + 1];
	unsigned int i;

	for (i = 0; i < nfds; i++)
		fds[i] = memfd;
	return set_req(VU_REQ_SET_MEM_TABLE, t, size, fds, nfds);
}

static uint64_t ua(uint64_t off)
{
	return (uint64_t)(uintptr_t)mem + off;
}

/* SET_VRING_CALL, NUM, BASE, ADDR for vring @q, as vu_setup_vq() does. */
static void setup_ring(unsigned int q, int call_fd)
{
	struct vu_vring_addr a = {
		.index = q,
		.desc_user_addr = ua(RING_OFF(q)),
		.avail_user_addr = ua(RING_OFF(q) + 0x1000),
		.used_user_addr = ua(RING_OFF(q) + 0x2000),
		.log_guest_addr = ~0ull,
	};

	ck_assert_uint_eq(set_fd(VU_REQ_SET_VRING_CALL, q, call_fd), 0);
	ck_assert_uint_eq(set_state(VU_REQ_SET_VRING_NUM, q, QSIZE), 0);
	ck_assert_uint_eq(set_state(VU_REQ_SET_VRING_BASE, q, 0), 0);
	ck_assert_uint_eq(set_req(VU_REQ_SET_VRING_ADDR, &a, sizeof(a), NULL, 0), 0);
}

static void kick_enable(unsigned int q)
{
	int kick = eventfd(0, EFD_CLOEXEC);

	ck_assert_int_ge(kick, 0);
	ck_assert_uint_eq(set_fd(VU_REQ_SET_VRING_KICK, q, kick), 0);
	close(kick);
	ck_assert_uint_eq(set_state(VU_REQ_SET_VRING_ENABLE, q, 1), 0);
}

/* The UML handshake up to a started device with all three vrings. */
static void uml_bring_up(int call_fd)
{
	struct vu_mem_table t = one_region();
	int pipefd[2];
	unsigned int q;

	ck_assert_int_eq(fe_send(fe, VU_REQ_SET_OWNER, 0, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(step(), 0);
	ck_assert_uint_eq(get_u64(VU_REQ_GET_FEATURES),
			  FAKE_DEV_FEATURES | (1ull << VU_F_PROTOCOL_FEATURES));
	ck_assert_uint_eq(get_u64(VU_REQ_GET_PROTOCOL_FEATURES), PROTO_OFFERED);
	ck_assert_uint_eq(set_u64(VU_REQ_SET_PROTOCOL_FEATURES, PROTO_OFFERED), 0);
	/* UML's os_pipe() is a socketpair */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipefd), 0);
	ck_assert_uint_eq(set_req(VU_REQ_SET_SLAVE_REQ_FD, NULL, 0, &pipefd[1], 1), 0);
	close(pipefd[0]);
	close(pipefd[1]);
	ck_assert_uint_eq(
		set_u64(VU_REQ_SET_FEATURES, FAKE_DEV_FEATURES | (1ull << VU_F_PROTOCOL_FEATURES)),
		0);
	ck_assert_uint_eq(send_table(&t, sizeof(t), 1), 0);
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		setup_ring(q, call_fd);
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		kick_enable(q);
}

START_TEST(t_uml_handshake)
{
	uint8_t cfgbuf[sizeof(struct vu_config_hdr) + 8];
	struct vu_config_hdr *ch = (struct vu_config_hdr *)cfgbuf;
	struct vu_mem_table t = one_region();
	struct vu_vring_state st;
	uint32_t size;
	uint64_t cid;
	int call = eventfd(0, EFD_CLOEXEC);
	unsigned int q;

	ck_assert_int_ge(call, 0);
	ck_assert_uint_eq(get_u64(VU_REQ_GET_FEATURES),
			  FAKE_DEV_FEATURES | (1ull << VU_F_PROTOCOL_FEATURES));
	ck_assert_uint_eq(set_u64(VU_REQ_SET_PROTOCOL_FEATURES, PROTO_OFFERED), 0);
	/* Straight through, minus the vhost-user bit: MRG_RXBUF reaches the device. */
	ck_assert_uint_eq(
		set_u64(VU_REQ_SET_FEATURES, FAKE_DEV_FEATURES | (1ull << VU_F_PROTOCOL_FEATURES)),
		0);
	ck_assert_uint_eq(fs->features, FAKE_DEV_FEATURES);
	ck_assert(fs->features & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF));

	ck_assert_uint_eq(send_table(&t, sizeof(t), 1), 0);
	ck_assert_uint_eq(fs->nregions, 1);
	ck_assert_uint_eq(fs->regions[0].gpa, MEM_GPA);
	ck_assert_uint_eq(fs->regions[0].size, MEM_SIZE);
	/* The backend's mapping shares the frontend's memory. */
	mem[4321] = 0xa5;
	ck_assert_uint_eq(((uint8_t *)fs->regions[0].hva)[4321], 0xa5);

	for (q = 0; q < VSOCK_VQ_NUM; q++)
		setup_ring(q, call);
	kick_enable(VSOCK_VQ_RX);
	ck_assert(!fs->started);
	kick_enable(VSOCK_VQ_TX);
	/* RX and TX are enough (QEMU never hands over the event vring). */
	ck_assert(fs->started);
	ck_assert(vu_backend_started(vb));
	ck_assert(!fs->vring_set[VSOCK_VQ_EVENT]);
	ck_assert_uint_eq(fs->vring[VSOCK_VQ_TX].desc_gpa, MEM_GPA + RING_OFF(1));
	ck_assert_uint_eq(fs->vring[VSOCK_VQ_TX].avail_gpa, MEM_GPA + RING_OFF(1) + 0x1000);
	ck_assert_uint_eq(fs->vring[VSOCK_VQ_TX].used_gpa, MEM_GPA + RING_OFF(1) + 0x2000);
	ck_assert_uint_eq(fs->vring[VSOCK_VQ_TX].num, QSIZE);
	ck_assert_int_ge(fs->vring[VSOCK_VQ_TX].kick_fd, 0);
	ck_assert_int_ge(fs->vring[VSOCK_VQ_TX].call_fd, 0);
	/* The event vring enabled afterwards (UML) restarts the device with it. */
	kick_enable(VSOCK_VQ_EVENT);
	ck_assert(fs->started);
	ck_assert(fs->vring_set[VSOCK_VQ_EVENT]);
	ck_assert_uint_eq(fs->vring[VSOCK_VQ_EVENT].desc_gpa, MEM_GPA + RING_OFF(2));
	ck_assert_uint_eq(fs->starts, 2);
	ck_assert_uint_eq(fs->stops, 1);

	/* GET_CONFIG as UML asks: offset 0, size up to the field read. */
	memset(cfgbuf, 0, sizeof(cfgbuf));
	ch->offset = 0;
	ch->size = 8;
	ck_assert_int_eq(fe_send(fe, VU_REQ_GET_CONFIG, 0, cfgbuf, sizeof(cfgbuf), NULL, 0), 0);
	ck_assert_int_eq(step(), 0);
	memset(cfgbuf, 0, sizeof(cfgbuf));
	ck_assert_int_eq(fe_recv(fe, VU_REQ_GET_CONFIG, cfgbuf, sizeof(cfgbuf), &size), 0);
	ck_assert_uint_eq(size, sizeof(cfgbuf));
	ck_assert_uint_eq(ch->size, 8);
	memcpy(&cid, cfgbuf + sizeof(*ch), 8);
	ck_assert_uint_eq(cid, 42);

	/* GET_VRING_BASE stops the device and reports where the vring is. */
	fs->stop_avail[VSOCK_VQ_RX] = 77;
	st.index = VSOCK_VQ_RX;
	st.num = 0;
	ck_assert_int_eq(fe_send(fe, VU_REQ_GET_VRING_BASE, 0, &st, sizeof(st), NULL, 0), 0);
	ck_assert_int_eq(step(), 0);
	ck_assert_int_eq(fe_recv(fe, VU_REQ_GET_VRING_BASE, &st, sizeof(st), &size), 0);
	ck_assert_uint_eq(size, sizeof(st));
	ck_assert_uint_eq(st.index, VSOCK_VQ_RX);
	ck_assert_uint_eq(st.num, 77);
	ck_assert(!fs->started);
	/* A new kick restarts it where it stopped. */
	kick_enable(VSOCK_VQ_RX);
	ck_assert(fs->started);
	ck_assert_uint_eq(fs->vring[VSOCK_VQ_RX].last_avail_idx, 77);
	ck_assert_uint_eq(fs->order_errors, 0);
	close(call);
}
END_TEST

/* Several messages in one write (as UML does): framed one by one. */
START_TEST(t_several_per_write)
{
	uint8_t buf[256];
	size_t n = 0;
	uint64_t v;

	n += fe_build(buf + n, VU_REQ_SET_OWNER, 0, NULL, 0);
	n += fe_build(buf + n, VU_REQ_GET_FEATURES, 0, NULL, 0);
	v = PROTO_OFFERED;
	n += fe_build(buf + n, VU_REQ_SET_PROTOCOL_FEATURES, NR, &v, sizeof(v));
	n += fe_build(buf + n, VU_REQ_GET_PROTOCOL_FEATURES, 0, NULL, 0);
	ck_assert_int_eq(write(fe, buf, n), (ssize_t)n);
	ck_assert_int_eq(step(), 0);
	ck_assert_int_eq(step(), 0);
	ck_assert_int_eq(step(), 0);
	ck_assert_int_eq(step(), 0);
	ck_assert_int_eq(fe_recv_u64(fe, VU_REQ_GET_FEATURES, &v), 0);
	ck_assert_uint_eq(v, FAKE_DEV_FEATURES | (1ull << VU_F_PROTOCOL_FEATURES));
	ck_assert_int_eq(fe_recv_u64(fe, VU_REQ_SET_PROTOCOL_FEATURES, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(fe_recv_u64(fe, VU_REQ_GET_PROTOCOL_FEATURES, &v), 0);
	ck_assert_uint_eq(v, PROTO_OFFERED);
}
END_TEST

/* Still talking after a rejected request? */
static void assert_alive(void)
{
	ck_assert_uint_eq(get_u64(VU_REQ_GET_FEATURES),
			  FAKE_DEV_FEATURES | (1ull << VU_F_PROTOCOL_FEATURES));
}

/* True once every write end of the pipe whose read end is @rfd is closed. */
static int write_ends_closed(int rfd)
{
	struct pollfd p = { .fd = rfd, .events = POLLIN };

	return poll(&p, 1, 2000) == 1 && (p.revents & POLLHUP);
}

START_TEST(t_malformed_rejected)
{
	struct vu_vring_addr a = { .index = 7 };
	struct vu_mem_table t;
	uint32_t small = 1;
	int pfd[2];

	/* Bad sizes. */
	ck_assert_uint_ne(set_req(VU_REQ_SET_FEATURES, &small, sizeof(small), NULL, 0), 0);
	ck_assert_uint_ne(set_req(VU_REQ_SET_VRING_NUM, &small, sizeof(small), NULL, 0), 0);
	ck_assert_uint_ne(set_req(VU_REQ_SET_OWNER, &small, sizeof(small), NULL, 0), 0);
	assert_alive();
	/* Features the device did not offer; protocol features we did not offer (MQ). */
	ck_assert_uint_ne(set_u64(VU_REQ_SET_FEATURES, 1ull << 40), 0);
	ck_assert_uint_ne(set_u64(VU_REQ_SET_PROTOCOL_FEATURES, 1ull << VU_PROTOCOL_F_MQ), 0);
	/* Bad vring indexes and sizes. */
	ck_assert_uint_ne(set_state(VU_REQ_SET_VRING_NUM, 3, QSIZE), 0);
	ck_assert_uint_ne(set_state(VU_REQ_SET_VRING_ENABLE, 0xffffffffu, 1), 0);
	ck_assert_uint_ne(set_state(VU_REQ_SET_VRING_NUM, 0, 100), 0);
	ck_assert_uint_ne(set_state(VU_REQ_SET_VRING_NUM, 0, 0), 0);
	ck_assert_uint_ne(set_state(VU_REQ_SET_VRING_NUM, 0, 65536), 0);
	ck_assert_uint_ne(set_state(VU_REQ_SET_VRING_BASE, 0, 0x10000), 0);
	ck_assert_uint_ne(set_state(VU_REQ_SET_VRING_ENABLE, 0, 2), 0);
	ck_assert_uint_ne(set_req(VU_REQ_SET_VRING_ADDR, &a, sizeof(a), NULL, 0), 0);
	/* Vring addresses outside every region (no table yet). */
	a.index = 0;
	a.desc_user_addr = ua(0);
	ck_assert_uint_ne(set_req(VU_REQ_SET_VRING_ADDR, &a, sizeof(a), NULL, 0), 0);
	/* Kick without its fd; kick with junk bits; index out of range. */
	ck_assert_uint_ne(set_fd(VU_REQ_SET_VRING_KICK, 0, -1), 0);
	ck_assert_uint_ne(set_fd(VU_REQ_SET_VRING_KICK, 0 | (1ull << 9) | VU_VRING_NOFD_MASK, -1),
			  0);
	ck_assert_uint_ne(set_fd(VU_REQ_SET_VRING_CALL, 5 | VU_VRING_NOFD_MASK, -1), 0);
	ck_assert_uint_ne(set_req(VU_REQ_SET_SLAVE_REQ_FD, NULL, 0, NULL, 0), 0);
	assert_alive();

	/* Memory tables: empty, too many, fds missing, overlap, overflow, size 0. */
	t = one_region();
	t.nregions = 0;
	ck_assert_uint_ne(send_table(&t, sizeof(t), 0), 0);
	t = one_region();
	t.nregions = 9;
	ck_assert_uint_ne(send_table(&t, sizeof(t), 8), 0);
	t = one_region();
	t.nregions = 2;
	t.regions[1] = t.regions[0];
	t.regions[1].guest_phys_addr += MEM_SIZE;
	t.regions[1].userspace_addr += 2 * MEM_SIZE;
	ck_assert_uint_ne(send_table(&t, sizeof(t), 1), 0); /* one fd for two regions */
	t.regions[1].guest_phys_addr = MEM_GPA + MEM_SIZE / 2; /* GPA overlap */
	ck_assert_uint_ne(send_table(&t, sizeof(t), 2), 0);
	t.regions[1].guest_phys_addr = MEM_GPA + MEM_SIZE;
	t.regions[1].userspace_addr = ua(4096); /* user address overlap */
	ck_assert_uint_ne(send_table(&t, sizeof(t), 2), 0);
	t = one_region();
	t.regions[0].guest_phys_addr = ~0ull - 4096; /* wraps */
	ck_assert_uint_ne(send_table(&t, sizeof(t), 1), 0);
	t = one_region();
	t.regions[0].userspace_addr = ~0ull - 4096;
	ck_assert_uint_ne(send_table(&t, sizeof(t), 1), 0);
	t = one_region();
	t.regions[0].mmap_offset = ~0ull - 4096;
	ck_assert_uint_ne(send_table(&t, sizeof(t), 1), 0);
	t = one_region();
	t.regions[0].memory_size = 0;
	ck_assert_uint_ne(send_table(&t, sizeof(t), 1), 0);
	t = one_region();
	t.regions[0].memory_size = 2 * MEM_SIZE; /* past the end of the memfd: SIGBUS bait */
	ck_assert_uint_ne(send_table(&t, sizeof(t), 1), 0);
	t = one_region();
	t.regions[0].mmap_offset = 4096;
	ck_assert_uint_ne(send_table(&t, sizeof(t), 1), 0);
	t = one_region();
	ck_assert_uint_ne(send_table(&t, 8 + 16, 1), 0); /* payload shorter than one region */
	ck_assert_uint_eq(fs->nregions, 0);
	assert_alive();

	/* Read-only config, unknown requests. */
	ck_assert_uint_ne(set_req(VU_REQ_SET_CONFIG, &a, 20, NULL, 0), 0);
	ck_assert_uint_ne(set_req(99, NULL, 0, NULL, 0), 0);
	ck_assert_uint_ne(set_req(VU_REQ_SET_LOG_BASE, &a, 16, NULL, 0), 0);

	/* An fd on a request that takes none is refused and closed. */
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	ck_assert_uint_ne(set_req(VU_REQ_SET_OWNER, NULL, 0, &pfd[1], 1), 0);
	close(pfd[1]);
	ck_assert(write_ends_closed(pfd[0]));
	close(pfd[0]);
	/* Same for a rejected vring fd message. */
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	ck_assert_uint_ne(set_fd(VU_REQ_SET_VRING_CALL, 9, pfd[1]), 0);
	close(pfd[1]);
	ck_assert(write_ends_closed(pfd[0]));
	close(pfd[0]);

	assert_alive();
	ck_assert(!fs->started);
	ck_assert_uint_eq(fs->order_errors, 0);
}
END_TEST

/* Breaches of framing, or failures the frontend could not learn of: dropped. */
START_TEST(t_fatal_disconnects)
{
	struct vu_hdr h = { .request = VU_REQ_GET_FEATURES, .flags = 0, .size = 0 };
	uint8_t cfg[sizeof(struct vu_config_hdr)] = { 0 };
	struct vu_config_hdr *ch = (struct vu_config_hdr *)cfg;
	struct vu_vring_state s = { .index = 0, .num = 3 };
	uint32_t v = 0;

	ck_assert_int_eq(write(fe, &h, sizeof(h)), (ssize_t)sizeof(h)); /* version 0 */
	ck_assert_int_eq(step(), -EPROTO);
	h.flags = VU_VERSION | VU_FLAG_REPLY;
	ck_assert_int_eq(write(fe, &h, sizeof(h)), (ssize_t)sizeof(h));
	ck_assert_int_eq(step(), -EPROTO);
	h.flags = VU_VERSION;
	h.size = 4096; /* larger than any request */
	ck_assert_int_eq(write(fe, &h, sizeof(h)), (ssize_t)sizeof(h));
	ck_assert_int_eq(step(), -EPROTO);
	/* More fds than any request carries. */
	{
		int fds[VU_MAX_FDS + 1], i;

		for (i = 0; i <= VU_MAX_FDS; i++)
			fds[i] = memfd;
		ck_assert_int_eq(fe_send(fe, VU_REQ_SET_MEM_TABLE, 0, NULL, 0, fds, VU_MAX_FDS + 1),
				 0);
		ck_assert_int_eq(step(), -EPROTO);
	}
	/* A failing request without need_reply. */
	ck_assert_int_eq(fe_send(fe, VU_REQ_SET_VRING_NUM, 0, &s, sizeof(s), NULL, 0), 0);
	ck_assert_int_eq(step(), -EPROTO);
	/* A GET with a malformed payload cannot be answered. */
	ck_assert_int_eq(fe_send(fe, VU_REQ_GET_FEATURES, 0, &v, sizeof(v), NULL, 0), 0);
	ck_assert_int_eq(step(), -EPROTO);
	ch->size = 300;
	ck_assert_int_eq(fe_send(fe, VU_REQ_GET_CONFIG, 0, cfg, sizeof(cfg), NULL, 0), 0);
	ck_assert_int_eq(step(), -EPROTO);
	s.index = 3;
	ck_assert_int_eq(fe_send(fe, VU_REQ_GET_VRING_BASE, 0, &s, sizeof(s), NULL, 0), 0);
	ck_assert_int_eq(step(), -EPROTO);
	/* An unknown request without need_reply is only ignored. */
	ck_assert_int_eq(fe_send(fe, 77, 0, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(step(), 0);
	/* GET_CONFIG outside the config space: an empty reply. */
	ch->offset = 4;
	ch->size = 8;
	{
		uint8_t req[sizeof(*ch) + 8] = { 0 };
		uint8_t rep[64];
		uint32_t size = 1;

		memcpy(req, ch, sizeof(*ch));
		ck_assert_int_eq(fe_send(fe, VU_REQ_GET_CONFIG, 0, req, sizeof(req), NULL, 0), 0);
		ck_assert_int_eq(step(), 0);
		ck_assert_int_eq(fe_recv(fe, VU_REQ_GET_CONFIG, rep, sizeof(rep), &size), 0);
		ck_assert_uint_eq(size, 0);
	}
	/* EOF inside a message, then EOF between messages. */
	h.size = 8;
	h.request = VU_REQ_SET_FEATURES;
	ck_assert_int_eq(write(fe, &h, sizeof(h)), (ssize_t)sizeof(h));
	ck_assert_int_eq(write(fe, &v, sizeof(v)), (ssize_t)sizeof(v));
	ck_assert_int_eq(shutdown(fe, SHUT_WR), 0);
	ck_assert_int_eq(step(), -EPROTO);
	ck_assert_int_eq(step(), -ECONNRESET);
}
END_TEST

static int count_maps(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, name))
			n++;
	fclose(f);
	return n;
}

/* A frontend that goes away leaves no device state, mapping or fd behind. */
START_TEST(t_disconnect_leaves_nothing)
{
	int call[2];

	ck_assert_int_eq(pipe2(call, O_CLOEXEC), 0); /* a pipe as the call fd, as skiff allows */
	uml_bring_up(call[1]);
	close(call[1]);
	ck_assert(fs->started);
	ck_assert_uint_eq(fs->starts, 2);
	munmap(mem, MEM_SIZE);
	mem = NULL;
	ck_assert_int_eq(count_maps("vu-test-mem"), 1); /* the backend's */

	/* The frontend dies: EOF on the socket. */
	close(fe);
	fe = -1;
	ck_assert_int_eq(step(), -ECONNRESET);
	vu_backend_disconnect(vb);
	ck_assert(!fs->started);
	ck_assert_uint_eq(fs->resets, 1);
	ck_assert(!vu_backend_started(vb));
	ck_assert_int_eq(count_maps("vu-test-mem"), 0);
	ck_assert(write_ends_closed(call[0]));
	close(call[0]);
	ck_assert_uint_eq(fs->order_errors, 0);
}
END_TEST

/* RESET_OWNER: same clean slate, same connection. */
START_TEST(t_reset_owner)
{
	int call = eventfd(0, EFD_CLOEXEC);

	uml_bring_up(call);
	ck_assert(fs->started);
	ck_assert_uint_eq(set_req(VU_REQ_RESET_OWNER, NULL, 0, NULL, 0), 0);
	ck_assert(!fs->started);
	ck_assert_uint_eq(fs->resets, 1);
	/* Start over on the same socket. */
	uml_bring_up(call);
	ck_assert(fs->started);
	ck_assert_uint_eq(fs->order_errors, 0);
	close(call);
}
END_TEST

/* Disabling RX pauses the device; re-enabling resumes it where it stopped. */
START_TEST(t_disable_enable)
{
	int call = eventfd(0, EFD_CLOEXEC);

	uml_bring_up(call);
	fs->stop_avail[VSOCK_VQ_TX] = 9;
	ck_assert_uint_eq(set_state(VU_REQ_SET_VRING_ENABLE, VSOCK_VQ_RX, 0), 0);
	ck_assert(!fs->started);
	ck_assert_uint_eq(set_state(VU_REQ_SET_VRING_ENABLE, VSOCK_VQ_RX, 1), 0);
	ck_assert(fs->started);
	ck_assert_uint_eq(fs->vring[VSOCK_VQ_TX].last_avail_idx, 9);
	/* New memory table while running: paused, swapped, resumed. */
	{
		struct vu_mem_table t = one_region();
		unsigned int starts = fs->starts;

		ck_assert_uint_eq(send_table(&t, sizeof(t), 1), 0);
		ck_assert(fs->started);
		ck_assert_uint_eq(fs->starts, starts + 1);
	}
	ck_assert_uint_eq(fs->order_errors, 0);
	close(call);
}
END_TEST

static bool nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

/* SET_VRING_KICK/CALL/ERR of vring 0 with @fd: the acked status. */
static uint64_t vring_fd(uint32_t req, int fd)
{
	return set_fd(req, VSOCK_VQ_RX, fd);
}

/*
 * Issue 22, finding 4: every fd a frontend passes is checked for its type
 * and mode. A pipe as kick fd made the control thread spin (read end, write
 * end closed: always readable, EOF ignored) or blocked the server thread
 * in nudge() (write end, pipe full); other types are refused the same way.
 */
START_TEST(t_fd_types)
{
	int p[2], sp[2], efd, tfd, mfd;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	efd = eventfd(0, EFD_CLOEXEC); /* blocking, as UML's kick fd */
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	mfd = memfd_create("not-an-eventfd", MFD_CLOEXEC);
	ck_assert(efd >= 0 && tfd >= 0 && mfd >= 0);

	/* Kick: an eventfd only; made non-blocking. */
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_KICK, p[0]), EINVAL);
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_KICK, p[1]), EINVAL);
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_KICK, sp[1]), EINVAL);
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_KICK, tfd), EINVAL);
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_KICK, mfd), EINVAL);
	ck_assert(!nonblocking(efd));
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_KICK, efd), 0);
	ck_assert(nonblocking(efd));

	/* Call: an eventfd, a socket (UML) or a pipe's write end; non-blocking. */
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_CALL, p[0]), EINVAL);
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_CALL, tfd), EINVAL);
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_CALL, mfd), EINVAL);
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_CALL, sp[1]), 0);
	ck_assert(nonblocking(sp[1]));
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_CALL, p[1]), 0);
	ck_assert(nonblocking(p[1]));

	/* Err: an eventfd. Slave channel: a socket. Memory: a regular file. */
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_ERR, p[1]), EINVAL);
	ck_assert_uint_eq(vring_fd(VU_REQ_SET_VRING_ERR, efd), 0);
	ck_assert_uint_ne(set_req(VU_REQ_SET_SLAVE_REQ_FD, NULL, 0, &p[1], 1), 0);
	ck_assert_uint_eq(set_req(VU_REQ_SET_SLAVE_REQ_FD, NULL, 0, &sp[0], 1), 0);
	{
		struct vu_mem_table t = one_region();

		ck_assert_uint_ne(set_req(VU_REQ_SET_MEM_TABLE, &t, sizeof(t), &sp[0], 1), 0);
		ck_assert_uint_eq(fs->nregions, 0);
	}
	assert_alive();
	ck_assert(!fs->started);
	ck_assert_uint_eq(fs->order_errors, 0);
	close(p[0]);
	close(p[1]);
	close(sp[0]);
	close(sp[1]);
	close(efd);
	close(tfd);
	close(mfd);
}
END_TEST

/*
 * The write end of a full pipe as RX kick fd: before the check, the start
 * that followed wrote to it (nudge()) and the server thread blocked for
 * good. Refused now; the frontend hears why and the device stays stopped.
 */
START_TEST(t_full_pipe_kick)
{
	int call = eventfd(0, EFD_CLOEXEC), p[2];
	char junk[4096] = { 0 };
	unsigned int starts;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	while (write(p[1], junk, sizeof(junk)) > 0)
		;
	ck_assert_int_eq(fcntl(p[1], F_SETFL, O_WRONLY), 0); /* blocking again */
	uml_bring_up(call);
	ck_assert(fs->started);
	/*
	 * A new RX kick would restart the device with it, and the restart
	 * writes once to each kick fd. Refused: nothing changes.
	 */
	starts = fs->starts;
	ck_assert_uint_eq(set_fd(VU_REQ_SET_VRING_KICK, VSOCK_VQ_RX, p[1]), EINVAL);
	ck_assert(fs->started);
	ck_assert_uint_eq(fs->starts, starts);
	assert_alive();
	kick_enable(VSOCK_VQ_RX);
	ck_assert(fs->started);
	ck_assert_uint_eq(fs->order_errors, 0);
	close(p[0]);
	close(p[1]);
	close(call);
}
END_TEST

struct server_arg {
	int listen_fd, stop_fd, ret;
};

static void *server_main(void *p)
{
	struct server_arg *a = p;

	a->ret = vu_server_serve(a->listen_fd, vb, a->stop_fd);
	return NULL;
}

static int connect_to(const char *path)
{
	struct sockaddr_un {
		sa_family_t sun_family;
		char sun_path[108];
	} sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(connect(fd, (const void *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Server: one frontend at a time; a newcomer takes over; after one leaves, the next is served. */
START_TEST(t_server_next_frontend)
{
	char dir[] = "/tmp/vu-test-XXXXXX", path[128];
	struct server_arg a;
	pthread_t th;
	uint64_t one = 1, v;
	int fd2, lfd2;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/vu.sock", dir);
	ck_assert_int_eq(vu_server_listen(path, &a.listen_fd), 0);
	/* A live server owns the path. */
	ck_assert_int_eq(vu_server_listen(path, &lfd2), -EADDRINUSE);
	a.stop_fd = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(a.stop_fd, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, server_main, &a), 0);

	/* Frontend 1 negotiates and has a request in flight. */
	close(be);
	close(fe);
	fe = connect_to(path);
	ck_assert_int_eq(fe_send(fe, VU_REQ_GET_FEATURES, 0, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(fe_recv_u64(fe, VU_REQ_GET_FEATURES, &v), 0);
	ck_assert_int_eq(fe_send(fe, VU_REQ_SET_OWNER, 0, NULL, 0, NULL, 0), 0);
	/*
	 * Frontend 2 connects while 1 is still served (a rebooted UML keeps
	 * its old socket open): 2 takes over, 1 is dropped.
	 */
	fd2 = connect_to(path);
	ck_assert_int_eq(fe_send(fd2, VU_REQ_GET_FEATURES, 0, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(fe_recv_u64(fd2, VU_REQ_GET_FEATURES, &v), 0);
	ck_assert_uint_eq(v, FAKE_DEV_FEATURES | (1ull << VU_F_PROTOCOL_FEATURES));
	/* 1 sees the end (ECONNRESET when its last request was never read). */
	{
		ssize_t r = read(fe, &v, sizeof(v));

		ck_assert(r == 0 || (r < 0 && errno == ECONNRESET));
	}
	close(fe);
	fe = fd2;
	/* 2 leaves; 3 is served next. */
	close(fe);
	fe = connect_to(path);
	ck_assert_int_eq(fe_send(fe, VU_REQ_GET_FEATURES, 0, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(fe_recv_u64(fe, VU_REQ_GET_FEATURES, &v), 0);

	ck_assert_int_eq(write(a.stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(a.ret, 0);
	/*
	 * One reset per connection that ended: the liveness probe of the
	 * second vu_server_listen(), frontends 1, 2 and 3.
	 */
	ck_assert_uint_eq(fs->resets, 4);
	close(a.listen_fd);
	/* The socket file is now stale: a new server replaces it. */
	ck_assert_int_eq(vu_server_listen(path, &lfd2), 0);
	close(lfd2);
	unlink(path);
	rmdir(dir);
	close(a.stop_fd);
	be = -1;
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("vhost_user_protocol");
	TCase *tc = tcase_create("protocol");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t_uml_handshake);
	tcase_add_test(tc, t_several_per_write);
	tcase_add_test(tc, t_malformed_rejected);
	tcase_add_test(tc, t_fatal_disconnects);
	tcase_add_test(tc, t_disconnect_leaves_nothing);
	tcase_add_test(tc, t_reset_owner);
	tcase_add_test(tc, t_disable_enable);
	tcase_add_test(tc, t_server_next_frontend);
	tcase_add_test(tc, t_fd_types);
	tcase_add_test(tc, t_full_pipe_kick);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
