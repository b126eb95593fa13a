// SPDX-License-Identifier: MIT
/* Polling virtio-vsock driver for tiny guests (see vsock.h). */
#include "vsock.h"

#include "guest.h"
#include "virtio_mmio_regs.h"

static uint8_t rx_area[3 * 4096] __attribute__((aligned(4096)));
static uint8_t tx_area[3 * 4096] __attribute__((aligned(4096)));
static uint8_t ev_area[3 * 4096] __attribute__((aligned(4096)));
static uint8_t rx_bufs[GV_RX_NUM][GV_RXBUF_MAX] __attribute__((aligned(4096)));
static uint8_t tx_bufs[GV_TX_SLOTS][VIRTIO_VSOCK_MAX_PKT_BUF_SIZE] __attribute__((aligned(4096)));
static struct virtio_vsock_hdr tx_hdrs[GV_TX_SLOTS] __attribute__((aligned(64)));
static struct virtio_vsock_event ev_bufs[GV_EV_NUM];

static void reg_write(uint32_t off, uint32_t v)
{
	mmio_write32(SKIFF_VIRTIO_MMIO_GPA + off, v);
}

static uint32_t reg_read(uint32_t off)
{
	return mmio_read32(SKIFF_VIRTIO_MMIO_GPA + off);
}

static void rx_post(struct gv *d, uint16_t i)
{
	d->rx.desc[i].addr = (uint64_t)rx_bufs[i];
	d->rx.desc[i].len = d->rxbuf_size;
	d->rx.desc[i].flags = VQ_DESC_F_WRITE;
	d->rx.desc[i].next = 0;
	vq_push(&d->rx, i);
}

int gv_init(struct gv *d, uint64_t want, uint64_t force, uint32_t rxbuf_size)
{
	uint32_t lo, hi;
	uint16_t i;

	memset(d, 0, sizeof(*d));
	d->tx_open_slot = -1;
	d->peer_cid = VSOCK_CID_HOST;
	if (reg_read(VM_MAGIC) != 0x74726976 || reg_read(VM_VERSION) != 2 ||
	    reg_read(VM_DEVICE_ID) != VIRTIO_ID_VSOCK)
		return -1;
	reg_write(VM_STATUS, 0);
	if (reg_read(VM_STATUS) != 0)
		return -2;
	reg_write(VM_STATUS, VS_ACKNOWLEDGE);
	reg_write(VM_STATUS, VS_ACKNOWLEDGE | VS_DRIVER);
	reg_write(VM_DEV_FEATURES_SEL, 0);
	lo = reg_read(VM_DEV_FEATURES);
	reg_write(VM_DEV_FEATURES_SEL, 1);
	hi = reg_read(VM_DEV_FEATURES);
	d->dev_features = ((uint64_t)hi << 32) | lo;
	if (!(d->dev_features & (1ull << VIRTIO_F_VERSION_1)))
		return -3;
	d->features = (d->dev_features & want) | force;
	reg_write(VM_DRV_FEATURES_SEL, 0);
	reg_write(VM_DRV_FEATURES, (uint32_t)d->features);
	reg_write(VM_DRV_FEATURES_SEL, 1);
	reg_write(VM_DRV_FEATURES, (uint32_t)(d->features >> 32));
	reg_write(VM_STATUS, VS_ACKNOWLEDGE | VS_DRIVER | VS_FEATURES_OK);
	if (!(reg_read(VM_STATUS) & VS_FEATURES_OK))
		return -4;
	d->mrg = d->features & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF);
	d->rxbuf_size = rxbuf_size > GV_RXBUF_MAX ? GV_RXBUF_MAX : rxbuf_size;

	{
		bool evidx = d->features & (1ull << VIRTIO_RING_F_EVENT_IDX);

		if (vq_setup(&d->rx, VSOCK_VQ_RX, GV_RX_NUM, rx_area, evidx) ||
		    vq_setup(&d->tx, VSOCK_VQ_TX, GV_TX_NUM, tx_area, evidx) ||
		    vq_setup(&d->ev, VSOCK_VQ_EVENT, GV_EV_NUM, ev_area, evidx))
			return -5;
	}
	for (i = 0; i < GV_TX_SLOTS; i++)
		d->tx_free[d->tx_nfree++] = (uint16_t)(GV_TX_SLOTS - 1 - i);
	reg_write(VM_STATUS, VS_ACKNOWLEDGE | VS_DRIVER | VS_FEATURES_OK | VS_DRIVER_OK);
	if (reg_read(VM_STATUS) & (VS_NEEDS_RESET | VS_FAILED))
		return -6;
	lo = reg_read(VM_CONFIG);
	hi = reg_read(VM_CONFIG + 4);
	d->cid = ((uint64_t)hi << 32) | lo;

	for (i = 0; i < GV_RX_NUM; i++)
		rx_post(d, i);
	for (i = 0; i < GV_EV_NUM; i++) {
		d->ev.desc[i].addr = (uint64_t)&ev_bufs[i];
		d->ev.desc[i].len = sizeof(ev_bufs[i]);
		d->ev.desc[i].flags = VQ_DESC_F_WRITE;
		vq_push(&d->ev, i);
	}
	vq_want_interrupts(&d->rx);
	vq_want_interrupts(&d->tx);
	vq_publish(&d->rx);
	vq_publish(&d->ev);
	return 0;
}

