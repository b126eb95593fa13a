// SPDX-License-Identifier: MIT
/*
 * skiff-vsock: the skiff virtio-vsock device model as a vhost-user backend,
 * for QEMU's vhost-user-vsock-device and user-mode Linux's virtio_uml.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "skiff/vhost_user.h"
#include "skiff/vsock_dev.h"

static void usage(FILE *f)
{
	fputs("usage: skiff-vsock --socket PATH --cid N --uds PATH [options]\n"
	      "\n"
	      "Serve skiff's virtio-vsock device over vhost-user. skiff-vsock listens\n"
	      "on --socket; a frontend (QEMU vhost-user-vsock-device, UML virtio_uml)\n"
	      "connects. One frontend is served at a time; a frontend that connects\n"
	      "while another is served replaces it (a rebooting UML guest reconnects\n"
	      "without closing its old socket). Host side: Firecracker-style\n"
	      "hybrid sockets (connect to --uds and write \"CONNECT <port>\\n\"; guest\n"
	      "connections to port P go to <uds>_<P>).\n"
	      "\n"
	      "  --socket PATH        vhost-user socket to listen on\n"
	      "  --cid N              guest CID (3 .. 2^32-2)\n"
	      "  --uds PATH           host Unix socket path\n"
	      "  --rx-threads N       RX pump threads (default: from the core count)\n"
	      "  --mrg-rxbuf on|off   offer mergeable RX buffers (default on)\n"
	      "  --rx-pkt-max BYTES   cap the payload of each host-to-guest RW packet\n"
	      "                       (1 .. 65536; default: no cap beyond 64 KiB)\n"
	      "  --conn-buf BYTES     receive buffer advertised per connection (buf_alloc),\n"
	      "                       4096 .. 64 MiB (default 256 KiB)\n"
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
	      "SIGTERM or SIGINT: disconnect, remove both sockets, print counters, exit 0.\n"
	      "SIGUSR1: print the device counters.\n",
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

static void print_dev_counters(struct vsock_dev *dev)
{
	struct vsock_dev_counters c;

	vsock_dev_get_counters(dev, &c);
	fprintf(stderr,
		"skiff-vsock: counters: tx_pkts %" PRIu64 " tx_bytes %" PRIu64 " rx_pkts %" PRIu64
		" rx_bytes %" PRIu64 " kicks %" PRIu64 " irqs_sent %" PRIu64
		" irqs_suppressed %" PRIu64 " conn_resets %" PRIu64 " dropped_pkts %" PRIu64
		" malformed_pkts %" PRIu64 " conns_opened %" PRIu64 " conns_closed %" PRIu64
		" dev_resets %" PRIu64 "\n",
		c.tx_pkts, c.tx_bytes, c.rx_pkts, c.rx_bytes, c.kicks, c.irqs_sent,
		c.irqs_suppressed, c.conn_resets, c.dropped_pkts, c.malformed_pkts, c.conns_opened,
		c.conns_closed, c.dev_resets);
	fprintf(stderr, "skiff-vsock: rx_chains_max %" PRIu64 "\n", c.rx_chains_max);
}

/* SIGUSR1: print the device counters (thread safe), keep running. */
static void *usr1_main(void *arg)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while (sigwait(&set, &sig) == 0)
		print_dev_counters(arg);
	return NULL;
}

