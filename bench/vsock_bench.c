// SPDX-License-Identifier: MIT
/*
 * vsock_bench: throughput of the virtio-vsock device model, simulated guest
 * driver <-> device <-> host Unix socket, against a plain AF_UNIX
 * socketpair moving the same payloads in the same run (writer thread +
 * reader thread, each call one payload).
 *
 *   one stream, guest->host and host->guest, payloads 256 B, 4 KiB, 64 KiB,
 *   with and without MRG_RXBUF; then 8 host->guest streams with 1, 2 and 4
 *   RX pump threads (64 KiB payloads, MRG_RXBUF); then datagrams
 *   (VIRTIO_VSOCK_F_DGRAM, rows "g2hD" / "h2gD"), one sender each way, the
 *   same payloads, MRG_RXBUF, against an AF_UNIX SOCK_DGRAM socketpair.
 *
 * Datagrams: guest to host, the simulated guest sends DGRAM packets from its
 * TX buffers (sim_dgram_send(NULL): no copy) to host port PORT, the device
 * sendmsg()s them to "<uds>_dgram_<PORT>" (copy 1), a host reader recv()s
 * (copy 2). Host to guest, a host writer bound at "<uds>_dgram_<PORT>" and
 * connected to the device's "<uds>_dgram_g<GPORT>" send()s (copy 1), the
 * device recvfrom()s into its buffer (copy 2) and writes the datagram into
 * the guest's RX buffers (copy 3), and a guest thread takes each from the
 * simulated driver's queue, which copies it out (copy 4, as a guest's
 * recv() would). Throughput counts what the receiving end got: datagrams
 * the device or the driver dropped (no RX buffer, host socket full, the
 * driver's queue full) are not counted, and --verbose shows the drops.
 *
 * Fairness: both sides move every byte with two copies. Socketpair: the
 * writer's send() copies into the kernel, the reader's recv() copies out.
 * Device, guest to host: the simulated guest sends from its TX buffers
 * without copying (sim_send(NULL): only the 44-byte header is written), the
 * device sendmsg()s from guest memory (copy 1), the host reader recv()s
 * (copy 2). Host to guest: the host writer send()s (copy 1), the device
 * readv()s into the guest's RX buffers (copy 2), and the guest consumes the
 * payload in place (a sink that only counts; RX buffers are reposted as
 * they are, never cleared or checked in the timed loop). Queues of 256
 * entries, 256 KiB buf_alloc per connection, Linux 6.1's RX buffers (4 KiB
 * + header; page-sized with MRG_RXBUF). The host side reads and writes one
 * payload per call, as the socketpair baseline does. The device side needs
 * more threads than the baseline (guest sender, device control thread,
 * RX pump, the simulated driver's interrupt thread, host reader/writer): on
 * a machine with few cores that is part of what is measured.
 *
 * Method: each case runs --reps rounds; a round is one socketpair run and
 * one device run back to back (the order alternates between rounds), each
 * with fresh sockets, device and driver, --warmup s then --duration s
 * measured. The ratio of a round is device / socketpair of that round, so
 * a load change slower than a round cancels out; the reported ratio is the
 * median of the rounds' ratios, with their min and max. GB/s figures are
 * the medians of each side's runs. CPU columns: CPU time of the whole
 * process (all threads, user + system) per payload byte during the window,
 * which swings less than wall-clock throughput on a loaded machine.
 *
 * Usage: vsock_bench [options]
 *   --quick          short single rounds (a smoke test; figures meaningless)
 *   --json FILE      write every figure to FILE
 *   --conn-buf B     the device's per-connection buffer (buf_alloc it
 *                    advertises; 4 KiB .. 64 MiB); default:
 *                    the device's own (256 KiB)
 *   --guest-buf B    the simulated guest's socket buffer (its buf_alloc, as
 *                    SO_VM_SOCKETS_BUFFER_SIZE sets it; 4 KiB .. 64 MiB;
 *                    default 256 KiB, Linux's): it also caps the guest's
 *                    send window, min(device's buf_alloc, its own)
 *   --ctl auto|own|pump0
 *                    where the device's control work runs (struct
 *                    vsock_dev_config.ctl_thread; default auto: on RX
 *                    pump 0's thread on machines of at most 2 CPUs)
 *   --reps N         rounds per case (default 5, at most 15)
 *   --duration S     measured seconds per run (default 0.5)
 *   --warmup S       seconds before measuring (default 0.15)
 *   --dir g2h|h2g, --payload B, --mrg 0|1, --streams N, --threads N
 *                    run only the matching cases
 *   --case DIR:STREAMS:PAYLOAD:MRG[:THREADS]
 *                    run exactly this one case instead of the matrix, any
 *                    combination (e.g. g2h:8:256:0); THREADS defaults to 0
 *                    (the device's default); bench/lib_ab.sh uses it
 *   --device-only    skip the socketpair runs (for profilers: callgrind)
 *   --no-dgram       leave out the datagram rows
 *   --verbose        per run: device counters and context switches per MiB
 * Columns: direction, streams, RX pump threads (0: the device default),
 * payload bytes per call, MRG_RXBUF; device GB/s and M messages/s; the
 * socketpair's; the median ratio device / socketpair [min, max]; CPU ns
 * per KiB, device and socketpair.
 * Exit status 0 when every case ran; throughput is reported, never judged.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "host_peer.h"
#include "sim_driver.h"

#define PORT 5201
#define MAX_STREAMS 8
#define MAX_REPS 15

#define GPORT 7001 /* the guest's datagram port */