uint64_t gv_kicks(const struct gv *d)
{
	return d->rx.kicks + d->tx.kicks + d->ev.kicks;
}

static void tx_reclaim(struct gv *d)
{
	uint32_t id, len;

	while (vq_pop(&d->tx, &id, &len)) {
		if (id % 2 || id / 2 >= GV_TX_SLOTS || d->tx_nfree == GV_TX_SLOTS)
			guest_panic("bad TX used id");
		d->tx_free[d->tx_nfree++] = (uint16_t)(id / 2);
	}
	vq_want_interrupts(&d->tx);
}

static int tx_slot(struct gv *d)
{
	while (!d->tx_nfree)
		tx_reclaim(d);
	return d->tx_free[--d->tx_nfree];
}

static void fill_hdr(struct gv *d, struct virtio_vsock_hdr *h, uint16_t op, uint32_t flags,
		     uint32_t len)
{
	struct virtio_vsock_hdr v = {
		.src_cid = d->cid,
		.dst_cid = d->peer_cid,
		.src_port = d->local_port,
		.dst_port = d->peer_port,
		.len = len,
		.type = VIRTIO_VSOCK_TYPE_STREAM,
		.op = op,
		.flags = flags,
		.buf_alloc = GV_BUF_ALLOC,
		.fwd_cnt = d->fwd_cnt,
	};

	*h = v;
	d->fwd_cnt_sent = d->fwd_cnt;
}

/* Queue one packet in slot @s: header, plus payload of @len bytes in tx_bufs[s]. */
static void tx_queue(struct gv *d, int s, uint16_t op, uint32_t flags, uint32_t len)
{
	uint16_t h = (uint16_t)(2 * s);

	fill_hdr(d, &tx_hdrs[s], op, flags, len);
	d->tx.desc[h].addr = (uint64_t)&tx_hdrs[s];
	d->tx.desc[h].len = sizeof(tx_hdrs[s]);
	d->tx.desc[h].flags = len ? VQ_DESC_F_NEXT : 0;
	d->tx.desc[h].next = (uint16_t)(h + 1);
	if (len) {
		d->tx.desc[h + 1].addr = (uint64_t)tx_bufs[s];
		d->tx.desc[h + 1].len = len;
		d->tx.desc[h + 1].flags = 0;
	}
	vq_push(&d->tx, h);
	vq_publish(&d->tx);
	d->tx_pkts++;
}

static void send_ctrl(struct gv *d, uint16_t op, uint32_t flags)
{
	tx_queue(d, tx_slot(d), op, flags, 0);
}

void gv_shutdown(struct gv *d, uint32_t flags)
{
	send_ctrl(d, VIRTIO_VSOCK_OP_SHUTDOWN, flags);
}

void gv_rst(struct gv *d)
{
	send_ctrl(d, VIRTIO_VSOCK_OP_RST, 0);
	d->state = GV_CLOSED;
}

