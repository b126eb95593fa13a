// SPDX-License-Identifier: MIT
/*
 * Harness: the device's TX path, guest to host, through its real code:
 * vq_pop() chain walking, pkt_parse_tx() header checks, the connection
 * table and state machine (conn_handle_tx(): REQUEST, RESPONSE, RW with
 * credit and backlog, SHUTDOWN, RST, CREDIT_*), guest-initiated connects to
 * host Unix sockets, host-initiated CONNECT lines, and the credit updates
 * the control thread puts on the RX queue at once (rxq_send_hdr()).
 *
 * Then, optionally, the way back: host peers write bytes and the RX pump
 * sends everything owed (RESPONSE, REQUEST, CREDIT_UPDATE, RW, SHUTDOWN,
 * RST) into the guest's RX chains (rx_pump.c serve(), conn_rx_next(),
 * rxq.c), mergeable or not.
 *
 * Datagrams (DGRAM negotiated): guest datagrams to a host socket bound at
 * <uds>_dgram_1024 (and to ports nobody bound), each guest port's device
 * socket; then, optionally, the host's datagram through the gateway to the
 * guest's RX queue (dgram.c, rxq_dgram_put()), read by ctl_step_dgram().
 *
 * The fuzzer's thread stands in for the control thread and for pump 0,
 * through the library's own step functions (dev_step.h: ctl_step_tx(),
 * ctl_step_clients(), pump_step(), the code the threads run); no device
 * thread runs: the lobby thread, which holds host clients while the device
 * is not started, is stopped after create and after every reset (the
 * device never runs it next to the control thread, which this thread
 * plays).
 *
 * Guest memory: R0 [0x0, 0x1000), R1 [0x1000, 0x2000) adjacent to it, R2
 * [0x8000, 0x8400) after a hole, each its own heap block. Rings in R0,
 * what the driver writes first: TX avail 0x000, TX desc 0x030, RX avail
 * 0x130, RX desc 0x160, TX used 0x260, RX used 0x2e8; packets anywhere
 * (0x370 up is free).
 *
 * Input: byte 0 = features (bit 0 EVENT_IDX, 1 INDIRECT_DESC, 2 SEQPACKET,
 * 3 MRG_RXBUF, 4 DGRAM); byte 1 = log2 TX queue size (bits 0-2, % 5) and log2 RX
 * queue size (bits 4-6, % 5); byte 2: bit 0 = a host client connects first
 * and sends "CONNECT <port>\n" with <port> = bytes 3-6, bit 1 = run the
 * pump afterwards, bit 2 = host peers close their write side after their
 * bytes, bit 3 = host peers close entirely, bit 4 = the host datagram socket
 * sends "SEND <port>\n" + the host bytes to the gateway (<port> = bytes
 * 3-6), bit 5 = ... and sends the host bytes unframed to the device socket
 * of guest port <port>; byte 7 = n, then n bytes every
 * host peer writes (the CONNECT client after its line); then 2 bytes: how
 * far the guest advances the TX and the RX avail index after the pump's
 * first turn (more packets and buffers, answering what the pump sent);
 * then R0, R1, R2.
 * The guest CID is 3; host listeners wait on <uds>_1024 (stream) and
 * <uds>_1025 (seqpacket).
 *
 * Checked besides ASan/UBSan/LSan: every popped chain is returned on the
 * TX used ring (the used index advances by exactly the chains taken),
 * unless the ring was found broken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn.h"
#include "dev.h"
#include "dev_step.h"
#include "fuzz_input.h"
#include "skiff/vsock_dev.h"

#define R_N 3
static const uint64_t r_gpa[R_N] = { 0x0, 0x1000, 0x8000 };
static const uint64_t r_size[R_N] = { 0x1000, 0x1000, 0x400 };

#define TX_AVAIL 0x000
#define TX_DESC 0x030
#define RX_AVAIL 0x130
#define RX_DESC 0x160
#define TX_USED 0x260
#define RX_USED 0x2e8

#define MAX_PEERS 16

static struct vsock_dev *g_dev;
static int g_listen[2] = { -1, -1 };
static int g_dgram = -1; /* host datagram socket bound at <uds>_dgram_1024 */
static int g_peers[MAX_PEERS];
static unsigned int g_npeers;

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

/* The host program's datagram socket for host port 1024. */
static int dgram_on(const char *base)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_dgram_1024", base);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("fuzz: host datagram socket");
		abort();
	}
	return fd;
}

/*
 * The host sends @len bytes of @data to guest port @port: through the
 * gateway after a SEND line (@gateway), or to the port's device socket.
 */
static void host_dgram(struct vsock_dev *dev, uint32_t port, const uint8_t *data, size_t len,
		       bool gateway)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[32 + 255];
	int n = 0;

	if (gateway) {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_dgram", dev->uds_path);
		n = snprintf(msg, 32, "SEND %u\n", port);
	} else {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_dgram_g%u", dev->uds_path, port);
	}
	memcpy(msg + n, data, len);
	/* Fails when the device has no socket for that port: fine. */
	if (sendto(g_dgram, msg, (size_t)n + len, MSG_DONTWAIT, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0) {
	}
}

