// SPDX-License-Identifier: MIT
/*
 * guest-bench: the guest side of the A/B guest benchmark (bench/guest/guest_ab.py).
 * A static program in the test guests' initramfs; one vsock stream connection to the
 * host (CID 2 by default), one measurement, one result line.
 *
 *   guest-bench send CID:PORT --size S [--seconds D] [--max-bytes B]
 *       write S-byte chunks until D seconds passed or B bytes went out, then close.
 *   guest-bench recv CID:PORT --size S [--read-size R] [--rcvlowat N] [--buf-size B]
 *       read (R bytes per call, default S) until EOF, then send one byte (the ack
 *       the host times the transfer by) and wait for the host to close.
 *   guest-bench pingpong CID:PORT --size S --count N [--rcvlowat N] [--buf-size B]
 *       N times: write S bytes, read S bytes back (the host echoes); per-round-trip
 *       times with CLOCK_MONOTONIC.
 * Other options: --conns N (send, recv: N connections at once, one thread each; bytes and
 * calls are summed, ns runs until the last one ended), --timeout S (default 60; the
 * process exits 3 after S seconds), --cpu C (run this process, all its threads, on guest
 * CPU C only: sched_setaffinity), --irq-cpu C (route the interrupt of the virtio device
 * bound to the vmw_vsock_virtio_transport driver to CPU C: /proc/irq/N/smp_affinity_list;
 * the RX worker then runs there too, since the driver queues it on a per-CPU workqueue
 * from the interrupt; also reports that CPU's /proc/stat ticks).
 * Sizes take K and M suffixes (binary).
 *
 * Output, one line (keys in this order, all integers):
 *   GUEST-BENCH status=ok|fail mode=M size=S bytes=N ns=T calls=C utime_us=U stime_us=V
 *     cpu_busy_ticks=K cpu_total_ticks=L clk_tck=H [irq=N irq_cpu_busy_ticks=
 *     irq_cpu_total_ticks=] [rtt_mean_ns= rtt_p50_ns= rtt_p99_ns=]
 *     [err=NAME where=WHAT]
 * bytes: payload bytes moved by this process (sent for send, received otherwise);
 * ns: wall time from connect() returning to the end of the transfer (EOF read, or last
 * write and close); calls: send or receive system calls made for the payload;
 * utime_us/stime_us: this process's CPU time (getrusage) over the same window;
 * cpu_busy_ticks/cpu_total_ticks: the whole guest's non-idle and total CPU time over the
 * window, from the first line of /proc/stat (units of 1/clk_tck s; 0 0 when /proc/stat
 * cannot be read). The guest-wide figure includes the kernel's RX work, which runs in
 * kworkers, not in this process. irq: the vsock device's interrupt number (--irq-cpu);
 * irq_cpu_*: the same figures for the line of CPU C only.
 * Exit status: 0 ok, 1 failure, 2 usage, 3 timeout.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#define MAX_CHUNK (4u << 20)
#define MAX_COUNT 10000000u

enum mode { MODE_SEND, MODE_RECV, MODE_PINGPONG };

struct opts {
	enum mode mode;
	unsigned int cid, port;
	size_t size, read_size;
	double seconds;
	uint64_t max_bytes;
	uint64_t count;
	unsigned int conns; /* connections, each with its own thread when > 1 */
	int rcvlowat; /* 0: leave the default */
	uint64_t buf_size; /* 0: leave the default */
	unsigned int timeout_s;
	int cpu; /* -1: any */
	int irq_cpu; /* -1: leave the vsock interrupt where it is */
};

/* What one run measured; filled by run_*(), printed by print_result(). */
struct result {
	uint64_t bytes, ns, calls;
	uint64_t rtt_mean_ns, rtt_p50_ns, rtt_p99_ns;
	bool have_rtt;
	int irq; /* --irq-cpu: the vsock device's interrupt */
	int err; /* positive errno of the failure, 0 if none */
	const char *where;
};

/* Process and guest CPU time at one instant. */
struct cpu_snap {
	struct timeval utime, stime;
	uint64_t busy, total; /* /proc/stat ticks; 0 when unreadable */
	uint64_t irq_busy, irq_total; /* the same for --irq-cpu's line */
};

static const char *const mode_names[] = { "send", "recv", "pingpong" };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The /proc/stat line of @which ("cpu" for the whole guest, "cpu1" for CPU 1):
 * user nice system idle iowait irq softirq steal ...; busy = total - idle - iowait.
 * Both 0 when the line is missing.
 */
