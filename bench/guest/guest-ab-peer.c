// SPDX-License-Identifier: MIT
/*
 * guest-ab-peer: the host side of the A/B guest benchmark (bench/guest/guest_ab.py).
 *
 * Against a guest through skiff's hybrid Unix sockets (a guest connection to vsock port P
 * arrives at <uds_path>_<P>, DESIGN.md "Host side of vsock"), --conns N connections (default
 * 1), each served by its own thread the same way:
 *   guest-ab-peer sink   --listen PATH [--read-size R]
 *       read until EOF (R bytes per call, default 64 KiB), then close.
 *   guest-ab-peer source --listen PATH --size S [--seconds D] [--max-bytes B]
 *       write S-byte chunks for D seconds or B bytes, shut down the write side, then read
 *       the guest's 1-byte ack (it read everything), then close.
 *   guest-ab-peer echo   --listen PATH [--size S]
 *       send back what arrives (reads of up to S bytes) until EOF.
 * The limits of this machine, measured in the same run (AF_UNIX stream socketpair,
 * a writer and a reader thread):
 *   guest-ab-peer socketpair --size S [--read-size R] [--seconds D]
 *   guest-ab-peer socketpair-pingpong --size S --count N
 * Common: --timeout S (default 60): give up on a peer that does not show up or stalls.
 * sink/source/echo: --cpu-tree PID also reports tree_cpu_ns=, the CPU time the processes
 * under PID (the guest: UML is a tree of host processes) used from the first accept to the
 * end of the transfers (from /proc/.../schedstat, all threads). With --cpu-tree, --cpu-thread
 * NAME also reports thread_cpu_ns=, the same for only the threads of that tree whose name
 * (/proc/.../comm) is NAME: "CPU 1/TCG" is QEMU TCG's vCPU 1.
 *
 * Listening modes print "PEER-LISTENING" once the socket listens (the driver waits for it
 * before it lets the guest connect). Every mode ends with one line:
 *   PEER status=ok|fail mode=M bytes=N ns=T [rtt_mean_ns=R] [tree_cpu_ns=C] [thread_cpu_ns=C]
 *        [err=NAME where=WHAT]
 * ns is the wall time from the first accept() (or the threads' start) to the end of the last
 * transfer: for source, until the guest's ack arrived, so every byte counted was delivered;
 * bytes is the sum over the connections.
 * Exit status: 0 ok, 1 failure, 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHUNK (4u << 20)

struct opts {
	const char *mode;
	const char *path;
	size_t size, read_size;
	double seconds;
	uint64_t max_bytes;
	uint64_t count;
	unsigned int conns; /* sink/source/echo: connections to accept */
	long cpu_tree; /* 0, or the root pid whose descendants' CPU time to report */
	const char *cpu_thread; /* NULL, or the name of the tree's threads to report apart */
	unsigned int timeout_s;
};

