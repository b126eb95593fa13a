// SPDX-License-Identifier: MIT
/*
 * Tiny guest 2: polling virtio-vsock client. Negotiates features, connects to
 * host port P (skiff forwards it to the Unix socket <uds>_<P>) and moves the
 * test pattern (guest.h pattern_byte()):
 *   mode=0 echo  send mib MiB, read the same amount back (the host echoes)
 *   mode=1 tx    send mib MiB, then SHUTDOWN and wait for the host to close
 *   mode=2 rx    read mib MiB the host sends
 * Command line: port=P mib=N mode=M mrg=0|1 evidx=0|1 check=0|1 chunk=BYTES
 * cid=C (connect to another guest's CID instead of the host, 2)
 * force=BITS (feature bits written even if not offered, to test refusal)
 * Reports: 0 negotiated features, 1 CID from config space, 2 bytes sent,
 * 3 FNV-1a of what was sent, 4 bytes received, 5 FNV-1a of what was received,
 * 6 received bytes that differ from the pattern, 7 QueueNotify writes,
 * 8 TSC cycles of the transfer, 9 RX packets, 10 device features,
 * 11 TX packets, 12 polls.
 * Exit: 0 ok, 2 init failed, 3 connection refused, 4 reset mid-transfer,
 * 5 data mismatch.
 */
#include "guest.h"
#include "vsock.h"

struct rx_state {
	uint64_t off, fnv, bad;
	bool check;
};

static struct gv gv;

static void on_data(void *opaque, const uint8_t *p, uint32_t n)
{
	struct rx_state *r = opaque;
	uint32_t i;

	if (r->check) {
		for (i = 0; i < n; i++)
			r->bad += p[i] != pattern_byte(r->off + i);
		r->fnv = fnv1a(r->fnv, p, n);
	}
	r->off += n;
}

int guest_main(const char *cmdline, uint64_t mem_size);

int guest_main(const char *cmdline, uint64_t mem_size)
{
	uint64_t port = cmdline_get(cmdline, "port", 1234);
	uint64_t total = cmdline_get(cmdline, "mib", 1) << 20;
	uint64_t mode = cmdline_get(cmdline, "mode", 0);
	uint64_t chunk = cmdline_get(cmdline, "chunk", VIRTIO_VSOCK_MAX_PKT_BUF_SIZE);
	bool check = cmdline_get(cmdline, "check", 1);
	uint64_t want = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_VSOCK_F_STREAM);
	uint64_t to_send = mode == 2 ? 0 : total, to_recv = mode == 1 ? 0 : total;
	uint64_t sent = 0, fnv_tx = FNV_INIT, t0, i;
	struct rx_state rx = { .fnv = FNV_INIT, .check = check };
	int err, ret = 0;

	(void)mem_size;
	if (cmdline_get(cmdline, "evidx", 1))
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (cmdline_get(cmdline, "mrg", 0))
		want |= 1ull << VIRTIO_VSOCK_F_MRG_RXBUF;
	err = gv_init(&gv, want, cmdline_get(cmdline, "force", 0),
		      (want & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)) ?
			      4096 :
			      4096 + (uint32_t)sizeof(struct virtio_vsock_hdr));
	guest_report(10, gv.dev_features);
	if (err) {
		guest_report(0, (uint64_t)(int64_t)err);
		return 2;
	}
	guest_report(0, gv.features);
	guest_report(1, gv.cid);
	gv.on_data = on_data;
	gv.opaque = &rx;
	if (!chunk || chunk > VIRTIO_VSOCK_MAX_PKT_BUF_SIZE)
		chunk = VIRTIO_VSOCK_MAX_PKT_BUF_SIZE;

	gv.peer_cid = cmdline_get(cmdline, "cid", VSOCK_CID_HOST);
	if (gv_connect(&gv, 49152, (uint32_t)port))
		return 3;
	t0 = rdtsc();
	while (sent < to_send || rx.off < to_recv) {
		uint32_t max, n;
		uint8_t *buf;

		if (sent < to_send && (buf = gv_tx_buf(&gv, &max))) {
			n = max;
			if (n > chunk)
				n = (uint32_t)chunk;
			if (n > to_send - sent)
				n = (uint32_t)(to_send - sent);
			if (check) {
				for (i = 0; i < n; i++)
					buf[i] = pattern_byte(sent + i);
				fnv_tx = fnv1a(fnv_tx, buf, n);
			}
			gv_tx_commit(&gv, n);
			sent += n;
		}
		gv_poll(&gv);
		if (gv.state == GV_CLOSED) {
			ret = 4;
			break;
		}
	}
	if (!ret && mode == 1) {
		/* Wait until the host has read everything and closed its socket. */
		gv_shutdown(&gv, VIRTIO_VSOCK_SHUTDOWN_SEND);
		while (gv.state != GV_CLOSED && !gv.peer_shut_send)
			gv_poll(&gv);
	}
	guest_report(8, rdtsc() - t0);
	gv_close(&gv);
	guest_report(2, sent);
	guest_report(3, fnv_tx);
	guest_report(4, rx.off);
	guest_report(5, rx.fnv);
	guest_report(6, rx.bad);
	guest_report(7, gv_kicks(&gv));
	guest_report(9, gv.rx_pkts);
	guest_report(11, gv.tx_pkts);
	guest_report(12, gv.polls);
	if (!ret &&
	    (rx.bad || rx.off != to_recv || (check && to_recv && to_send && rx.fnv != fnv_tx)))
		ret = 5;
	return ret;
}
