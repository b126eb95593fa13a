// SPDX-License-Identifier: MIT
/*
 * vmm_bench: the skiff VMM with tiny CPL3 guests.
 *
 *   - tiny-guest vsock throughput, guest to host (tx) and host to guest (rx),
 *     with and without EVENT_IDX (and MRG_RXBUF for rx), median of --reps
 *     runs (default 3); per MiB: vCPU exits
 *     to user space, guest QueueNotify writes, device kicks consumed,
 *     interrupts raised and suppressed;
 *   - ceilings measured in the same run: memcpy, AF_UNIX socketpair with
 *     64 KiB writes; throughput is reported as a ratio to them;
 *   - VMM set-up time: `skiff run` process main() to the first KVM_RUN, and
 *     skiff_vm_create() to the first KVM_RUN, median of several runs;
 *   - VMM resident memory excluding guest RAM (RssAnon + RssFile of a
 *     running `skiff run` with vsock; guest RAM is memfd, counted in RssShmem);
 *   - the device benchmark for the same payload in the same run: the tiny
 *     guest moves 64 KiB per packet (guest->host) and the host peer writes
 *     64 KiB per call (host->guest), so bench/vsock_bench runs its one-stream
 *     64 KiB cases (--dir, --mrg as the row, 3 rounds) and the "x dev"
 *     column is tiny-guest GB/s / the simulated driver's device GB/s.
 *     --device-bench PATH picks the binary, --device-bench none skips it.
 *
 * usage: vmm_bench [--mib N] [--reps N] [--runs N] [--conn-buf BYTES] [--json FILE]
 *                  [--device-bench PATH|none]
 * Needs /dev/kvm; exits 77 (skip) without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libskiff.h"
#include "skiff/vsock_abi.h"

#define PORT 1234
#define CID 3

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *guest(const char *name)
{
	static char buf[2][4096];
	static int i;

	i ^= 1;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s.elf", GUEST_DIR, name);
	return buf[i];
}

/* ---- ceilings ---------------------------------------------------------- */

static double memcpy_gbps(void)
{
	size_t n = 64u << 20;
	char *a = malloc(n), *b = malloc(n);
	uint64_t t0, best = UINT64_MAX;
	int i;

	memset(a, 1, n);
	memset(b, 2, n);
	for (i = 0; i < 5; i++) {
		t0 = now_ns();
		memcpy(b, a, n);
		if (now_ns() - t0 < best)
			best = now_ns() - t0;
	}
	free(a);
	free(b);
	return (double)n / (double)best;
}

struct pair_reader {
	int fd;
	uint64_t total;
};

