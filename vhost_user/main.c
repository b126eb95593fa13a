// SPDX-License-Identifier: MIT
/*
 * skiff-vsock: the skiff virtio-vsock device model as a vhost-user backend,
 * for QEMU's vhost-user-vsock-device and user-mode Linux's virtio_uml.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sysexits.h>
#include <unistd.h>

#include "skiff/sandbox_vsock.h"
#include "skiff/vhost_user.h"
#include "skiff/vsock_dev.h"

static void usage(FILE *f)
{
	fputs("usage: skiff-vsock --socket PATH --cid N --uds PATH [options]\n"
	      "       skiff-vsock --guest socket=PATH,cid=N[,uds=PATH][,group=NAME] ... [options]\n"
	      "\n"
	      "Serve skiff's virtio-vsock device over vhost-user. skiff-vsock listens\n"
	      "on each guest's socket; a frontend (QEMU vhost-user-vsock-device, UML\n"
	      "virtio_uml) connects. One frontend per guest socket at a time; a frontend\n"
	      "that connects while another is served replaces it (a rebooting UML guest\n"
	      "reconnects without closing its old socket). Host side: Firecracker-style\n"
	      "hybrid sockets (connect to the uds path and write \"CONNECT <port>\\n\";\n"
	      "guest connections to port P go to <uds>_<P>). Guests served by one\n"
	      "process reach each other by CID (guest-to-guest routing), unless their\n"
	      "groups differ.\n"
	      "\n"
	      "  --socket PATH        vhost-user socket to listen on (one guest)\n"
	      "  --cid N              guest CID (3 .. 2^32-2)\n"
	      "  --uds PATH           host Unix socket path\n"
	      "  --guest SPEC         one more guest (repeatable, instead of the three above):\n"
	      "                       socket=PATH,cid=N[,uds=PATH][,group=NAME]; without uds the\n"
	      "                       guest has no host side; guests of one group (default:\n"
	      "                       all) reach each other, CIDs unique within a group\n"
	      "  --rx-threads N       RX pump threads per guest (default: from the core count)\n"
	      "  --mrg-rxbuf on|off   offer mergeable RX buffers (default on)\n"
	      "  --rx-pkt-max BYTES   cap the payload of each host-to-guest RW packet\n"
	      "                       (1 .. 65536; default: no cap beyond 64 KiB)\n"
	      "  --conn-buf BYTES     receive buffer advertised per connection (buf_alloc),\n"
	      "                       4096 .. 64 MiB (default 256 KiB)\n"
	      "  --seccomp kill|log|off  seccomp filter on every thread (default kill:\n"
	      "                       a forbidden system call ends the process with a\n"
	      "                       message naming the thread and the call; log:\n"
	      "                       the kernel logs it and lets it run)\n"
	      "  --verbose            log every vhost-user request\n"
	      "  --test-fault FAULT[,port=P]   TEST ONLY: with mergeable RX buffers, make\n"
	      "                       every host-to-guest data packet (to guest port P\n"
	      "                       only, if given) lie in its header: FAULT is\n"
	      "                       bad-num-buffers=zero|over|ring (num_buffers 0,\n"
	      "                       buffers used + 1, RX queue size + 1) or\n"
	      "                       bad-hdr-len=over|under (hdr.len one more or one\n"
	      "                       less than the payload in the buffers)\n"
	      "  --help, --version\n"
	      "\n"
	      "Global options apply to every guest.\n"
	      "SIGTERM or SIGINT: disconnect, remove the socket files, print counters, exit 0.\n"
	      "SIGUSR1: print the device counters.\n"
	      "Exit status: 0 after SIGTERM/SIGINT, 64 (EX_USAGE, as skiff) for a bad\n"
	      "command line, 1 for any other error.\n",
	      f);
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* --test-fault FAULT[,port=P] into @cfg. Return: 0, or -EINVAL. */
static int parse_test_fault(const char *arg, struct vsock_dev_config *cfg)
{
	static const struct {
		const char *name;
		unsigned int fault;
	} faults[] = {
		{ "bad-num-buffers=zero", VSOCK_TEST_FAULT_NUMBUF_ZERO },
		{ "bad-num-buffers=over", VSOCK_TEST_FAULT_NUMBUF_OVER },
		{ "bad-num-buffers=ring", VSOCK_TEST_FAULT_NUMBUF_RING },
		{ "bad-hdr-len=over", VSOCK_TEST_FAULT_LEN_OVER },
		{ "bad-hdr-len=under", VSOCK_TEST_FAULT_LEN_UNDER },
	};
	const char *comma = strchr(arg, ',');
	size_t len = comma ? (size_t)(comma - arg) : strlen(arg);
	unsigned int i;
	uint64_t v;

	for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		if (strlen(faults[i].name) == len && !strncmp(arg, faults[i].name, len))
			break;
	if (i == sizeof(faults) / sizeof(faults[0]))
		return -EINVAL;
	cfg->test_fault = faults[i].fault;
	cfg->test_fault_port = 0;
	if (comma) {
		if (strncmp(comma + 1, "port=", 5) || parse_u64(comma + 6, UINT32_MAX, &v) || !v)
			return -EINVAL;
		cfg->test_fault_port = (uint32_t)v;
	}
	return 0;
}

