/* SPDX-License-Identifier: MIT */
/*
 * A polling virtio-vsock driver for tiny guests: feature negotiation over
 * virtio-mmio, RX/TX/event queues, one stream connection with credit flow
 * control (virtio 1.2 section 5.10.6), with or without MRG_RXBUF.
 */
#ifndef GUEST_VSOCK_H
#define GUEST_VSOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "skiff/vsock_abi.h"
#include "virtq.h"

#define GV_RX_NUM 128
#define GV_TX_NUM 128
#define GV_EV_NUM 8
#define GV_TX_SLOTS (GV_TX_NUM / 2)
#define GV_RXBUF_MAX 8192
#define GV_BUF_ALLOC (256u * 1024u)

enum gv_state { GV_IDLE, GV_LISTEN, GV_CONNECTING, GV_CONNECTED, GV_CLOSED };

/* Called for each piece of RW payload, in stream order. */
typedef void (*gv_data_fn)(void *opaque, const uint8_t *p, uint32_t n);

struct gv {
	uint64_t dev_features; /* offered by the device */
	uint64_t features; /* negotiated (written before FEATURES_OK) */
	uint64_t cid;
	bool mrg;
	uint32_t rxbuf_size;
	struct vq rx, tx, ev;
	uint16_t tx_free[GV_TX_SLOTS];
	unsigned int tx_nfree;
	int tx_open_slot; /* slot handed out by gv_tx_buf(), -1 if none */

	/* The one connection. */
	enum gv_state state;
	uint64_t peer_cid; /* VSOCK_CID_HOST unless set after gv_init(), or a REQUEST's source */
	bool closing; /* gv_close() sent SHUTDOWN RCV|SEND */
	uint32_t local_port, peer_port;
	uint32_t peer_buf_alloc, peer_fwd_cnt, tx_cnt;
	uint32_t fwd_cnt, fwd_cnt_sent;
	bool peer_shut_send, credit_req_pending;

	gv_data_fn on_data;
	void *opaque;

	uint64_t rx_pkts, tx_pkts, rx_bytes, tx_bytes, bad_pkts, polls;
};

/*
 * gv_init() - reset the device, negotiate (device offer AND @want, OR @force,
 * which tests use to write bits the device did not offer; VERSION_1
 * required), set up the queues, fill RX, DRIVER_OK, read the CID.
 * Return: 0; negative step number on failure.
 */
int gv_init(struct gv *d, uint64_t want, uint64_t force, uint32_t rxbuf_size);

/*
 * gv_connect() - REQUEST to port @port of d->peer_cid (the host unless set)
 * from @local; wait for RESPONSE/RST. 0 or -1.
 */
int gv_connect(struct gv *d, uint32_t local, uint32_t port);

/* gv_accept() - wait for a REQUEST to @port (host or another guest) and answer RESPONSE. */
int gv_accept(struct gv *d, uint32_t port);

/*
 * gv_tx_buf() - a payload buffer for the next RW packet, and in *max how
 * much may go in it (credit, 64 KiB); NULL when nothing can be sent now.
 * Follow with gv_tx_commit().
 */
uint8_t *gv_tx_buf(struct gv *d, uint32_t *max);
void gv_tx_commit(struct gv *d, uint32_t len);

/* gv_poll() - reclaim TX, process RX and events, return credit, notify. */
void gv_poll(struct gv *d);

/* Control packets. */
void gv_shutdown(struct gv *d, uint32_t flags);
void gv_rst(struct gv *d);

/*
 * gv_close() - orderly close: SHUTDOWN both ways, then wait for the peer's
 * RST (the device sends it once everything the guest sent reached the host
 * socket). A peer guest closing at the same time sends SHUTDOWN RCV|SEND
 * instead: answered with RST, as Linux does. Returns with the TX queue empty.
 */
void gv_close(struct gv *d);

/* Total QueueNotify writes over all queues. */
uint64_t gv_kicks(const struct gv *d);

#endif /* GUEST_VSOCK_H */
