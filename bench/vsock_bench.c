// SPDX-License-Identifier: MIT
/*
 * vsock_bench: throughput of the virtio-vsock device model, simulated guest
 * driver <-> device <-> host Unix socket, against a plain AF_UNIX
 * socketpair moving the same payloads in the same run (writer thread +
 * reader thread, each call one payload).
 *
 *   one stream, guest->host and host->guest, payloads 256 B, 4 KiB, 64 KiB,
 *   with and without MRG_RXBUF; then 8 host->guest streams with 1, 2 and 4
 *   RX pump threads (64 KiB payloads, MRG_RXBUF).
 *
 * The guest costs as little as possible so the device is what is measured:
 * it sends from its TX buffers without copying (sim_send(NULL)) and
 * consumes RX payload in place (a sink), with 256-entry queues,
 * 256 KiB buf_alloc per connection and Linux 6.1's RX buffers (4 KiB +
 * header; page-sized with MRG_RXBUF). The host side reads and writes one
 * payload per call, as the socketpair baseline does.
 *
 * Usage: vsock_bench [--quick] [--json FILE] [--conn-buf BYTES]
 *   --quick   short single runs (a smoke test; figures are not meaningful)
 * Each figure is the median of 3 runs of 0.6 s (after 0.15 s of warm-up),
 * each with a fresh device and driver, alternated with the socketpair runs
 * of the same case so that both see the same machine load.
 *   --json    write every figure to FILE
 *   --conn-buf  the device's per-connection buffer (buf_alloc it advertises);
 *             default: the device's own default
 * Columns: direction, streams, RX pump threads (0: the device default), payload
 * bytes per call, MRG_RXBUF; device GB/s and M messages/s; the socketpair's;
 * the ratio device / socketpair.
 * Exit status 0 when every case ran; throughput is reported, never judged.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_peer.h"
#include "sim_driver.h"

#define PORT 5201
#define MAX_STREAMS 8

enum dir { G2H, H2G };

struct stream {
	enum dir dir;
	size_t payload;
	int fd; /* host side (device case) or the reading/writing end (socketpair) */
	int fd2; /* socketpair: the other end */
	struct sim_conn *c;
	uint64_t bytes; /* at the receiving end; atomic */
	pthread_t t[2];
	int nthreads;
};

struct run {
	unsigned int nstreams;
	struct stream s[MAX_STREAMS];
	volatile int stop;
};

struct result {
	const char *dir;
	unsigned int streams, rx_threads;
	size_t payload;
	int mrg;
	double gbps, msgs, sp_gbps, sp_msgs, ratio;
	int ok;
};

static double g_duration = 0.6, g_warmup = 0.15;
static uint32_t g_conn_buf; /* --conn-buf: device buf_alloc per connection, 0: default */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void add_bytes(struct stream *s, uint64_t n)
{
	__atomic_fetch_add(&s->bytes, n, __ATOMIC_RELAXED);
}

static uint64_t total_bytes(struct run *r)
{
	uint64_t t = 0;
	unsigned int i;

	for (i = 0; i < r->nstreams; i++)
		t += __atomic_load_n(&r->s[i].bytes, __ATOMIC_RELAXED);
	return t;
}

struct targ {
	struct run *r;
	struct stream *s;
};

/* Host (or socketpair) reader: one payload per recv(). */
static void *reader(void *arg)
{
	struct targ *a = arg;
	uint8_t *buf = malloc(a->s->payload);

	while (buf && !a->r->stop) {
		ssize_t n = recv(a->s->fd, buf, a->s->payload, 0);

		if (n <= 0)
			break;
		add_bytes(a->s, (uint64_t)n);
	}
	free(buf);
	return NULL;
}

/* Host (or socketpair) writer: one payload per send(). */
static void *writer(void *arg)
{
	struct targ *a = arg;
	uint8_t *buf = calloc(1, a->s->payload);
	int fd = a->s->fd2 >= 0 ? a->s->fd2 : a->s->fd;

	while (buf && !a->r->stop) {
		ssize_t n = send(fd, buf, a->s->payload, MSG_NOSIGNAL);

		if (n <= 0)
			break;
	}
	free(buf);
	return NULL;
}

/* Guest sender: one payload per sim_send(), from the TX buffers (no copy). */
static void *guest_sender(void *arg)
{
	struct targ *a = arg;

	while (!a->r->stop)
		if (sim_send(a->s->c, NULL, a->s->payload, 2000) < 0)
			break;
	return NULL;
}

static void sink(void *opaque, const struct iovec *iov, int iovcnt, size_t len, uint32_t flags)
{
	add_bytes(opaque, len);
}

static int g_reps = 3;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Warm up, then measure bytes over g_duration. Return: bytes/s. */
static double measure(struct run *r)
{
	uint64_t b0, b1;
	double t0, t1;

	usleep((useconds_t)(g_warmup * 1e6));
	b0 = total_bytes(r);
	t0 = now_s();
	usleep((useconds_t)(g_duration * 1e6));
	b1 = total_bytes(r);
	t1 = now_s();
	return (double)(b1 - b0) / (t1 - t0);
}