struct result {
	uint64_t bytes, ns;
	uint64_t rtt_mean_ns; /* socketpair-pingpong only */
	uint64_t tree_cpu_ns; /* --cpu-tree: the tree's CPU time over the transfer */
	uint64_t thread_cpu_ns; /* --cpu-thread: those threads' CPU time over the transfer */
	int err; /* positive errno, 0 if none */
	const char *where;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fail(struct result *r, const char *where)
{
	r->err = errno ? errno : EIO;
	r->where = where;
	return -r->err;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_full(int fd, uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = recv(fd, buf, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ECONNRESET;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Every blocking call on @fd gives up after @s seconds (EAGAIN). */
static void set_timeouts(int fd, unsigned int s)
{
	struct timeval tv = { .tv_sec = s };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Bind and listen on @path (a stale socket file is replaced). */
static int listen_on(const char *path, struct result *r, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return fail(r, "listen-path");
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(r, "socket");
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 128)) {
		fail(r, "bind");
		close(fd);
		return -r->err;
	}
	*out = fd;
	return 0;
}

static int accept_one(int lfd, unsigned int timeout_s, struct result *r, int *out)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int n, fd;

	do {
		n = poll(&p, 1, (int)timeout_s * 1000);
	} while (n < 0 && errno == EINTR);
	if (n == 0)
		errno = ETIMEDOUT;
	if (n <= 0)
		return fail(r, "accept-wait");
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return fail(r, "accept");
	set_timeouts(fd, timeout_s);
	*out = fd;
	return 0;
}

/* Read until EOF in reads of @len; counts the bytes in r->bytes. */
static int drain(int fd, uint8_t *buf, size_t len, struct result *r)
{
	for (;;) {
		ssize_t n = recv(fd, buf, len, 0);

		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(r, "recv");
		}
		r->bytes += (uint64_t)n;
	}
}

/* Write @size chunks for o->seconds or o->max_bytes; counts them in *sent. */
static int pump(int fd, const struct opts *o, const uint8_t *buf, uint64_t *sent)
{
	uint64_t t0 = now_ns(), limit_ns = (uint64_t)(o->seconds * 1e9);
	unsigned int every = o->size >= 65536 ? 1 : (unsigned int)(65536 / o->size), n = 0;

	while (*sent < o->max_bytes) {
		size_t len = o->size;
		int ret;

		if (len > o->max_bytes - *sent)
			len = (size_t)(o->max_bytes - *sent);
		ret = write_all(fd, buf, len);
		if (ret)
			return ret;
		*sent += len;
		if (++n >= every) {
			n = 0;
			if (now_ns() - t0 >= limit_ns)
				break;
		}
	}
	return 0;
}

/* Parent pid of @pid from /proc/PID/stat (the field after the parenthesised name); -1. */
static long proc_ppid(long pid)
{
	char path[64], line[512], *p;
	long ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		p = strrchr(line, ')');
		if (p && sscanf(p + 1, " %*c %ld", &ppid) != 1)
			ppid = -1;
	}
	fclose(f);
	return ppid;
}

/* Whether thread @tid of @pid is called @name (/proc/PID/task/TID/comm). */
static bool thread_named(long pid, const char *tid, const char *name)
{
	char path[96], comm[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/task/%.20s/comm", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	return !strcmp(comm, name);
}

/*
 * CPU time of the threads of @pid, ns, from /proc/PID/task/TID/schedstat (field 1): all
 * of them, or with @name only those called @name.
 */
static uint64_t proc_cpu_ns(long pid, const char *name)
{
	char path[96];
	struct dirent *de;
	uint64_t sum = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		unsigned long long ns;
		FILE *f;

		if (de->d_name[0] == '.' || (name && !thread_named(pid, de->d_name, name)))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%.20s/schedstat", pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		fclose(f);
	}
	closedir(d);
	return sum;
}

/*
 * CPU time (ns) used so far by the process tree under @root, @root excluded: with
 * --cpu-tree, the guest's own cost as the host sees it (a UML guest is a tree of host
 * processes), immune to the guest's clock running while the host deschedules it.
 * Processes that exited take their time with them, so sample while they live. With @name,
 * only the threads called @name count.
 */
static uint64_t tree_cpu_ns(long root, const char *name)
{
	enum { MAX_PROCS = 4096 };
	static long pid[MAX_PROCS], ppid[MAX_PROCS];
	static bool in[MAX_PROCS];
	unsigned int n = 0;
	struct dirent *de;
	uint64_t sum = 0;
	bool grew = true;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < MAX_PROCS) {
		char *end;
		long p = strtol(de->d_name, &end, 10);

		if (*end || p <= 0)
			continue;
		pid[n] = p;
		ppid[n] = proc_ppid(p);
		in[n] = false;
		n++;
	}
	closedir(d);
	while (grew) { /* descendants: anything whose parent is root or already in */
		grew = false;
		for (unsigned int i = 0; i < n; i++) {
			if (in[i])
				continue;
			if (ppid[i] == root) {
				in[i] = grew = true;
				continue;
			}
			for (unsigned int j = 0; j < n; j++) {
				if (in[j] && pid[j] == ppid[i]) {
					in[i] = grew = true;
					break;
				}
			}
		}
	}
	for (unsigned int i = 0; i < n; i++)
		if (in[i])
			sum += proc_cpu_ns(pid[i], name);
	return sum;
}