static void read_proc_stat(const char *which, uint64_t *busy, uint64_t *total)
{
	unsigned long long v[10];
	char line[512], name[16];
	FILE *f = fopen("/proc/stat", "r");
	int n;

	*busy = *total = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		memset(v, 0, sizeof(v));
		n = sscanf(line, "%15s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", name,
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
		if (n < 5 || strcmp(name, which))
			continue;
		n--;
		for (int i = 0; i < n && i < 8; i++) /* guest and guest_nice are inside user */
			*total += v[i];
		*busy = *total - v[3] - (n > 4 ? v[4] : 0);
		break;
	}
	fclose(f);
}

static void cpu_snap(const struct opts *o, struct cpu_snap *s)
{
	struct rusage ru;
	char name[16];

	getrusage(RUSAGE_SELF, &ru);
	s->utime = ru.ru_utime;
	s->stime = ru.ru_stime;
	read_proc_stat("cpu", &s->busy, &s->total);
	s->irq_busy = s->irq_total = 0;
	if (o->irq_cpu >= 0) {
		snprintf(name, sizeof(name), "cpu%d", o->irq_cpu);
		read_proc_stat(name, &s->irq_busy, &s->irq_total);
	}
}

/* Pin the whole process (every thread created later inherits it) to CPU @cpu. */
static int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/*
 * Route the interrupt of the vsock device to CPU @cpu. The device is the virtioN that
 * the vmw_vsock_virtio_transport driver is bound to; virtio-mmio requests its interrupt
 * under that name (drivers/virtio/virtio_mmio.c, vm_find_vqs()), so its number is the
 * /proc/interrupts line that ends in " virtioN". Returns the interrupt number, or
 * -ENODEV (no bound device or no such line) or the -errno of the write.
 */
static int route_vsock_irq(int cpu)
{
	static const char drv[] = "/sys/bus/virtio/drivers/vmw_vsock_virtio_transport";
	char dev[64] = "", line[1024], path[64];
	struct dirent *de;
	int irq = -1, ret = 0;
	DIR *d = opendir(drv);
	FILE *f;

	if (!d)
		return -ENODEV;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "virtio", 6)) {
			snprintf(dev, sizeof(dev), "%.60s", de->d_name);
			break;
		}
	closedir(d);
	f = fopen("/proc/interrupts", "r");
	if (!dev[0] || !f) {
		if (f)
			fclose(f);
		return -ENODEV;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n"), dl = strlen(dev);

		line[len] = 0;
		if (len > dl && line[len - dl - 1] == ' ' && !strcmp(line + len - dl, dev) &&
		    sscanf(line, " %d:", &irq) == 1)
			break;
		irq = -1;
	}
	fclose(f);
	if (irq < 0)
		return -ENODEV;
	snprintf(path, sizeof(path), "/proc/irq/%d/smp_affinity_list", irq);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fprintf(f, "%d\n", cpu) < 0)
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret ? ret : irq;
}

static uint64_t tv_delta_us(struct timeval a, struct timeval b)
{
	int64_t d = ((int64_t)b.tv_sec - a.tv_sec) * 1000000 + (b.tv_usec - a.tv_usec);

	return d > 0 ? (uint64_t)d : 0;
}