static struct targ g_args[MAX_STREAMS][2];

static void start(struct run *r, unsigned int i, void *(*fn)(void *))
{
	struct stream *s = &r->s[i];

	g_args[i][s->nthreads] = (struct targ){ r, s };
	if (pthread_create(&s->t[s->nthreads], NULL, fn, &g_args[i][s->nthreads]) == 0)
		s->nthreads++;
}

static void join_all(struct run *r)
{
	unsigned int i;
	int k;

	for (i = 0; i < r->nstreams; i++)
		for (k = 0; k < r->s[i].nthreads; k++)
			pthread_join(r->s[i].t[k], NULL);
}

/* Plain AF_UNIX socketpairs moving @payload one way. Return: bytes/s or -1. */
static double run_socketpair_once(unsigned int nstreams, size_t payload)
{
	struct run r;
	unsigned int i;
	double bps;
	int sv[2];

	memset(&r, 0, sizeof(r));
	r.nstreams = nstreams;
	for (i = 0; i < nstreams; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return -1;
		r.s[i].payload = payload;
		r.s[i].fd = sv[0];
		r.s[i].fd2 = sv[1];
		start(&r, i, reader);
		start(&r, i, writer);
	}
	bps = measure(&r);
	r.stop = 1;
	for (i = 0; i < nstreams; i++) {
		shutdown(r.s[i].fd, SHUT_RDWR);
		shutdown(r.s[i].fd2, SHUT_RDWR);
	}
	join_all(&r);
	for (i = 0; i < nstreams; i++) {
		close(r.s[i].fd);
		close(r.s[i].fd2);
	}
	return bps;
}

