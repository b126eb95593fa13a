// SPDX-License-Identifier: MIT
/* Device-test fixture: see fixture.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

unsigned int fx_ctl_thread(void)
{
	const char *v = getenv("SKIFF_TEST_CTL");

	if (!v || !*v || !strcmp(v, "auto"))
		return VSOCK_CTL_AUTO;
	if (!strcmp(v, "own"))
		return VSOCK_CTL_OWN;
	if (!strcmp(v, "pump0"))
		return VSOCK_CTL_ON_PUMP0;
	ck_abort_msg("SKIFF_TEST_CTL=%s: want own, pump0 or auto", v);
	return VSOCK_CTL_AUTO;
}

void fx_setup(struct fx *fx, const struct fx_opts *o)
{
	struct fx_opts none;
	int rc;

	if (!o) {
		memset(&none, 0, sizeof(none));
		o = &none;
	}
	memset(fx, 0, sizeof(*fx));
	if (o->uds_path)
		snprintf(fx->uds, sizeof(fx->uds), "%s", o->uds_path);
	else
		hp_tmp_path(fx->uds, sizeof(fx->uds), "dev");
	rc = sim_drv_create(&o->drv, &fx->drv);
	ck_assert_int_eq(rc, 0);
	fx->dcfg = (struct vsock_dev_config){
		.guest_cid = sim_drv_guest_cid(fx->drv),
		.uds_path = fx->uds,
		.rx_threads = o->rx_threads,
		.ctl_thread = o->ctl_thread ? o->ctl_thread : fx_ctl_thread(),
		.mrg_rxbuf = o->mrg,
		.dgram = o->dgram,
		.max_conns = o->max_conns,
		.max_host_fds = o->max_host_fds,
		.conn_buf_size = o->conn_buf_size,
		.rx_pkt_max = o->rx_pkt_max,
		.host_wait_ms = o->host_wait_ms,
		.group = o->group,
		.spawn = o->spawn,
		.spawn_opaque = o->spawn_opaque,
	};
	if (o->drv.notify_cb) {
		fx->dcfg.notify = sim_drv_notify;
		fx->dcfg.notify_opaque = fx->drv;
	}
	rc = vsock_dev_create(&fx->dcfg, &fx->dev);
	ck_assert_msg(rc == 0, "vsock_dev_create: %d (%s)", rc, strerror(-rc));
	if (!o->no_attach) {
		rc = sim_drv_attach(fx->drv, fx->dev);
		ck_assert_msg(rc == 0, "sim_drv_attach: %d (%s)", rc, strerror(-rc));
	}
}

void fx_teardown(struct fx *fx)
{
	struct sim_drv_stats st;
	char err[256];

	vsock_dev_destroy(fx->dev);
	fx->dev = NULL;
	sim_drv_get_stats(fx->drv, &st);
	sim_drv_last_error(fx->drv, err, sizeof(err));
	sim_drv_destroy(fx->drv);
	fx->drv = NULL;
	ck_assert_msg(st.credit_violations == 0, "device exceeded our credit %llu times: %s",
		      (unsigned long long)st.credit_violations, err);
	if (!fx->expect_proto_errors)
		ck_assert_msg(st.proto_errors == 0, "driver saw %llu protocol errors, last: %s",
			      (unsigned long long)st.proto_errors, err);
}

void fx_counters(struct fx *fx, struct vsock_dev_counters *c)
{
	vsock_dev_get_counters(fx->dev, c);
}

uint64_t fx_wait_counter(struct fx *fx, size_t off, uint64_t min, int timeout_ms)
{
	int64_t end = hp_now_ms() + timeout_ms;
	struct vsock_dev_counters c;
	uint64_t v;

	for (;;) {
		vsock_dev_get_counters(fx->dev, &c);
		memcpy(&v, (const char *)&c + off, sizeof(v));
		if (v >= min || hp_now_ms() > end)
			break;
		usleep(1000);
	}
	ck_assert_msg(v >= min, "counter at offset %zu: %llu, wanted >= %llu", off,
		      (unsigned long long)v, (unsigned long long)min);
	return v;
}

int fx_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

int fx_wait_fds(int want, int timeout_ms)
{
	int64_t end = hp_now_ms() + timeout_ms;
	int n;

	while ((n = fx_count_fds()) != want && hp_now_ms() < end)
		usleep(1000);
	return n;
}

void fx_wait_quiet(struct fx *fx)
{
	int64_t end = hp_now_ms() + FX_T;
	struct vsock_dev_counters k;

	for (;;) {
		vsock_dev_get_counters(fx->dev, &k);
		if ((!k.conns_open && !k.host_fds) || hp_now_ms() > end)
			break;
		usleep(1000);
	}
	ck_assert_msg(!k.conns_open && !k.host_fds, "still %llu connections open, %llu host fds",
		      (unsigned long long)k.conns_open, (unsigned long long)k.host_fds);
}

int fx_guest_connect(struct fx *fx, uint32_t port, uint16_t type, struct sim_conn **c, int *lfd)
{
	int rc, fd;

	*lfd = hp_listen_port(fx->uds, port, 16, type == VIRTIO_VSOCK_TYPE_SEQPACKET);
	ck_assert_int_ge(*lfd, 0);
	rc = sim_connect(fx->drv, port, type, FX_T, c);
	ck_assert_msg(rc == 0, "sim_connect(%u): %d", port, rc);
	fd = hp_accept(*lfd, FX_T);
	ck_assert_int_ge(fd, 0);
	return fd;
}

int fx_host_connect(struct fx *fx, struct sim_listener *l, uint32_t port, struct sim_conn **c,
		    uint32_t *host_port)
{
	struct sim_conn_info ci;
	uint32_t hport = 0;
	int fd, rc;

	fd = hp_connect(fx->uds, port, &hport, FX_T);
	ck_assert_msg(fd >= 0, "hp_connect(%u): %d", port, fd);
	rc = sim_accept(l, FX_T, c);
	ck_assert_int_eq(rc, 0);
	sim_conn_info(*c, &ci);
	ck_assert_uint_eq(ci.peer_port, hport);
	ck_assert_uint_eq(ci.local_port, port);
	ck_assert_msg(hport >= (1u << 30) && hport < (1u << 31), "OK %u: not in [2^30, 2^31)",
		      hport);
	if (host_port)
		*host_port = hport;
	return fd;
}

void fx_close_both(int fd, struct sim_conn *c, bool host_first)
{
	if (host_first) {
		close(fd);
		ck_assert_int_eq(sim_wait_peer_shutdown(c, 3, FX_T), 0);
		sim_close(c, FX_T);
		return;
	}
	ck_assert_int_eq(sim_close(c, FX_T), 0);
	ck_assert_int_eq(hp_wait_eof(fd, FX_T), 0);
	close(fd);
}

struct writer {
	int fd;
	size_t len;
	uint64_t seed;
	ssize_t rc;
};

static void *host_writer(void *arg)
{
	struct writer *w = arg;
	uint8_t *buf = malloc(65536);
	uint64_t st = w->seed;
	size_t done = 0;

	w->rc = 0;
	while (buf && done < w->len) {
		size_t n = w->len - done < 65536 ? w->len - done : 65536;
		ssize_t r;

		hp_fill(&st, buf, n);
		r = hp_write_all(w->fd, buf, n, FX_T);
		if (r < 0) {
			w->rc = r;
			break;
		}
		done += n;
	}
	free(buf);
	return NULL;
}

uint64_t fx_pattern_hash(size_t len, uint64_t seed)
{
	uint8_t *buf = malloc(65536);
	uint64_t st = seed, h = HP_HASH_INIT;

	ck_assert_ptr_nonnull(buf);
	while (len) {
		size_t n = len < 65536 ? len : 65536;

		hp_fill(&st, buf, n);
		h = hp_hash(h, buf, n);
		len -= n;
	}
	free(buf);
	return h;
}

void fx_xfer_h2g(int fd, struct sim_conn *c, size_t len, uint64_t seed)
{
	struct writer w = { .fd = fd, .len = len, .seed = seed };
	uint8_t *buf = malloc(65536);
	uint64_t h = HP_HASH_INIT;
	size_t got = 0;
	pthread_t t;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pthread_create(&t, NULL, host_writer, &w), 0);
	while (got < len) {
		ssize_t r = sim_recv(c, buf, 65536, FX_T);

		if (r <= 0) {
			char err[256];
			struct sim_drv_stats st;

			sim_drv_last_error(sim_conn_drv(c), err, sizeof(err));
			sim_drv_get_stats(sim_conn_drv(c), &st);
			ck_abort_msg(
				"sim_recv after %zu of %zu bytes: %zd (credit violations %llu, "
				"driver: %s)",
				got, len, r, (unsigned long long)st.credit_violations, err);
		}
		h = hp_hash(h, buf, (size_t)r);
		got += (size_t)r;
	}
	pthread_join(t, NULL);
	free(buf);
	ck_assert_int_eq(w.rc, 0);
	ck_assert_uint_eq(got, len);
	ck_assert_msg(h == fx_pattern_hash(len, seed), "host->guest hash differs (%zu bytes)", len);
}

struct gsender {
	struct sim_conn *c;
	size_t len;
	uint64_t seed;
	ssize_t rc;
};

static void *guest_sender(void *arg)
{
	struct gsender *g = arg;
	uint8_t *buf = malloc(65536);
	uint64_t st = g->seed;
	size_t done = 0;

	g->rc = 0;
	while (buf && done < g->len) {
		size_t n = g->len - done < 65536 ? g->len - done : 65536;
		ssize_t r;

		hp_fill(&st, buf, n);
		r = sim_send(g->c, buf, n, FX_T);
		if (r < 0) {
			g->rc = r;
			break;
		}
		done += n;
	}
	free(buf);
	return NULL;
}

void fx_xfer_g2h(int fd, struct sim_conn *c, size_t len, uint64_t seed)
{
	struct gsender g = { .c = c, .len = len, .seed = seed };
	uint8_t *buf = malloc(65536);
	uint64_t h = HP_HASH_INIT;
	size_t got = 0;
	pthread_t t;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pthread_create(&t, NULL, guest_sender, &g), 0);
	while (got < len) {
		size_t want = len - got < 65536 ? len - got : 65536;
		ssize_t r = hp_read_full(fd, buf, want, FX_T);

		ck_assert_msg(r > 0, "host read after %zu of %zu bytes: %zd", got, len, r);
		h = hp_hash(h, buf, (size_t)r);
		got += (size_t)r;
	}
	pthread_join(t, NULL);
	free(buf);
	ck_assert_msg(g.rc == 0, "sim_send: %zd", g.rc);
	ck_assert_msg(h == fx_pattern_hash(len, seed), "guest->host hash differs (%zu bytes)", len);
}

/* ---- connection pairs moving data both ways ---- */