static int parse_size(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -EINVAL;
	if (*end == 'K' || *end == 'k') {
		v <<= 10;
		end++;
	} else if (*end == 'M' || *end == 'm') {
		v <<= 20;
		end++;
	}
	if (*end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_addr(const char *s, unsigned int *cid, unsigned int *port)
{
	unsigned long c, p;
	char *end;

	errno = 0;
	c = strtoul(s, &end, 10);
	if (errno || end == s || *end != ':' || c > UINT32_MAX)
		return -EINVAL;
	s = end + 1;
	p = strtoul(s, &end, 10);
	if (errno || end == s || *end || p > UINT32_MAX)
		return -EINVAL;
	*cid = (unsigned int)c;
	*port = (unsigned int)p;
	return 0;
}

static void on_alarm(int sig)
{
	static const char msg[] = "GUEST-BENCH status=fail err=ETIMEDOUT where=timeout\n";
	ssize_t r = write(STDOUT_FILENO, msg, sizeof(msg) - 1);

	(void)r;
	(void)sig;
	_exit(3);
}

static int fail(struct result *r, const char *where)
{
	r->err = errno ? errno : EIO;
	r->where = where;
	return -r->err;
}

/* Connect a stream socket to cid:port with the receive options of @o. */
static int open_conn(const struct opts *o, struct result *r, int *out)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK, .svm_cid = o->cid, .svm_port = o->port };
	int fd = socket(AF_VSOCK, SOCK_STREAM, 0);

	if (fd < 0)
		return fail(r, "socket");
	if (o->buf_size) {
		unsigned long long b = o->buf_size;

		/* The maximum first: the size may not exceed it. */
		if (setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_BUFFER_MAX_SIZE, &b, sizeof(b)) ||
		    setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_BUFFER_SIZE, &b, sizeof(b))) {
			fail(r, "buf-size");
			close(fd);
			return -r->err;
		}
	}
	if (o->rcvlowat &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &o->rcvlowat, sizeof(o->rcvlowat))) {
		fail(r, "rcvlowat");
		close(fd);
		return -r->err;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fail(r, "connect");
		close(fd);
		return -r->err;
	}
	*out = fd;
	return 0;
}

static int write_all(int fd, const uint8_t *buf, size_t len, uint64_t *calls)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		(*calls)++;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int run_send(const struct opts *o, int fd, uint8_t *buf, struct result *r)
{
	uint64_t t0 = now_ns(), limit_ns = (uint64_t)(o->seconds * 1e9);
	/* Look at the clock about every 64 KiB: a clock read is a system call in UML. */
	unsigned int every = o->size >= 65536 ? 1 : (unsigned int)(65536 / o->size);
	unsigned int n = 0;

	while (r->bytes < o->max_bytes) {
		size_t len = o->size;

		if (len > o->max_bytes - r->bytes)
			len = (size_t)(o->max_bytes - r->bytes);
		if (write_all(fd, buf, len, &r->calls))
			return fail(r, "send");
		r->bytes += len;
		if (++n >= every) {
			n = 0;
			if (now_ns() - t0 >= limit_ns)
				break;
		}
	}
	if (shutdown(fd, SHUT_WR))
		return fail(r, "shutdown");
	/* The host closes when it has read everything: then the data is delivered. */
	for (;;) {
		ssize_t got = recv(fd, buf, o->size, 0);

		if (got == 0)
			break;
		if (got < 0 && errno != EINTR)
			return fail(r, "recv-eof");
	}
	return 0;
}

