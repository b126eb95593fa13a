// SPDX-License-Identifier: MIT
/*
 * Unit tests: the datagram host side's paths, sender-port and gateway-line
 * parsers, and its socket calls (devices/virtio_vsock/src/host_dgram.c).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host_dgram.h"

static char base[64];

static void make_base(void)
{
	snprintf(base, sizeof(base), "/tmp/skt-hdg-%d", (int)getpid());
}

START_TEST(paths)
{
	struct sockaddr_un sa;
	char longp[120];
	socklen_t len;

	ck_assert_int_eq(dgram_addr("/r/v", DGRAM_PATH_HOST, 52, &sa, &len), 0);
	ck_assert_str_eq(sa.sun_path, "/r/v_dgram_52");
	ck_assert_uint_eq(len, offsetof(struct sockaddr_un, sun_path) + 14);
	ck_assert_int_eq(dgram_addr("/r/v", DGRAM_PATH_GUEST, 4294967295u, &sa, &len), 0);
	ck_assert_str_eq(sa.sun_path, "/r/v_dgram_g4294967295");
	ck_assert_int_eq(dgram_addr("/r/v", DGRAM_PATH_GATEWAY, 7, &sa, &len), 0);
	ck_assert_str_eq(sa.sun_path, "/r/v_dgram");
	/* The longest uds_path allowed with datagrams fits every path; one more does not. */
	memset(longp, 'a', sizeof(longp));
	longp[DGRAM_UDS_PATH_MAX] = 0;
	ck_assert_int_eq(dgram_addr(longp, DGRAM_PATH_GUEST, 4294967295u, &sa, &len), 0);
	longp[DGRAM_UDS_PATH_MAX] = 'a';
	longp[DGRAM_UDS_PATH_MAX + 1] = 0;
	ck_assert_int_eq(dgram_addr(longp, DGRAM_PATH_GUEST, 4294967295u, &sa, &len),
			 -ENAMETOOLONG);
}
END_TEST

static int src_of(const char *path, uint32_t *port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memcpy(sa.sun_path, path, strlen(path));
	return dgram_src_port(
		"/r/v", &sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1),
		port);
}

START_TEST(sender_port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint32_t port = 1;

	ck_assert_int_eq(src_of("/r/v_dgram_0", &port), 0);
	ck_assert_uint_eq(port, 0);
	ck_assert_int_eq(src_of("/r/v_dgram_4294967295", &port), 0);
	ck_assert_uint_eq(port, 4294967295u);
	ck_assert_int_eq(src_of("/r/v_dgram_4294967296", &port), -EINVAL);
	ck_assert_int_eq(src_of("/r/v_dgram_042", &port), -EINVAL); /* not the path of 42 */
	ck_assert_int_eq(src_of("/r/v_dgram_12345678901", &port), -EINVAL);
	ck_assert_int_eq(src_of("/r/v_dgram_", &port), -EINVAL);
	ck_assert_int_eq(src_of("/r/v_dgram_g5", &port), -EINVAL); /* a device socket */
	ck_assert_int_eq(src_of("/r/v_dgram", &port), -EINVAL); /* the gateway */
	ck_assert_int_eq(src_of("/r/v_5", &port), -EINVAL); /* a stream path */
	ck_assert_int_eq(src_of("/r/w_dgram_5", &port), -EINVAL); /* another device */
	ck_assert_int_eq(src_of("/r/v_dgram_5x", &port), -EINVAL);
	/* Unbound (no path) and abstract senders. */
	ck_assert_int_eq(dgram_src_port("/r/v", &sa, sizeof(sa_family_t), &port), -EINVAL);
	memcpy(sa.sun_path, "\0/r/v_dgram_5", 13);
	ck_assert_int_eq(dgram_src_port("/r/v", &sa, sizeof(sa_family_t) + 13, &port), -EINVAL);
	/* A sun_path that fills all 108 bytes, no NUL: bounded. */
	memset(sa.sun_path, '1', sizeof(sa.sun_path));
	ck_assert_int_eq(dgram_src_port("/r/v", &sa, sizeof(sa), &port), -EINVAL);
}
END_TEST