enum dir { G2H, H2G };

struct stream {
	enum dir dir;
	size_t payload;
	int fd; /* host side (device case) or the reading/writing end (socketpair) */
	int fd2; /* socketpair: the other end */
	struct sim_conn *c;
	struct sim_drv *drv; /* datagram runs */
	uint64_t bytes; /* at the receiving end; atomic */
	pthread_t t[2];
	int nthreads;
};

struct run {
	unsigned int nstreams;
	struct stream s[MAX_STREAMS];
	volatile int stop;
};

/* What one measured window saw. */
struct sample {
	double bps; /* payload bytes per second; < 0: the run failed */
	double cpu_ns_per_kib; /* process CPU time per KiB moved */
	double csw_per_mib; /* context switches (voluntary + not) per MiB */
	uint64_t bytes;
	struct vsock_dev_counters dc; /* device runs: counter deltas */
};

struct result {
	const char *dir;
	unsigned int streams, rx_threads;
	size_t payload;
	int mrg, dgram;
	double gbps, msgs, sp_gbps, sp_msgs, ratio, ratio_min, ratio_max;
	double cpu, sp_cpu; /* CPU ns per KiB, medians */
	int ok;
};

static double g_duration = 0.5, g_warmup = 0.15;
static uint32_t g_conn_buf; /* --conn-buf: device buf_alloc per connection, 0: default */
static uint32_t g_guest_buf; /* --guest-buf: the simulated guest's buf_alloc, 0: 256 KiB */
static unsigned int g_ctl; /* --ctl: enum vsock_ctl_thread, 0: auto */
static const char *const ctl_names[] = { "auto", "own", "pump0" };

/* --ctl NAME: 0, or -1 (said why) for a name not in ctl_names. */
static int parse_ctl(const char *v)
{
	unsigned int i;

	for (i = 0; i < sizeof(ctl_names) / sizeof(ctl_names[0]); i++)
		if (!strcmp(v, ctl_names[i])) {
			g_ctl = i;
			return 0;
		}
	fprintf(stderr, "vsock_bench: --ctl %s: want auto, own or pump0\n", v);
	return -1;
}

/*
 * The --ctl choice into @vc. lib_ab.sh builds this file against older
 * trees too, whose config has no ctl_thread: there only "auto" runs.
 */
static void set_ctl_thread(struct vsock_dev_config *vc)
{
#ifdef VSOCK_HAVE_CTL_THREAD
	vc->ctl_thread = g_ctl;
#else
	if (g_ctl) {
		fprintf(stderr, "vsock_bench: --ctl: this device has no ctl_thread setting\n");
		exit(2);
	}
#endif
}
static int g_reps = 5;
static int g_device_only, g_verbose;
static int g_lifo = 1; /* --cold-bufs clears it */

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

/*
 * Host (or socketpair) reader: one payload per recv(). A receive timeout
 * (the datagram runs' sockets) just tries again.
 */
static void *reader(void *arg)
{
	struct targ *a = arg;
	uint8_t *buf = malloc(a->s->payload);

	pthread_setname_np(pthread_self(), "host-read");
	while (buf && !a->r->stop) {
		ssize_t n = recv(a->s->fd, buf, a->s->payload, 0);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			break;
		add_bytes(a->s, (uint64_t)n);
	}
	free(buf);
	return NULL;
}

