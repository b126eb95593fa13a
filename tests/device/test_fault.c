// SPDX-License-Identifier: MIT
/*
 * Device tests, failing system calls (issue 22): every system call and
 * allocation the device makes on a path a guest or a host client reaches
 * is made to fail, one at a time, at each call site, with each errno class
 * it can meet (tests/support/fault_shim.h), while five connections move
 * checked data both ways and close.
 *
 * A reference run of the scenario (in a child process, before the tests)
 * records the sites; then t_fault runs the scenario once per (site, errno
 * class) with that one failure injected at the site's first call, and
 * checks: no sanitizer report, nothing hangs (every wait is bounded), at
 * most one connection is affected and it is reset where both ends see it
 * (never a silent loss: a connection the guest still thinks is fine moved
 * every byte and its EOF), none for EINTR (the call is retried), every
 * other connection's data arrives intact, conns_opened == conns_closed at
 * the end, no fd is left open (/proc/self/fd), and the driver saw no
 * protocol error or credit violation.
 *
 * t_pump_watch_* are the regression tests of finding 1 (EPOLL_CTL_ADD of
 * a new connection failing: use-after-free / double free).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_shim.h"
#include "fixture.h"

#define T_OP FX_T /* ms: any single wait of the scenario (generous: loaded CI) */
#define N_CONN 5
#define N_MSG 20 /* SEQPACKET messages each way */
#define PREFIX_LEN 100 /* host bytes written with the CONNECT line */
#define BUF_ALLOC (128u * 1024u) /* the device's conn_buf_size */
#define MAX_CASES 2048

enum kind { K_GUEST_STREAM, K_GUEST_SEQ, K_HOST };

struct spec {
	enum kind kind;
	uint32_t port;
	size_t g2h, h2g; /* bytes; for K_GUEST_SEQ the sum of the message sizes */
	bool prestart; /* K_HOST: connects and writes before the device starts */
	bool slow_reader; /* the host reads only once the guest is ahead */
};

static const struct spec specs[N_CONN] = {
	{ K_GUEST_STREAM, 7001, 512 * 1024, 64 * 1024, false, true },
	{ K_GUEST_STREAM, 7002, 96 * 1024, 96 * 1024, false, false },
	{ K_GUEST_SEQ, 7003, 0, 0, false, false },
	{ K_HOST, 7100, 64 * 1024, 128 * 1024, true, false },
	{ K_HOST, 7101, 32 * 1024, 200 * 1024, false, false },
};

/*
 * SEQPACKET message sizes: one of 100 KiB (two packets of a Linux guest,
 * assembled in the backlog; within BUF_ALLOC), the rest small.
 */
static size_t msg_size(bool g2h, unsigned int i)
{
	if (g2h && i == 7)
		return 100 * 1024;
	return 1 + (i * (g2h ? 2654435761u : 40503u)) % 6000;
}

enum job_kind { J_GUEST_TX, J_HOST_RX, J_HOST_TX, J_GUEST_RX, J_NUM };

struct job {
	struct conn_run *cr;
	enum job_kind kind;
	pthread_t t;
	ssize_t rc; /* bytes moved, or -errno */
	bool eof; /* receiver: EOF seen right after the last byte */
	bool corrupt; /* receiver: a byte or a boundary differs */
};

struct conn_run {
	const struct spec *sp;
	uint8_t *g2h, *h2g; /* the patterns */
	struct sim_listener *gl; /* K_HOST */
	int lfd; /* guest-initiated: host listener */
	int fd; /* host socket; -1 none */
	struct sim_conn *c;
	bool refused; /* never established (RST to REQUEST, or no OK) */
	bool reset; /* the guest saw RST */
	bool slow_timeout; /* slow_start() gave up waiting */
	unsigned long eagain0; /* fault_real_eagain() before the jobs started */
	struct job j[J_NUM];
	pthread_t closer; /* conn_main(), with the jobs */
	char why[160]; /* what was wrong, "" if nothing */
};

struct scen {
	char uds[108];
	struct sim_drv *drv;
	struct vsock_dev *dev;
	struct conn_run cr[N_CONN];
	char err[512];
	char affected[128]; /* " <port> (reset|refused)" each */
};

static int wait_io(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int r;

	do
		r = poll(&p, 1, T_OP);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r ? 0 : -ETIMEDOUT;
}

