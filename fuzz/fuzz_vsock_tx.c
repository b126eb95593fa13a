// SPDX-License-Identifier: MIT
/*
 * Harness: the device's TX path, guest to host, through its real code:
 * vq_pop() chain walking, pkt_parse_tx() header checks, the connection
 * table and state machine (conn_handle_tx(): REQUEST, RESPONSE, RW with
 * credit and backlog, SHUTDOWN, RST, CREDIT_*), guest-initiated connects to
 * host Unix sockets, host-initiated CONNECT lines, and the credit updates
 * the control thread puts on the RX queue at once (rx_send_hdr_now()).
 *
 * dev_ctl.c is compiled into this file so that its static process_tx(),
 * accept_all() and handle_pending() run synchronously on the fuzzer's
 * thread, standing in for the control thread (no pump threads run; what
 * they would send stays queued and is dropped by vsock_dev_reset()).
 *
 * Guest memory: R0 [0x0, 0x1000), R1 [0x1000, 0x2000) adjacent to it, R2
 * [0x8000, 0x8400) after a hole, each its own heap block. Rings in R0,
 * what the driver writes first: TX avail 0x000, TX desc 0x030, RX avail
 * 0x130, RX desc 0x160, TX used 0x260, RX used 0x2e8; packets anywhere
 * (0x370 up is free).
 *
 * Input: byte 0 = features (bit 0 EVENT_IDX, 1 INDIRECT_DESC, 2 SEQPACKET,
 * 3 MRG_RXBUF); byte 1 = log2 TX queue size (bits 0-2, % 5) and log2 RX
 * queue size (bits 4-6, % 5); byte 2 bit 0 = a host client connects first
 * and sends "CONNECT <port>\n" with <port> = bytes 3-6; then R0, R1, R2.
 * The guest CID is 3; host listeners wait on <uds>_1024 (stream) and
 * <uds>_1025 (seqpacket).
 *
 * Checked besides ASan/UBSan/LSan: every popped chain is returned on the
 * TX used ring (the used index advances by exactly the chains taken),
 * unless the ring was found broken.
 */
#include "../devices/virtio_vsock/src/dev_ctl.c"

#include <sys/un.h>

#include "fuzz_input.h"

#define R_N 3
static const uint64_t r_gpa[R_N] = { 0x0, 0x1000, 0x8000 };
static const uint64_t r_size[R_N] = { 0x1000, 0x1000, 0x400 };

#define TX_AVAIL 0x000
#define TX_DESC 0x030
#define RX_AVAIL 0x130
#define RX_DESC 0x160
#define TX_USED 0x260
#define RX_USED 0x2e8

static struct vsock_dev *g_dev;
static int g_listen[2] = { -1, -1 };

static void notify_cb(void *opaque, unsigned int q)
{
}

static int listen_on(const char *base, uint32_t port, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", base, port);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		perror("fuzz: host listener");
		abort();
	}
	return fd;
}

static void setup_once(void)
{
	static char path[108];
	struct vsock_dev_config cfg = {
		.guest_cid = 3,
		.uds_path = path,
		.rx_threads = 1,
		.mrg_rxbuf = true,
		.conn_buf_size = 4096, /* small: credit and backlog limits within 8 KiB */
		.notify = notify_cb,
	};

	snprintf(path, sizeof(path), "%s/v.sock", fz_scratch_dir());
	if (vsock_dev_create(&cfg, &g_dev)) {
		fprintf(stderr, "fuzz: vsock_dev_create failed\n");
		abort();
	}
	g_listen[0] = listen_on(path, 1024, SOCK_STREAM);
	g_listen[1] = listen_on(path, 1025, SOCK_SEQPACKET);
	tls_ctl_dev = g_dev; /* this thread plays the control thread */
}

/* Host clients of guest-initiated connections: accept and close them all. */
static void drop_host_peers(void)
{
	unsigned int i;
	int fd;

	for (i = 0; i < 2; i++)
		while ((fd = accept4(g_listen[i], NULL, NULL, SOCK_CLOEXEC)) >= 0)
			close(fd);
}

