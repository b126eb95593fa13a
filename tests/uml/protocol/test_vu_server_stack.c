// SPDX-License-Identifier: MIT
/*
 * Issue 22, finding 6: vu_server.c handed a frontend that connected while
 * its predecessor was served over by "return serve_conn(pending, ...)", a
 * recursion that only -O2's tail-call optimisation turned into a loop. At
 * -O0 or -O1 every connect/close cycle cost a stack frame, and enough of
 * them overflowed the server thread's stack. This test links vu_server.c
 * built at -O0 (vu_server_O0.c), runs the server on a 256 KiB stack and
 * makes 10000 such cycles against the recording fake device.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_dev.h"
#include "skiff/vhost_user.h"
#include "vu_frontend.h"

#define CYCLES 10000
#define STACK (256 * 1024)

struct server {
	struct vu_backend *vb;
	int listen_fd, stop_fd, ret;
};

static void *server_main(void *p)
{
	struct server *s = p;

	s->ret = vu_server_serve(s->listen_fd, s->vb, s->stop_fd);
	return NULL;
}

static int connect_to(const char *path)
{
	int fd = fe_connect(path);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* The served frontend answers: it is the one the server serves now. */
static void served(int fd)
{
	uint64_t v = 0;

	ck_assert_int_eq(fe_send(fd, VU_REQ_GET_QUEUE_NUM, 0, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(fe_recv_u64(fd, VU_REQ_GET_QUEUE_NUM, &v), 0);
	ck_assert_uint_eq(v, VSOCK_VQ_NUM);
}

START_TEST(t_handover_cycles)
{
	struct vsock_dev_config cfg = { .guest_cid = 3, .uds_path = "/unused" };
	char dir[] = "/tmp/vu-stack-XXXXXX", path[128];
	struct vsock_dev *dev;
	struct server s;
	pthread_attr_t attr;
	pthread_t th;
	uint64_t one = 1;
	int cur, next, i;

	ck_assert_int_eq(vsock_dev_create(&cfg, &dev), 0);
	ck_assert_int_eq(vu_backend_create(dev, false, &s.vb), 0);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/vu.sock", dir);
	ck_assert_int_eq(vu_server_listen(path, &s.listen_fd), 0);
	s.stop_fd = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(s.stop_fd, 0);
	ck_assert_int_eq(pthread_attr_init(&attr), 0);
	ck_assert_int_eq(pthread_attr_setstacksize(&attr, STACK), 0);
	ck_assert_int_eq(pthread_create(&th, &attr, server_main, &s), 0);

	cur = connect_to(path);
	served(cur);
	for (i = 0; i < CYCLES; i++) {
		/*
		 * The next frontend is queued before the current one closes:
		 * the server takes it as the waiting newcomer, then sees the
		 * EOF and serves the newcomer next.
		 */
		next = connect_to(path);
		close(cur);
		cur = next;
		served(cur);
	}
	close(cur);
	ck_assert_int_eq(write(s.stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(s.ret, 0);
	ck_assert_uint_ge(fake_dev_state(dev)->resets, CYCLES);
	pthread_attr_destroy(&attr);
	vu_backend_destroy(s.vb);
	vsock_dev_destroy(dev);
	close(s.listen_fd);
	close(s.stop_fd);
	unlink(path);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("vhost_user_server_stack");
	TCase *tc = tcase_create("stack");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t_handover_cycles);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
