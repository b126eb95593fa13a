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

#include "skiff/cli.h"
#include "skiff/sandbox_vsock.h"
#include "skiff/vhost_user.h"
#include "skiff/vsock_dev.h"

#define TOOL "skiff-vsock"
#define MAX_GUESTS 64
#define GUEST_FORM "socket=PATH,cid=N[,uds=PATH][,group=NAME][,dgram=on|off]"
#define CID_VALID "give a CID from 3 to 4294967294 (0, 1 and 2 are reserved, 4294967295 means any)"

#ifdef SKIFF_TEST_HOOKS
/* Test-only fault injection: in SKIFF_TEST_HOOKS builds (the test build) only. */
#define TEST_FAULT_HELP                                                                 \
	"  --test-fault FAULT[,port=P]   TEST ONLY: with mergeable RX buffers, make\n"  \
	"                       every host-to-guest data packet (to guest port P,\n"    \
	"                       1 .. 4294967295, only, if given) lie in its header:\n"  \
	"                       FAULT is bad-num-buffers=zero|over|ring (num_buffers\n" \
	"                       0, buffers used + 1, RX queue size + 1) or\n"           \
	"                       bad-hdr-len=over|under (hdr.len one more or one\n"      \
	"                       less than the payload in the buffers)\n"
#else
#define TEST_FAULT_HELP ""
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: skiff-vsock --socket PATH --cid N --uds PATH [options]\n"
		"       skiff-vsock --guest " GUEST_FORM " ... [options]\n"
		"       skiff-vsock -h | --help | -V | --version\n"
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
		"Each option that takes a value at most once (--guest is repeatable);\n"
		"socket directories must exist.\n"
		"  --socket PATH        vhost-user socket to listen on (one guest),\n"
		"                       at most 107 bytes\n"
		"  --cid N              guest CID, 3 .. 4294967294\n"
		"  --uds PATH           host Unix socket path, at most 96 bytes\n"
		"  --guest SPEC         one more guest (repeatable, at most %d, instead of\n"
		"                       the three above): " GUEST_FORM ",\n"
		"                       items separated by single commas, each key once;\n"
		"                       without uds the guest has no host side; guests of\n"
		"                       one group (default: all) reach each other, CIDs\n"
		"                       unique within a group; group: at most %d bytes\n"
		"  --rx-threads N       RX pump threads per guest, 1 .. %u (default: one\n"
		"                       per online core, at most 4)\n"
		"  --ctl-thread auto|own|pump0  where each device's control work runs:\n"
		"                       a thread of its own, or RX pump 0's thread\n"
		"                       (default auto: pump0 with 2 online CPUs or fewer)\n"
		"  --mrg-rxbuf on|off   offer mergeable RX buffers (default on)\n"
		"  --dgram on|off       offer datagrams (VIRTIO_VSOCK_F_DGRAM, default off;\n"
		"                       --guest dgram= sets it per guest); host side:\n"
		"                       AF_UNIX SOCK_DGRAM at <uds>_dgram_<P> (host port P),\n"
		"                       <uds>_dgram_g<Q> (guest port Q) and the gateway\n"
		"                       <uds>_dgram; uds then at most 89 bytes\n"
		"  --rx-pkt-max BYTES   cap the payload of each host-to-guest RW packet,\n"
		"                       1 .. 65536, K suffix allowed (default: no cap\n"
		"                       beyond 64 KiB)\n"
		"  --conn-buf BYTES     receive buffer advertised per connection (buf_alloc),\n"
		"                       4096 .. 64M, K/M suffixes allowed (default 256K)\n"
		"  --seccomp kill|log|off  seccomp filter on every thread (default kill:\n"
		"                       a forbidden system call ends the process with a\n"
		"                       message naming the thread and the call; log:\n"
		"                       the kernel logs it and lets it run)\n"
		"  --verbose            log every vhost-user request\n" TEST_FAULT_HELP
		"  -h, --help           this text\n"
		"  -V, --version        the version\n"
		"\n"
		"Global options apply to every guest.\n"
		"SIGTERM or SIGINT: disconnect, remove the socket files, print counters, exit 0.\n"
		"SIGUSR1: print the device counters.\n"
		"Exit status: 0 after SIGTERM/SIGINT, 64 (EX_USAGE, as skiff) for a bad\n"
		"command line (one line on stderr names the option, the value and what is\n"
		"valid), 1 for any other error.\n",
		MAX_GUESTS, VSOCK_GROUP_NAME_MAX, VSOCK_MAX_RX_THREADS);
}

