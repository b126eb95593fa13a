// SPDX-License-Identifier: MIT
/* Unit tests: the CONNECT line parser, OK formatting, credit arithmetic. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "conn.h"
#include "host_uds.h"

static int parse(const char *s, uint32_t *port, size_t *used)
{
	return uds_parse_connect(s, strlen(s), 32, port, used);
}

START_TEST(connect_good)
{
	uint32_t port = 0;
	size_t used = 0;

	ck_assert_int_eq(parse("CONNECT 1234\n", &port, &used), 0);
	ck_assert_uint_eq(port, 1234);
	ck_assert_uint_eq(used, 13);
	ck_assert_int_eq(parse("CONNECT 0\nhello", &port, &used), 0);
	ck_assert_uint_eq(port, 0);
	ck_assert_uint_eq(used, 10); /* "hello" is data for the guest */
	ck_assert_int_eq(parse("CONNECT 4294967295\n", &port, &used), 0);
	ck_assert_uint_eq(port, 4294967295u);
	ck_assert_int_eq(parse("CONNECT 0000000052\n", &port, &used), 0);
	ck_assert_uint_eq(port, 52);
}
END_TEST

START_TEST(connect_incomplete)
{
	uint32_t port;
	size_t used;

	ck_assert_int_eq(parse("", &port, &used), -EAGAIN);
	ck_assert_int_eq(parse("CONN", &port, &used), -EAGAIN);
	ck_assert_int_eq(parse("CONNECT ", &port, &used), -EAGAIN);
	ck_assert_int_eq(parse("CONNECT 12", &port, &used), -EAGAIN);
}
END_TEST

START_TEST(connect_malformed)
{
	char longline[40];
	uint32_t port;
	size_t used;

	ck_assert_int_eq(parse("connect 12\n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT\n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT \n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT  12\n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT 12a\n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT -1\n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT 12 \n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT 12\r\n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT 4294967296\n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT 99999999999\n", &port, &used), -EINVAL);
	ck_assert_int_eq(parse("CONNECT 00000000001\n", &port, &used), -EINVAL); /* 11 digits */
	ck_assert_int_eq(parse("XONNECT 1\n", &port, &used), -EINVAL);
	/* No newline within the bound. */
	memset(longline, 0, sizeof(longline));
	memcpy(longline, "CONNECT ", 8);
	memset(longline + 8, '1', 10);
	memset(longline + 18, ' ', 14);
	ck_assert_int_eq(uds_parse_connect(longline, 32, 32, &port, &used), -EINVAL);
	ck_assert_int_eq(uds_parse_connect("CONNECT 1", 9, 9, &port, &used), -EINVAL);
}
END_TEST

START_TEST(ok_line)
{
	char buf[16];

	ck_assert_uint_eq(uds_format_ok(buf, 1073741824u), 14);
	ck_assert_str_eq(buf, "OK 1073741824\n");
}
END_TEST

START_TEST(credit_wraps)
{
	struct conn c;

	memset(&c, 0, sizeof(c));
	c.peer_buf_alloc = 1000;
	c.peer_fwd_cnt = 0xfffffff0u;
	c.h2g_sent = 0xfffffff0u + 600; /* wrapped past 2^32 */
	ck_assert_uint_eq(conn_credit_avail(&c), 400);
	c.h2g_sent = 0xfffffff0u + 1000;
	ck_assert_uint_eq(conn_credit_avail(&c), 0);
	/* A guest claiming to have consumed more than we sent gives no credit. */
	c.h2g_sent = 5;
	c.peer_fwd_cnt = 100;
	ck_assert_uint_eq(conn_credit_avail(&c), 0);
	c.peer_fwd_cnt = 5;
	ck_assert_uint_eq(conn_credit_avail(&c), 1000);
}
END_TEST

/* Fair sharing of the client slots by peer pid (slot_victim()). */
START_TEST(slot_sharing)
{
	int pid[4] = { 7, 7, 9, 7 };
	int64_t since[4] = { 30, 10, 5, 20 };

	/* room: admit */
	ck_assert_int_eq(slot_victim(pid, since, 3, 4, 9), SLOT_ROOM);
	/* full, pid 7 holds 3: a client of 9 (1) or a new pid (0) takes 7's oldest */
	ck_assert_int_eq(slot_victim(pid, since, 4, 4, 9), 1);
	ck_assert_int_eq(slot_victim(pid, since, 4, 4, 42), 1);
	/* 7 itself holds the most: its newcomer is refused, not its own older ones */
	ck_assert_int_eq(slot_victim(pid, since, 4, 4, 7), SLOT_REFUSE);
	/* two peers level: neither takes the other's */
	pid[3] = 9;
	ck_assert_int_eq(slot_victim(pid, since, 4, 4, 9), SLOT_REFUSE);
	ck_assert_int_eq(slot_victim(pid, since, 4, 4, 7), SLOT_REFUSE);
	/* ... but a third one does, from either */
	ck_assert_int_ge(slot_victim(pid, since, 4, 4, 5), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("host_uds");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, connect_good);
	tcase_add_test(tc, connect_incomplete);
	tcase_add_test(tc, connect_malformed);
	tcase_add_test(tc, ok_line);
	tcase_add_test(tc, credit_wraps);
	tcase_add_test(tc, slot_sharing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