static void scen_fail(struct scen *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void scen_fail(struct scen *s, const char *fmt, ...)
{
	size_t n = strlen(s->err);
	va_list ap;

	if (n + 2 >= sizeof(s->err))
		return;
	if (n)
		s->err[n++] = ';', s->err[n++] = ' ';
	va_start(ap, fmt);
	vsnprintf(s->err + n, sizeof(s->err) - n, fmt, ap);
	va_end(ap);
}

/* ---- the four jobs of a connection ---- */

static size_t seq_total(bool g2h)
{
	size_t t = 0;
	unsigned int i;

	for (i = 0; i < N_MSG; i++)
		t += msg_size(g2h, i);
	return t;
}

static size_t want_g2h(const struct conn_run *cr)
{
	return cr->sp->kind == K_GUEST_SEQ ? seq_total(true) : cr->sp->g2h;
}

static size_t want_h2g(const struct conn_run *cr)
{
	return cr->sp->kind == K_GUEST_SEQ ? seq_total(false) : cr->sp->h2g;
}

static void job_guest_tx(struct job *j)
{
	struct conn_run *cr = j->cr;
	size_t off = 0, len = cr->sp->g2h;
	unsigned int i;
	ssize_t r;

	if (cr->sp->kind == K_GUEST_SEQ) {
		for (i = 0; i < N_MSG; i++) {
			size_t n = msg_size(true, i);

			r = sim_send_msg(cr->c, cr->g2h + off, n, false, T_OP);
			if (r < 0) {
				j->rc = r;
				return;
			}
			off += n;
		}
	} else {
		while (off < len) {
			size_t n = len - off < 65536 ? len - off : 65536;

			r = sim_send(cr->c, cr->g2h + off, n, T_OP);
			if (r < 0) {
				j->rc = r;
				return;
			}
			off += n;
		}
	}
	j->rc = sim_shutdown(cr->c, VIRTIO_VSOCK_SHUTDOWN_SEND);
	if (!j->rc)
		j->rc = (ssize_t)off;
}

static void job_guest_rx(struct job *j)
{
	struct conn_run *cr = j->cr;
	bool seq = cr->sp->kind == K_GUEST_SEQ;
	size_t len = want_h2g(cr), off = 0;
	uint8_t *buf = malloc(65536);
	unsigned int i = 0;

	for (;;) {
		uint32_t flags = 0;
		ssize_t r = seq ? sim_recv_msg(cr->c, buf, 65536, &flags, T_OP) :
				  sim_recv(cr->c, buf, 65536, T_OP);

		if (r < 0) {
			j->rc = r;
			break;
		}
		if (!r) {
			j->eof = off == len && (!seq || i == N_MSG);
			j->rc = (ssize_t)off;
			break;
		}
		if (off + (size_t)r > len || memcmp(buf, cr->h2g + off, (size_t)r) ||
		    (seq && (i >= N_MSG || (size_t)r != msg_size(false, i)))) {
			j->corrupt = true;
			j->rc = (ssize_t)off;
			break;
		}
		off += (size_t)r;
		i++;
	}
	free(buf);
}

static void job_host_tx(struct job *j)
{
	struct conn_run *cr = j->cr;
	bool seq = cr->sp->kind == K_GUEST_SEQ;
	size_t off = cr->sp->prestart ? PREFIX_LEN : 0, len = cr->sp->h2g;
	unsigned int i;

	if (!seq) {
		ssize_t r = hp_write_all(cr->fd, cr->h2g + off, len - off, T_OP);

		j->rc = r < 0 ? r : (ssize_t)len;
	} else {
		for (i = 0; i < N_MSG; i++) {
			size_t n = msg_size(false, i);
			ssize_t r;

			while ((r = send(cr->fd, cr->h2g + off, n, MSG_NOSIGNAL | MSG_DONTWAIT)) <
				       0 &&
			       (errno == EAGAIN || errno == EINTR))
				if ((r = wait_io(cr->fd, POLLOUT)))
					break;
			if (r < 0) {
				j->rc = errno ? -errno : r;
				return;
			}
			off += n;
		}
		j->rc = (ssize_t)off;
	}
	if (j->rc >= 0)
		shutdown(cr->fd, SHUT_WR);
}

/*
 * The host reader of a slow_reader connection starts only once the device
 * met a full host socket (a real EAGAIN from sendmsg(): it queued the rest
 * in the connection's backlog and armed EPOLLOUT), or the guest sent
 * everything. Bounded: after T_OP / 2 it reads anyway.
 */
static void slow_start(struct conn_run *cr)
{
	int64_t end = hp_now_ms() + T_OP / 2; /* well before the guest's send gives up */
	struct sim_conn_info ci;

	for (;;) {
		sim_conn_info(cr->c, &ci);
		if (fault_real_eagain() != cr->eagain0 || ci.tx_cnt >= cr->sp->g2h || ci.reset)
			return;
		if (hp_now_ms() > end) {
			cr->slow_timeout = true;
			return;
		}
		usleep(1000);
	}
}

static void job_host_rx(struct job *j)
{
	struct conn_run *cr = j->cr;
	bool seq = cr->sp->kind == K_GUEST_SEQ;
	size_t len = want_g2h(cr), off = 0;
	uint8_t *buf = malloc(128 * 1024);
	unsigned int i = 0;

	if (cr->sp->slow_reader)
		slow_start(cr);
	for (;;) {
		ssize_t r;

		if (seq) {
			r = wait_io(cr->fd, POLLIN);
			if (!r) {
				r = recv(cr->fd, buf, 128 * 1024, MSG_DONTWAIT);
				if (r < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				if (r < 0)
					r = -errno;
			}
		} else {
			r = hp_read_full(cr->fd, buf, 65536, T_OP);
		}
		if (r < 0) {
			j->rc = r;
			break;
		}
		if (off + (size_t)r > len || memcmp(buf, cr->g2h + off, (size_t)r) ||
		    (seq && r && (i >= N_MSG || (size_t)r != msg_size(true, i)))) {
			j->corrupt = true;
			j->rc = (ssize_t)off;
			break;
		}
		off += (size_t)r;
		i++;
		if (!r || (!seq && r < 65536)) {
			/* EOF: a short stream read, or a 0-byte message with the peer gone */
			if (seq && wait_io(cr->fd, POLLIN) == 0 &&
			    recv(cr->fd, buf, 1, MSG_DONTWAIT | MSG_PEEK) > 0)
				continue; /* a 0-byte message: SEQPACKET never sends one here */
			j->eof = off == len;
			j->rc = (ssize_t)off;
			break;
		}
	}
	free(buf);
}

static void *job_main(void *arg)
{
	struct job *j = arg;

	switch (j->kind) {
	case J_GUEST_TX:
		job_guest_tx(j);
		break;
	case J_HOST_RX:
		job_host_rx(j);
		break;
	case J_HOST_TX:
		job_host_tx(j);
		break;
	default:
		job_guest_rx(j);
		break;
	}
	return NULL;
}

/* ---- the scenario ---- */

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t st = seed;

	hp_fill(&st, buf, len);
}

static void conn_prepare(struct conn_run *cr, const struct spec *sp, unsigned int idx)
{
	memset(cr, 0, sizeof(*cr));
	cr->sp = sp;
	cr->fd = cr->lfd = -1;
	if (sp->kind == K_GUEST_SEQ) {
		cr->g2h = malloc(seq_total(true));
		cr->h2g = malloc(seq_total(false));
		fill(cr->g2h, seq_total(true), 11 + idx);
		fill(cr->h2g, seq_total(false), 101 + idx);
	} else {
		cr->g2h = malloc(sp->g2h);
		cr->h2g = malloc(sp->h2g);
		fill(cr->g2h, sp->g2h, 11 + idx);
		fill(cr->h2g, sp->h2g, 101 + idx);
	}
}

/*
 * Host client of a K_HOST connection: write its CONNECT line (and the
 * bytes after it, @len in all). The device may have refused it already (a
 * failed accept4() closes the client it could not take on: EPIPE).
 */
static void host_send_connect(struct scen *s, struct conn_run *cr, const char *buf, size_t len)
{
	ssize_t r;

	if (cr->fd < 0) {
		scen_fail(s, "client %u: connect: %d", cr->sp->port, cr->fd);
		return;
	}
	r = hp_write_all(cr->fd, buf, len, T_OP);
	if (r == -EPIPE || r == -ECONNRESET)
		cr->refused = true;
	else if (r < 0)
		scen_fail(s, "client %u: write: %zd", cr->sp->port, r);
}

/* Host client of a K_HOST connection: read "OK <port>", then the guest accepts. */
static void host_finish_connect(struct scen *s, struct conn_run *cr)
{
	char line[64];
	ssize_t r = hp_read_line(cr->fd, line, sizeof(line), T_OP);

	if (r == -ETIMEDOUT) {
		snprintf(cr->why, sizeof(cr->why), "no answer to CONNECT in %d ms", T_OP);
		return;
	}
	if (r <= 0 || strncmp(line, "OK ", 3)) {
		cr->refused = true; /* closed without OK */
		return;
	}
	if (sim_accept(cr->gl, T_OP, &cr->c))
		snprintf(cr->why, sizeof(cr->why), "OK sent, but no connection for the guest");
}

/* Judge one connection after its jobs ended; "" in cr->why when fine. */
static void conn_judge(struct conn_run *cr)
{
	static const char *const names[J_NUM] = { "guest send", "host recv", "host send",
						  "guest recv" };
	struct sim_conn_info ci;
	bool clean = true;
	int k;

	if (cr->why[0] || cr->refused)
		return;
	for (k = 0; k < J_NUM; k++) {
		struct job *j = &cr->j[k];
		bool rx = k == J_HOST_RX || k == J_GUEST_RX;
		size_t want = k < J_HOST_TX ? want_g2h(cr) : want_h2g(cr);

		if (j->rc == -ETIMEDOUT) {
			sim_conn_info(cr->c, &ci);
			snprintf(cr->why, sizeof(cr->why),
				 "%s: stalled %d ms (guest sent %u, peer fwd_cnt %u buf_alloc %u, "
				 "received %u; host read %zd%s)",
				 names[k], T_OP, ci.tx_cnt, ci.peer_fwd_cnt, ci.peer_buf_alloc,
				 ci.rx_cnt, cr->j[J_HOST_RX].rc,
				 cr->slow_timeout ? ", slow start timed out" : "");
			return;
		}
		if (j->corrupt) {
			snprintf(cr->why, sizeof(cr->why), "%s: data differs after %zd bytes",
				 names[k], j->rc);
			return;
		}
		if (j->rc != (ssize_t)want || (rx && !j->eof))
			clean = false;
	}
	/* A connection that lost data must be reset: its RST may still be on its way. */
	if (!clean)
		sim_wait_reset(cr->c, T_OP);
	sim_conn_info(cr->c, &ci);
	cr->reset = ci.reset;
	if (!clean && !cr->reset)
		snprintf(cr->why, sizeof(cr->why),
			 "not reset, but moved %zd/%zd/%zd/%zd bytes (eof %d/%d) of %zu/%zu",
			 cr->j[0].rc, cr->j[1].rc, cr->j[2].rc, cr->j[3].rc, cr->j[1].eof,
			 cr->j[3].eof, want_g2h(cr), want_h2g(cr));
}

/* Close: guest (SHUTDOWN RCV|SEND, the device answers RST), then host. */
static void conn_close(struct conn_run *cr)
{
	if (cr->c && sim_close(cr->c, T_OP) && !cr->reset && !cr->why[0])
		snprintf(cr->why, sizeof(cr->why), "no RST answering the guest's close");
	cr->c = NULL;
	if (cr->fd >= 0)
		close(cr->fd);
	cr->fd = -1;
}

/*
 * A connection's jobs ended: judge and close it at once, as an application
 * would (the device gives a guest 2 s to answer its SHUTDOWN RCV|SEND).
 */
static void *conn_main(void *arg)
{
	struct conn_run *cr = arg;
	int k;

	for (k = 0; k < J_NUM; k++)
		pthread_join(cr->j[k].t, NULL);
	conn_judge(cr);
	conn_close(cr);
	return NULL;
}

/*
 * Run the scenario (fault armed or not by the caller). Return: the number
 * of affected connections (reset or refused), or -1 with s->err set.
 */
static int scen_run(struct scen *s)
{
	struct sim_drv_config dc = { 0 };
	struct vsock_dev_config cfg;
	struct vsock_dev_counters ctr;
	struct sim_drv_stats st;
	int base, mid, i, k, rc, affected = 0;
	int64_t end;
	char buf[160];

	memset(s, 0, sizeof(*s));
	base = fx_count_fds();
	hp_tmp_path(s->uds, sizeof(s->uds), "flt");
	for (i = 0; i < N_CONN; i++)
		conn_prepare(&s->cr[i], &specs[i], (unsigned int)i);
	if (sim_drv_create(&dc, &s->drv)) {
		scen_fail(s, "sim_drv_create");
		return -1;
	}
	cfg = (struct vsock_dev_config){
		.guest_cid = sim_drv_guest_cid(s->drv),
		.uds_path = s->uds,
		.rx_threads = 2,
		.conn_buf_size = BUF_ALLOC,
		.spawn = fault_spawn,
	};
	rc = vsock_dev_create(&cfg, &s->dev);
	if (rc) {
		scen_fail(s, "vsock_dev_create: %d", rc);
		sim_drv_destroy(s->drv);
		return -1;
	}
	for (i = 0; i < N_CONN; i++) {
		struct conn_run *cr = &s->cr[i];

		if (cr->sp->kind == K_HOST)
			rc = sim_listen(s->drv, cr->sp->port, VIRTIO_VSOCK_TYPE_STREAM, 1, &cr->gl);
		else
			rc = (cr->lfd = hp_listen_port(s->uds, cr->sp->port, 4,
						       cr->sp->kind == K_GUEST_SEQ)) < 0;
		if (rc)
			scen_fail(s, "listen %u", cr->sp->port);
	}
	mid = fx_count_fds();

	/* A host client before the device starts (the lobby holds it), one after. */
	for (i = 0; i < N_CONN; i++) {
		struct conn_run *cr = &s->cr[i];

		if (cr->sp->kind != K_HOST || !cr->sp->prestart)
			continue;
		cr->fd = hp_connect_raw(s->uds);
		snprintf(buf, sizeof(buf), "CONNECT %u\n", cr->sp->port);
		k = (int)strlen(buf);
		memcpy(buf + k, cr->h2g, PREFIX_LEN);
		host_send_connect(s, cr, buf, (size_t)k + PREFIX_LEN);
	}
	rc = sim_drv_attach(s->drv, s->dev);
	if (rc)
		scen_fail(s, "sim_drv_attach: %d", rc);
	for (i = 0; i < N_CONN && !rc; i++) {
		struct conn_run *cr = &s->cr[i];

		if (cr->sp->kind == K_HOST) {
			if (!cr->sp->prestart) {
				cr->fd = hp_connect_raw(s->uds);
				snprintf(buf, sizeof(buf), "CONNECT %u\n", cr->sp->port);
				host_send_connect(s, cr, buf, strlen(buf));
			}
			if (cr->fd >= 0 && !cr->refused)
				host_finish_connect(s, cr);
			continue;
		}
		k = sim_connect(s->drv, cr->sp->port,
				cr->sp->kind == K_GUEST_SEQ ? VIRTIO_VSOCK_TYPE_SEQPACKET :
							      VIRTIO_VSOCK_TYPE_STREAM,
				T_OP, &cr->c);
		if (k == -ECONNRESET) {
			cr->refused = true;
		} else if (k) {
			snprintf(cr->why, sizeof(cr->why), "guest connect: %d", k);
		} else {
			cr->fd = hp_accept(cr->lfd, T_OP);
			if (cr->fd < 0)
				snprintf(cr->why, sizeof(cr->why),
					 "guest connected, host accepted nothing: %d", cr->fd);
		}
	}

	/* Data both ways on every established connection, then EOF both ways. */
	for (i = 0; i < N_CONN; i++) {
		struct conn_run *cr = &s->cr[i];

		if (!cr->c || cr->fd < 0 || cr->refused || cr->why[0])
			continue;
		cr->eagain0 = fault_real_eagain();
		for (k = 0; k < J_NUM; k++) {
			cr->j[k].cr = cr;
			cr->j[k].kind = (enum job_kind)k;
			if (pthread_create(&cr->j[k].t, NULL, job_main, &cr->j[k]))
				abort();
		}
		if (pthread_create(&cr->closer, NULL, conn_main, cr))
			abort();
	}
	for (i = 0; i < N_CONN; i++) {
		struct conn_run *cr = &s->cr[i];

		if (cr->j[0].cr)
			pthread_join(cr->closer, NULL);
		else
			conn_close(cr);
		if (cr->why[0])
			scen_fail(s, "conn %u: %s", cr->sp->port, cr->why);
		if (cr->refused || cr->reset) {
			affected++;
			snprintf(s->affected + strlen(s->affected),
				 sizeof(s->affected) - strlen(s->affected), " %u (%s)",
				 cr->sp->port, cr->refused ? "refused" : "reset");
		}
	}

	/* The device let go of everything: counters, then fds. */
	end = hp_now_ms() + T_OP;
	do {
		vsock_dev_get_counters(s->dev, &ctr);
		if (ctr.conns_opened == ctr.conns_closed)
			break;
		usleep(1000);
	} while (hp_now_ms() < end);
	if (ctr.conns_opened != ctr.conns_closed)
		scen_fail(s, "conns_opened %llu, conns_closed %llu",
			  (unsigned long long)ctr.conns_opened,
			  (unsigned long long)ctr.conns_closed);
	k = fx_wait_fds(mid, T_OP);
	if (k != mid)
		scen_fail(s, "%d fds open with every connection closed, %d before", k, mid);

	for (i = 0; i < N_CONN; i++) {
		struct conn_run *cr = &s->cr[i];

		if (cr->gl)
			sim_unlisten(cr->gl);
		if (cr->lfd >= 0)
			close(cr->lfd);
		free(cr->g2h);
		free(cr->h2g);
	}
	vsock_dev_destroy(s->dev);
	sim_drv_get_stats(s->drv, &st);
	sim_drv_last_error(s->drv, buf, sizeof(buf));
	sim_drv_destroy(s->drv);
	if (st.proto_errors || st.credit_violations)
		scen_fail(s, "driver: %llu protocol errors, %llu credit violations, last: %s",
			  (unsigned long long)st.proto_errors,
			  (unsigned long long)st.credit_violations, buf);
	k = fx_count_fds();
	if (k != base)
		scen_fail(s, "%d fds open after destroy, %d before create", k, base);
	return s->err[0] ? -1 : affected;
}

/* ---- the cases ---- */

struct fcase {
	struct fault_site site;
	enum fault_err err;
	uint64_t nth; /* which call of the site fails (from 1) */
};

static struct fcase cases[MAX_CASES];
static unsigned int n_cases, n_sites;
static unsigned int fn_seen; /* bits of enum fault_fn the reference run called */
static char ref_err[512];
static int ref_status = -1;

/* Calls every run of the scenario must make (those it cannot miss). */
static const enum fault_fn must_see[] = {
	FAULT_EPOLL_CTL, FAULT_EPOLL_WAIT, FAULT_POLL, FAULT_SOCKET,  FAULT_CONNECT, FAULT_ACCEPT4,
	FAULT_READ,	 FAULT_READV,	   FAULT_RECV, FAULT_SENDMSG, FAULT_MALLOC,  FAULT_CALLOC,
};

/* The reference run, in a child: its sites come back through a pipe. */
static void reference(void)
{
	static struct fault_site sites[FAULT_MAX_SITES];
	struct scen *s = calloc(1, sizeof(*s));
	unsigned int i, e;
	int p[2], status;
	ssize_t r;
	pid_t pid;

	if (!s || pipe(p))
		abort();
	pid = fork();
	if (!pid) {
		int rc;

		close(p[0]);
		fault_reset();
		rc = scen_run(s);
		n_sites = fault_sites(sites, FAULT_MAX_SITES);
		if (rc > 0)
			snprintf(ref_err, sizeof(ref_err),
				 "%d connections reset, no fault injected", rc);
		else if (rc)
			memcpy(ref_err, s->err, sizeof(ref_err));
		if (write(p[1], ref_err, sizeof(ref_err)) != sizeof(ref_err) ||
		    write(p[1], &n_sites, sizeof(n_sites)) != sizeof(n_sites) ||
		    write(p[1], sites, n_sites * sizeof(sites[0])) !=
			    (ssize_t)(n_sites * sizeof(sites[0])))
			_exit(2);
		_exit(rc ? 1 : 0);
	}
	close(p[1]);
	r = read(p[0], ref_err, sizeof(ref_err));
	if (r == sizeof(ref_err) && read(p[0], &n_sites, sizeof(n_sites)) == sizeof(n_sites)) {
		size_t want = n_sites * sizeof(sites[0]), got = 0;

		while (got < want && (r = read(p[0], (char *)sites + got, want - got)) > 0)
			got += (size_t)r;
		if (got != want)
			n_sites = 0;
	} else {
		snprintf(ref_err, sizeof(ref_err), "reference run died (see its output)");
	}
	close(p[0]);
	waitpid(pid, &status, 0);
	ref_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/*
	 * Every class at each site's first call; and one class (in turn) at
	 * the middle call of a site called more than 4 times, mid-transfer.
	 */
	for (i = 0; i < n_sites; i++) {
		unsigned int k = 0, pick = i % (unsigned int)__builtin_popcount(sites[i].errs);

		fn_seen |= 1u << sites[i].fn;
		for (e = 0; e < FE_NUM && n_cases + 1 < MAX_CASES; e++) {
			if (!(sites[i].errs & (1u << e)))
				continue;
			cases[n_cases++] = (struct fcase){ sites[i], (enum fault_err)e, 1 };
			if (k++ == pick && sites[i].hits > 4)
				cases[n_cases++] = (struct fcase){ sites[i], (enum fault_err)e,
								   (sites[i].hits + 1) / 2 };
		}
	}
	free(s);
}

START_TEST(t_reference)
{
	unsigned int i;

	ck_assert_msg(ref_status == 0, "reference run (no fault): exit %d: %s", ref_status,
		      ref_err);
	for (i = 0; i < sizeof(must_see) / sizeof(must_see[0]); i++)
		ck_assert_msg(fn_seen & (1u << must_see[i]),
			      "the reference run never called %s: the matrix misses it",
			      fault_fn_name(must_see[i]));
	fprintf(stderr, "fault matrix: %u sites, %u cases\n", n_sites, n_cases);
	for (i = 0; getenv("FAULT_LIST") && i < n_cases; i++) {
		char desc[400];

		fault_describe(&cases[i].site, desc, sizeof(desc));
		fprintf(stderr, "case %u: %s, %s, call %llu\n", i, desc,
			fault_err_name(cases[i].err), (unsigned long long)cases[i].nth);
	}
}
END_TEST

START_TEST(t_fault)
{
	const struct fcase *fc = &cases[_i];
	struct fault_site where;
	struct scen *s = calloc(1, sizeof(*s));
	char desc[400];
	int rc;

	ck_assert_ptr_nonnull(s);
	fault_describe(&fc->site, desc, sizeof(desc));
	snprintf(desc + strlen(desc), sizeof(desc) - strlen(desc), ", %s, call %llu",
		 fault_err_name(fc->err), (unsigned long long)fc->nth);
	if (getenv("FAULT_ONLY") && !strstr(desc, getenv("FAULT_ONLY"))) {
		free(s);
		return; /* FAULT_ONLY=<part of a case's description>: run only those */
	}
	fault_reset();
	fault_arm_site(&fc->site, fault_errno(fc->err), fc->nth);
	rc = scen_run(s);
	fprintf(stderr, "case %d: %s: %s, %d connection(s) affected%s%s%s\n", _i, desc,
		fault_fired(&where) ? "fired" : "not reached", rc < 0 ? 0 : rc, s->affected,
		s->err[0] ? ": " : "", s->err);
	ck_assert_msg(rc >= 0, "case %d (%s): %s", _i, desc, s->err);
	ck_assert_msg(rc <= 1, "case %d (%s): one failed call affected %d connections:%s", _i, desc,
		      rc, s->affected);
	ck_assert_msg(rc == 0 || fc->err != FE_EINTR,
		      "case %d (%s): a connection was reset, not the call retried", _i, desc);
	free(s);
}
END_TEST

/* ---- finding 1: EPOLL_CTL_ADD of a new connection fails ---- */

static void fx_fault_setup(struct fx *fx, struct fx_opts *o)
{
	o->spawn = fault_spawn;
	o->rx_threads = o->rx_threads ? o->rx_threads : 2;
	fault_reset();
	fx_setup(fx, o);
}

/* One connection each way moving checked data: the device still works. */
static void still_works(struct fx *fx, uint32_t port)
{
	struct sim_listener *l;
	struct sim_conn *c;
	int fd, lfd;

	fd = fx_guest_connect(fx, port, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	fx_xfer_g2h(fd, c, 100000, 1);
	fx_xfer_h2g(fd, c, 100000, 2);
	ck_assert_int_eq(sim_close(c, FX_T), 0);
	close(fd);
	close(lfd);
	ck_assert_int_eq(sim_listen(fx->drv, port + 1, VIRTIO_VSOCK_TYPE_STREAM, 1, &l), 0);
	fd = fx_host_connect(fx, l, port + 1, &c, NULL);
	fx_xfer_h2g(fd, c, 100000, 3);
	ck_assert_int_eq(sim_close(c, FX_T), 0);
	close(fd);
	sim_unlisten(l);
}

static void wait_closed(struct fx *fx)
{
	struct vsock_dev_counters ctr;

	FX_WAIT(fx, conns_closed, 1, FX_T);
	fx_counters(fx, &ctr);
	ck_assert_uint_eq(ctr.conns_opened, ctr.conns_closed);
}

/*
 * A guest REQUEST to @port whose new connection's EPOLL_CTL_ADD fails with
 * @err (no host client pending: the next socket ADD is that one): the
 * device connected to the host listener. Return: that listener's fd; the
 * result of sim_connect() (@timeout_ms) in *@rc.
 */
static int request_unwatched(struct fx *fx, uint32_t port, int err, int timeout_ms, int *rc)
{
	struct sim_conn *c;
	int lfd = hp_listen_port(fx->uds, port, 4, 0);

	ck_assert_int_ge(lfd, 0);
	fault_arm_call(FAULT_EPOLL_CTL, err, 0);
	*rc = sim_connect(fx->drv, port, VIRTIO_VSOCK_TYPE_STREAM, timeout_ms, &c);
	return lfd;
}

/* Guest REQUEST: the new connection's EPOLL_CTL_ADD fails: RST, nothing else. */
START_TEST(t_pump_watch_guest)
{
	struct fx_opts o = { 0 };
	struct fx fx;
	int lfd, fd, rc;

	fx_fault_setup(&fx, &o);
	lfd = request_unwatched(&fx, 7200, _i ? ENOMEM : ENOSPC, FX_T, &rc);
	ck_assert_int_eq(rc, -ECONNRESET);
	ck_assert(fault_fired(NULL));
	fd = hp_accept(lfd, FX_T);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(hp_wait_eof(fd, FX_T), 0); /* the device let go of its end */
	close(fd);
	close(lfd);
	wait_closed(&fx);
	still_works(&fx, 7300);
	fx_teardown(&fx);
}
END_TEST

/* Host CONNECT: the same failure closes the client without OK. */
START_TEST(t_pump_watch_host)
{
	struct fx_opts o = { 0 };
	struct sim_listener *l;
	struct fx fx;
	uint32_t hp;

	fx_fault_setup(&fx, &o);
	ck_assert_int_eq(sim_listen(fx.drv, 7201, VIRTIO_VSOCK_TYPE_STREAM, 1, &l), 0);
	/* The first socket ADD is the client's (pending CONNECT), the second the connection's. */
	fault_arm_call(FAULT_EPOLL_CTL, _i ? ENOMEM : ENOSPC, 1);
	ck_assert_int_eq(hp_connect(fx.uds, 7201, &hp, FX_T), -ECONNREFUSED);
	ck_assert(fault_fired(NULL));
	wait_closed(&fx);
	sim_unlisten(l);
	still_works(&fx, 7310);
	fx_teardown(&fx);
}
END_TEST

/*
 * The same failure while the guest has no RX buffers: the connection waits
 * on its pump for one (for its RST) when the driver resets the device, so
 * the reset drops it (forget_conn()).
 */
START_TEST(t_pump_watch_reset)
{
	struct fx_opts o = { .drv = { .no_rx_refill = true, .rx_start_empty = true } };
	struct fx fx;
	int lfd, fd, rc;

	fx_fault_setup(&fx, &o);
	lfd = request_unwatched(&fx, 7202, ENOSPC, 200, &rc);
	ck_assert_int_eq(rc, -ETIMEDOUT); /* no RX buffer for the RST */
	/* Refused, not yet closed: the RST (and the fd) wait for an RX buffer. */
	FX_WAIT(&fx, conns_refused, 1, FX_T);
	ck_assert(fault_fired(NULL));
	fd = hp_accept(lfd, FX_T);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(sim_drv_reset(fx.drv), 0);
	ck_assert_int_eq(hp_wait_eof(fd, FX_T), 0);
	FX_WAIT(&fx, conns_closed, 1, FX_T); /* the reset released it, exactly once */
	fx_wait_quiet(&fx);
	close(fd);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

/*
 * Found by t_fault (a stall, now and then): a CREDIT_UPDATE the control
 * thread puts on the RX queue at once was overtaken by a packet of the same
 * connection that the pump had filled earlier (older fwd_cnt) and not yet
 * published. The guest takes the fwd_cnt of the last packet it sees, so its
 * credit went back for good. Here the pump is held (fault_pause_call())
 * after filling a packet of A, while it reads B, until the update is out.
 */
START_TEST(t_credit_order)
{
	/* The control thread and the pump must be two threads here. */
	struct fx_opts o = { .rx_threads = 1,
			     .ctl_thread = VSOCK_CTL_OWN,
			     .conn_buf_size = 64 * 1024 };
	struct sim_conn *a, *b;
	struct sim_conn_info ci;
	char buf[1000], got[4];
	int ha, hb, la, lb;
	ssize_t n, r;
	int64_t end;
	struct fx fx;

	fx_fault_setup(&fx, &o);
	ha = fx_guest_connect(&fx, 7400, VIRTIO_VSOCK_TYPE_STREAM, &a, &la);
	hb = fx_guest_connect(&fx, 7401, VIRTIO_VSOCK_TYPE_STREAM, &b, &lb);
	/* The pump stops at its next epoll_wait(), with everything published. */
	fault_pause_call(FAULT_EPOLL_WAIT, VSOCK_THREAD_RX_PUMP, 0);
	ck_assert_int_eq(hp_write_all(ha, "x", 1, FX_T), 1);
	ck_assert_int_eq(fault_wait_paused(1, FX_T), 0);
	/* A, then B readable: the pump fills a packet of A, then stops reading B. */
	ck_assert_int_eq(hp_write_all(ha, "y", 1, FX_T), 1);
	ck_assert_int_eq(hp_write_all(hb, "z", 1, FX_T), 1);
	fault_pause_call(FAULT_READV, VSOCK_THREAD_RX_PUMP, 1);
	fault_release();
	ck_assert_int_eq(fault_wait_paused(2, FX_T), 0);
	/* The host takes the guest's bytes on A: a CREDIT_UPDATE is due (buf_alloc < 128 KiB). */
	memset(buf, 'g', sizeof(buf));
	ck_assert_int_eq(sim_send(a, buf, sizeof(buf), FX_T), (ssize_t)sizeof(buf));
	ck_assert_int_eq(hp_read_full(ha, buf, sizeof(buf), FX_T), (ssize_t)sizeof(buf));
	ck_assert_int_eq(sim_wait_tx_idle(fx.drv, FX_T), 0);
	fault_release();
	/* The packets the pump held ("y", "z") come; then the last word on fwd_cnt. */
	for (n = 0; n < 2; n += r) {
		r = sim_recv(a, got + n, 2 - n, FX_T);
		ck_assert_int_gt(r, 0);
	}
	ck_assert_int_eq(sim_recv(b, got + 2, 1, FX_T), 1);
	ck_assert(!memcmp(got, "xyz", 3));
	/* It must be what the host took. */
	end = hp_now_ms() + 2000;
	for (;;) {
		sim_conn_info(a, &ci);
		if (ci.peer_fwd_cnt == sizeof(buf) || hp_now_ms() > end)
			break;
		usleep(1000);
	}
	ck_assert_msg(ci.peer_fwd_cnt == sizeof(buf),
		      "the guest's fwd_cnt is %u, the host took %zu: an older packet overtook the "
		      "CREDIT_UPDATE",
		      ci.peer_fwd_cnt, sizeof(buf));
	ck_assert_int_eq(sim_close(a, FX_T), 0);
	ck_assert_int_eq(sim_close(b, FX_T), 0);
	close(ha);
	close(hb);
	close(la);
	close(lb);
	fx_teardown(&fx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("device_fault");
	TCase *tc;

	fault_init();
	reference();
	FX_ADD(s, t_reference, 60);
	FX_ADD_LOOP(s, t_pump_watch_guest, 2, 60);
	FX_ADD_LOOP(s, t_pump_watch_host, 2, 60);
	FX_ADD(s, t_pump_watch_reset, 60);
	FX_ADD(s, t_credit_order, 60);
	tc = tcase_create("t_fault");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, t_fault, 0, (int)n_cases);
	suite_add_tcase(s, tc);
	return fx_run_suite(s);
}
