// SPDX-License-Identifier: MIT
/*
 * Device tests, host side of the hybrid protocol: the "CONNECT <port>\n"
 * parser on uds_path. A bad command closes that host socket without "OK",
 * creates no connection and leaks no fd; bytes after the newline are data,
 * delivered exactly once; the assigned host port is in [2^30, 2^31).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 8000

/*
 * Out-of-range ports are chosen so that a parser that wraps (mod 2^32 or
 * 2^64) would land on the guest's listening port 8000 and wrongly say OK.
 */
static const char *const bad_cmds[] = {
	"CONNECT abc\n",
	"CONNECT 4294975296\n", /* 2^32 + 8000 */
	"CONNECT 18446744073709559616\n", /* 2^64 + 8000 */
	"CONNECT 99999999999999999999999998000\n",
	"CONNECT -8000\n",
	"CONNECT \n",
	"CONNECT\n",
	"CONNECT 8000x\n",
	"CONNECT 0x1f40\n",
	"CONNEKT 8000\n",
	"connect 8000\n",
	"\n",
	"OK 8000\n",
};
#define N_BAD ((int)(sizeof(bad_cmds) / sizeof(bad_cmds[0])))

/* Each malformed command: the socket is closed without OK, nothing reaches the guest. */
START_TEST(t_bad_command)
{
	struct vsock_dev_counters c0, c1;
	struct sim_listener *l;
	struct sim_conn *c;
	struct sim_pkt p;
	struct fx fx;
	char line[64];
	int fd, base;
	ssize_t n;

	fx_setup(&fx, NULL);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	fx_counters(&fx, &c0);
	base = fx_count_fds();
	fd = hp_connect_raw(fx.uds);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(hp_write_all(fd, bad_cmds[_i], strlen(bad_cmds[_i]), FX_T),
			 (ssize_t)strlen(bad_cmds[_i]));
	n = hp_read_line(fd, line, sizeof(line), FX_T);
	ck_assert_msg(n == 0 || n == -ECONNRESET, "%s: reply %zd '%s'", bad_cmds[_i], n,
		      n > 0 ? line : "");
	close(fd);
	ck_assert_int_eq(fx_wait_fds(base, FX_T), base);
	ck_assert_int_eq(sim_accept(l, 200, &c), -ETIMEDOUT);
	ck_assert_int_eq(sim_pkt_recv(fx.drv, &p, 0), -ETIMEDOUT);
	fx_counters(&fx, &c1);
	ck_assert_uint_eq(c1.conns_opened, c0.conns_opened);
	/* the listener still works */
	{
		uint32_t hp;

		fd = fx_host_connect(&fx, l, PORT, &c, &hp);
		fx_xfer_h2g(fd, c, 1000, 1);
		close(fd);
		sim_close(c, FX_T);
	}
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/* No newline within a bounded length: closed without OK, nothing leaked. */
START_TEST(t_no_newline)
{
	struct sim_listener *l;
	struct sim_conn *c;
	struct fx fx;
	char *junk = malloc(65536), line[64];
	int fd, base;
	ssize_t n, w;

	fx_setup(&fx, NULL);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	base = fx_count_fds();
	fd = hp_connect_raw(fx.uds);
	memcpy(junk, "CONNECT ", 8);
	memset(junk + 8, '1', 65536 - 8);
	/* the device may close before taking it all: EPIPE/ECONNRESET are fine */
	w = hp_write_all(fd, junk, 65536, FX_T);
	ck_assert_msg(w == 65536 || w == -EPIPE || w == -ECONNRESET, "write: %zd", w);
	n = hp_read_line(fd, line, sizeof(line), FX_T);
	ck_assert_msg(n == 0 || n == -ECONNRESET, "reply %zd", n);
	close(fd);
	ck_assert_int_eq(fx_wait_fds(base, FX_T), base);
	ck_assert_int_eq(sim_accept(l, 100, &c), -ETIMEDOUT);
	free(junk);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/* The host closes mid-line (or before writing anything): nothing leaks. */
START_TEST(t_close_mid_line)
{
	static const char *const parts[] = { "", "CONN", "CONNECT 80", "CONNECT 8000" };
	struct sim_listener *l;
	struct sim_conn *c;
	struct fx fx;
	int fd, base, i;

	fx_setup(&fx, NULL);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	base = fx_count_fds();
	for (i = 0; i < 4; i++) {
		fd = hp_connect_raw(fx.uds);
		ck_assert_int_ge(fd, 0);
		if (parts[i][0])
			ck_assert_int_eq(hp_write_all(fd, parts[i], strlen(parts[i]), FX_T),
					 (ssize_t)strlen(parts[i]));
		close(fd);
	}
	ck_assert_int_eq(fx_wait_fds(base, FX_T), base);
	ck_assert_int_eq(sim_accept(l, 100, &c), -ETIMEDOUT);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/*
 * Data in the same write as the command: delivered once, after RESPONSE.
 * Loop 0: one write; 1: the command byte by byte, then data.
 */
START_TEST(t_data_after_newline)
{
	char msg[128], got[128], line[64];
	struct sim_listener *l;
	struct sim_conn *c;
	struct fx fx;
	size_t hdr, i;
	ssize_t n, total = 0;
	int fd;

	fx_setup(&fx, NULL);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	hdr = (size_t)snprintf(msg, sizeof(msg), "CONNECT %u\n", PORT);
	memcpy(msg + hdr, "first bytes of data", 19);
	fd = hp_connect_raw(fx.uds);
	if (_i == 0) {
		ck_assert_int_eq(hp_write_all(fd, msg, hdr + 19, FX_T), (ssize_t)(hdr + 19));
	} else {
		for (i = 0; i < hdr; i++) {
			ck_assert_int_eq(hp_write_all(fd, msg + i, 1, FX_T), 1);
			usleep(2000);
		}
		ck_assert_int_eq(hp_write_all(fd, msg + hdr, 19, FX_T), 19);
	}
	ck_assert_int_eq(sim_accept(l, FX_T, &c), 0);
	n = hp_read_line(fd, line, sizeof(line), FX_T);
	ck_assert_int_gt(n, 3);
	ck_assert_int_eq(strncmp(line, "OK ", 3), 0);
	{
		unsigned long hp = strtoul(line + 3, NULL, 10);

		ck_assert_msg(hp >= (1ul << 30) && hp < (1ul << 31), "%s", line);
	}
	while (total < 19) {
		n = sim_recv(c, got + total, sizeof(got) - (size_t)total, FX_T);
		ck_assert_int_gt(n, 0);
		total += n;
	}
	ck_assert_int_eq(total, 19);
	ck_assert_int_eq(memcmp(got, "first bytes of data", 19), 0);
	/* nothing more: the bytes came exactly once */
	ck_assert_int_eq(sim_recv(c, got, sizeof(got), 200), -ETIMEDOUT);
	ck_assert_int_eq(hp_write_all(fd, "more", 4, FX_T), 4);
	ck_assert_int_eq(sim_recv(c, got, sizeof(got), FX_T), 4);
	ck_assert_int_eq(memcmp(got, "more", 4), 0);
	close(fd);
	sim_close(c, FX_T);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

/* CONNECT to a guest port nobody listens on: the guest answers RST, the host gets no OK. */
START_TEST(t_connect_refused_by_guest)
{
	struct fx fx;
	int fd, base;

	fx_setup(&fx, NULL);
	base = fx_count_fds();
	fd = hp_connect(fx.uds, PORT + 5, NULL, FX_T);
	ck_assert_int_eq(fd, -ECONNREFUSED);
	ck_assert_int_eq(fx_wait_fds(base, FX_T), base);
	fx_teardown(&fx);
}
END_TEST

/* CONNECTs made before the driver is up wait, then complete once it starts. */
START_TEST(t_connect_before_start)
{
	struct fx_opts o = { .no_attach = true };
	struct sim_listener *l;
	struct sim_conn *c;
	char line[64];
	struct fx fx;
	int fd;

	fx_setup(&fx, &o);
	fd = hp_connect_raw(fx.uds);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(hp_write_all(fd, "CONNECT 8000\n", 13, FX_T), 13);
	ck_assert(hp_quiet(fd, 100));
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	ck_assert_int_eq(sim_drv_attach(fx.drv, fx.dev), 0);
	ck_assert_int_eq(sim_accept(l, FX_T, &c), 0);
	ck_assert_int_gt(hp_read_line(fd, line, sizeof(line), FX_T), 3);
	ck_assert_int_eq(strncmp(line, "OK ", 3), 0);
	fx_xfer_g2h(fd, c, 10000, 3);
	close(fd);
	sim_close(c, FX_T);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_connect");

	FX_ADD_LOOP(s, t_bad_command, N_BAD, 30);
	FX_ADD(s, t_no_newline, 30);
	FX_ADD(s, t_close_mid_line, 30);
	FX_ADD_LOOP(s, t_data_after_newline, 2, 30);
	FX_ADD(s, t_connect_refused_by_guest, 30);
	FX_ADD(s, t_connect_before_start, 30);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