/* What the guest sent the host program: read and forget (its queue is short). */
static void drain_dgram(void)
{
	char buf[256];

	while (recv(g_dgram, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		;
}

/* Stop the lobby thread: this thread plays the control thread instead. */
static void quiet_lobby(struct vsock_dev *dev)
{
	lobby_stop(dev, false);
	lobby_drop(dev);
}

static void setup_once(void)
{
	static char path[108];
	struct vsock_dev_config cfg = {
		.guest_cid = 3,
		.uds_path = path,
		.rx_threads = 1,
		.mrg_rxbuf = true,
		.dgram = true,
		.conn_buf_size = 4096, /* small: credit and backlog limits within 8 KiB */
		.notify = notify_cb,
	};

	snprintf(path, sizeof(path), "%s/v.sock", fz_scratch_dir());
	if (vsock_dev_create(&cfg, &g_dev)) {
		fprintf(stderr, "fuzz: vsock_dev_create failed\n");
		abort();
	}
	quiet_lobby(g_dev);
	g_listen[0] = listen_on(path, 1024, SOCK_STREAM);
	g_listen[1] = listen_on(path, 1025, SOCK_SEQPACKET);
	g_dgram = dgram_on(path);
	ctl_step_claim(g_dev); /* this thread plays the control thread */
}

/* Host peers of guest-initiated connections: accept them, write @data. */
static void host_peers(const uint8_t *data, size_t len, uint8_t host)
{
	unsigned int i;
	int fd;

	for (i = 0; i < 2; i++) {
		while ((fd = accept4(g_listen[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
			if (g_npeers == MAX_PEERS) {
				close(fd);
				continue;
			}
			g_peers[g_npeers++] = fd;
			if (len && send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* the device reset it already: fine */
			}
			if (host & 8)
				shutdown(fd, SHUT_RDWR);
			else if (host & 4)
				shutdown(fd, SHUT_WR);
		}
	}
}

static void drop_host_peers(void)
{
	unsigned int i;

	host_peers(NULL, 0, 0);
	for (i = 0; i < g_npeers; i++)
		close(g_peers[i]);
	g_npeers = 0;
}

/* The driver adds @n entries to an avail ring: idx += n (little endian). */
static void bump_idx(uint8_t *idx, uint8_t n)
{
	uint16_t v = (uint16_t)(idx[0] | idx[1] << 8) + n;

	idx[0] = (uint8_t)v;
	idx[1] = (uint8_t)(v >> 8);
}

/* A host client on uds_path sends "CONNECT <port>\n"; the device reads it. */
static int host_client(struct vsock_dev *dev, uint32_t port, const uint8_t *data, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[32 + 255];
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", dev->uds_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("fuzz: host client");
		abort();
	}
	n = snprintf(line, 32, "CONNECT %u\n", port);
	memcpy(line + n, data, len);
	n += (int)len;
	FZ_CHECK(write(fd, line, (size_t)n) == n);
	ctl_step_clients(dev);
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
	uint8_t *hva[R_N], flags, sizes, host, hdata[255], hlen, tx_more, rx_more;
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
	hlen = fz_u8(&f);
	fz_bytes(&f, hdata, hlen);
	tx_more = fz_u8(&f);
	rx_more = fz_u8(&f);
	if (flags & 1)
		features |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (flags & 2)
		features |= 1ull << VIRTIO_RING_F_INDIRECT_DESC;
	if (flags & 4)
		features |= 1ull << VIRTIO_VSOCK_F_SEQPACKET;
	if (flags & 8)
		features |= 1ull << VIRTIO_VSOCK_F_MRG_RXBUF;
	if (flags & 16)
		features |= 1ull << VIRTIO_VSOCK_F_DGRAM;
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
	FZ_CHECK(vq_setup(&dev->rx.vq, &dev->gm, &dev->vring[VSOCK_VQ_RX], dev->features) == 0);
	FZ_CHECK(vq_setup(&dev->ctl.txq, &dev->gm, &dev->vring[VSOCK_VQ_TX], dev->features) == 0);
	rxq_start(&dev->rx, dev->features & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF), 1);
	dev->dg.guest_dgram = dev->features & (1ull << VIRTIO_VSOCK_F_DGRAM);
	dev->rx.batch = 4;
	dev->ctl.next_host_port = HOST_PORT_MIN; /* same ports for the same input */

	if (host & 1)
		client = host_client(dev, host_port, hdata, hlen);

	used0 = dev->ctl.txq.used_idx;
	vsock_dev_get_counters(dev, &before);
	for (i = 0; i < 4 && ctl_step_tx(dev); i++)
		;
	vsock_dev_get_counters(dev, &after);
	/* Every chain taken is returned, whatever it held (unless the ring broke). */
	if (!dev->ctl.txq.broken)
		FZ_CHECK((uint16_t)(dev->ctl.txq.used_idx - used0) ==
			 (uint16_t)(after.tx_pkts - before.tx_pkts));

	if (host & 0x30) {
		if (host & 0x10)
			host_dgram(dev, host_port, hdata, hlen, true);
		if (host & 0x20)
			host_dgram(dev, host_port, hdata, hlen, false);
		ctl_step_dgram(dev);
	}
	drain_dgram();

	if (host & 2) {
		struct pump *p = &dev->pumps[0];

		host_peers(hdata, hlen, host);
		for (i = 0; i < 6; i++) {
			pump_step(p);
			if (i == 0) {
				bump_idx(hva[0] + TX_AVAIL + 2, tx_more);
				bump_idx(hva[0] + RX_AVAIL + 2, rx_more);
				pump_rx_kicked(dev);
			}
			/* The guest's answers to what the pump sent, if the ring has more. */
			ctl_step_tx(dev);
		}
		pump_step_end(p);
	}

	vsock_dev_reset(dev);
	quiet_lobby(dev);
	drop_host_peers();
	if (client >= 0)
		close(client);
	for (i = 0; i < R_N; i++)
		free(hva[i]);
	return 0;
}
