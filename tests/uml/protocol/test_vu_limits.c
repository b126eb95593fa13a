// SPDX-License-Identifier: MIT
/*
 * vhost-user caps (issue 10), against the recording fake device: memory
 * tables of at most VU_MAX_REGIONS regions and VU_MAX_MEM_BYTES in all,
 * queue sizes up to 32768. Each test goes up to the cap (accepted), past
 * it (refused with a non-zero ack, nothing reaches the device), and shows
 * that the backend still answers and still takes a good table. And the
 * server side: out of fds, accept(2) is retried later, never in a loop.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fake_dev.h"
#include "skiff/vhost_user.h"
#include "vu_frontend.h"
#include "vu_mem.h"
#include "vu_proto.h"

#define REGION (1u << 20)
#define GPA0 0x100000ull

static struct vsock_dev *dev;
static struct fake_dev_state *fs;
static struct vu_backend *vb;
static int fe = -1, be = -1;
static int memfd = -1;
static uint8_t *mem; /* VU_MAX_REGIONS * REGION bytes, the frontend's view */

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
	memfd = memfd_create("vu-limits", MFD_CLOEXEC);
	ck_assert_int_ge(memfd, 0);
	ck_assert_int_eq(ftruncate(memfd, (off_t)VU_MAX_REGIONS * REGION), 0);
	mem = mmap(NULL, VU_MAX_REGIONS * REGION, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	ck_assert_ptr_ne(mem, MAP_FAILED);
}

static void teardown(void)
{
	vu_backend_destroy(vb);
	vsock_dev_destroy(dev);
	close(fe);
	close(be);
	close(memfd);
	munmap(mem, VU_MAX_REGIONS * REGION);
}

/* A request with need_reply, handled by the backend; the ack. */
static uint64_t set_req(uint32_t req, const void *p, uint32_t size, const int *fds,
			unsigned int nfds)
{
	uint64_t ack = 12345;

	ck_assert_int_eq(fe_send(fe, req, VU_FLAG_NEED_REPLY, p, size, fds, nfds), 0);
	ck_assert_int_eq(vu_backend_handle_one(vb, be), 0);
	ck_assert_int_eq(fe_recv_u64(fe, req, &ack), 0);
	return ack;
}

static uint64_t send_table(const struct vu_mem_table *t, int fd)
{
	int fds[VU_MAX_REGIONS];
	unsigned int i;

	for (i = 0; i < t->nregions && i < VU_MAX_REGIONS; i++)
		fds[i] = fd;
	return set_req(VU_REQ_SET_MEM_TABLE, t, sizeof(*t), fds, i);
}

/* @n regions of REGION bytes each, back to back in GPA, user and file space. */
static struct vu_mem_table table_of(unsigned int n)
{
	struct vu_mem_table t = { .nregions = n };
	unsigned int i;

	for (i = 0; i < n && i < VU_MAX_REGIONS; i++) {
		t.regions[i].guest_phys_addr = GPA0 + (uint64_t)i * REGION;
		t.regions[i].memory_size = REGION;
		t.regions[i].userspace_addr = (uint64_t)(uintptr_t)mem + (uint64_t)i * REGION;
		t.regions[i].mmap_offset = (uint64_t)i * REGION;
	}
	return t;
}