/* One served guest: its device, vhost-user backend and listening socket. */
struct guest {
	const char *sock_path;
	const char *uds_path; /* NULL: no host side */
	const char *group; /* NULL: the default group */
	uint64_t cid;
	struct vsock_dev *dev;
	struct vu_backend *vb;
	int listen_fd;
	pthread_t thread;
	bool running;
	int stop_fd; /* eventfd: readable once the process stops */
	int fail_fd; /* eventfd: written when this guest's server fails */
	int ret; /* vu_server_serve() result */
};

/*
 * Posted once by each guest's server thread when its filter is in (or could
 * not be installed): the main thread enters its own filter only after every
 * server thread has entered its, so the first "vu-main" thread is always a
 * server thread (the test hook names the first thread of a type).
 */
static sem_t filtered;

#define MAX_GUESTS 64

static struct guest guests[MAX_GUESTS];
static unsigned int n_guests;
static bool multi_form; /* --guest given: counters name the CID */

static void print_dev_counters(const struct guest *g)
{
	struct vsock_dev_counters c;
	char who[40] = "";

	if (multi_form)
		snprintf(who, sizeof(who), " cid %" PRIu64, g->cid);
	vsock_dev_get_counters(g->dev, &c);
	fprintf(stderr,
		"skiff-vsock:%s counters: tx_pkts %" PRIu64 " tx_bytes %" PRIu64 " rx_pkts %" PRIu64
		" rx_bytes %" PRIu64 " kicks %" PRIu64 " irqs_sent %" PRIu64
		" irqs_suppressed %" PRIu64 " conn_resets %" PRIu64 " dropped_pkts %" PRIu64
		" malformed_pkts %" PRIu64 " conns_opened %" PRIu64 " conns_closed %" PRIu64
		" dev_resets %" PRIu64 "\n",
		who, c.tx_pkts, c.tx_bytes, c.rx_pkts, c.rx_bytes, c.kicks, c.irqs_sent,
		c.irqs_suppressed, c.conn_resets, c.dropped_pkts, c.malformed_pkts, c.conns_opened,
		c.conns_closed, c.dev_resets);
	fprintf(stderr, "skiff-vsock:%s rx_chains_max %" PRIu64 "\n", who, c.rx_chains_max);
}

/* SIGUSR1: print the device counters (thread safe), keep running. */
static void *usr1_main(void *arg)
{
	unsigned int i;
	sigset_t set;
	int sig;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sandbox_enter(SANDBOX_VU_SIGNAL)) {
		fputs("skiff-vsock: seccomp: cannot filter the SIGUSR1 thread\n", stderr);
		exit(1);
	}
	while (sigwait(&set, &sig) == 0)
		for (i = 0; i < n_guests; i++)
			print_dev_counters(&guests[i]);
	return NULL;
}

static void print_counters(const struct guest *g)
{
	struct vu_backend_stats s;
	char who[40] = "";

	if (multi_form)
		snprintf(who, sizeof(who), " cid %" PRIu64, g->cid);
	print_dev_counters(g);
	vu_backend_get_stats(g->vb, &s);
	fprintf(stderr,
		"skiff-vsock:%s vhost-user: msgs %" PRIu64 " rejected %" PRIu64
		" disconnects %" PRIu64 " dev_starts %" PRIu64 " mem_faults %" PRIu64 "\n",
		who, s.msgs, s.rejected, s.disconnects, s.dev_starts, s.mem_faults);
}

/*
 * A guest's server thread: one frontend at a time until the process stops.
 * Created by the main thread before that one is filtered (so no filter needs
 * clone for it); it enters the "vu-main" filter before it accepts anything.
 */