static int run_recv(const struct opts *o, int fd, uint8_t *buf, struct result *r)
{
	uint8_t ack = 'A';

	for (;;) {
		ssize_t n = recv(fd, buf, o->read_size, 0);

		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(r, "recv");
		}
		r->calls++;
		r->bytes += (uint64_t)n;
	}
	if (send(fd, &ack, 1, MSG_NOSIGNAL) != 1)
		return fail(r, "ack");
	/* Stay until the host closes: it samples our CPU time before it does. */
	for (;;) {
		ssize_t n = recv(fd, buf, o->read_size, 0);

		if (n == 0)
			return 0;
		if (n > 0) {
			errno = EPROTO;
			return fail(r, "after-ack");
		}
		if (errno != EINTR)
			return fail(r, "after-ack");
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int run_pingpong(const struct opts *o, int fd, uint8_t *buf, struct result *r)
{
	uint64_t *rtt = calloc(o->count, sizeof(*rtt)), sum = 0;
	int ret = 0;

	if (!rtt) {
		errno = ENOMEM;
		return fail(r, "calloc");
	}
	for (uint64_t i = 0; i < o->count; i++) {
		uint64_t t = now_ns();
		size_t got = 0;

		if (write_all(fd, buf, o->size, &r->calls)) {
			ret = fail(r, "send");
			goto out;
		}
		while (got < o->size) {
			ssize_t n = recv(fd, buf + got, o->size - got, 0);

			if (n <= 0) {
				if (n < 0 && errno == EINTR)
					continue;
				if (n == 0)
					errno = ECONNRESET;
				ret = fail(r, "recv");
				goto out;
			}
			r->calls++;
			got += (size_t)n;
		}
		rtt[i] = now_ns() - t;
		sum += rtt[i];
		r->bytes += o->size;
	}
	qsort(rtt, o->count, sizeof(*rtt), cmp_u64);
	r->rtt_mean_ns = sum / o->count;
	r->rtt_p50_ns = rtt[o->count / 2];
	r->rtt_p99_ns =
		rtt[(o->count * 99) / 100 < o->count ? (o->count * 99) / 100 : o->count - 1];
	r->have_rtt = true;
out:
	free(rtt);
	return ret;
}

static void print_result(const struct opts *o, const struct result *r, const struct cpu_snap *a,
			 const struct cpu_snap *b)
{
	printf("GUEST-BENCH status=%s mode=%s size=%zu bytes=%" PRIu64 " ns=%" PRIu64
	       " calls=%" PRIu64 " utime_us=%" PRIu64 " stime_us=%" PRIu64
	       " cpu_busy_ticks=%" PRIu64 " cpu_total_ticks=%" PRIu64 " clk_tck=%ld",
	       r->err ? "fail" : "ok", mode_names[o->mode], o->size, r->bytes, r->ns, r->calls,
	       tv_delta_us(a->utime, b->utime), tv_delta_us(a->stime, b->stime), b->busy - a->busy,
	       b->total - a->total, sysconf(_SC_CLK_TCK));
	if (o->irq_cpu >= 0)
		printf(" irq=%d irq_cpu_busy_ticks=%" PRIu64 " irq_cpu_total_ticks=%" PRIu64,
		       r->irq, b->irq_busy - a->irq_busy, b->irq_total - a->irq_total);
	if (r->have_rtt)
		printf(" rtt_mean_ns=%" PRIu64 " rtt_p50_ns=%" PRIu64 " rtt_p99_ns=%" PRIu64,
		       r->rtt_mean_ns, r->rtt_p50_ns, r->rtt_p99_ns);
	if (r->err)
		printf(" err=%s where=%s", strerrorname_np(r->err) ?: "unknown", r->where);
	printf("\n");
	fflush(stdout);
}

static void usage(void)
{
	fputs("usage: guest-bench send|recv|pingpong CID:PORT --size S [--seconds D]\n"
	      "       [--max-bytes B] [--read-size R] [--count N] [--rcvlowat N]\n"
	      "       [--buf-size B] [--conns N] [--timeout S] [--cpu C] [--irq-cpu C]\n",
	      stderr);
	exit(2);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "max-bytes", required_argument, NULL, 'b' },
		{ "read-size", required_argument, NULL, 'r' },
		{ "count", required_argument, NULL, 'n' },
		{ "rcvlowat", required_argument, NULL, 'l' },
		{ "buf-size", required_argument, NULL, 'B' },
		{ "timeout", required_argument, NULL, 't' },
		{ "conns", required_argument, NULL, 'c' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "irq-cpu", required_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	char *end;
	int c;

	if (argc < 3)
		usage();
	if (!strcmp(argv[1], "send"))
		o->mode = MODE_SEND;
	else if (!strcmp(argv[1], "recv"))
		o->mode = MODE_RECV;
	else if (!strcmp(argv[1], "pingpong"))
		o->mode = MODE_PINGPONG;
	else
		usage();
	if (parse_addr(argv[2], &o->cid, &o->port))
		usage();
	optind = 3;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, MAX_CHUNK, &v) || !v)
				usage();
			o->size = (size_t)v;
			break;
		case 'r':
			if (parse_size(optarg, MAX_CHUNK, &v) || !v)
				usage();
			o->read_size = (size_t)v;
			break;
		case 'b':
			if (parse_size(optarg, UINT64_MAX >> 20, &o->max_bytes))
				usage();
			break;
		case 'n':
			if (parse_size(optarg, MAX_COUNT, &o->count) || !o->count)
				usage();
			break;
		case 'l':
			if (parse_size(optarg, INT32_MAX, &v) || !v)
				usage();
			o->rcvlowat = (int)v;
			break;
		case 'B':
			if (parse_size(optarg, 1ull << 30, &o->buf_size))
				usage();
			break;
		case 'd':
			errno = 0;
			o->seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(o->seconds > 0 && o->seconds < 3600))
				usage();
			break;
		case 't':
			if (parse_size(optarg, 86400, &v) || !v)
				usage();
			o->timeout_s = (unsigned int)v;
			break;
		case 'c':
			if (parse_size(optarg, 256, &v) || !v)
				usage();
			o->conns = (unsigned int)v;
			break;
		case 'C':
		case 'I':
			if (parse_size(optarg, CPU_SETSIZE - 1, &v))
				usage();
			*(c == 'C' ? &o->cpu : &o->irq_cpu) = (int)v;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !o->size)
		usage();
	if (!o->read_size)
		o->read_size = o->size;
	if (o->mode == MODE_PINGPONG && (!o->count || o->conns != 1))
		usage();
}