static void *pair_read(void *arg)
{
	struct pair_reader *r = arg;
	static char buf[65536];
	uint64_t got = 0;

	while (got < r->total) {
		ssize_t n = read(r->fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		got += (uint64_t)n;
	}
	return NULL;
}

static double socketpair_gbps(uint64_t total)
{
	static char buf[65536];
	struct pair_reader r;
	pthread_t th;
	uint64_t t0, sent = 0;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 0;
	r.fd = sv[1];
	r.total = total;
	pthread_create(&th, NULL, pair_read, &r);
	t0 = now_ns();
	while (sent < total) {
		ssize_t n = write(sv[0], buf, sizeof(buf));

		if (n <= 0)
			break;
		sent += (uint64_t)n;
	}
	pthread_join(th, NULL);
	t0 = now_ns() - t0;
	close(sv[0]);
	close(sv[1]);
	return (double)total / (double)t0;
}

/* ---- tiny-guest vsock throughput ----------------------------------------- */

struct host_peer {
	int lfd;
	int mode; /* 1: sink (guest tx), 2: source (guest rx) */
	uint64_t total, moved;
	uint64_t t_accept, t_done;
};

static void *peer_thread(void *arg)
{
	struct host_peer *h = arg;
	static char buf[65536];
	struct pollfd p = { .fd = h->lfd, .events = POLLIN };
	int fd;

	if (poll(&p, 1, 120000) != 1)
		return NULL;
	fd = accept(h->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	h->t_accept = now_ns();
	if (h->mode == 1) {
		ssize_t n;

		while ((n = read(fd, buf, sizeof(buf))) > 0)
			if ((h->moved += (uint64_t)n) == h->total)
				h->t_done = now_ns();
	} else {
		while (h->moved < h->total) {
			uint64_t left = h->total - h->moved;
			ssize_t n = write(fd, buf, left < sizeof(buf) ? left : sizeof(buf));

			if (n <= 0)
				break;
			h->moved += (uint64_t)n;
		}
		/* wait for the guest to close (it has read everything then) */
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		h->t_done = now_ns();
	}
	close(fd);
	return NULL;
}

struct tput {
	const char *name;
	int mode;
	bool evidx, mrg;
	double gbps;
	double dev_gbps; /* vsock_bench, same direction, payload and MRG_RXBUF */
	double exits_per_mib, guest_kicks_per_mib, dev_kicks_per_mib, irqs_per_mib,
		irqs_suppressed_per_mib;
	int ok;
};

static uint32_t conn_buf; /* --conn-buf: device buf_alloc per connection, 0 = default */

static int run_tput(struct tput *t, unsigned int mib)
{
	struct skiff_vsock_config vc = { .guest_cid = CID,
					 .mrg_rxbuf = t->mrg,
					 .conn_buf_size = conn_buf };
	struct host_peer h = { .mode = t->mode, .total = (uint64_t)mib << 20 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/skiff-bench-XXXXXX", uds[64], cmd[160];
	struct skiff_counters c;
	struct skiff_exit ex;
	struct skiff_vm *vm;
	uint64_t kicks = 0;
	pthread_t th;
	int err;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(uds, sizeof(uds), "%s/v.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%d", uds, PORT);
	h.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(h.lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(h.lfd, 1))
		return -errno;
	pthread_create(&th, NULL, peer_thread, &h);
	snprintf(cmd, sizeof(cmd), "port=%d mib=%u mode=%d evidx=%d mrg=%d check=0", PORT, mib,
		 t->mode, t->evidx, t->mrg);
	vc.uds_path = uds;
	err = skiff_vm_create(&vm);
	if (err)
		return err;
	err = skiff_vm_set_kernel(vm, guest("guest_vsock_echo"), SKIFF_KERNEL_TINY);
	if (!err)
		err = skiff_vm_set_cmdline(vm, cmd);
	if (!err)
		err = skiff_vm_set_memory(vm, 64u << 20);
	if (!err)
		err = skiff_vm_set_console(vm, SKIFF_CONSOLE_NONE, NULL, -1);
	if (!err)
		err = skiff_vm_set_vsock(vm, &vc);
	if (!err)
		err = skiff_vm_start(vm);
	if (!err)
		err = skiff_vm_wait(vm, 300000, &ex);
	if (err == -ETIMEDOUT) {
		skiff_vm_stop(vm);
		skiff_vm_wait(vm, -1, &ex);
	}
	pthread_join(th, NULL);
	close(h.lfd);
	unlink(sa.sun_path);
	skiff_vm_get_counters(vm, &c);
	skiff_vm_get_report(vm, 7, &kicks);
	skiff_vm_destroy(vm);
	rmdir(dir);
	if (err)
		return err;
	t->ok = ex.reason == SKIFF_EXIT_GUEST_CODE && ex.code == 0 && h.moved == h.total &&
		h.t_done > h.t_accept;
	if (!t->ok) {
		fprintf(stderr, "vmm_bench: %s: guest %s code %llu (%s), host moved %llu\n",
			t->name, skiff_exit_reason_name(ex.reason), (unsigned long long)ex.code,
			ex.message, (unsigned long long)h.moved);
		return -EIO;
	}
	t->gbps = (double)h.total / (double)(h.t_done - h.t_accept);
	t->exits_per_mib = (double)c.vm_exits / mib;
	t->guest_kicks_per_mib = (double)kicks / mib;
	t->dev_kicks_per_mib = (double)c.vsock_kicks / mib;
	t->irqs_per_mib = (double)c.vsock_irqs_sent / mib;
	t->irqs_suppressed_per_mib = (double)c.vsock_irqs_suppressed / mib;
	return 0;
}

/* ---- the device benchmark for the same payload ----------------------------- */

/*
 * Device GB/s of bench/vsock_bench for one stream of 64 KiB payloads in
 * direction @dir ("g2h" or "h2g") with MRG_RXBUF @mrg: the median of its
 * rounds, read from its JSON. Return: GB/s, or 0 when it did not run.
 */
static double device_bench_gbps(const char *bin, const char *dir, bool mrg)
{
	char json[] = "/tmp/skiff-bench-dev-XXXXXX", cmd[1024], buf[8192];
	int fd = mkstemp(json);
	double gbps = 0;
	const char *p;
	size_t n;
	FILE *f;

	if (fd < 0)
		return 0;
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "'%s' --dir %s --payload 65536 --mrg %d --streams 1 --reps 3 --json '%s' "
		 "> /dev/null",
		 bin, dir, mrg ? 1 : 0, json);
	if (system(cmd) == 0 && (f = fopen(json, "r"))) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		fclose(f);
		p = strstr(buf, "\"results\"");
		p = p ? strstr(p, "\"gbps\": ") : NULL;
		if (!p || sscanf(p + 8, "%lf", &gbps) != 1)
			gbps = 0;
	}
	unlink(json);
	return gbps;
}

/* ---- set-up time and RSS of the skiff process ---------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int setup_times(int runs, uint64_t *main_med, uint64_t *create_med)
{
	uint64_t m[64], c[64];
	char stats[] = "/tmp/skiff-bench-stats-XXXXXX";
	int i, fd = mkstemp(stats);

	if (fd < 0)
		return -errno;
	close(fd);
	if (runs > 64)
		runs = 64;
	for (i = 0; i < runs; i++) {
		unsigned long long a = 0, b = 0;
		int status;
		pid_t pid = fork();
		FILE *f;

		if (pid == 0) {
			setenv("SKIFF_STATS", stats, 1);
			execl(SKIFF_BIN, SKIFF_BIN, "run", "--tiny-guest", "--kernel",
			      guest("guest_exit"), "--mem", "128M", "--console", "none",
			      (char *)NULL);
			_exit(127);
		}
		waitpid(pid, &status, 0);
		f = fopen(stats, "r");
		if (!f || fscanf(f, "main_to_first_run_ns=%llu\ncreate_to_first_run_ns=%llu", &a,
				 &b) != 2) {
			if (f)
				fclose(f);
			unlink(stats);
			return -EIO;
		}
		fclose(f);
		m[i] = a;
		c[i] = b;
	}
	unlink(stats);
	qsort(m, (size_t)runs, sizeof(m[0]), cmp_u64);
	qsort(c, (size_t)runs, sizeof(c[0]), cmp_u64);
	*main_med = m[runs / 2];
	*create_med = c[runs / 2];
	return 0;
}

static long status_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtol(line + klen + 1, NULL, 10);
	fclose(f);
	return v;
}

/* RSS of a running `skiff run` (spinning tiny guest, vsock device with its threads). */
static int vmm_rss(long *anon_kb, long *file_kb, long *shmem_kb)
{
	char dir[] = "/tmp/skiff-bench-XXXXXX", con[64], vs[128], conarg[80];
	int status, i;
	struct stat st;
	pid_t pid;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(con, sizeof(con), "%s/con", dir);
	snprintf(conarg, sizeof(conarg), "file:%s", con);
	snprintf(vs, sizeof(vs), "cid=3,uds=%s/v.sock", dir);
	pid = fork();
	if (pid == 0) {
		execl(SKIFF_BIN, SKIFF_BIN, "run", "--tiny-guest", "--kernel", guest("guest_exit"),
		      "--cmdline", "spin=1", "--mem", "128M", "--vsock", vs, "--console", conarg,
		      (char *)NULL);
		_exit(127);
	}
	/* The guest prints its line, then spins: wait for the line (bounded). */
	for (i = 0; i < 3000; i++) {
		struct timespec ts = { 0, 10000000 };

		if (stat(con, &st) == 0 && st.st_size > 0)
			break;
		nanosleep(&ts, NULL);
	}
	*anon_kb = status_kb(pid, "RssAnon");
	*file_kb = status_kb(pid, "RssFile");
	*shmem_kb = status_kb(pid, "RssShmem");
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	unlink(con);
	rmdir(dir);
	return i < 3000 ? 0 : -ETIMEDOUT;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "mib", required_argument, NULL, 'm' },
					      { "runs", required_argument, NULL, 'r' },
					      { "json", required_argument, NULL, 'j' },
					      { "conn-buf", required_argument, NULL, 'b' },
					      { "reps", required_argument, NULL, 'p' },
					      { "device-bench", required_argument, NULL, 'd' },
					      { NULL, 0, NULL, 0 } };
	struct tput t[] = {
		{ .name = "guest->host evidx", .mode = 1, .evidx = true },
		{ .name = "guest->host no-evidx", .mode = 1 },
		{ .name = "host->guest evidx", .mode = 2, .evidx = true },
		{ .name = "host->guest no-evidx", .mode = 2 },
		{ .name = "host->guest evidx mrg", .mode = 2, .evidx = true, .mrg = true },
		{ .name = "host->guest no-evidx mrg", .mode = 2, .mrg = true },
	};
	unsigned int mib = 256, i, n = sizeof(t) / sizeof(t[0]);
	const char *json = NULL;