static void *guest_main(void *arg)
{
	struct guest *g = arg;
	uint64_t one = 1;
	char name[16];
	ssize_t r;

	/* Before the filter: glibc names a thread by writing /proc/.../comm. */
	snprintf(name, sizeof(name), "vu-%" PRIu64, g->cid);
	pthread_setname_np(pthread_self(), name);
	g->ret = sandbox_enter(SANDBOX_VU_MAIN);
	sem_post(&filtered);
	if (g->ret) {
		fprintf(stderr, "skiff-vsock: seccomp: server thread of cid %" PRIu64 ": %s\n",
			g->cid, strerror(-g->ret));
		goto fail;
	}
	g->ret = vu_server_serve(g->listen_fd, g->vb, g->stop_fd);
	if (!g->ret)
		return NULL;
	fprintf(stderr, "skiff-vsock: serving %s: %s\n", g->sock_path, strerror(-g->ret));
fail:
	r = write(g->fail_fd, &one, sizeof(one));
	(void)r;
	return NULL;
}

/*
 * Parse "socket=PATH,cid=N[,uds=PATH][,group=NAME]" into @g. @spec is
 * modified (commas become NULs) and must outlive @g.
 */
static int parse_guest(char *spec, struct guest *g)
{
	bool have_cid = false;
	char *save = NULL, *kv;
	uint64_t v;

	memset(g, 0, sizeof(*g));
	for (kv = strtok_r(spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *val = strchr(kv, '=');

		if (!val || val == kv || !val[1]) {
			fprintf(stderr, "skiff-vsock: --guest: '%s' is not key=value\n", kv);
			return -EINVAL;
		}
		*val++ = 0;
		if (!strcmp(kv, "socket") && !g->sock_path) {
			g->sock_path = val;
		} else if (!strcmp(kv, "uds") && !g->uds_path) {
			g->uds_path = val;
		} else if (!strcmp(kv, "group") && !g->group) {
			if (strlen(val) > VSOCK_GROUP_NAME_MAX) {
				fprintf(stderr, "skiff-vsock: --guest: group name over %d bytes\n",
					VSOCK_GROUP_NAME_MAX);
				return -EINVAL;
			}
			g->group = val;
		} else if (!strcmp(kv, "cid") && !have_cid) {
			if (parse_u64(val, UINT32_MAX - 1, &v) || v < 3) {
				fprintf(stderr,
					"skiff-vsock: --guest: bad cid '%s' (3 .. 4294967294)\n",
					val);
				return -EINVAL;
			}
			g->cid = v;
			have_cid = true;
		} else {
			fprintf(stderr, "skiff-vsock: --guest: unknown or repeated key '%s'\n", kv);
			return -EINVAL;
		}
	}
	if (!g->sock_path || !have_cid) {
		fprintf(stderr, "skiff-vsock: --guest needs socket= and cid=\n");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "cid", required_argument, NULL, 'c' },
		{ "uds", required_argument, NULL, 'u' },
		{ "guest", required_argument, NULL, 'g' },
		{ "rx-threads", required_argument, NULL, 'r' },
		{ "mrg-rxbuf", required_argument, NULL, 'm' },
		{ "rx-pkt-max", required_argument, NULL, 'p' },
		{ "conn-buf", required_argument, NULL, 'b' },
		{ "seccomp", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "test-fault", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct vsock_dev_config cfg = { .mrg_rxbuf = true };
	const char *sock_path = NULL, *uds_path = NULL;
	enum sandbox_mode sb_mode = SANDBOX_KILL;
	char *spec;
	bool verbose = false, have_cid = false;
	int sig_fd = -1, stop_fd = -1, fail_fd = -1, opt, ret, status = 1;
	uint64_t v, cid = 0, one = 1;
	unsigned int i, j;
	pthread_t usr1;
	sigset_t set;
	ssize_t wr;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sock_path = optarg;
			break;
		case 'c':
			if (parse_u64(optarg, UINT32_MAX - 1, &v) || v < 3) {
				fprintf(stderr, "skiff-vsock: bad --cid '%s' (3 .. 4294967294)\n",
					optarg);
				return EX_USAGE;
			}
			cid = v;
			have_cid = true;
			break;
		case 'u':
			uds_path = optarg;
			break;
		case 'g':
			if (n_guests == MAX_GUESTS) {
				fprintf(stderr, "skiff-vsock: at most %d guests\n", MAX_GUESTS);
				return EX_USAGE;
			}
			/* A copy: strtok_r would leave argv (what ps shows) cut up. */
			spec = strdup(optarg);
			if (!spec || parse_guest(spec, &guests[n_guests])) {
				free(spec); /* nothing points into it on failure */
				return EX_USAGE;
			}
			n_guests++;
			multi_form = true;
			break;
		case 'p':
			if (parse_u64(optarg, VIRTIO_VSOCK_MAX_PKT_BUF_SIZE, &v) || !v) {
				fprintf(stderr, "skiff-vsock: bad --rx-pkt-max '%s' (1 .. 65536)\n",
					optarg);
				return EX_USAGE;
			}
			cfg.rx_pkt_max = (uint32_t)v;
			break;
		case 'b':
			if (parse_u64(optarg, 64u << 20, &v) || v < 4096) {
				fprintf(stderr,
					"skiff-vsock: bad --conn-buf '%s' (4096 .. 67108864)\n",
					optarg);
				return EX_USAGE;
			}
			cfg.conn_buf_size = (uint32_t)v;
			break;
		case 'r':
			if (parse_u64(optarg, 256, &v)) {
				fprintf(stderr, "skiff-vsock: bad --rx-threads '%s' (0 .. 256)\n",
					optarg);
				return EX_USAGE;
			}
			cfg.rx_threads = (unsigned int)v;
			break;
		case 'm':
			if (!strcmp(optarg, "on")) {
				cfg.mrg_rxbuf = true;
			} else if (!strcmp(optarg, "off")) {
				cfg.mrg_rxbuf = false;
			} else {
				fprintf(stderr, "skiff-vsock: --mrg-rxbuf takes on or off\n");
				return EX_USAGE;
			}
			break;
		case 'S':
			if (sandbox_parse_mode(optarg, &sb_mode)) {
				fprintf(stderr, "skiff-vsock: --seccomp takes kill, log or off\n");
				return EX_USAGE;
			}
			break;
		case 'F':
			if (parse_test_fault(optarg, &cfg)) {
				fprintf(stderr, "skiff-vsock: bad --test-fault '%s' (see --help)\n",
					optarg);
				return EX_USAGE;
			}
			fprintf(stderr, "skiff-vsock: TEST ONLY: --test-fault %s\n", optarg);
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("skiff-vsock %s\n", SKIFF_VERSION);
			return 0;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return EX_USAGE;
	}
	if (multi_form && (sock_path || uds_path || have_cid)) {
		fprintf(stderr, "skiff-vsock: use either --guest or --socket/--cid/--uds\n");
		return EX_USAGE;
	}
	if (!multi_form) {
		if (!sock_path || !uds_path || !have_cid) {
			fprintf(stderr, "skiff-vsock: --socket, --cid and --uds are required\n");
			usage(stderr);
			return EX_USAGE;
		}
		guests[0] =
			(struct guest){ .sock_path = sock_path, .uds_path = uds_path, .cid = cid };
		n_guests = 1;
	}
	for (i = 0; i < n_guests; i++)
		for (j = 0; j < i; j++)
			if (!strcmp(guests[i].sock_path, guests[j].sock_path)) {
				fprintf(stderr, "skiff-vsock: socket %s given twice\n",
					guests[i].sock_path);
				return EX_USAGE;
			}

	for (i = 0; i < n_guests; i++)
		guests[i].listen_fd = -1; /* the cleanup at out: must not close fd 0 */

	/*
	 * Device threads inherit this mask: SIGTERM/SIGINT reach us through
	 * sig_fd only, SIGUSR1 through usr1_main().
	 */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigdelset(&set, SIGUSR1);
	sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	fail_fd = eventfd(0, EFD_CLOEXEC);
	if (sig_fd < 0 || stop_fd < 0 || fail_fd < 0) {
		perror("skiff-vsock: signalfd/eventfd");
		goto out;
	}
	if (sem_init(&filtered, 0, 0)) {
		perror("skiff-vsock: sem_init");
		goto out;
	}

	/*
	 * Filters compiled before any thread exists; every guest's device
	 * threads come from its spawner, each with the filter of its type.
	 */
	ret = sandbox_init(sb_mode, "skiff-vsock");
	if (ret) {
		fprintf(stderr, "skiff-vsock: seccomp %s: %s\n", sandbox_mode_name(sb_mode),
			strerror(-ret));
		goto out;
	}
	if (sb_mode != SANDBOX_OFF)
		cfg.spawn = sandbox_vsock_spawn;

	for (i = 0; i < n_guests; i++) {
		struct guest *g = &guests[i];
		struct vsock_dev_config dc = cfg;

		g->stop_fd = stop_fd;
		g->fail_fd = fail_fd;
		dc.guest_cid = g->cid;
		dc.uds_path = g->uds_path;
		dc.group = g->group;
		ret = vsock_dev_create(&dc, &g->dev);
		if (ret) {
			const char *hint =
				ret == -ENOTSOCK ?
					" (a file that is not a socket is there; remove it)" :
				ret == -EADDRINUSE ?
					(multi_form ?
						 " (CID taken in its group, or another process listens there)" :
						 " (another process listens there)") :
					"";

			if (multi_form)
				fprintf(stderr,
					"skiff-vsock: guest cid %" PRIu64 " (host side %s): %s%s\n",
					g->cid, g->uds_path ? g->uds_path : "none", strerror(-ret),
					hint);
			else
				fprintf(stderr, "skiff-vsock: device on %s: %s%s\n", g->uds_path,
					strerror(-ret), hint);
			goto out;
		}
		ret = vu_backend_create(g->dev, verbose, &g->vb);
		if (ret) {
			fprintf(stderr, "skiff-vsock: %s\n", strerror(-ret));
			goto out;
		}
		ret = vu_server_listen(g->sock_path, &g->listen_fd);
		if (ret) {
			fprintf(stderr, "skiff-vsock: listen on %s: %s%s\n", g->sock_path,
				strerror(-ret),
				ret == -ENOENT ?
					" (its directory does not exist; create it first)" :
				ret == -EEXIST ?
					" (a file that is not a socket is there; remove it)" :
				ret == -EADDRINUSE ? " (another process listens there)" :
						     "");
			goto out;
		}
		if (verbose)
			fprintf(stderr,
				"skiff-vsock: listening on %s, cid %" PRIu64
				", host side %s, group %s\n",
				g->sock_path, g->cid, g->uds_path ? g->uds_path : "(none)",
				g->group ? g->group : "(default)");
	}
	if (pthread_create(&usr1, NULL, usr1_main, NULL) == 0)
		pthread_detach(usr1);
	for (i = 0; i < n_guests; i++) {
		ret = pthread_create(&guests[i].thread, NULL, guest_main, &guests[i]);
		if (ret) {
			fprintf(stderr, "skiff-vsock: thread: %s\n", strerror(ret));
			goto out;
		}
		guests[i].running = true;
	}
	/*
	 * Set-up done and every server thread filtered (none serves a frontend
	 * before its own filter is in). What is left here: wait, then stop the
	 * servers, print counters, destroy the devices and unlink the socket
	 * files, all within the "vu-main" allowlist.
	 */
	for (i = 0; i < n_guests; i++)
		while (sem_wait(&filtered) && errno == EINTR)
			;
	ret = sandbox_enter(SANDBOX_VU_MAIN);
	if (ret) {
		fprintf(stderr, "skiff-vsock: seccomp: %s\n", strerror(-ret));
		goto out;
	}
	{
		struct pollfd p[2] = {
			{ .fd = sig_fd, .events = POLLIN },
			{ .fd = fail_fd, .events = POLLIN },
		};

		while (poll(p, 2, -1) < 0 && errno == EINTR)
			;
		status = p[1].revents ? 1 : 0;
	}
out:
	if (stop_fd >= 0) {
		wr = write(stop_fd, &one, sizeof(one));
		(void)wr;
	}
	for (i = 0; i < n_guests; i++)
		if (guests[i].running)
			pthread_join(guests[i].thread, NULL);
	for (i = 0; i < n_guests; i++) {
		struct guest *g = &guests[i];

		if (g->vb && g->dev && !status)
			print_counters(g);
		if (g->listen_fd >= 0) {
			close(g->listen_fd);
			unlink(g->sock_path);
		}
		vu_backend_destroy(g->vb);
	}
	for (i = 0; i < n_guests; i++)
		vsock_dev_destroy(guests[i].dev);
	if (sig_fd >= 0)
		close(sig_fd);
	if (stop_fd >= 0)
		close(stop_fd);
	if (fail_fd >= 0)
		close(fail_fd);
	return status;
}