/* One connection of a run, driven by its own thread when --conns > 1. */
struct conn {
	const struct opts *o;
	int fd;
	uint8_t *buf; /* private, max(size, read_size) bytes */
	struct result r;
	int ret;
};

static void *conn_thread(void *arg)
{
	struct conn *c = arg;

	if (c->o->mode == MODE_SEND)
		c->ret = run_send(c->o, c->fd, c->buf, &c->r);
	else if (c->o->mode == MODE_RECV)
		c->ret = run_recv(c->o, c->fd, c->buf, &c->r);
	else
		c->ret = run_pingpong(c->o, c->fd, c->buf, &c->r);
	return NULL;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.seconds = 1.0,
		.max_bytes = UINT64_MAX >> 20,
		.timeout_s = 60,
		.conns = 1,
		.cpu = -1,
		.irq_cpu = -1,
	};
	size_t blen;
	struct result r = { 0 };
	struct cpu_snap a, b;
	struct conn *c;
	pthread_t *th;
	unsigned int opened = 0, started = 0;
	uint64_t t0;
	int ret = 0;

	parse_args(argc, argv, &o);
	signal(SIGALRM, on_alarm);
	alarm(o.timeout_s);
	blen = o.size > o.read_size ? o.size : o.read_size;
	c = calloc(o.conns, sizeof(*c));
	th = calloc(o.conns, sizeof(*th));
	if (!c || !th)
		return 1;
	memset(&a, 0, sizeof(a));
	b = a;
	if (o.cpu >= 0) {
		ret = pin_cpu(o.cpu);
		if (ret) {
			errno = -ret;
			fail(&r, "cpu");
		}
	}
	if (!ret && o.irq_cpu >= 0) {
		ret = route_vsock_irq(o.irq_cpu);
		if (ret < 0) {
			errno = -ret;
			fail(&r, "irq-cpu");
		} else {
			r.irq = ret;
			ret = 0;
		}
	}
	for (; !ret && opened < o.conns; opened++) {
		c[opened].o = &o;
		c[opened].fd = -1;
		c[opened].buf = malloc(blen);
		if (!c[opened].buf) {
			errno = ENOMEM;
			ret = fail(&r, "malloc");
			break;
		}
		for (size_t i = 0; i < o.size; i++)
			c[opened].buf[i] = (uint8_t)(i * 131 + 7);
		ret = open_conn(&o, &r, &c[opened].fd);
		if (ret) {
			free(c[opened].buf);
			break;
		}
	}
	if (!ret) {
		cpu_snap(&o, &a);
		t0 = now_ns();
		if (o.conns == 1) {
			conn_thread(&c[0]);
			started = 0;
		} else {
			for (; started < o.conns; started++) {
				ret = pthread_create(&th[started], NULL, conn_thread, &c[started]);
				if (ret) {
					errno = ret;
					ret = fail(&r, "pthread_create");
					/* shut the others down so their threads end */
					for (unsigned int i = started; i < o.conns; i++)
						shutdown(c[i].fd, SHUT_RDWR);
					break;
				}
			}
		}
		for (unsigned int i = 0; i < started; i++)
			pthread_join(th[i], NULL);
		r.ns = now_ns() - t0;
		cpu_snap(&o, &b);
		for (unsigned int i = 0; i < o.conns && i < opened; i++) {
			r.bytes += c[i].r.bytes;
			r.calls += c[i].r.calls;
			if (c[i].ret && !ret) {
				ret = c[i].ret;
				r.err = c[i].r.err;
				r.where = c[i].r.where;
			}
		}
		if (o.mode == MODE_PINGPONG) {
			r.rtt_mean_ns = c[0].r.rtt_mean_ns;
			r.rtt_p50_ns = c[0].r.rtt_p50_ns;
			r.rtt_p99_ns = c[0].r.rtt_p99_ns;
			r.have_rtt = c[0].r.have_rtt;
		}
	}
	print_result(&o, &r, &a, &b);
	for (unsigned int i = 0; i < opened; i++) {
		close(c[i].fd);
		free(c[i].buf);
	}
	free(c);
	free(th);
	return ret ? 1 : 0;
}