static void print_counters(struct vsock_dev *dev, struct vu_backend *vb)
{
	struct vu_backend_stats s;

	print_dev_counters(dev);
	vu_backend_get_stats(vb, &s);
	fprintf(stderr,
		"skiff-vsock: vhost-user: msgs %" PRIu64 " rejected %" PRIu64
		" disconnects %" PRIu64 " dev_starts %" PRIu64 "\n",
		s.msgs, s.rejected, s.disconnects, s.dev_starts);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "cid", required_argument, NULL, 'c' },
		{ "uds", required_argument, NULL, 'u' },
		{ "rx-threads", required_argument, NULL, 'r' },
		{ "mrg-rxbuf", required_argument, NULL, 'm' },
		{ "rx-pkt-max", required_argument, NULL, 'p' },
		{ "conn-buf", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "test-fault", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct vsock_dev_config cfg = { .mrg_rxbuf = true };
	const char *sock_path = NULL;
	struct vu_backend *vb = NULL;
	struct vsock_dev *dev = NULL;
	bool verbose = false, have_cid = false;
	int listen_fd = -1, sig_fd = -1, opt, ret, status = 1;
	pthread_t usr1;
	uint64_t v;
	sigset_t set;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sock_path = optarg;
			break;
		case 'c':
			if (parse_u64(optarg, UINT32_MAX - 1, &v) || v < 3) {
				fprintf(stderr, "skiff-vsock: bad --cid '%s' (3 .. 4294967294)\n",
					optarg);
				return 2;
			}
			cfg.guest_cid = v;
			have_cid = true;
			break;
		case 'u':
			cfg.uds_path = optarg;
			break;
		case 'p':
			if (parse_u64(optarg, VIRTIO_VSOCK_MAX_PKT_BUF_SIZE, &v) || !v) {
				fprintf(stderr, "skiff-vsock: bad --rx-pkt-max '%s' (1 .. 65536)\n",
					optarg);
				return 2;
			}
			cfg.rx_pkt_max = (uint32_t)v;
			break;
		case 'b':
			if (parse_u64(optarg, 64u << 20, &v) || v < 4096) {
				fprintf(stderr,
					"skiff-vsock: bad --conn-buf '%s' (4096 .. 67108864)\n",
					optarg);
				return 2;
			}
			cfg.conn_buf_size = (uint32_t)v;
			break;
		case 'r':
			if (parse_u64(optarg, 256, &v)) {
				fprintf(stderr, "skiff-vsock: bad --rx-threads '%s' (0 .. 256)\n",
					optarg);
				return 2;
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
				return 2;
			}
			break;
		case 'F':
			if (parse_test_fault(optarg, &cfg)) {
				fprintf(stderr, "skiff-vsock: bad --test-fault '%s' (see --help)\n",
					optarg);
				return 2;
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
			return 2;
		}
	}
	if (optind != argc || !sock_path || !cfg.uds_path || !have_cid) {
		fprintf(stderr, "skiff-vsock: --socket, --cid and --uds are required\n");
		usage(stderr);
		return 2;
	}

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
	if (sig_fd < 0) {
		perror("skiff-vsock: signalfd");
		return 1;
	}

	ret = vsock_dev_create(&cfg, &dev);
	if (ret) {
		fprintf(stderr, "skiff-vsock: device on %s: %s\n", cfg.uds_path, strerror(-ret));
		goto out;
	}
	if (pthread_create(&usr1, NULL, usr1_main, dev) == 0)
		pthread_detach(usr1);
	ret = vu_backend_create(dev, verbose, &vb);
	if (ret) {
		fprintf(stderr, "skiff-vsock: %s\n", strerror(-ret));
		goto out;
	}
	ret = vu_server_listen(sock_path, &listen_fd);
	if (ret) {
		fprintf(stderr, "skiff-vsock: listen on %s: %s\n", sock_path, strerror(-ret));
		goto out;
	}
	if (verbose)
		fprintf(stderr, "skiff-vsock: listening on %s, cid %" PRIu64 ", host side %s\n",
			sock_path, cfg.guest_cid, cfg.uds_path);
	ret = vu_server_serve(listen_fd, vb, sig_fd);
	if (ret) {
		fprintf(stderr, "skiff-vsock: serving %s: %s\n", sock_path, strerror(-ret));
		goto out;
	}
	print_counters(dev, vb);
	status = 0;
out:
	if (listen_fd >= 0) {
		close(listen_fd);
		unlink(sock_path);
	}
	vu_backend_destroy(vb);
	vsock_dev_destroy(dev);
	close(sig_fd);
	return status;
}