/* Host (or socketpair) writer: one payload per send(); a send timeout tries again. */
static void *writer(void *arg)
{
	struct targ *a = arg;
	uint8_t *buf = calloc(1, a->s->payload);
	int fd = a->s->fd2 >= 0 ? a->s->fd2 : a->s->fd;

	pthread_setname_np(pthread_self(), "host-write");
	while (buf && !a->r->stop) {
		ssize_t n = send(fd, buf, a->s->payload, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
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

	pthread_setname_np(pthread_self(), "guest-send");
	while (!a->r->stop)
		if (sim_send(a->s->c, NULL, a->s->payload, 2000) < 0)
			break;
	return NULL;
}

/* Guest datagram sender: one payload per DGRAM packet, from the TX buffers (no copy). */
static void *guest_dgram_sender(void *arg)
{
	struct targ *a = arg;

	pthread_setname_np(pthread_self(), "guest-dsend");
	while (!a->r->stop)
		if (sim_dgram_send(a->s->drv, 2, GPORT, PORT, NULL, (uint32_t)a->s->payload, 2000) <
		    0)
			break;
	return NULL;
}

/* Guest datagram receiver: takes each datagram the driver queued. */
static void *guest_dgram_receiver(void *arg)
{
	struct targ *a = arg;
	struct sim_pkt pkt;

	pthread_setname_np(pthread_self(), "guest-drecv");
	while (!a->r->stop) {
		if (sim_dgram_recv(a->s->drv, &pkt, 50))
			continue;
		add_bytes(a->s, pkt.hdr.len);
		sim_pkt_free(&pkt);
	}
	return NULL;
}

static void sink(void *opaque, const struct iovec *iov, int iovcnt, size_t len, uint32_t flags)
{
	(void)iov;
	(void)iovcnt;
	(void)flags;
	add_bytes(opaque, len);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static long csw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static void ctr_delta(struct vsock_dev_counters *d, const struct vsock_dev_counters *a,
		      const struct vsock_dev_counters *b)
{
	d->tx_pkts = b->tx_pkts - a->tx_pkts;
	d->tx_bytes = b->tx_bytes - a->tx_bytes;
	d->rx_pkts = b->rx_pkts - a->rx_pkts;
	d->rx_bytes = b->rx_bytes - a->rx_bytes;
	d->kicks = b->kicks - a->kicks;
	d->irqs_sent = b->irqs_sent - a->irqs_sent;
	d->irqs_suppressed = b->irqs_suppressed - a->irqs_suppressed;
	d->dgram_tx_pkts = b->dgram_tx_pkts - a->dgram_tx_pkts;
	d->dgram_tx_drop_full = b->dgram_tx_drop_full - a->dgram_tx_drop_full;
	d->dgram_rx_pkts = b->dgram_rx_pkts - a->dgram_rx_pkts;
	d->dgram_rx_drop_no_buf = b->dgram_rx_drop_no_buf - a->dgram_rx_drop_no_buf;
}

/* Warm up, then measure over g_duration. @dev: device counters, or NULL. */
static void measure(struct run *r, struct vsock_dev *dev, struct sample *out)
{
	struct vsock_dev_counters c0, c1;
	double t0, t1, u0, u1;
	uint64_t b0, b1;
	long w0, w1;

	usleep((useconds_t)(g_warmup * 1e6));
	if (dev)
		vsock_dev_get_counters(dev, &c0);
	b0 = total_bytes(r);
	u0 = cpu_s();
	w0 = csw();
	t0 = now_s();
	usleep((useconds_t)(g_duration * 1e6));
	b1 = total_bytes(r);
	t1 = now_s();
	u1 = cpu_s();
	w1 = csw();
	if (dev) {
		vsock_dev_get_counters(dev, &c1);
		ctr_delta(&out->dc, &c0, &c1);
	}
	out->bytes = b1 - b0;
	out->bps = (double)(b1 - b0) / (t1 - t0);
	out->cpu_ns_per_kib = b1 > b0 ? (u1 - u0) * 1e9 * 1024.0 / (double)(b1 - b0) : 0;
	out->csw_per_mib = b1 > b0 ? (double)(w1 - w0) * 1048576.0 / (double)(b1 - b0) : 0;
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

/*
 * Plain AF_UNIX socketpairs (SOCK_DGRAM with @dgram, else SOCK_STREAM) moving
 * @payload one way. out->bps < 0 on failure.
 */
static void run_socketpair_once(unsigned int nstreams, size_t payload, int dgram,
				struct sample *out)
{
	struct run r;
	unsigned int i;
	int sv[2];

	memset(&r, 0, sizeof(r));
	memset(out, 0, sizeof(*out));
	out->bps = -1;
	for (i = 0; i < nstreams; i++) {
		if (socketpair(AF_UNIX, (dgram ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0, sv) <
		    0)
			goto stop;
		r.nstreams++;
		r.s[i].payload = payload;
		r.s[i].fd = sv[0];
		r.s[i].fd2 = sv[1];
	}
	for (i = 0; i < nstreams; i++) {
		start(&r, i, reader);
		start(&r, i, writer);
	}
	measure(&r, NULL, out);
stop:
	r.stop = 1;
	for (i = 0; i < r.nstreams; i++) {
		shutdown(r.s[i].fd, SHUT_RDWR);
		shutdown(r.s[i].fd2, SHUT_RDWR);
	}
	join_all(&r);
	for (i = 0; i < r.nstreams; i++) {
		close(r.s[i].fd);
		close(r.s[i].fd2);
	}
}

/* Device path. out->bps < 0 on a set-up failure. */
static void run_device_once(enum dir dir, unsigned int nstreams, size_t payload, int mrg,
			    unsigned int rx_threads, struct sample *out)
{
	struct sim_drv_config dc = { 0 };
	struct vsock_dev_config vc = { 0 };
	struct vsock_dev *dev = NULL;
	struct sim_drv *drv = NULL;
	char uds[108];
	struct run r;
	unsigned int i;
	const char *what = NULL;
	int lfd = -1, rc;

	memset(&r, 0, sizeof(r));
	memset(out, 0, sizeof(*out));
	out->bps = -1;
	hp_tmp_path(uds, sizeof(uds), "bench");
	dc.lifo_descs = g_lifo;
	dc.buf_alloc = g_guest_buf;
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
	set_ctl_thread(&vc);
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
	for (i = 0; i < nstreams; i++) {
		struct stream *s = &r.s[i];

		s->dir = dir;
		s->payload = payload;
		s->fd = s->fd2 = -1;
		r.nstreams++;
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
	measure(&r, dev, out);
stop:
	r.stop = 1;
	for (i = 0; i < r.nstreams; i++)
		if (r.s[i].fd >= 0)
			shutdown(r.s[i].fd, SHUT_RDWR);
	join_all(&r);
	for (i = 0; i < r.nstreams; i++) {
		if (r.s[i].c)
			sim_abort(r.s[i].c);
		if (r.s[i].fd >= 0)
			close(r.s[i].fd);
	}
	if (g_verbose) {
		struct vsock_dev_counters t;

		/* Totals since create, warm-up included: for instruction counts per byte. */
		vsock_dev_get_counters(dev, &t);
		printf("  # device totals: tx %llu pkts %llu bytes, rx %llu pkts %llu bytes, "
		       "%llu kicks, %llu irqs\n",
		       (unsigned long long)t.tx_pkts, (unsigned long long)t.tx_bytes,
		       (unsigned long long)t.rx_pkts, (unsigned long long)t.rx_bytes,
		       (unsigned long long)t.kicks, (unsigned long long)t.irqs_sent);
	}
out:
	if (what) {
		fprintf(stderr, "vsock_bench: %s: %s\n", what, strerror(-rc));
		out->bps = -1;
	}
	if (lfd >= 0)
		close(lfd);
	vsock_dev_destroy(dev);
	sim_drv_destroy(drv);
}

/* The guest's first datagram on @fd (100 ms receive timeout), waited for up to 5 s. */
static int recv_hi(int fd, char *buf, size_t cap)
{
	double end = now_s() + 5;

	while (now_s() < end) {
		ssize_t n = recv(fd, buf, cap, 0);

		if (n == 2)
			return 0;
		if (n >= 0 || (errno != EAGAIN && errno != EINTR))
			return -EIO;
	}
	return -ETIMEDOUT;
}

/* "<uds>_dgram_<kind><port>" into @sa; its length. */
static socklen_t dgram_addr(struct sockaddr_un *sa, const char *uds, const char *kind,
			    unsigned int port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* hp_tmp_path() names are short: the path always fits. */
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%.80s_dgram_%.1s%u", uds, kind, port);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sa->sun_path) + 1);
}

/*
 * Device path, datagrams (file header): one sender, MRG_RXBUF, the device
 * default RX pumps. out->bps < 0 on a set-up failure.
 */
static void run_device_dgram_once(enum dir dir, size_t payload, struct sample *out)
{
	struct timeval tmo = { .tv_sec = 0, .tv_usec = 100000 };
	struct sim_drv_config dc = { 0 };
	struct vsock_dev_config vc = { 0 };
	struct vsock_dev *dev = NULL;
	struct sim_drv *drv = NULL;
	struct sockaddr_un sa;
	struct stream *s;
	struct run r;
	const char *what = NULL;
	char uds[108], hi[8];
	socklen_t len;
	int rc;

	memset(&r, 0, sizeof(r));
	memset(out, 0, sizeof(*out));
	out->bps = -1;
	s = &r.s[0];
	s->dir = dir;
	s->payload = payload;
	s->fd = s->fd2 = -1;
	hp_tmp_path(uds, sizeof(uds), "bench");
	dc.lifo_descs = g_lifo;
	dc.buf_alloc = g_guest_buf;
	rc = sim_drv_create(&dc, &drv);
	if (rc) {
		what = "sim_drv_create";
		goto out;
	}
	s->drv = drv;
	vc.guest_cid = sim_drv_guest_cid(drv);
	vc.uds_path = uds;
	vc.mrg_rxbuf = 1;
	vc.dgram = 1;
	set_ctl_thread(&vc);
	rc = vsock_dev_create(&vc, &dev);
	if (!rc)
		rc = sim_drv_attach(drv, dev);
	if (rc) {
		what = "device set-up";
		goto out;
	}
	s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	len = dgram_addr(&sa, uds, "", PORT);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&sa, len) ||
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) ||
	    setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo))) {
		rc = -errno;
		what = "host socket";
		goto out;
	}
	r.nstreams = 1;
	if (dir == H2G) {
		/* The guest port's socket exists once the guest sent from it. */
		rc = sim_dgram_send(drv, 2, GPORT, PORT, "hi", 2, 5000);
		if (!rc)
			rc = recv_hi(s->fd, hi, sizeof(hi));
		len = dgram_addr(&sa, uds, "g", GPORT);
		if (!rc && connect(s->fd, (struct sockaddr *)&sa, len))
			rc = -errno;
		if (rc) {
			what = "guest port socket";
			goto stop;
		}
		start(&r, 0, guest_dgram_receiver);
		start(&r, 0, writer);
	} else {
		start(&r, 0, reader);
		start(&r, 0, guest_dgram_sender);
	}
	measure(&r, dev, out);
stop:
	r.stop = 1;
	join_all(&r);
	if (g_verbose) {
		struct vsock_dev_counters t;

		vsock_dev_get_counters(dev, &t);
		printf("  # device totals: dgram tx %llu (host socket full %llu), rx %llu "
		       "(no RX buffer %llu)\n",
		       (unsigned long long)t.dgram_tx_pkts,
		       (unsigned long long)t.dgram_tx_drop_full,
		       (unsigned long long)t.dgram_rx_pkts,
		       (unsigned long long)t.dgram_rx_drop_no_buf);
	}
out:
	if (what) {
		fprintf(stderr, "vsock_bench: %s: %s\n", what, strerror(-rc));
		out->bps = -1;
	}
	if (s->fd >= 0)
		close(s->fd);
	dgram_addr(&sa, uds, "", PORT);
	unlink(sa.sun_path);
	vsock_dev_destroy(dev);
	sim_drv_destroy(drv);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_sample(const char *what, int rep, const struct sample *s)
{
	double mib = (double)s->bytes / 1048576.0;

	printf("  # %-10s round %d: %7.3f GB/s, %6.0f CPU ns/KiB, %7.1f csw/MiB", what, rep,
	       s->bps / 1e9, s->cpu_ns_per_kib, s->csw_per_mib);
	if (mib > 0 && (s->dc.tx_pkts || s->dc.rx_pkts))
		printf(", per MiB: tx %.1f rx %.1f pkts, %.1f kicks, %.1f irqs (%.1f suppressed)",
		       (double)s->dc.tx_pkts / mib, (double)s->dc.rx_pkts / mib,
		       (double)s->dc.kicks / mib, (double)s->dc.irqs_sent / mib,
		       (double)s->dc.irqs_suppressed / mib);
	printf("\n");
}

/*
 * One case: g_reps rounds of one socketpair run and one device run, back to
 * back, alternating which goes first; the ratio is taken within each round.
 */
static void run_case(struct result *x, enum dir dir, unsigned int nstreams, size_t payload, int mrg,
		     unsigned int rx_threads, int dgram)
{
	double sp[MAX_REPS], dv[MAX_REPS], rt[MAX_REPS], spc[MAX_REPS], dvc[MAX_REPS];
	struct sample a, b;
	int i;

	*x = (struct result){ .dir = dir == H2G ? (dgram ? "h2gD" : "h2g") :
						  (dgram ? "g2hD" : "g2h"),
			      .dgram = dgram,
			      .streams = nstreams,
			      .rx_threads = rx_threads,
			      .payload = payload,
			      .mrg = mrg,
			      .ok = 1 };
	for (i = 0; i < g_reps; i++) {
		memset(&a, 0, sizeof(a));
		if (i % 2 == 0 && !g_device_only)
			run_socketpair_once(nstreams, payload, dgram, &a);
		if (dgram)
			run_device_dgram_once(dir, payload, &b);
		else
			run_device_once(dir, nstreams, payload, mrg, rx_threads, &b);
		if (i % 2 == 1 && !g_device_only)
			run_socketpair_once(nstreams, payload, dgram, &a);
		if (g_verbose) {
			if (!g_device_only)
				print_sample("socketpair", i, &a);
			print_sample("device", i, &b);
		}
		if ((!g_device_only && a.bps < 0) || b.bps < 0) {
			fprintf(stderr,
				"vsock_bench: %s %zu B: socketpair %.0f B/s, device %.0f B/s\n",
				x->dir, payload, a.bps, b.bps);
			x->ok = 0;
		}
		sp[i] = a.bps;
		dv[i] = b.bps;
		spc[i] = a.cpu_ns_per_kib;
		dvc[i] = b.cpu_ns_per_kib;
		rt[i] = a.bps > 0 ? b.bps / a.bps : 0;
	}
	if (!x->ok)
		return;
	x->sp_gbps = median(sp, g_reps) / 1e9;
	x->gbps = median(dv, g_reps) / 1e9;
	x->sp_msgs = x->sp_gbps * 1e9 / (double)payload;
	x->msgs = x->gbps * 1e9 / (double)payload;
	x->ratio = median(rt, g_reps); /* sorts rt */
	x->ratio_min = rt[0];
	x->ratio_max = rt[g_reps - 1];
	x->cpu = median(dvc, g_reps);
	x->sp_cpu = median(spc, g_reps);
}

static void print_row(const struct result *x)
{
	printf("%-4s %2u %2u %7zu %-3s | %6.3f %8.4f | %6.3f %8.4f | %5.2fx [%4.2f %4.2f] | %6.0f %6.0f%s\n",
	       x->dir, x->streams, x->rx_threads, x->payload, x->mrg ? "yes" : "no", x->gbps,
	       x->msgs / 1e6, x->sp_gbps, x->sp_msgs / 1e6, x->ratio, x->ratio_min, x->ratio_max,
	       x->cpu, x->sp_cpu, x->ok ? "" : "  FAILED");
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
	fprintf(f, "  \"duration_s\": %.3f,\n  \"warmup_s\": %.3f,\n  \"repetitions\": %d,\n",
		g_duration, g_warmup, g_reps);
	fprintf(f,
		"  \"ratio\": \"median over rounds of device/socketpair measured back to back\",\n");
	fprintf(f, "  \"conn_buf_size\": %u,\n  \"guest_buf\": %u,\n  \"ctl\": \"%s\",\n",
		g_conn_buf, g_guest_buf, ctl_names[g_ctl]);
	fprintf(f, "  \"results\": [\n");
	for (i = 0; i < n; i++) {
		const struct result *x = &res[i];

		fprintf(f,
			"    {\"dir\": \"%s\", \"streams\": %u, \"rx_threads\": %u, "
			"\"payload\": %zu, \"mrg_rxbuf\": %s, \"dgram\": %s, \"gbps\": %.6f, "
			"\"msgs_per_s\": %.1f, "
			"\"socketpair_gbps\": %.6f, \"socketpair_msgs_per_s\": %.1f, "
			"\"ratio\": %.4f, \"ratio_min\": %.4f, \"ratio_max\": %.4f, "
			"\"cpu_ns_per_kib\": %.1f, \"socketpair_cpu_ns_per_kib\": %.1f, \"ok\": %s}%s\n",
			x->dir, x->streams, x->rx_threads, x->payload, x->mrg ? "true" : "false",
			x->dgram ? "true" : "false", x->gbps, x->msgs, x->sp_gbps, x->sp_msgs,
			x->ratio, x->ratio_min, x->ratio_max, x->cpu, x->sp_cpu,
			x->ok ? "true" : "false", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	return fclose(f) ? -errno : 0;
}

/* One case to run alone (--case). */
struct one_case {
	enum dir dir;
	unsigned int streams, threads;
	size_t payload;
	int mrg;
};

/*
 * Parse --case "DIR:STREAMS:PAYLOAD:MRG[:THREADS]" (e.g. "h2g:8:4096:1").
 * Returns 0, or -EINVAL for a malformed string or a value out of range
 * (1..MAX_STREAMS streams, a payload of 1 byte to 1 MiB, MRG 0 or 1).
 */
static int parse_case(const char *v, struct one_case *c)
{
	char dir[4];
	unsigned int st, mrg, th = 0;
	unsigned long pl;
	int n = sscanf(v, "%3[gh2]:%u:%lu:%u:%u", dir, &st, &pl, &mrg, &th);

	if (n < 4)
		return -EINVAL;
	if (!strcmp(dir, "g2h"))
		c->dir = G2H;
	else if (!strcmp(dir, "h2g"))
		c->dir = H2G;
	else
		return -EINVAL;
	if (st < 1 || st > MAX_STREAMS || pl < 1 || pl > (1ul << 20) || mrg > 1)
		return -EINVAL;
	c->streams = st;
	c->payload = pl;
	c->mrg = (int)mrg;
	c->threads = th;
	return 0;
}

/*
 * A buffer size option, bytes, 4 KiB .. 64 MiB. Return: 0, or -EINVAL (said).
 * Parsed here, not with cli_common: bench/lib_ab.sh builds this file in old
 * trees whose bench/CMakeLists.txt links only the device and the driver.
 */
static int parse_buf(const char *argv0, const char *opt, const char *v, uint32_t *out)
{
	char *end;
	unsigned long long b;

	errno = 0;
	b = strtoull(v, &end, 0);
	if (errno || end == v || *end || *v == '-' || b < 4096 || b > 64u << 20) {
		fprintf(stderr, "%s: bad %s '%s': 4096 .. 67108864 bytes\n", argv0, opt, v);
		return -EINVAL;
	}
	*out = (uint32_t)b;
	return 0;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--quick] [--json FILE] [--conn-buf BYTES] [--guest-buf BYTES]\n"
		"       [--ctl auto|own|pump0] [--reps N]\n"
		"       [--duration S] [--warmup S] [--dir g2h|h2g] [--payload B] [--mrg 0|1]\n"
		"       [--streams N] [--threads N] [--case DIR:STREAMS:PAYLOAD:MRG[:THREADS]]\n"
		"       [--device-only] [--no-dgram] [--verbose]\n",
		argv0);
}

int main(int argc, char **argv)
{
	static const size_t payloads[] = { 256, 4096, 65536 };
	static const unsigned int threads[] = { 1, 2, 4 };
	long f_dir = -1, f_payload = -1, f_mrg = -1, f_streams = -1, f_threads = -1;
	struct result res[32];
	const char *json = NULL;
	struct one_case one = { 0 };
	unsigned int n = 0, i, d, m;
	int quick = 0, failed = 0, have_one = 0, f_stream_only = 0;

	for (i = 1; i < (unsigned int)argc; i++) {
		const char *a = argv[i], *v;

		if (!strcmp(a, "--quick")) {
			quick = 1;
			continue;
		}
		if (!strcmp(a, "--device-only")) {
			g_device_only = 1;
			continue;
		}
		if (!strcmp(a, "--verbose")) {
			g_verbose = 1;
			continue;
		}
		if (!strcmp(a, "--no-dgram")) {
			f_stream_only = 1;
			continue;
		}
		if (!strcmp(a, "--cold-bufs")) {
			g_lifo = 0;
			continue;
		}
		if (i + 1 >= (unsigned int)argc) {
			usage(argv[0]);
			return 2;
		}
		v = argv[++i];
		if (!strcmp(a, "--json")) {
			json = v;
		} else if (!strcmp(a, "--conn-buf")) {
			if (parse_buf(argv[0], a, v, &g_conn_buf))
				return 2;
		} else if (!strcmp(a, "--guest-buf")) {
			if (parse_buf(argv[0], a, v, &g_guest_buf))
				return 2;
		} else if (!strcmp(a, "--ctl")) {
			if (parse_ctl(v))
				return 2;
		} else if (!strcmp(a, "--reps")) {
			g_reps = atoi(v);
		} else if (!strcmp(a, "--duration")) {
			g_duration = atof(v);
		} else if (!strcmp(a, "--warmup")) {
			g_warmup = atof(v);
		} else if (!strcmp(a, "--dir")) {
			f_dir = !strcmp(v, "h2g") ? H2G : !strcmp(v, "g2h") ? G2H : -2;
		} else if (!strcmp(a, "--payload")) {
			f_payload = strtol(v, NULL, 0);
		} else if (!strcmp(a, "--mrg")) {
			f_mrg = strtol(v, NULL, 0);
		} else if (!strcmp(a, "--streams")) {
			f_streams = strtol(v, NULL, 0);
		} else if (!strcmp(a, "--threads")) {
			f_threads = strtol(v, NULL, 0);
		} else if (!strcmp(a, "--case")) {
			if (parse_case(v, &one)) {
				fprintf(stderr,
					"vsock_bench: --case %s: want DIR:STREAMS:PAYLOAD:MRG[:THREADS]\n",
					v);
				return 2;
			}
			have_one = 1;
		} else {
			usage(argv[0]);
			return 2;
		}
	}
	if (quick) {
		g_duration = 0.1;
		g_warmup = 0.03;
		g_reps = 1;
	}
	if (g_reps < 1 || g_reps > MAX_REPS || g_duration <= 0 || g_warmup < 0 || f_dir == -2) {
		usage(argv[0]);
		return 2;
	}
	printf("dir  st th payload mrg |   GB/s   Mmsg/s | spGB/s sp Mmsg/s | ratio [min  max ] | "
	       "CPU ns/KiB dev sp\n");
	if (have_one) {
		run_case(&res[n], one.dir, one.streams, one.payload, one.mrg, one.threads, 0);
		failed |= !res[n].ok;
		print_row(&res[n++]);
	}
	for (d = 0; d < 2 && !have_one; d++)
		for (i = 0; i < 3; i++)
			for (m = 0; m < 2; m++) {
				if ((f_dir >= 0 && f_dir != (long)d) ||
				    (f_payload >= 0 && f_payload != (long)payloads[i]) ||
				    (f_mrg >= 0 && f_mrg != (long)m) ||
				    (f_streams >= 0 && f_streams != 1) || f_threads >= 0)
					continue;
				run_case(&res[n], d ? H2G : G2H, 1, payloads[i], (int)m, 0, 0);
				failed |= !res[n].ok;
				print_row(&res[n++]);
			}
	for (i = 0; i < 3 && !have_one; i++) {
		if ((f_dir >= 0 && f_dir != H2G) || (f_payload >= 0 && f_payload != 65536) ||
		    (f_mrg >= 0 && f_mrg != 1) || (f_streams >= 0 && f_streams != 8) ||
		    (f_threads >= 0 && f_threads != (long)threads[i]))
			continue;
		run_case(&res[n], H2G, 8, 65536, 1, threads[i], 0);
		failed |= !res[n].ok;
		print_row(&res[n++]);
	}
	for (d = 0; d < 2 && !have_one; d++)
		for (i = 0; i < 3; i++) {
			if ((f_dir >= 0 && f_dir != (long)d) ||
			    (f_payload >= 0 && f_payload != (long)payloads[i]) ||
			    (f_mrg >= 0 && f_mrg != 1) || (f_streams >= 0 && f_streams != 1) ||
			    f_threads >= 0 || f_stream_only)
				continue;
			run_case(&res[n], d ? H2G : G2H, 1, payloads[i], 1, 0, 1);
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