/* A host client on uds_path sends "CONNECT <port>\n"; the device reads it. */
static int host_client(struct vsock_dev *dev, uint32_t port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[32];
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", dev->uds_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("fuzz: host client");
		abort();
	}
	n = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	FZ_CHECK(write(fd, line, (size_t)n) == n);
	accept_all(dev);
	while (dev->pending)
		handle_pending(dev, dev->pending);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vsock_mem_region regs[R_N];
	struct vsock_vring_config tx = { .desc_gpa = TX_DESC,
					 .avail_gpa = TX_AVAIL,
					 .used_gpa = TX_USED,
					 .kick_fd = -1,
					 .call_fd = -1 };
	struct vsock_vring_config rx = { .desc_gpa = RX_DESC,
					 .avail_gpa = RX_AVAIL,
					 .used_gpa = RX_USED,
					 .kick_fd = -1,
					 .call_fd = -1 };
	uint64_t features = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_VSOCK_F_STREAM);
	struct vsock_dev_counters before, after;
	uint8_t *hva[R_N], flags, sizes, host;
	uint32_t host_port;
	uint16_t used0;
	struct vsock_dev *dev;
	unsigned int i;
	int client = -1;
	struct fz f;

	if (!g_dev)
		setup_once();
	dev = g_dev;
	fz_init(&f, data, size);
	flags = fz_u8(&f);
	sizes = fz_u8(&f);
	host = fz_u8(&f);
	host_port = fz_u32(&f);
	if (flags & 1)
		features |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (flags & 2)
		features |= 1ull << VIRTIO_RING_F_INDIRECT_DESC;
	if (flags & 4)
		features |= 1ull << VIRTIO_VSOCK_F_SEQPACKET;
	if (flags & 8)
		features |= 1ull << VIRTIO_VSOCK_F_MRG_RXBUF;
	tx.num = (uint16_t)(1u << ((sizes & 7) % 5));
	rx.num = (uint16_t)(1u << (((sizes >> 4) & 7) % 5));
	for (i = 0; i < R_N; i++) {
		hva[i] = malloc(r_size[i]);
		if (!hva[i])
			abort();
		fz_bytes(&f, hva[i], r_size[i]);
		regs[i] = (struct vsock_mem_region){ r_gpa[i], r_size[i], hva[i] };
	}

	FZ_CHECK(vsock_dev_set_mem(dev, regs, R_N) == 0);
	FZ_CHECK(vsock_dev_set_features(dev, features) == 0);
	FZ_CHECK(vsock_dev_set_vring(dev, VSOCK_VQ_TX, &tx) == 0);
	FZ_CHECK(vsock_dev_set_vring(dev, VSOCK_VQ_RX, &rx) == 0);
	/* What dev_resume() does, minus the threads. */
	FZ_CHECK(vq_setup(&dev->rxq, &dev->gm, &dev->vring[VSOCK_VQ_RX], dev->features) == 0);
	FZ_CHECK(vq_setup(&dev->txq, &dev->gm, &dev->vring[VSOCK_VQ_TX], dev->features) == 0);
	dev->rx_batch = 4;
	dev->next_host_port = HOST_PORT_MIN; /* same ports for the same input */

	if (host & 1)
		client = host_client(dev, host_port);

	used0 = dev->txq.used_idx;
	vsock_dev_get_counters(dev, &before);
	for (i = 0; i < 4 && process_tx(dev); i++)
		;
	vsock_dev_get_counters(dev, &after);
	/* Every chain taken is returned, whatever it held (unless the ring broke). */
	if (!dev->txq.broken)
		FZ_CHECK((uint16_t)(dev->txq.used_idx - used0) ==
			 (uint16_t)(after.tx_pkts - before.tx_pkts));

	vsock_dev_reset(dev);
	drop_host_peers();
	if (client >= 0)
		close(client);
	for (i = 0; i < R_N; i++)
		free(hva[i]);
	return 0;
}
