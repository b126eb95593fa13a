// SPDX-License-Identifier: MIT
/*
 * Tiny guest 3: polling virtio-vsock server. Waits for the host to connect
 * to guest port P (host side: "CONNECT P\n" on skiff's Unix socket), or for
 * another guest (guest-to-guest routing), then echoes every byte back until
 * the peer shuts its side down, then closes.
 * Command line: port=P mrg=0|1 evidx=0|1
 * Reports: 0 negotiated features, 1 CID, 2 bytes echoed, 4 bytes received,
 * 5 FNV-1a of what was received, 13 the peer's port, 14 the peer's CID.
 * Exit: 0 ok, 2 init failed, 3 no connection, 4 reset mid-transfer.
 */
#include "guest.h"
#include "vsock.h"

#define ECHO_BUF (4u << 20)

static struct gv gv;
static uint8_t echo[ECHO_BUF];
static uint64_t head, tail, fnv = FNV_INIT; /* echo[tail..head) waits to be sent back */

static void on_data(void *opaque, const uint8_t *p, uint32_t n)
{
	uint32_t i;

	(void)opaque;
	if (head - tail + n > ECHO_BUF)
		guest_panic("echo buffer overflow");
	fnv = fnv1a(fnv, p, n);
	for (i = 0; i < n; i++)
		echo[(head + i) % ECHO_BUF] = p[i];
	head += n;
}

int guest_main(const char *cmdline, uint64_t mem_size);

int guest_main(const char *cmdline, uint64_t mem_size)
{
	uint64_t port = cmdline_get(cmdline, "port", 5000);
	uint64_t want = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_VSOCK_F_STREAM);
	int ret = 0;

	(void)mem_size;
	if (cmdline_get(cmdline, "evidx", 1))
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (cmdline_get(cmdline, "mrg", 0))
		want |= 1ull << VIRTIO_VSOCK_F_MRG_RXBUF;
	if (gv_init(&gv, want, 0,
		    (want & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)) ?
			    4096 :
			    4096 + (uint32_t)sizeof(struct virtio_vsock_hdr)))
		return 2;
	guest_report(0, gv.features);
	guest_report(1, gv.cid);
	gv.on_data = on_data;
	guest_puts("listening\n");
	if (gv_accept(&gv, (uint32_t)port))
		return 3;
	guest_report(13, gv.peer_port);
	guest_report(14, gv.peer_cid);
	for (;;) {
		uint32_t max, n, i;
		uint8_t *buf;

		gv_poll(&gv);
		if (gv.state == GV_CLOSED) {
			ret = 4;
			break;
		}
		if (head != tail && (buf = gv_tx_buf(&gv, &max))) {
			n = head - tail < max ? (uint32_t)(head - tail) : max;
			for (i = 0; i < n; i++)
				buf[i] = echo[(tail + i) % ECHO_BUF];
			gv_tx_commit(&gv, n);
			tail += n;
		}
		if (gv.peer_shut_send && head == tail)
			break;
	}
	guest_report(2, tail);
	guest_report(4, head);
	guest_report(5, fnv);
	gv_close(&gv);
	return ret;
}