/* Note the state of @j's connection on both sides in j->diag. */
static void job_diag(struct fx_job *j)
{
	struct sim_drv *drv = sim_conn_drv(j->c);
	struct sim_conn_info ci;
	struct sim_drv_stats st;
	char dev[384], err[128];

	sim_conn_info(j->c, &ci);
	sim_drv_get_stats(drv, &st);
	sim_drv_last_error(drv, err, sizeof(err));
	vsock_dev_conn_dump(j->dev, ci.peer_port, ci.local_port, dev, sizeof(dev));
	snprintf(j->diag, sizeof(j->diag),
		 "guest %u:%u: peer_buf_alloc %u peer_fwd_cnt %u tx_cnt %u credit %u, rx_cnt %u "
		 "fwd_cnt %u queued %u, credit updates in %llu, shut %#x%s; driver: stale fwd_cnt "
		 "%llu, protocol errors %llu (%s) | device: %s",
		 ci.local_port, ci.peer_port, ci.peer_buf_alloc, ci.peer_fwd_cnt, ci.tx_cnt,
		 ci.peer_buf_alloc - (ci.tx_cnt - ci.peer_fwd_cnt), ci.rx_cnt, ci.fwd_cnt,
		 ci.rx_queued, (unsigned long long)ci.credit_updates_rx, ci.peer_shutdown,
		 ci.reset ? " reset" : "", (unsigned long long)st.stale_fwd_cnt,
		 (unsigned long long)st.proto_errors, err, dev);
}

