// SPDX-License-Identifier: MIT
/*
 * Device tests, datagrams under failing system calls: every call a device
 * thread makes while the guest and a host program exchange datagrams (guest
 * to host, the host's answer to the guest port's socket, the host's first
 * datagram through the gateway: socket, bind, connect, setsockopt,
 * sendmsg, recvfrom, epoll_ctl, malloc, calloc and the threads' own loops)
 * is made to fail, one site at a time, with each errno class it can meet
 * (tests/support/fault_shim.h). Checked for each: no sanitizer report, no
 * hang, every datagram the guest sent is accounted for (delivered or a
 * drop counter), nothing reset, the next exchange goes through whole, and
 * no fd is left open after destroy. And a held pump (fault_pause_call())
 * fills another guest's datagram forward queue: t_route_full.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fault_shim.h"
#include "fixture.h"

#define HOST_PORT 6000
#define MAX_CASES 512

struct fcase {
	struct fault_site site;
	enum fault_err err;
};

static struct fcase cases[MAX_CASES];
static unsigned int n_cases;

static socklen_t path_addr(struct sockaddr_un *sa, const char *uds, const char *suffix)
{
	char path[160];

	snprintf(path, sizeof(path), "%s%s", uds, suffix);
	if (strlen(path) >= sizeof(sa->sun_path))
		abort();
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, strlen(path));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

static int host_sock(struct fx *fx)
{
	struct sockaddr_un sa;
	char suffix[32];
	socklen_t len;
	struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(suffix, sizeof(suffix), "_dgram_%u", HOST_PORT);
	len = path_addr(&sa, fx->uds, suffix);
	unlink(sa.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len))
		abort();
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The guest's next datagram to @port within @wait_ms, others (late ones) skipped. */
static bool guest_got(struct fx *fx, uint32_t port, uint32_t len, int wait_ms)
{
	struct sim_pkt pkt;
	bool ok = false;

	while (!sim_dgram_recv(fx->drv, &pkt, wait_ms)) {
		bool mine = pkt.hdr.dst_port == port;

		ok = mine && pkt.hdr.len == len && pkt.hdr.src_port == HOST_PORT;
		sim_pkt_free(&pkt);
		if (mine)
			break;
	}
	return ok;
}

/*
 * One exchange on guest ports @gport (guest speaks first) and @gport + 1
 * (the host speaks first, through the gateway), @wait_ms for each arrival.
 * Return: how many of the 3 datagrams arrived intact.
 */
static int exchange(struct fx *fx, int fd, uint32_t gport, int wait_ms)
{
	struct sockaddr_un to, from;
	socklen_t tlen, flen = sizeof(from);
	char suffix[32], buf[64];
	int got = 0, n;

	if (sim_dgram_send(fx->drv, 2, gport, HOST_PORT, "from guest", 10, FX_T))
		return -1;
	if (recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen) == 10 &&
	    !memcmp(buf, "from guest", 10))
		got++;
	snprintf(suffix, sizeof(suffix), "_dgram_g%u", gport);
	tlen = path_addr(&to, fx->uds, suffix);
	if (sendto(fd, "answer", 6, 0, (struct sockaddr *)&to, tlen) == 6 &&
	    guest_got(fx, gport, 6, wait_ms))
		got++;
	tlen = path_addr(&to, fx->uds, "_dgram");
	n = snprintf(buf, sizeof(buf), "SEND %u\nfirst", gport + 1);
	if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&to, tlen) == n &&
	    guest_got(fx, gport + 1, 5, wait_ms))
		got++;
	return got;
}

static void setup(struct fx *fx)
{
	struct fx_opts o;

	memset(&o, 0, sizeof(o));
	o.dgram = true;
	o.mrg = true;
	o.spawn = fault_spawn;
	fx_setup(fx, &o);
}

/* Every datagram the guest sent is delivered or counted dropped. */
static void accounted(struct fx *fx, uint64_t sent)
{
	struct vsock_dev_counters c;
	uint64_t sum = 0;
	int ms;

	ck_assert_int_eq(sim_wait_tx_idle(fx->drv, FX_T), 0);
	for (ms = 0; ms < FX_T && sum != sent; ms++) {
		fx_counters(fx, &c); /* counted just after the send: poll a little */
		sum = c.dgram_tx_pkts + c.dgram_tx_drop_no_dest + c.dgram_tx_drop_full +
		      c.dgram_tx_drop_err + c.dgram_tx_drop_malformed;
		if (sum != sent)
			usleep(1000);
	}
	ck_assert_uint_eq(sum, sent);
	ck_assert_uint_eq(c.conn_resets + c.malformed_pkts, 0);
}

/*
 * The reference exchange, every device call site recorded. Outside a test
 * (Check's asserts need one): the fixture's parts by hand, no assert.
 */