uint8_t *gv_tx_buf(struct gv *d, uint32_t *max)
{
	uint32_t credit;

	if (d->state != GV_CONNECTED)
		return NULL;
	credit = d->peer_buf_alloc - (d->tx_cnt - d->peer_fwd_cnt);
	if (credit > d->peer_buf_alloc)
		credit = 0; /* peer shrank its buffer */
	if (!credit) {
		if (!d->credit_req_pending) {
			send_ctrl(d, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
			d->credit_req_pending = true;
		}
		return NULL;
	}
	if (!d->tx_nfree)
		tx_reclaim(d);
	if (!d->tx_nfree)
		return NULL;
	d->tx_open_slot = d->tx_free[--d->tx_nfree];
	*max = credit < VIRTIO_VSOCK_MAX_PKT_BUF_SIZE ? credit : VIRTIO_VSOCK_MAX_PKT_BUF_SIZE;
	return tx_bufs[d->tx_open_slot];
}

void gv_tx_commit(struct gv *d, uint32_t len)
{
	int s = d->tx_open_slot;

	d->tx_open_slot = -1;
	if (!len) {
		d->tx_free[d->tx_nfree++] = (uint16_t)s;
		return;
	}
	tx_queue(d, s, VIRTIO_VSOCK_OP_RW, 0, len);
	d->tx_cnt += len;
	d->tx_bytes += len;
}

/* Header checks; returns false for a packet that is not for us. */
static bool hdr_ok(struct gv *d, const struct virtio_vsock_hdr *h)
{
	if (h->dst_cid != d->cid || h->type != VIRTIO_VSOCK_TYPE_STREAM)
		return false;
	if (d->state == GV_LISTEN)
		return h->op == VIRTIO_VSOCK_OP_REQUEST && h->dst_port == d->local_port &&
		       h->src_cid != d->cid;
	return h->src_cid == d->peer_cid && h->dst_port == d->local_port &&
	       h->src_port == d->peer_port;
}

static void handle_hdr(struct gv *d, const struct virtio_vsock_hdr *h)
{
	d->peer_buf_alloc = h->buf_alloc;
	d->peer_fwd_cnt = h->fwd_cnt;
	switch (h->op) {
	case VIRTIO_VSOCK_OP_REQUEST:
		if (d->state == GV_LISTEN) {
			d->peer_cid = h->src_cid;
			d->peer_port = h->src_port;
			d->state = GV_CONNECTED;
			send_ctrl(d, VIRTIO_VSOCK_OP_RESPONSE, 0);
		}
		break;
	case VIRTIO_VSOCK_OP_RESPONSE:
		if (d->state == GV_CONNECTING)
			d->state = GV_CONNECTED;
		break;
	case VIRTIO_VSOCK_OP_RST:
		d->state = GV_CLOSED;
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		if (h->flags & VIRTIO_VSOCK_SHUTDOWN_SEND)
			d->peer_shut_send = true;
		/* Both ends closing at once (another guest): the RST is ours to send. */
		if (d->closing && d->state == GV_CONNECTED &&
		    (h->flags & (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)) ==
			    (VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND))
			gv_rst(d);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		d->credit_req_pending = false;
		break;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		send_ctrl(d, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
		break;
	default:
		break;
	}
}

static void deliver(struct gv *d, const struct virtio_vsock_hdr *h, const uint8_t *p, uint32_t n)
{
	if (h->op != VIRTIO_VSOCK_OP_RW || !n)
		return;
	if (d->on_data)
		d->on_data(d->opaque, p, n);
	d->fwd_cnt += n;
	d->rx_bytes += n;
}

static void rx_one(struct gv *d, uint32_t id, uint32_t len)
{
	struct virtio_vsock_hdr h;
	uint32_t hlen = d->mrg ? sizeof(struct virtio_vsock_mrg_hdr) : sizeof(h);
	uint16_t nbufs = 1, k;
	uint32_t got;
	bool ok;

	if (id >= GV_RX_NUM || len < hlen || len > d->rxbuf_size)
		guest_panic("bad RX used element");
	memcpy(&h, rx_bufs[id], sizeof(h));
	if (d->mrg)
		memcpy(&nbufs, rx_bufs[id] + sizeof(h), 2);
	if (!nbufs || nbufs > GV_RX_NUM)
		guest_panic("bad num_buffers");
	ok = hdr_ok(d, &h);
	got = len - hlen;
	if (ok) {
		handle_hdr(d, &h);
		deliver(d, &h, rx_bufs[id] + hlen, got);
	} else {
		d->bad_pkts++;
	}
	rx_post(d, (uint16_t)id);
	for (k = 1; k < nbufs; k++) {
		/* The rest of a merged packet is published with its first buffer. */
		while (!vq_pop(&d->rx, &id, &len))
			barrier();
		if (id >= GV_RX_NUM || len > d->rxbuf_size)
			guest_panic("bad merged RX element");
		if (ok)
			deliver(d, &h, rx_bufs[id], len);
		got += len;
		rx_post(d, (uint16_t)id);
	}
	if (got != h.len)
		guest_panic("RX payload length differs from hdr.len");
	d->rx_pkts++;
}

void gv_poll(struct gv *d)
{
	uint32_t id, len;
	bool any = false;

	d->polls++;
	tx_reclaim(d);
	while (vq_pop(&d->rx, &id, &len)) {
		rx_one(d, id, len);
		any = true;
	}
	if (any) {
		vq_want_interrupts(&d->rx);
		vq_publish(&d->rx);
	}
	while (vq_pop(&d->ev, &id, &len)) {
		vq_push(&d->ev, (uint16_t)id);
		vq_publish(&d->ev);
	}
	if (d->state == GV_CONNECTED && d->fwd_cnt - d->fwd_cnt_sent >= GV_BUF_ALLOC / 4)
		send_ctrl(d, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
}

int gv_connect(struct gv *d, uint32_t local, uint32_t port)
{
	d->local_port = local;
	d->peer_port = port;
	d->state = GV_CONNECTING;
	send_ctrl(d, VIRTIO_VSOCK_OP_REQUEST, 0);
	while (d->state == GV_CONNECTING)
		gv_poll(d);
	return d->state == GV_CONNECTED ? 0 : -1;
}

int gv_accept(struct gv *d, uint32_t port)
{
	d->local_port = port;
	d->state = GV_LISTEN;
	while (d->state == GV_LISTEN)
		gv_poll(d);
	return d->state == GV_CONNECTED ? 0 : -1;
}

void gv_close(struct gv *d)
{
	if (d->state == GV_CONNECTED) {
		d->closing = true;
		gv_shutdown(d, VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND);
		while (d->state != GV_CLOSED)
			gv_poll(d);
	}
	while (d->tx_nfree != GV_TX_SLOTS)
		gv_poll(d);
}