static int line(const char *s, uint32_t *port, size_t *used)
{
	return dgram_parse_gateway((const uint8_t *)s, strlen(s), port, used);
}

START_TEST(gateway_line)
{
	uint32_t port = 0;
	size_t used = 0;

	ck_assert_int_eq(line("SEND 1234\nhello", &port, &used), 0);
	ck_assert_uint_eq(port, 1234);
	ck_assert_uint_eq(used, 10);
	ck_assert_int_eq(line("SEND 4294967295\n", &port, &used), 0);
	ck_assert_uint_eq(port, 4294967295u);
	ck_assert_uint_eq(used, DGRAM_GATEWAY_LINE_MAX);
	ck_assert_int_eq(line("SEND 0\n", &port, &used), 0);
	ck_assert_uint_eq(port, 0);
	ck_assert_int_eq(line("SEND 4294967296\n", &port, &used), -EINVAL);
	ck_assert_int_eq(line("SEND 12", &port, &used), -EINVAL); /* no LF: one datagram, no more */
	ck_assert_int_eq(line("SEND \n", &port, &used), -EINVAL);
	ck_assert_int_eq(line("SEND 01\n", &port, &used), -EINVAL);
	ck_assert_int_eq(line("send 1\n", &port, &used), -EINVAL);
	ck_assert_int_eq(line("SEND  1\n", &port, &used), -EINVAL);
	ck_assert_int_eq(line("SEND 1 \n", &port, &used), -EINVAL);
	ck_assert_int_eq(line("SEN", &port, &used), -EINVAL);
	ck_assert_int_eq(line("", &port, &used), -EINVAL);
	ck_assert_int_eq(line("SEND 00000000001\n", &port, &used), -EINVAL); /* LF too late */
}
END_TEST

START_TEST(bind_and_send)
{
	struct sockaddr_un a, b;
	socklen_t alen, blen;
	char ping[] = "ping", buf[8];
	struct iovec iov = { .iov_base = ping, .iov_len = 4 };
	int fa, fb, f2, small = 1, i;

	make_base();
	ck_assert_int_eq(dgram_addr(base, DGRAM_PATH_GUEST, 1, &a, &alen), 0);
	ck_assert_int_eq(dgram_addr(base, DGRAM_PATH_HOST, 2, &b, &blen), 0);
	unlink(a.sun_path);
	unlink(b.sun_path);
	fa = dgram_bind(&a, alen);
	ck_assert_int_ge(fa, 0);
	/* Nobody at b yet. */
	ck_assert_int_eq(dgram_send(fa, &b, blen, &iov, 1), DGRAM_NO_DEST);
	fb = dgram_bind(&b, blen);
	ck_assert_int_ge(fb, 0);
	ck_assert_int_eq(dgram_send(fa, &b, blen, &iov, 1), DGRAM_SENT);
	ck_assert_int_eq(recv(fb, buf, sizeof(buf), 0), 4);
	/* A live socket is not replaced; a stale one is. */
	ck_assert_int_eq(dgram_bind(&b, blen), -EADDRINUSE);
	close(fb);
	fb = dgram_bind(&b, blen);
	ck_assert_int_ge(fb, 0);
	/* A receiver that does not read: full, never blocking. */
	setsockopt(fb, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	for (i = 0; i < 1000; i++)
		if (dgram_send(fa, &b, blen, &iov, 1) != DGRAM_SENT)
			break;
	ck_assert_int_lt(i, 1000);
	ck_assert_int_eq(dgram_send(fa, &b, blen, &iov, 1), DGRAM_FULL);
	close(fa);
	close(fb);
	unlink(b.sun_path);
	/* A file that is not a socket is left alone. */
	f2 = open(b.sun_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ck_assert_int_ge(f2, 0);
	close(f2);
	ck_assert_int_eq(dgram_bind(&b, blen), -ENOTSOCK);
	ck_assert_int_eq(access(b.sun_path, F_OK), 0);
	unlink(b.sun_path);
	unlink(a.sun_path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("host_dgram");
	TCase *tc = tcase_create("host_dgram");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, paths);
	tcase_add_test(tc, sender_port);
	tcase_add_test(tc, gateway_line);
	tcase_add_test(tc, bind_and_send);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
