// SPDX-License-Identifier: MIT
/*
 * Device tests, devices and host clients kept apart (issue 22, finding 7):
 *
 *   fd budget     each device holds at most its share of the process's fd
 *                 limit (or cfg.max_host_fds): a guest opening connections
 *                 without end is refused at its budget, and another guest
 *                 of the same process still opens and uses its own
 *   fair slots    one local client (one pid) holding all 64 pending-CONNECT
 *                 slots, or all 64 lobby slots before the device starts,
 *                 does not keep a client of another process out
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 6100
#define SLOTS 64 /* DEV_MAX_PENDING_CONNECT */
#define MAX_CONNS 512

static void setup_cid(struct fx *fx, struct fx_opts *o, uint64_t cid)
{
	o->drv.guest_cid = cid;
	fx_setup(fx, o);
}

/* Open guest connections on @fx to @lfd until one is refused. Return: how many. */
static int open_until_refused(struct fx *fx, int lfd, struct sim_conn **c, int *fd, int max)
{
	int n;

	for (n = 0; n < max; n++) {
		int rc = sim_connect(fx->drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &c[n]);

		if (rc == -ECONNRESET)
			break;
		ck_assert_int_eq(rc, 0);
		fd[n] = hp_accept(lfd, FX_T);
		ck_assert_int_ge(fd[n], 0);
	}
	return n;
}

/*
 * Two guests in one process with a low fd limit, automatic budgets: guest
 * A opens connections until refused, which happens at its share, not when
 * the process runs out; guest B then opens 16 and moves data on them. A
 * host CONNECT to A beyond the budget is closed without OK; once A closes
 * one connection it may open one again.
 */
START_TEST(t_fd_budget)
{
	static struct sim_conn *ca[MAX_CONNS], *cb[16];
	static int fa[MAX_CONNS], fb[16];
	struct fx_opts oa = { .max_conns = MAX_CONNS }, ob = { .max_conns = MAX_CONNS };
	struct vsock_dev_counters k;
	struct rlimit old, low;
	struct sim_listener *l;
	int la, lb, na, i, top = 0, n;
	struct fx a, b;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	for (i = 0; i < 100; i++) {
		n = dup(2);
		top = n > top ? n : top;
		close(n);
	}
	low = old;
	low.rlim_cur = (rlim_t)top + 440;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	setup_cid(&a, &oa, 3);
	setup_cid(&b, &ob, 4);
	la = hp_listen_port(a.uds, PORT, MAX_CONNS, 0);
	lb = hp_listen_port(b.uds, PORT, 16, 0);
	ck_assert_int_ge(la, 0);
	ck_assert_int_ge(lb, 0);
	ck_assert_int_eq(sim_listen(a.drv, PORT + 1, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);

	na = open_until_refused(&a, la, ca, fa, MAX_CONNS);
	/* B still opens its own, and they work */
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(sim_connect(b.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, FX_T, &cb[i]),
				 0);
		fb[i] = hp_accept(lb, FX_T);
		ck_assert_int_ge(fb[i], 0);
	}
	for (i = 0; i < 16; i++)
		fx_xfer_g2h(fb[i], cb[i], 10000, 40 + (uint64_t)i);
	fx_counters(&a, &k);
	fprintf(stderr, "t_fd_budget: fd limit %llu, guest A refused after %d connections\n",
		(unsigned long long)low.rlim_cur, na);
	ck_assert_int_lt(na, MAX_CONNS);
	ck_assert_uint_eq(k.host_fds, (uint64_t)na);
	ck_assert_uint_ge(k.conns_refused, 1);
	/* the share of 2 devices: (limit - 64) / 2 - 32 */
	ck_assert_int_eq(na, (int)((low.rlim_cur - 64) / 2 - 32));
	/* closed at once, perhaps before our line is written (-EIO: EPIPE on the write) */
	n = hp_connect(a.uds, PORT + 1, NULL, FX_T);
	ck_assert_msg(n == -ECONNREFUSED || n == -EIO, "CONNECT over the budget: %d", n);

	fx_xfer_h2g(fa[0], ca[0], 10000, 7);

	/* A closes one: it may open one again */
	fx_close_both(fa[na - 1], ca[na - 1], true);
	FX_WAIT_EQ(&a, conns_closed, 1);
	ck_assert_int_eq(open_until_refused(&a, la, ca + na - 1, fa + na - 1, 1), 1);

	for (i = 0; i < 16; i++) {
		close(fb[i]);
		sim_abort(cb[i]);
	}
	for (i = 0; i < na; i++) {
		close(fa[i]);
		sim_abort(ca[i]);
	}
	fx_wait_quiet(&a);
	fx_wait_quiet(&b);
	close(la);
	close(lb);
	sim_unlisten(l);
	fx_teardown(&b);
	fx_teardown(&a);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
}
END_TEST

/*
 * A child process connects SLOTS clients to @uds and never writes; it
 * tells @ready when done and exits when @go is closed. Only system calls
 * after fork(): the parent has threads.
 */
static pid_t hog_start(const char *uds, int *go_w)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ready[2], go[2];
	pid_t pid;
	char x;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", uds);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int i, fd;

		close(ready[0]);
		close(go[1]);
		for (i = 0; i < SLOTS; i++) {
			fd = socket(AF_UNIX, SOCK_STREAM, 0);
			if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
				_exit(1);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		while (read(go[0], &x, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	ck_assert_int_eq(read(ready[0], &x, 1), 1);
	close(ready[0]);
	*go_w = go[1];
	return pid;
}

/*
 * Fair slots: another process holds all SLOTS pending-CONNECT slots (_i 0)
 * or lobby slots (_i 1, device not started yet) with clients that never
 * write. A client of this process still gets its CONNECT served (one of
 * the hog's oldest goes instead).
 */
START_TEST(t_fair_slots)
{
	struct fx_opts o = { .no_attach = _i == 1, .host_wait_ms = 30000 };
	struct vsock_dev_counters k;
	struct sim_listener *l;
	struct sim_conn *c;
	int fd, go, status;
	char line[64];
	struct fx fx;
	pid_t pid;

	fx_setup(&fx, &o);
	ck_assert_int_eq(sim_listen(fx.drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 4, &l), 0);
	pid = hog_start(fx.uds, &go);
	FX_WAIT_EQ(&fx, host_fds, SLOTS); /* all taken */
	fd = hp_connect_raw(fx.uds);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(hp_write_all(fd, "CONNECT 6100\n", 13, FX_T), 13);
	if (_i == 1)
		ck_assert_int_eq(sim_drv_attach(fx.drv, fx.dev), 0);
	ck_assert_int_eq(sim_accept(l, FX_T, &c), 0);
	ck_assert_int_gt(hp_read_line(fd, line, sizeof(line), FX_T), 3);
	ck_assert_int_eq(strncmp(line, "OK ", 3), 0);
	fx_xfer_h2g(fd, c, 10000, 3);
	fx_counters(&fx, &k);
	ck_assert_uint_ge(k.conns_refused, 1); /* the hog's oldest */
	close(go);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
	sim_close(c, FX_T);
	fx_wait_quiet(&fx);
	sim_unlisten(l);
	fx_teardown(&fx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_isolation");

	FX_ADD(s, t_fd_budget, 60);
	FX_ADD_LOOP(s, t_fair_slots, 2, 30);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