/* One accepted connection of sink/source/echo, served by its own thread. */
struct uds_conn {
	const struct opts *o;
	int fd;
	uint8_t *buf; /* private, max(size, read_size) bytes */
	struct result r;
	uint64_t end_ns; /* when this connection's transfer ended */
	int ret;
};

static int serve_conn(struct uds_conn *c)
{
	const struct opts *o = c->o;
	struct result *r = &c->r;
	int ret;

	if (!strcmp(o->mode, "sink"))
		return drain(c->fd, c->buf, o->read_size, r);
	if (!strcmp(o->mode, "source")) {
		ret = pump(c->fd, o, c->buf, &r->bytes);
		if (ret) {
			errno = -ret;
			return fail(r, "send");
		}
		if (shutdown(c->fd, SHUT_WR))
			return fail(r, "shutdown");
		/*
		 * The guest sends one byte once it read everything, then waits for our
		 * close (so that it is still there for the last --cpu-tree sample).
		 */
		ret = read_full(c->fd, c->buf, 1);
		if (ret) {
			errno = -ret;
			return fail(r, "ack");
		}
		return 0;
	}
	for (;;) { /* echo */
		ssize_t n = recv(c->fd, c->buf, o->size, 0);

		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(r, "recv");
		}
		ret = write_all(c->fd, c->buf, (size_t)n);
		if (ret) {
			errno = -ret;
			return fail(r, "send");
		}
		r->bytes += (uint64_t)n;
	}
}

static void *conn_thread(void *arg)
{
	struct uds_conn *c = arg;

	c->ret = serve_conn(c);
	c->end_ns = now_ns();
	return NULL;
}

/*
 * Listen on o->path, accept o->conns connections, serve each in its own thread. r->bytes
 * is the sum over the connections; r->ns runs from the first accept to the end of the
 * last transfer. The first failure is reported.
 */