#ifdef VSOCK_BENCH_BIN
	const char *dev_bin = VSOCK_BENCH_BIN;
#else
	const char *dev_bin = "none";
#endif
	double dev[2][2] = { { 0 } }; /* [h2g][mrg] */
	uint64_t main_med = 0, create_med = 0;
	long anon = -1, file = -1, shmem = -1;
	double mc, sp;
	int runs = 11, reps = 3, c, failed = 0;
	FILE *f;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'm')
			mib = (unsigned int)atoi(optarg);
		else if (c == 'r')
			runs = atoi(optarg);
		else if (c == 'j')
			json = optarg;
		else if (c == 'p')
			reps = atoi(optarg);
		else if (c == 'b')
			conn_buf = (uint32_t)strtoul(optarg, NULL, 0);
		else if (c == 'd')
			dev_bin = optarg;
		else {
			fprintf(stderr,
				"usage: vmm_bench [--mib N] [--reps N] [--runs N] [--conn-buf BYTES] [--json FILE]\n"
				"                 [--device-bench PATH|none]\n");
			return 2;
		}
	}
	if (access("/dev/kvm", F_OK)) {
		fprintf(stderr, "vmm_bench: SKIP: /dev/kvm does not exist\n");
		return 77;
	}
	if (!mib || runs < 1 || reps < 1 || reps > 9)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	mc = memcpy_gbps();
	sp = socketpair_gbps(1ull << 30);
	printf("ceilings: memcpy 64 MiB %.2f GB/s, AF_UNIX socketpair 64 KiB writes %.2f GB/s\n\n",
	       mc, sp);
	if (strcmp(dev_bin, "none")) {
		dev[0][0] = device_bench_gbps(dev_bin, "g2h", false);
		dev[1][0] = device_bench_gbps(dev_bin, "h2g", false);
		dev[1][1] = device_bench_gbps(dev_bin, "h2g", true);
		printf("device benchmark (vsock_bench, simulated driver, 1 stream, 64 KiB per call, "
		       "median of 3): g2h %.2f GB/s, h2g %.2f GB/s, h2g mrg %.2f GB/s\n\n",
		       dev[0][0], dev[1][0], dev[1][1]);
	}
	printf("tiny-guest vsock, %u MiB per run, median of %d runs, device buf_alloc %s\n", mib,
	       reps, conn_buf ? "--conn-buf" : "default");
	printf("%-26s %8s %8s %8s %9s %9s %9s %9s %9s\n", "case", "GB/s", "x unix", "x dev",
	       "exits/MiB", "gkick/MiB", "dkick/MiB", "irq/MiB", "irqsup/MiB");
	for (i = 0; i < n; i++) {
		struct tput rep[9];
		int r, k;

		/* median of --reps runs by throughput; its counters go with it */
		for (r = 0; r < reps; r++) {
			rep[r] = t[i];
			if (run_tput(&rep[r], mib))
				break;
			for (k = r; k > 0 && rep[k].gbps < rep[k - 1].gbps; k--) {
				struct tput tmp = rep[k];

				rep[k] = rep[k - 1];
				rep[k - 1] = tmp;
			}
		}
		if (r < reps) {
			failed = 1;
			continue;
		}
		t[i] = rep[reps / 2];
		t[i].dev_gbps = dev[t[i].mode == 2][t[i].mrg];
		printf("%-26s %8.2f %8.3f %8.3f %9.1f %9.1f %9.1f %9.1f %9.1f\n", t[i].name,
		       t[i].gbps, t[i].gbps / sp, t[i].dev_gbps ? t[i].gbps / t[i].dev_gbps : 0,
		       t[i].exits_per_mib, t[i].guest_kicks_per_mib, t[i].dev_kicks_per_mib,
		       t[i].irqs_per_mib, t[i].irqs_suppressed_per_mib);
	}
	if (setup_times(runs, &main_med, &create_med))
		failed = 1;
	if (vmm_rss(&anon, &file, &shmem))
		failed = 1;
	printf("\nset-up (median of %d, 128 MiB tiny guest): main() to first KVM_RUN %.2f ms, "
	       "skiff_vm_create() to first KVM_RUN %.2f ms\n",
	       runs, main_med / 1e6, create_med / 1e6);
	printf("VMM RSS without guest RAM (skiff run, 128 MiB guest, vsock): %ld KiB "
	       "(anon %ld + file %ld; guest memfd pages resident: %ld KiB)\n",
	       anon + file, anon, file, shmem);
	if (json && (f = fopen(json, "w"))) {
		fprintf(f, "{\n  \"bench\": \"vmm\",\n  \"mib\": %u,\n  \"reps\": %d,\n", mib,
			reps);
		fprintf(f, "  \"conn_buf_size\": %u,\n", conn_buf);
		fprintf(f, "  \"memcpy_gbps\": %.3f,\n  \"unix_socketpair_64k_gbps\": %.3f,\n", mc,
			sp);
		fprintf(f, "  \"throughput\": [\n");
		for (i = 0; i < n; i++)
			fprintf(f,
				"    {\"case\": \"%s\", \"ok\": %s, \"gbps\": %.3f, "
				"\"ratio_to_unix\": %.4f, \"ratio_to_memcpy\": %.4f, "
				"\"device_bench_gbps\": %.3f, \"ratio_to_device_bench\": %.4f, "
				"\"exits_per_mib\": %.2f, \"guest_kicks_per_mib\": %.2f, "
				"\"device_kicks_per_mib\": %.2f, \"irqs_per_mib\": %.2f, "
				"\"irqs_suppressed_per_mib\": %.2f}%s\n",
				t[i].name, t[i].ok ? "true" : "false", t[i].gbps, t[i].gbps / sp,
				t[i].gbps / mc, t[i].dev_gbps,
				t[i].dev_gbps ? t[i].gbps / t[i].dev_gbps : 0, t[i].exits_per_mib,
				t[i].guest_kicks_per_mib, t[i].dev_kicks_per_mib, t[i].irqs_per_mib,
				t[i].irqs_suppressed_per_mib, i + 1 < n ? "," : "");
		fprintf(f, "  ],\n  \"setup_main_to_first_run_ms\": %.3f,\n", main_med / 1e6);
		fprintf(f, "  \"setup_create_to_first_run_ms\": %.3f,\n", create_med / 1e6);
		fprintf(f, "  \"vmm_rss_kib_excluding_guest\": %ld,\n", anon + file);
		fprintf(f, "  \"vmm_rss_anon_kib\": %ld,\n  \"vmm_rss_file_kib\": %ld\n}\n", anon,
			file);
		fclose(f);
	}
	return failed;
}
