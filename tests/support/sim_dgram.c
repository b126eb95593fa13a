// SPDX-License-Identifier: MIT
/*
 * Datagrams in the simulated driver (sim_driver.h): send one DGRAM RW
 * packet per datagram, receive them into a bounded FIFO, checking each
 * header as the datagram RFC's guest would.
 */
#include <errno.h>

#include "sim_driver.h"
#include "sim_internal.h"

static bool negotiated(const struct sim_drv *drv)
{
	return drv->features & (1ull << VIRTIO_VSOCK_F_DGRAM);
}

void sim__dgram_rx(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr, const struct iovec *iov,
		   int iovcnt, uint32_t len)
{
	if (!negotiated(drv) || hdr->op != VIRTIO_VSOCK_OP_RW || hdr->flags || hdr->buf_alloc ||
	    hdr->fwd_cnt) {
		sim__proto_error(drv, "bad datagram: negotiated %d op %u flags %u credit %u/%u",
				 negotiated(drv), hdr->op, hdr->flags, hdr->buf_alloc,
				 hdr->fwd_cnt);
		return;
	}
	/* As a full sk_rcvbuf: dropped. */
	if (!sim__pktq_add(&drv->dgrams, SIM_DGRAM_MAX, hdr, iov, iovcnt, len)) {
		drv->stats.dgram_rx_dropped++;
		return;
	}
	drv->stats.dgram_rx++;
	pthread_cond_broadcast(&drv->cond);
}

int sim_dgram_send(struct sim_drv *drv, uint64_t dst_cid, uint32_t src_port, uint32_t dst_port,
		   const void *buf, uint32_t len, int timeout_ms)
{
	struct virtio_vsock_hdr h;
	enum sim_shape shape;
	int rc;

	if (len > VIRTIO_VSOCK_MAX_PKT_BUF_SIZE)
		return -EMSGSIZE;
	pthread_mutex_lock(&drv->lock);
	rc = negotiated(drv) ? 0 : -EOPNOTSUPP;
	shape = drv->cfg.tx_shape;
	pthread_mutex_unlock(&drv->lock);
	if (rc)
		return rc;
	sim_hdr_init(drv, &h, src_port, dst_port, VIRTIO_VSOCK_TYPE_DGRAM, VIRTIO_VSOCK_OP_RW);
	h.dst_cid = dst_cid;
	h.len = len;
	rc = sim_send_pkt(drv, &h, buf, len, shape, timeout_ms);
	return rc < 0 ? rc : 0;
}

int sim_dgram_recv(struct sim_drv *drv, struct sim_pkt *pkt, int timeout_ms)
{
	return sim__pktq_recv(drv, &drv->dgrams, pkt, timeout_ms);
}

unsigned int sim_dgram_flush(struct sim_drv *drv)
{
	return sim__pktq_flush(drv, &drv->dgrams);
}