static int run_uds(const struct opts *o, struct result *r)
{
	struct uds_conn *c = calloc(o->conns, sizeof(*c));
	pthread_t *th = calloc(o->conns, sizeof(*th));
	size_t blen = o->size > o->read_size ? o->size : o->read_size;
	unsigned int started = 0, accepted = 0;
	uint64_t t0 = 0, t_end = 0;
	int lfd = -1, ret;

	if (!c || !th) {
		errno = ENOMEM;
		ret = fail(r, "calloc");
		goto out;
	}
	ret = listen_on(o->path, r, &lfd);
	if (ret)
		goto out;
	printf("PEER-LISTENING\n");
	fflush(stdout);
	for (; accepted < o->conns; accepted++) {
		c[accepted].o = o;
		c[accepted].fd = -1;
		ret = accept_one(lfd, o->timeout_s, r, &c[accepted].fd);
		if (ret)
			break;
		if (!accepted) {
			t0 = now_ns();
			if (o->cpu_tree)
				r->tree_cpu_ns = tree_cpu_ns(o->cpu_tree, NULL);
			if (o->cpu_thread)
				r->thread_cpu_ns = tree_cpu_ns(o->cpu_tree, o->cpu_thread);
		}
		c[accepted].buf = malloc(blen);
		if (!c[accepted].buf) {
			errno = ENOMEM;
			ret = fail(r, "malloc");
			accepted++;
			break;
		}
		memset(c[accepted].buf, 0x5a, blen);
		ret = pthread_create(&th[accepted], NULL, conn_thread, &c[accepted]);
		if (ret) {
			errno = ret;
			ret = fail(r, "pthread_create");
			accepted++;
			break;
		}
		started++;
	}
	close(lfd);
	unlink(o->path);
	for (unsigned int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	/* The guest program is still there: it closes only after our close (or its ack). */
	if (o->cpu_tree && started) {
		uint64_t t = tree_cpu_ns(o->cpu_tree, NULL);

		r->tree_cpu_ns = t > r->tree_cpu_ns ? t - r->tree_cpu_ns : 0;
	}
	if (o->cpu_thread && started) {
		uint64_t t = tree_cpu_ns(o->cpu_tree, o->cpu_thread);

		r->thread_cpu_ns = t > r->thread_cpu_ns ? t - r->thread_cpu_ns : 0;
	}
	for (unsigned int i = 0; i < started; i++) {
		r->bytes += c[i].r.bytes;
		if (c[i].end_ns > t_end)
			t_end = c[i].end_ns;
		if (c[i].ret && !ret) {
			ret = c[i].ret;
			r->err = c[i].r.err;
			r->where = c[i].r.where;
		}
	}
	r->ns = started ? t_end - t0 : 0;
out:
	for (unsigned int i = 0; c && i < accepted; i++) {
		if (c[i].fd >= 0)
			close(c[i].fd);
		free(c[i].buf);
	}
	free(c);
	free(th);
	return ret;
}

/* socketpair: the writer side of the throughput limit. */
struct sp_writer {
	int fd;
	const struct opts *o;
	const uint8_t *buf;
	uint64_t sent;
	int ret;
};

static void *sp_write_thread(void *arg)
{
	struct sp_writer *w = arg;

	w->ret = pump(w->fd, w->o, w->buf, &w->sent);
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

static int run_socketpair(const struct opts *o, uint8_t *buf, struct result *r)
{
	struct sp_writer w = { .o = o };
	uint8_t *rbuf = malloc(o->read_size);
	pthread_t th;
	int sv[2], ret;
	uint64_t t0;

	if (!rbuf) {
		errno = ENOMEM;
		return fail(r, "malloc");
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		free(rbuf);
		return fail(r, "socketpair");
	}
	w.fd = sv[0];
	w.buf = buf;
	t0 = now_ns();
	ret = pthread_create(&th, NULL, sp_write_thread, &w);
	if (ret) {
		errno = ret;
		ret = fail(r, "pthread_create");
		goto out;
	}
	ret = drain(sv[1], rbuf, o->read_size, r);
	pthread_join(th, NULL);
	r->ns = now_ns() - t0;
	if (!ret && w.ret) {
		errno = -w.ret;
		ret = fail(r, "send");
	}
	if (!ret && r->bytes != w.sent) {
		errno = EBADMSG;
		ret = fail(r, "count");
	}
out:
	close(sv[0]);
	close(sv[1]);
	free(rbuf);
	return ret;
}

/* socketpair-pingpong: the echo thread. */
struct sp_echo {
	int fd;
	size_t size;
	uint8_t *buf;
};

static void *sp_echo_thread(void *arg)
{
	struct sp_echo *e = arg;

	for (;;) {
		ssize_t n = recv(e->fd, e->buf, e->size, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || write_all(e->fd, e->buf, (size_t)n))
			break;
	}
	return NULL;
}

static int run_sp_pingpong(const struct opts *o, uint8_t *buf, struct result *r)
{
	struct sp_echo e = { .size = o->size };
	pthread_t th;
	int sv[2], ret = 0;
	uint64_t t0;

	e.buf = malloc(o->size);
	if (!e.buf) {
		errno = ENOMEM;
		return fail(r, "malloc");
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		free(e.buf);
		return fail(r, "socketpair");
	}
	set_timeouts(sv[0], o->timeout_s);
	e.fd = sv[1];
	ret = pthread_create(&th, NULL, sp_echo_thread, &e);
	if (ret) {
		errno = ret;
		ret = fail(r, "pthread_create");
		close(sv[1]);
		goto out;
	}
	t0 = now_ns();
	for (uint64_t i = 0; i < o->count && !ret; i++) {
		if (write_all(sv[0], buf, o->size) || read_full(sv[0], buf, o->size))
			ret = fail(r, "pingpong");
		else
			r->bytes += o->size;
	}
	r->ns = now_ns() - t0;
	r->rtt_mean_ns = r->ns / o->count;
	shutdown(sv[0], SHUT_WR);
	pthread_join(th, NULL);
	close(sv[1]);
out:
	close(sv[0]);
	free(e.buf);
	return ret;
}

static void usage(void)
{
	fputs("usage: guest-ab-peer sink|source|echo --listen PATH [--size S] [--read-size R]\n"
	      "                     [--seconds D] [--max-bytes B] [--conns N] [--cpu-tree PID]\n"
	      "                     [--cpu-thread NAME] [--timeout S]\n"
	      "       guest-ab-peer socketpair --size S [--read-size R] [--seconds D]\n"
	      "       guest-ab-peer socketpair-pingpong --size S --count N\n",
	      stderr);
	exit(2);
}

static uint64_t parse_num(const char *s, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		usage();
	return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "listen", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "read-size", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "max-bytes", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "conns", required_argument, NULL, 'c' },
		{ "cpu-tree", required_argument, NULL, 'T' },
		{ "cpu-thread", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const modes[] = { "sink", "source", "echo", "socketpair",
					     "socketpair-pingpong" };
	char *end;
	int c;

	if (argc < 2)
		usage();
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[1], modes[i]))
			o->mode = modes[i];
	if (!o->mode)
		usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->path = optarg;
			break;
		case 's':
			o->size = (size_t)parse_num(optarg, MAX_CHUNK);
			break;
		case 'r':
			o->read_size = (size_t)parse_num(optarg, MAX_CHUNK);
			if (!o->read_size)
				usage();
			break;
		case 'b':
			o->max_bytes = parse_num(optarg, UINT64_MAX >> 20);
			break;
		case 'n':
			o->count = parse_num(optarg, 100000000);
			break;
		case 't':
			o->timeout_s = (unsigned int)parse_num(optarg, 86400);
			break;
		case 'c':
			o->conns = (unsigned int)parse_num(optarg, 256);
			break;
		case 'T':
			o->cpu_tree = (long)parse_num(optarg, INT32_MAX);
			break;
		case 'N':
			if (!optarg[0] || strlen(optarg) > 15) /* TASK_COMM_LEN - 1 */
				usage();
			o->cpu_thread = optarg;
			break;
		case 'd':
			errno = 0;
			o->seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(o->seconds > 0 && o->seconds < 3600))
				usage();
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !o->size || !o->timeout_s || !o->conns ||
	    (o->cpu_thread && !o->cpu_tree))
		usage();
	/* Reads are --size bytes unless --read-size says otherwise (sink, socketpair). */
	if (!o->read_size || !strcmp(o->mode, "source") || !strcmp(o->mode, "echo"))
		o->read_size = o->size;
	if (!strcmp(o->mode, "sink") || !strcmp(o->mode, "source") || !strcmp(o->mode, "echo")) {
		if (!o->path)
			usage();
	} else if (o->path) {
		usage();
	}
	if (!strcmp(o->mode, "socketpair-pingpong") && !o->count)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = { .size = 65536,
			  .seconds = 1.0,
			  .max_bytes = UINT64_MAX >> 20,
			  .timeout_s = 60,
			  .conns = 1 };
	struct result r = { 0 };
	uint8_t *buf;
	int ret;

	parse_args(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	buf = malloc(o.size > o.read_size ? o.size : o.read_size);
	if (!buf)
		return 1;
	for (size_t i = 0; i < o.size; i++)
		buf[i] = (uint8_t)(i * 29 + 3);
	if (!strcmp(o.mode, "socketpair"))
		ret = run_socketpair(&o, buf, &r);
	else if (!strcmp(o.mode, "socketpair-pingpong"))
		ret = run_sp_pingpong(&o, buf, &r);
	else
		ret = run_uds(&o, &r);
	printf("PEER status=%s mode=%s bytes=%" PRIu64 " ns=%" PRIu64, ret ? "fail" : "ok", o.mode,
	       r.bytes, r.ns);
	if (!strcmp(o.mode, "socketpair-pingpong"))
		printf(" rtt_mean_ns=%" PRIu64, r.rtt_mean_ns);
	if (o.cpu_tree)
		printf(" tree_cpu_ns=%" PRIu64, r.tree_cpu_ns);
	if (o.cpu_thread)
		printf(" thread_cpu_ns=%" PRIu64, r.thread_cpu_ns);
	if (ret)
		printf(" err=%s where=%s", strerrorname_np(r.err) ?: "unknown", r.where);
	printf("\n");
	free(buf);
	return ret ? 1 : 0;
}