static void *job_run(void *arg)
{
	struct fx_job *j = arg;
	uint8_t *buf = malloc(65536);
	uint64_t st = j->seed;
	size_t done = 0;

	j->hash = HP_HASH_INIT;
	j->rc = 0;
	while (done < j->len) {
		size_t n = j->len - done < 65536 ? j->len - done : 65536;
		ssize_t r;

		switch (j->kind) {
		case FX_HOST_WRITE:
			hp_fill(&st, buf, n);
			r = hp_write_all(j->fd, buf, n, FX_T);
			break;
		case FX_GUEST_SEND:
			hp_fill(&st, buf, n);
			r = sim_send(j->c, buf, n, FX_T);
			break;
		case FX_HOST_READ:
			r = hp_read_full(j->fd, buf, n, FX_T);
			if (r == 0)
				r = -EPIPE;
			break;
		default:
			r = sim_recv(j->c, buf, n, FX_T);
			if (r == 0)
				r = -EPIPE;
			break;
		}
		if (r < 0) {
			j->rc = r;
			job_diag(j);
			break;
		}
		if (j->kind == FX_HOST_READ || j->kind == FX_GUEST_RECV)
			j->hash = hp_hash(j->hash, buf, (size_t)r);
		done += (size_t)r;
	}
	if (!j->rc)
		j->rc = (ssize_t)done;
	free(buf);
	return NULL;
}

