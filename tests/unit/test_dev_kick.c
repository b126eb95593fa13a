// SPDX-License-Identifier: MIT
/*
 * The control thread and a kick fd that is not an eventfd (issue 22,
 * finding 4): a pipe's read end whose write end is closed is readable for
 * ever and read() returns 0; drain_fd() ignored that and the level-triggered
 * loop spun (2.1 million wake-ups a second). The vhost-user backend now
 * refuses such fds (vhost_user/vu_fd.c); the device, whose other transports
 * might not, takes a kick fd at EOF out of its loop. Label "device".
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "skiff/vsock_dev.h"

#define MEM (64 * 1024)

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

START_TEST(kick_fd_at_eof_does_not_spin)
{
	struct vsock_dev_config cfg = { .guest_cid = 3, .rx_threads = 1 };
	struct vsock_mem_region r = { .gpa = 0, .size = MEM };
	struct vsock_dev *dev;
	struct vsock_dev_counters c;
	int kick[3], call[3], p[2];
	double t0, used;
	unsigned int q;

	r.hva = aligned_alloc(4096, MEM);
	ck_assert_ptr_nonnull(r.hva);
	memset(r.hva, 0, MEM); /* empty rings */
	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), 0);
	ck_assert_int_eq(vsock_dev_set_mem(dev, &r, 1), 0);
	ck_assert_int_eq(vsock_dev_set_features(dev, (1ull << VIRTIO_F_VERSION_1) |
							     (1ull << VIRTIO_VSOCK_F_STREAM)),
			 0);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	close(p[1]); /* the event queue's "kick fd" is at EOF from the start */
	for (q = 0; q < 3; q++) {
		struct vsock_vring_config v = {
			.num = 16,
			.desc_gpa = 0x1000u * q,
			.avail_gpa = 0x1000u * q + 0x400,
			.used_gpa = 0x1000u * q + 0x800,
		};

		kick[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		call[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ck_assert(kick[q] >= 0 && call[q] >= 0);
		v.kick_fd = q == VSOCK_VQ_EVENT ? p[0] : kick[q];
		v.call_fd = call[q];
		ck_assert_int_eq(vsock_dev_set_vring(dev, q, &v), 0);
	}
	ck_assert_int_eq(vsock_dev_start(dev), 0);
	t0 = cpu_seconds();
	usleep(500 * 1000);
	used = cpu_seconds() - t0;
	ck_assert_msg(used < 0.05, "device used %.3f s of CPU in 0.5 s", used);
	vsock_dev_get_counters(dev, &c);
	ck_assert_uint_eq(c.kicks, 0); /* EOF is no kick */
	vsock_dev_destroy(dev);
	for (q = 0; q < 3; q++) {
		close(kick[q]);
		close(call[q]);
	}
	close(p[0]);
	free(r.hva);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dev_kick");
	TCase *tc = tcase_create("kick");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, kick_fd_at_eof_does_not_spin);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