/* Device path. Return: bytes/s, or -1 on a set-up failure. */
static double run_device_once(enum dir dir, unsigned int nstreams, size_t payload, int mrg,
			      unsigned int rx_threads)
{
	struct sim_drv_config dc = { 0 };
	struct vsock_dev_config vc = { 0 };
	struct vsock_dev *dev = NULL;
	struct sim_drv *drv = NULL;
	char uds[108];
	struct run r;
	double bps = -1;
	unsigned int i;
	const char *what = NULL;
	int lfd = -1, rc;

	memset(&r, 0, sizeof(r));
	hp_tmp_path(uds, sizeof(uds), "bench");
	rc = sim_drv_create(&dc, &drv);
	if (rc) {
		what = "sim_drv_create";
		goto out;
	}
	vc.guest_cid = sim_drv_guest_cid(drv);
	vc.uds_path = uds;
	vc.rx_threads = rx_threads;
	vc.mrg_rxbuf = mrg;
	vc.conn_buf_size = g_conn_buf;
	rc = vsock_dev_create(&vc, &dev);
	if (rc) {
		what = "vsock_dev_create";
		goto out;
	}
	rc = sim_drv_attach(drv, dev);
	if (rc) {
		what = "sim_drv_attach";
		goto out;
	}
	lfd = hp_listen_port(uds, PORT, MAX_STREAMS, 0);
	if (lfd < 0) {
		rc = lfd;
		what = "listen";
		goto out;
	}
	r.nstreams = nstreams;
	for (i = 0; i < nstreams; i++) {
		struct stream *s = &r.s[i];

		s->dir = dir;
		s->payload = payload;
		s->fd2 = -1;
		rc = sim_connect(drv, PORT, VIRTIO_VSOCK_TYPE_STREAM, 5000, &s->c);
		if (rc) {
			what = "sim_connect";
			goto stop;
		}
		s->fd = hp_accept(lfd, 5000);
		if (s->fd < 0) {
			rc = s->fd;
			what = "accept";
			goto stop;
		}
	}
	for (i = 0; i < nstreams; i++) {
		if (dir == G2H) {
			start(&r, i, reader);
			start(&r, i, guest_sender);
		} else {
			sim_conn_set_sink(r.s[i].c, sink, &r.s[i]);
			start(&r, i, writer);
		}
	}
	bps = measure(&r);
stop:
	r.stop = 1;
	for (i = 0; i < nstreams; i++)
		if (r.s[i].fd > 0)
			shutdown(r.s[i].fd, SHUT_RDWR);
	join_all(&r);
	for (i = 0; i < nstreams; i++) {
		if (r.s[i].c)
			sim_abort(r.s[i].c);
		if (r.s[i].fd > 0)
			close(r.s[i].fd);
	}
out:
	if (what)
		fprintf(stderr, "vsock_bench: %s: %s\n", what, strerror(-rc));
	if (lfd >= 0)
		close(lfd);
	vsock_dev_destroy(dev);
	sim_drv_destroy(drv);
	return bps;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/*
 * One case: g_reps rounds of (socketpair run, device run), alternated so
 * that both see the same machine load; the figures are the medians.
 */
static void run_case(struct result *x, enum dir dir, unsigned int nstreams, size_t payload, int mrg,
		     unsigned int rx_threads)
{
	double sp[5], dv[5];
	int i;

	*x = (struct result){ .dir = dir == H2G ? "h2g" : "g2h",
			      .streams = nstreams,
			      .rx_threads = rx_threads,
			      .payload = payload,
			      .mrg = mrg,
			      .ok = 1 };
	for (i = 0; i < g_reps; i++) {
		sp[i] = run_socketpair_once(nstreams, payload);
		dv[i] = run_device_once(dir, nstreams, payload, mrg, rx_threads);
		if (sp[i] < 0 || dv[i] < 0) {
			fprintf(stderr,
				"vsock_bench: %s %zu B: socketpair %.0f B/s, device %.0f B/s\n",
				x->dir, payload, sp[i], dv[i]);
			x->ok = 0;
		}
	}
	if (!x->ok)
		return;
	x->sp_gbps = median(sp, g_reps) / 1e9;
	x->gbps = median(dv, g_reps) / 1e9;
	x->sp_msgs = x->sp_gbps * 1e9 / (double)payload;
	x->msgs = x->gbps * 1e9 / (double)payload;
	x->ratio = x->sp_gbps > 0 ? x->gbps / x->sp_gbps : 0;
}

static void print_row(const struct result *x)
{
	printf("%-4s %2u %2u %7zu %-3s | %7.3f %8.3f | %7.3f %8.3f | %5.2fx%s\n", x->dir,
	       x->streams, x->rx_threads, x->payload, x->mrg ? "yes" : "no", x->gbps, x->msgs / 1e6,
	       x->sp_gbps, x->sp_msgs / 1e6, x->ratio, x->ok ? "" : "  FAILED");
	fflush(stdout);
}

static int write_json(const char *path, const struct result *res, unsigned int n, int quick)
{
	FILE *f = fopen(path, "w");
	unsigned int i;

	if (!f)
		return -errno;
	fprintf(f, "{\n  \"bench\": \"vsock_bench\",\n  \"quick\": %s,\n",
		quick ? "true" : "false");
	fprintf(f, "  \"duration_s\": %.3f,\n  \"repetitions\": %d,\n", g_duration, g_reps);
	fprintf(f, "  \"conn_buf_size\": %u,\n  \"results\": [\n", g_conn_buf);
	for (i = 0; i < n; i++) {
		const struct result *x = &res[i];

		fprintf(f,
			"    {\"dir\": \"%s\", \"streams\": %u, \"rx_threads\": %u, "
			"\"payload\": %zu, \"mrg_rxbuf\": %s, \"gbps\": %.6f, \"msgs_per_s\": %.1f, "
			"\"socketpair_gbps\": %.6f, \"socketpair_msgs_per_s\": %.1f, "
			"\"ratio\": %.4f, \"ok\": %s}%s\n",
			x->dir, x->streams, x->rx_threads, x->payload, x->mrg ? "true" : "false",
			x->gbps, x->msgs, x->sp_gbps, x->sp_msgs, x->ratio,
			x->ok ? "true" : "false", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	return fclose(f) ? -errno : 0;
}

int main(int argc, char **argv)
{
	static const size_t payloads[] = { 256, 4096, 65536 };
	static const unsigned int threads[] = { 1, 2, 4 };
	struct result res[32];
	const char *json = NULL;
	unsigned int n = 0, i, d, m;
	int quick = 0, failed = 0;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (!strcmp(argv[i], "--json") && i + 1 < (unsigned int)argc) {
			json = argv[++i];
		} else if (!strcmp(argv[i], "--conn-buf") && i + 1 < (unsigned int)argc) {
			g_conn_buf = (uint32_t)strtoul(argv[++i], NULL, 0);
		} else {
			fprintf(stderr, "usage: %s [--quick] [--json FILE] [--conn-buf BYTES]\n",
				argv[0]);
			return 2;
		}
	}
	if (quick) {
		g_duration = 0.1;
		g_warmup = 0.03;
		g_reps = 1;
	}
	printf("dir  st th payload mrg |    GB/s   Mmsg/s | sp GB/s sp Mmsg/s | ratio\n");
	for (d = 0; d < 2; d++)
		for (i = 0; i < 3; i++)
			for (m = 0; m < 2; m++) {
				run_case(&res[n], d ? H2G : G2H, 1, payloads[i], (int)m, 0);
				failed |= !res[n].ok;
				print_row(&res[n++]);
			}
	for (i = 0; i < 3; i++) {
		run_case(&res[n], H2G, 8, 65536, 1, threads[i]);
		failed |= !res[n].ok;
		print_row(&res[n++]);
	}
	if (json) {
		int rc = write_json(json, res, n, quick);

		if (rc) {
			fprintf(stderr, "vsock_bench: %s: %s\n", json, strerror(-rc));
			return 1;
		}
	}
	return failed ? 1 : 0;
}