static void reference(void)
{
	static struct fault_site sites[FAULT_MAX_SITES];
	struct sim_drv_config dc = { 0 };
	unsigned int n, i, e;
	struct fx fx = { 0 };
	int fd, got = -1;

	fault_reset();
	hp_tmp_path(fx.uds, sizeof(fx.uds), "dgf");
	if (sim_drv_create(&dc, &fx.drv))
		abort();
	fx.dcfg = (struct vsock_dev_config){ .guest_cid = sim_drv_guest_cid(fx.drv),
					     .uds_path = fx.uds,
					     .mrg_rxbuf = true,
					     .dgram = true,
					     .spawn = fault_spawn };
	if (!vsock_dev_create(&fx.dcfg, &fx.dev) && !sim_drv_attach(fx.drv, fx.dev)) {
		fd = host_sock(&fx);
		got = exchange(&fx, fd, 1000, FX_T);
		close(fd);
	}
	n = fault_sites(sites, FAULT_MAX_SITES);
	vsock_dev_destroy(fx.dev);
	sim_drv_destroy(fx.drv);
	unlink(fx.uds);
	if (got != 3) {
		fprintf(stderr, "reference exchange: %d of 3\n", got);
		return; /* t_reference fails: no case */
	}
	for (i = 0; getenv("FAULT_LIST") && i < n && i < FAULT_MAX_SITES; i++) {
		char desc[400];

		fault_describe(&sites[i], desc, sizeof(desc));
		fprintf(stderr, "site %u: %s, %llu calls\n", i, desc,
			(unsigned long long)sites[i].hits);
	}
	for (i = 0; i < n && i < FAULT_MAX_SITES; i++)
		for (e = 0; e < FE_NUM && n_cases < MAX_CASES; e++)
			if (sites[i].errs & (1u << e))
				cases[n_cases++] = (struct fcase){ sites[i], (enum fault_err)e };
	fault_reset();
}

START_TEST(t_reference)
{
	ck_assert_uint_gt(n_cases, 0);
	fprintf(stderr, "datagram fault matrix: %u cases\n", n_cases);
}
END_TEST

START_TEST(t_dgram_fault)
{
	const struct fcase *fc = &cases[_i];
	struct fault_site where;
	char desc[400];
	struct fx fx;
	int fds0 = fx_count_fds(), fd, got, again;

	fault_describe(&fc->site, desc, sizeof(desc));
	setup(&fx);
	fd = host_sock(&fx);
	fault_reset();
	fault_arm_site(&fc->site, fault_errno(fc->err), 1);
	got = exchange(&fx, fd, 1000, 500);
	again = exchange(&fx, fd, 2000, FX_T);
	fprintf(stderr, "case %d: %s, %s: %s, %d of 3 then %d of 3\n", _i, desc,
		fault_err_name(fc->err), fault_fired(&where) ? "fired" : "not reached", got, again);
	ck_assert_int_ge(got, 0);
	ck_assert_msg(again == 3, "case %d (%s, %s): the next exchange moved %d of 3", _i, desc,
		      fault_err_name(fc->err), again);
	accounted(&fx, 2);
	close(fd);
	fx_teardown(&fx);
	ck_assert_int_eq(fx_wait_fds(fds0, FX_T), fds0);
}
END_TEST

/*
 * Guest to guest, the destination's forward queue full: the destination's
 * pump is held in epoll_wait (fault_pause_call()), so its datagram share
 * (ROUTE_FWD_DGRAM_PKTS, 64) fills; the sender's next datagrams are dropped
 * and counted at once (dgram_tx_drop_full), never held; released, the 64
 * queued arrive in order.
 */
START_TEST(t_route_full)
{
	struct vsock_dev_counters ca;
	struct fx_opts oa, ob;
	struct sim_pkt pkt;
	struct fx a, b;
	uint32_t i, queued;

	memset(&oa, 0, sizeof(oa));
	memset(&ob, 0, sizeof(ob));
	oa.dgram = ob.dgram = true;
	oa.drv.guest_cid = 3;
	ob.drv.guest_cid = 4;
	oa.drv.peer_guests = ob.drv.peer_guests = true;
	ob.rx_threads = 1; /* its one pump is pump 0, the router's */
	ob.ctl_thread = VSOCK_CTL_OWN; /* a pump thread of its own, held below */
	ob.spawn = fault_spawn;
	fx_setup(&a, &oa);
	fx_setup(&b, &ob);
	fault_reset();
	fault_pause_call(FAULT_EPOLL_WAIT, VSOCK_THREAD_RX_PUMP, 0);
	/*
	 * One datagram wakes the pump, held at its next wait: before or after
	 * it delivered that one (then @queued is 1 or 0).
	 */
	i = 1000;
	ck_assert_int_eq(sim_dgram_send(a.drv, 4, 800, 900, &i, sizeof(i), FX_T), 0);
	ck_assert_int_eq(fault_wait_paused(1, FX_T), 0);
	queued = sim_dgram_recv(b.drv, &pkt, 2000) ? 1 : 0;
	if (!queued)
		sim_pkt_free(&pkt);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(sim_dgram_send(a.drv, 4, 800, 900, &i, sizeof(i), FX_T), 0);
	ck_assert_int_eq(sim_wait_tx_idle(a.drv, FX_T), 0);
	FX_WAIT_EQ(&a, dgram_tx_drop_full, 36 + queued);
	fx_counters(&a, &ca);
	ck_assert_uint_eq(ca.dgram_tx_pkts, 1 + 64 - queued);
	fault_release();
	if (queued) {
		ck_assert_int_eq(sim_dgram_recv(b.drv, &pkt, FX_T), 0); /* the waking one */
		sim_pkt_free(&pkt);
	}
	for (i = 0; i < 64 - queued; i++) {
		uint32_t v;

		ck_assert_int_eq(sim_dgram_recv(b.drv, &pkt, FX_T), 0);
		ck_assert_uint_eq(pkt.hdr.len, sizeof(v));
		memcpy(&v, pkt.payload, sizeof(v));
		ck_assert_uint_eq(v, i);
		sim_pkt_free(&pkt);
	}
	FX_WAIT_EQ(&b, dgram_rx_pkts, 1 + 64 - queued);
	fx_teardown(&b);
	fx_teardown(&a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("device_dgram_fault");

	fault_init();
	reference();
	FX_ADD(s, t_reference, 30);
	FX_ADD_LOOP(s, t_dgram_fault, (int)n_cases, 60);
	FX_ADD(s, t_route_full, 60);
	return fx_run_suite(s);
}
