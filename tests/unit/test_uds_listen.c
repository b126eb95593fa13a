// SPDX-License-Identifier: MIT
/*
 * Unit tests: skiff_uds_listen() (common/uds), the one listener of the device's
 * uds_path and of skiff-vsock's vhost-user socket: a fresh path, a stale socket
 * replaced, a live one refused, a file that is not a socket left alone, bad paths,
 * the flags.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <skiff/uds_listen.h>

static char dir[64], path[128];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/skiff-uds.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

/* A connect to @p: 0 accepted into the backlog, or -errno. */
static int try_connect(const char *p)
{
	struct sockaddr_un sa;
	int fd, ret;

	ck_assert_int_eq(skiff_uds_addr(p, &sa), 0);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	close(fd);
	return ret;
}

START_TEST(fresh_path_listens)
{
	int fd = -1;

	ck_assert_int_eq(skiff_uds_listen(path, 0, 4, &fd), 0);
	ck_assert_int_eq(try_connect(path), 0);
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ck_assert(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
	close(fd);
	ck_assert_int_eq(skiff_uds_listen(path, SOCK_NONBLOCK, 4, &fd), 0);
	ck_assert(fcntl(fd, F_GETFL) & O_NONBLOCK);
	close(fd);
}
END_TEST

/* A socket file left by a listener that closed: replaced. */
START_TEST(stale_socket_replaced)
{
	int fd, fd2;

	ck_assert_int_eq(skiff_uds_listen(path, 0, 4, &fd), 0);
	close(fd);
	ck_assert_int_eq(try_connect(path), -ECONNREFUSED);
	ck_assert_int_eq(skiff_uds_listen(path, 0, 4, &fd2), 0);
	ck_assert_int_eq(try_connect(path), 0);
	close(fd2);
}
END_TEST

/* A live listener keeps its path. */
START_TEST(live_socket_refused)
{
	int fd, fd2 = -1;

	ck_assert_int_eq(skiff_uds_listen(path, 0, 4, &fd), 0);
	ck_assert_int_eq(skiff_uds_listen(path, 0, 4, &fd2), -EADDRINUSE);
	ck_assert_int_eq(fd2, -1);
	ck_assert_int_eq(try_connect(path), 0);
	close(fd);
}
END_TEST

/* A regular file and a directory at the path: -ENOTSOCK, both left in place. */
START_TEST(not_a_socket_left_alone)
{
	struct stat st;
	int fd, f;

	f = open(path, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ge(f, 0);
	close(f);
	ck_assert_int_eq(skiff_uds_listen(path, 0, 4, &fd), -ENOTSOCK);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	unlink(path);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(skiff_uds_listen(path, 0, 4, &fd), -ENOTSOCK);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	rmdir(path);
}
END_TEST

START_TEST(bad_paths_and_flags)
{
	char long_path[200];
	int fd;

	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	ck_assert_int_eq(skiff_uds_listen("", 0, 4, &fd), -EINVAL);
	ck_assert_int_eq(skiff_uds_listen(long_path, 0, 4, &fd), -ENAMETOOLONG);
	ck_assert_int_eq(skiff_uds_listen(path, SOCK_DGRAM, 4, &fd), -EINVAL);
	ck_assert_int_eq(skiff_uds_listen("/nonexistent-dir-skiff/s", 0, 4, &fd), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("uds_listen");
	TCase *t = tcase_create("listen");
	SRunner *r;
	int failed;

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, fresh_path_listens);
	tcase_add_test(t, stale_socket_replaced);
	tcase_add_test(t, live_socket_refused);
	tcase_add_test(t, not_a_socket_left_alone);
	tcase_add_test(t, bad_paths_and_flags);
	suite_add_tcase(s, t);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