#ifdef SKIFF_TEST_HOOKS
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
		if (strncmp(comma + 1, "port=", 5) || cli_parse_uint(comma + 6, 1, UINT32_MAX, &v))
			return -EINVAL;
		cfg->test_fault_port = (uint32_t)v;
	}
	return 0;
}
#endif

/* One served guest: its device, vhost-user backend and listening socket. */
struct guest {
	const char *sock_path;
	const char *uds_path; /* NULL: no host side */
	const char *group; /* NULL: the default group */
	uint64_t cid;
	int dgram; /* --guest dgram=: 1 on, 0 off, -1 not given (--dgram decides) */
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
	fprintf(stderr,
		"skiff-vsock:%s rx_chains_max %" PRIu64 " conns_open %" PRIu64 " host_fds %" PRIu64
		" conns_refused %" PRIu64 " stray_pkts %" PRIu64 " rx_pkt_limit_stalls %" PRIu64
		"\n",
		who, c.rx_chains_max, c.conns_open, c.host_fds, c.conns_refused, c.stray_pkts,
		c.rx_pkt_limit_stalls);
	fprintf(stderr,
		"skiff-vsock:%s dgram_tx_pkts %" PRIu64 " dgram_tx_bytes %" PRIu64
		" dgram_tx_drop_malformed %" PRIu64 " dgram_tx_drop_no_dest %" PRIu64
		" dgram_tx_drop_full %" PRIu64 " dgram_tx_drop_err %" PRIu64
		" dgram_rx_pkts %" PRIu64 " dgram_rx_bytes %" PRIu64
		" dgram_rx_drop_no_buf %" PRIu64 " dgram_rx_drop_too_big %" PRIu64
		" dgram_rx_drop_bad_addr %" PRIu64 " dgram_rx_drop_err %" PRIu64
		" dgram_rx_drop_no_dest %" PRIu64 "\n",
		who, c.dgram_tx_pkts, c.dgram_tx_bytes, c.dgram_tx_drop_malformed,
		c.dgram_tx_drop_no_dest, c.dgram_tx_drop_full, c.dgram_tx_drop_err, c.dgram_rx_pkts,
		c.dgram_rx_bytes, c.dgram_rx_drop_no_buf, c.dgram_rx_drop_too_big,
		c.dgram_rx_drop_bad_addr, c.dgram_rx_drop_err, c.dgram_rx_drop_no_dest);
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

enum { GUEST_SOCKET, GUEST_CID, GUEST_UDS, GUEST_GROUP, GUEST_DGRAM };

/*
 * Parse GUEST_FORM into @g. @spec is a copy of @orig, cut up in place, that
 * must outlive @g. Return: 0; -EINVAL after one line naming the problem.
 */
static int parse_guest(char *spec, const char *orig, struct guest *g)
{
	static const char *const keys[] = { "socket", "cid", "uds", "group", "dgram", NULL };
	struct cli_kv kv = { .keys = keys };

	memset(g, 0, sizeof(*g));
	if (cli_kv_parse(spec, &kv)) {
		cli_kv_report(TOOL, "--guest", orig, &kv, GUEST_FORM);
		return -EINVAL;
	}
	if (!kv.val[GUEST_SOCKET] || !kv.val[GUEST_CID]) {
		fprintf(stderr, "skiff-vsock: --guest '%s' lacks %s; give " GUEST_FORM "\n", orig,
			!kv.val[GUEST_SOCKET] ? "socket=PATH" : "cid=N");
		return -EINVAL;
	}
	if (cli_parse_uint(kv.val[GUEST_CID], 3, UINT32_MAX - 1, &g->cid)) {
		cli_bad_value(TOOL, "--guest cid", kv.val[GUEST_CID], CID_VALID);
		return -EINVAL;
	}
	if (kv.val[GUEST_GROUP] && strlen(kv.val[GUEST_GROUP]) > VSOCK_GROUP_NAME_MAX) {
		cli_bad_value(TOOL, "--guest group", kv.val[GUEST_GROUP],
			      "%zu bytes; give a name of at most %d bytes",
			      strlen(kv.val[GUEST_GROUP]), VSOCK_GROUP_NAME_MAX);
		return -EINVAL;
	}
	if (kv.val[GUEST_DGRAM] && strcmp(kv.val[GUEST_DGRAM], "on") &&
	    strcmp(kv.val[GUEST_DGRAM], "off")) {
		cli_bad_value(TOOL, "--guest dgram", kv.val[GUEST_DGRAM],
			      "give on or off (default: --dgram, off)");
		return -EINVAL;
	}
	g->dgram = kv.val[GUEST_DGRAM] ? !strcmp(kv.val[GUEST_DGRAM], "on") : -1;
	g->sock_path = kv.val[GUEST_SOCKET];
	g->uds_path = kv.val[GUEST_UDS];
	g->group = kv.val[GUEST_GROUP];
	return 0;
}

/* What the command line sets besides guests[]. */
struct args {
	struct vsock_dev_config cfg;
	enum sandbox_mode sb_mode;
	bool verbose;
	const char *sock_path, *uds_path, *cid; /* as given; NULL: not given */
	uint64_t cid_num;
};

/*
 * One option other than --guest, -h and -V, into @a.
 * Return: 0; -EINVAL after a message.
 */
static int parse_option(int c, const char *arg, struct args *a)
{
	struct vsock_dev_config *cfg = &a->cfg;
	uint64_t v;

	switch (c) {
	case 's':
		a->sock_path = arg;
		break;
	case 'u':
		a->uds_path = arg;
		break;
	case 'c':
		if (cli_parse_uint(arg, 3, UINT32_MAX - 1, &v)) {
			cli_bad_value(TOOL, "--cid", arg, CID_VALID);
			return -EINVAL;
		}
		a->cid = arg;
		a->cid_num = v;
		break;
	case 'p':
		if (cli_parse_size(arg, &v) || !v || v > VIRTIO_VSOCK_MAX_PKT_BUF_SIZE) {
			cli_bad_value(TOOL, "--rx-pkt-max", arg,
				      "give a payload cap in bytes from 1 to 65536 (64K)");
			return -EINVAL;
		}
		cfg->rx_pkt_max = (uint32_t)v;
		break;
	case 'b':
		if (cli_parse_size(arg, &v) || v < 4096 || v > (64u << 20)) {
			cli_bad_value(
				TOOL, "--conn-buf", arg,
				"give a buffer size in bytes from 4096 (4K) to 67108864 (64M)");
			return -EINVAL;
		}
		cfg->conn_buf_size = (uint32_t)v;
		break;
	case 'r':
		if (cli_parse_uint(arg, 1, VSOCK_MAX_RX_THREADS, &v)) {
			cli_bad_value(TOOL, "--rx-threads", arg,
				      "give a number of RX pump threads from 1 to %u, or leave "
				      "--rx-threads out for the default (one per online core, at "
				      "most 4)",
				      VSOCK_MAX_RX_THREADS);
			return -EINVAL;
		}
		cfg->rx_threads = (unsigned int)v;
		break;
	case 'T':
		if (!strcmp(arg, "auto")) {
			cfg->ctl_thread = VSOCK_CTL_AUTO;
		} else if (!strcmp(arg, "own")) {
			cfg->ctl_thread = VSOCK_CTL_OWN;
		} else if (!strcmp(arg, "pump0")) {
			cfg->ctl_thread = VSOCK_CTL_ON_PUMP0;
		} else {
			cli_bad_value(TOOL, "--ctl-thread", arg,
				      "give auto, own or pump0 (default auto: pump0 on machines "
				      "of 2 CPUs or fewer)");
			return -EINVAL;
		}
		break;
	case 'm':
		if (strcmp(arg, "on") && strcmp(arg, "off")) {
			cli_bad_value(TOOL, "--mrg-rxbuf", arg, "give on or off (default on)");
			return -EINVAL;
		}
		cfg->mrg_rxbuf = !strcmp(arg, "on");
		break;
	case 'd':
		if (strcmp(arg, "on") && strcmp(arg, "off")) {
			cli_bad_value(TOOL, "--dgram", arg, "give on or off (default off)");
			return -EINVAL;
		}
		cfg->dgram = !strcmp(arg, "on");
		break;
	case 'S':
		if (sandbox_parse_mode(arg, &a->sb_mode)) {
			cli_bad_value(TOOL, "--seccomp", arg, "give kill, log or off");
			return -EINVAL;
		}
		break;
#ifdef SKIFF_TEST_HOOKS
	case 'F':
		if (parse_test_fault(arg, cfg)) {
			cli_bad_value(TOOL, "--test-fault", arg,
				      "give bad-num-buffers=zero|over|ring or "
				      "bad-hdr-len=over|under, optionally with ,port=P (P from 1 "
				      "to 4294967295)");
			return -EINVAL;
		}
		fprintf(stderr, "skiff-vsock: TEST ONLY: --test-fault %s\n", arg);
		break;
#endif
	case 'v':
		a->verbose = true;
		break;
	}
	return 0;
}

static bool same_path(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* A socket path @g and @h (possibly the same guest) would both bind, or NULL. */
static const char *shared_path(const struct guest *g, const struct guest *h)
{
	if (g != h && same_path(g->sock_path, h->sock_path))
		return g->sock_path;
	if (g != h && same_path(g->uds_path, h->uds_path))
		return g->uds_path;
	if (same_path(g->sock_path, h->uds_path))
		return g->sock_path;
	if (same_path(g->uds_path, h->sock_path))
		return g->uds_path;
	return NULL;
}

/*
 * What parsing alone cannot see: the form (--guest or --socket/--cid/--uds),
 * paths that cannot be bound, the same socket, host socket or CID (within
 * a group) given to two guests. Return: 0; -EINVAL after a message.
 */
static int check_guests(const struct args *a)
{
	unsigned int i, j;

	if (multi_form && (a->sock_path || a->uds_path || a->cid)) {
		fprintf(stderr,
			"skiff-vsock: --guest does not mix with %s; give every guest as "
			"--guest " GUEST_FORM ", or one guest as --socket, --cid and --uds\n",
			a->sock_path ? "--socket" :
			a->cid	     ? "--cid" :
				       "--uds");
		return -EINVAL;
	}
	if (!multi_form) {
		if (!a->sock_path || !a->uds_path || !a->cid) {
			fprintf(stderr,
				"skiff-vsock: --socket, --cid and --uds are required (missing:%s%s%s); "
				"or give --guest " GUEST_FORM " (see --help)\n",
				a->sock_path ? "" : " --socket", a->cid ? "" : " --cid",
				a->uds_path ? "" : " --uds");
			return -EINVAL;
		}
		guests[0] = (struct guest){ .sock_path = a->sock_path,
					    .uds_path = a->uds_path,
					    .cid = a->cid_num,
					    .dgram = -1 };
		n_guests = 1;
	}
	for (i = 0; i < n_guests; i++) {
		const struct guest *g = &guests[i];

		if (cli_check_sock_path(TOOL, "vhost-user socket",
					multi_form ? "--guest socket=PATH" : "--socket PATH",
					g->sock_path, 0) ||
		    (g->uds_path &&
		     cli_check_sock_path(TOOL, "host socket",
					 multi_form ? "--guest uds=PATH" : "--uds PATH",
					 g->uds_path, 11)))
			return -EINVAL;
		for (j = 0; j <= i; j++) {
			const struct guest *h = &guests[j];
			const char *p = shared_path(g, h);

			if (p) {
				fprintf(stderr,
					"skiff-vsock: path '%s' is given twice (as socket or uds "
					"of %s); give every socket its own path\n",
					p, g == h ? "one guest" : "two guests");
				return -EINVAL;
			}
			if (g == h)
				break;
			if (g->cid == h->cid &&
			    !strcmp(g->group ? g->group : "", h->group ? h->group : "")) {
				fprintf(stderr,
					"skiff-vsock: --guest: cid %" PRIu64
					" given to two guests of "
					"the %s%s group (sockets %s and %s); CIDs are unique within a "
					"group: give another cid or group\n",
					g->cid, g->group ? "" : "default", g->group ? g->group : "",
					h->sock_path, g->sock_path);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/*
 * The command line into @a and guests[]. Return: 0 to run; 1 after --help
 * or --version (exit 0); -EINVAL after one line naming the mistake.
 */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "cid", required_argument, NULL, 'c' },
		{ "uds", required_argument, NULL, 'u' },
		{ "guest", required_argument, NULL, 'g' },
		{ "rx-threads", required_argument, NULL, 'r' },
		{ "ctl-thread", required_argument, NULL, 'T' },
		{ "mrg-rxbuf", required_argument, NULL, 'm' },
		{ "dgram", required_argument, NULL, 'd' },
		{ "rx-pkt-max", required_argument, NULL, 'p' },
		{ "conn-buf", required_argument, NULL, 'b' },
		{ "seccomp", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
#ifdef SKIFF_TEST_HOOKS
		{ "test-fault", required_argument, NULL, 'F' },
#endif
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *seen[256] = { NULL };
	char *spec;
	int c;

	opterr = 0; /* getopt's own messages would name argv[0], not the tool */
	while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("skiff-vsock %s\n", SKIFF_VERSION);
			return 1;
		case '?':
		case ':':
			cli_getopt_error(TOOL, c, argv, opts);
			return -EINVAL;
		case 'g':
			if (n_guests == MAX_GUESTS) {
				fprintf(stderr,
					"skiff-vsock: --guest given more than %d times; "
					"one process serves at most %d guests\n",
					MAX_GUESTS, MAX_GUESTS);
				return -EINVAL;
			}
			/* A copy: cutting it up would leave argv (what ps shows) cut up. */
			spec = strdup(optarg);
			if (!spec || parse_guest(spec, optarg, &guests[n_guests])) {
				free(spec); /* nothing points into it on failure */
				return -EINVAL;
			}
			n_guests++;
			multi_form = true;
			break;
		default:
			if ((c != 'v' && cli_once(TOOL, opts, seen, c, optarg, NULL)) ||
			    parse_option(c, optarg, a))
				return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr,
			"skiff-vsock: unexpected argument '%s'; skiff-vsock takes options only "
			"(see --help)\n",
			argv[optind]);
		return -EINVAL;
	}
	return check_guests(a);
}

int main(int argc, char **argv)
{
	struct args a = { .cfg = { .mrg_rxbuf = true }, .sb_mode = SANDBOX_KILL };
	int sig_fd = -1, stop_fd = -1, fail_fd = -1, ret, status = 1;
	uint64_t one = 1;
	unsigned int i;
	pthread_t usr1;
	sigset_t set;
	ssize_t wr;

	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : EX_USAGE;

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
	ret = sandbox_init(a.sb_mode, "skiff-vsock");
	if (ret) {
		fprintf(stderr, "skiff-vsock: seccomp %s: %s\n", sandbox_mode_name(a.sb_mode),
			strerror(-ret));
		goto out;
	}
	if (a.sb_mode != SANDBOX_OFF)
		a.cfg.spawn = sandbox_vsock_spawn;

	for (i = 0; i < n_guests; i++) {
		struct guest *g = &guests[i];
		struct vsock_dev_config dc = a.cfg;

		g->stop_fd = stop_fd;
		g->fail_fd = fail_fd;
		dc.guest_cid = g->cid;
		dc.uds_path = g->uds_path;
		dc.group = g->group;
		if (g->dgram >= 0)
			dc.dgram = g->dgram;
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
		ret = vu_backend_create(g->dev, a.verbose, &g->vb);
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
				ret == -ENOTSOCK ?
					" (a file that is not a socket is there; remove it)" :
				ret == -EADDRINUSE ? " (another process listens there)" :
						     "");
			goto out;
		}
		if (a.verbose)
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