static void assert_alive(void)
{
	uint64_t v = 0;

	ck_assert_int_eq(fe_send(fe, VU_REQ_GET_QUEUE_NUM, 0, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(vu_backend_handle_one(vb, be), 0);
	ck_assert_int_eq(fe_recv_u64(fe, VU_REQ_GET_QUEUE_NUM, &v), 0);
	ck_assert_uint_eq(v, VSOCK_VQ_NUM);
}

/* Region count: VU_MAX_REGIONS accepted, one more refused. */
START_TEST(t_region_count)
{
	struct vu_mem_table t = table_of(VU_MAX_REGIONS);
	unsigned int i;

	ck_assert_uint_eq(send_table(&t, memfd), 0);
	ck_assert_uint_eq(fs->nregions, VU_MAX_REGIONS);
	for (i = 0; i < VU_MAX_REGIONS; i++)
		ck_assert_uint_eq(fs->regions[i].gpa, GPA0 + (uint64_t)i * REGION);
	/* the device sees the frontend's bytes through each region */
	mem[5 * REGION + 7] = 0x5a;
	ck_assert_uint_eq(((uint8_t *)fs->regions[5].hva)[7], 0x5a);

	t.nregions = VU_MAX_REGIONS + 1;
	ck_assert_uint_ne(send_table(&t, memfd), 0);
	ck_assert_uint_eq(fs->nregions, VU_MAX_REGIONS); /* the old table stays */
	assert_alive();
}
END_TEST

/*
 * Memory size: a region of VU_MAX_MEM_BYTES + 4 KiB, or two regions adding
 * up to more than VU_MAX_MEM_BYTES, over a sparse file big enough for
 * them: refused before anything is mapped. Half the cap is fine.
 */
START_TEST(t_region_size)
{
	struct vu_mem_table t = { .nregions = 1 };
	const uint64_t half = VU_MAX_MEM_BYTES / 2;
	int big = memfd_create("vu-limits-big", MFD_CLOEXEC);

	ck_assert_int_ge(big, 0);
	ck_assert_int_eq(ftruncate(big, (off_t)(VU_MAX_MEM_BYTES + 2 * 4096)), 0);

	t.regions[0].guest_phys_addr = 0;
	t.regions[0].memory_size = VU_MAX_MEM_BYTES + 4096;
	t.regions[0].userspace_addr = 1ull << 46;
	ck_assert_uint_eq(send_table(&t, big), E2BIG);
	ck_assert_uint_eq(fs->nregions, 0);

	t.nregions = 2;
	t.regions[0].memory_size = half + 4096;
	t.regions[1].guest_phys_addr = half + 4096;
	t.regions[1].memory_size = half;
	t.regions[1].userspace_addr = t.regions[0].userspace_addr + half + 4096;
	t.regions[1].mmap_offset = 0;
	ck_assert_uint_eq(send_table(&t, big), E2BIG);
	ck_assert_uint_eq(fs->nregions, 0);
	assert_alive();

	/* Exactly the cap, in two regions: mapped (address space only). */
	t.regions[0].memory_size = half;
	t.regions[1].guest_phys_addr = half;
	t.regions[1].userspace_addr = t.regions[0].userspace_addr + half;
	ck_assert_uint_eq(send_table(&t, big), 0);
	ck_assert_uint_eq(fs->nregions, 2);
	ck_assert_uint_eq(fs->regions[0].size + fs->regions[1].size, VU_MAX_MEM_BYTES);
	close(big);

	/* and a small table replaces it */
	t = table_of(1);
	ck_assert_uint_eq(send_table(&t, memfd), 0);
	ck_assert_uint_eq(fs->nregions, 1);
	assert_alive();
}
END_TEST

/* Queue size: powers of two up to 32768 (virtio 1.2 2.7); anything else refused. */
START_TEST(t_queue_size)
{
	static const uint32_t bad[] = { 0, 3, 65536, 1u << 20, 0xffffffffu };
	struct vu_vring_state s = { .index = 0 };
	unsigned int i;

	s.num = 32768;
	ck_assert_uint_eq(set_req(VU_REQ_SET_VRING_NUM, &s, sizeof(s), NULL, 0), 0);
	s.num = 1;
	ck_assert_uint_eq(set_req(VU_REQ_SET_VRING_NUM, &s, sizeof(s), NULL, 0), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s.num = bad[i];
		ck_assert_msg(set_req(VU_REQ_SET_VRING_NUM, &s, sizeof(s), NULL, 0) != 0,
			      "queue size %u accepted", bad[i]);
	}
	assert_alive();
	ck_assert(!fs->started);
	ck_assert_uint_eq(fs->order_errors, 0);
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

static int highest_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int max = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) > max)
			max = atoi(e->d_name);
	closedir(d);
	return max;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

/* GET_QUEUE_NUM over @fd, the reply awaited at most 5 s. */
static void roundtrip(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v = 0;

	ck_assert_int_eq(fe_send(fd, VU_REQ_GET_QUEUE_NUM, 0, NULL, 0, NULL, 0), 0);
	ck_assert_msg(poll(&p, 1, 5000) == 1, "no reply from the server");
	ck_assert_int_eq(fe_recv_u64(fd, VU_REQ_GET_QUEUE_NUM, &v), 0);
	ck_assert_uint_eq(v, VSOCK_VQ_NUM);
}

/*
 * The server out of fds while a frontend connects: _i = 0 with nobody
 * served yet (vu_server_serve() used to return -EMFILE, ending the
 * process), 1 while another frontend is served (the listener used to stay
 * readable: a busy loop). Now: little CPU for 1.5 s, the served frontend
 * still answered, and the newcomer served once fds are back.
 */
START_TEST(t_server_emfile)
{
	char dir[] = "/tmp/vu-limits-XXXXXX", path[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int dups[4096], ndup = 0, first = -1, b, i;
	struct rlimit old, low;
	struct server_arg a;
	int64_t t0, c0, cpu, wall;
	uint64_t one = 1;
	pthread_t th;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/vu.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(vu_server_listen(path, &a.listen_fd), 0);
	a.stop_fd = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(a.stop_fd, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, server_main, &a), 0);
	if (_i == 1) {
		first = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_int_eq(connect(first, (struct sockaddr *)&sa, sizeof(sa)), 0);
		roundtrip(first);
	}
	b = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(b, 0);

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)highest_fd() + 32;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (ndup < 4096 && (dups[ndup] = dup(2)) >= 0)
		ndup++;
	ck_assert_int_lt(ndup, 4096);

	t0 = now_ms();
	c0 = cpu_us();
	ck_assert_int_eq(connect(b, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (first >= 0)
		roundtrip(first); /* still served meanwhile */
	while (now_ms() - t0 < 1500)
		usleep(50 * 1000);
	cpu = cpu_us() - c0;
	wall = (now_ms() - t0) * 1000;
	fprintf(stderr, "t_server_emfile(%d): %lld us of CPU in %lld us out of fds\n", _i,
		(long long)cpu, (long long)wall);
	ck_assert_msg(cpu * 10 < wall, "%lld us of CPU in %lld us while out of fds", (long long)cpu,
		      (long long)wall);

	for (i = 0; i < ndup; i++)
		close(dups[i]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	roundtrip(b); /* accepted now (and takes over from the first) */

	ck_assert_int_eq(write(a.stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(a.ret, 0);
	close(b);
	if (first >= 0)
		close(first);
	close(a.listen_fd);
	close(a.stop_fd);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("vhost_user_limits");
	TCase *tc = tcase_create("limits");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t_region_count);
	tcase_add_test(tc, t_region_size);
	tcase_add_test(tc, t_queue_size);
	tcase_add_loop_test(tc, t_server_emfile, 0, 2);
	tcase_set_timeout(tc, 60);
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