void fx_pair_start(struct fx *fx, struct fx_pair *p, size_t g2h, size_t h2g, uint64_t seed)
{
	const enum fx_job_kind kinds[4] = { FX_GUEST_SEND, FX_HOST_READ, FX_HOST_WRITE,
					    FX_GUEST_RECV };
	int i;

	for (i = 0; i < 4; i++) {
		struct fx_job *j = &p->j[i];

		j->kind = kinds[i];
		j->fd = p->fd;
		j->c = p->c;
		j->len = i < 2 ? g2h : h2g;
		j->seed = i < 2 ? seed : seed + 1;
		j->dev = fx->dev;
		j->diag[0] = '\0';
		ck_assert_int_eq(pthread_create(&j->t, NULL, job_run, j), 0);
	}
}

void fx_pair_check(struct fx_pair *p, int idx)
{
	int i;

	for (i = 0; i < 4; i++)
		pthread_join(p->j[i].t, NULL);
	for (i = 0; i < 4; i++)
		ck_assert_msg(p->j[i].rc == (ssize_t)p->j[i].len, "conn %d job %d: %zd of %zu; %s",
			      idx, i, p->j[i].rc, p->j[i].len, p->j[i].diag);
	ck_assert_msg(p->j[1].hash == fx_pattern_hash(p->j[1].len, p->j[1].seed),
		      "conn %d: guest->host hash differs", idx);
	ck_assert_msg(p->j[3].hash == fx_pattern_hash(p->j[3].len, p->j[3].seed),
		      "conn %d: host->guest hash differs", idx);
}

void fx_add(Suite *s, const TTest *t, int start, int end, int timeout_s)
{
	TCase *tc = tcase_create(t->name);

	tcase_set_timeout(tc, timeout_s);
	tcase_add_loop_test(tc, t, start, end);
	suite_add_tcase(s, tc);
}

int fx_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY=verbose lists every test */
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
