// SPDX-License-Identifier: MIT
#include "packet.h"

#include <endian.h>

#include "iov.h"

void pkt_hdr_from_le(struct virtio_vsock_hdr *h)
{
	h->src_cid = le64toh(h->src_cid);
	h->dst_cid = le64toh(h->dst_cid);
	h->src_port = le32toh(h->src_port);
	h->dst_port = le32toh(h->dst_port);
	h->len = le32toh(h->len);
	h->type = le16toh(h->type);
	h->op = le16toh(h->op);
	h->flags = le32toh(h->flags);
	h->buf_alloc = le32toh(h->buf_alloc);
	h->fwd_cnt = le32toh(h->fwd_cnt);
}

void pkt_hdr_to_le(struct virtio_vsock_hdr *h)
{
	h->src_cid = htole64(h->src_cid);
	h->dst_cid = htole64(h->dst_cid);
	h->src_port = htole32(h->src_port);
	h->dst_port = htole32(h->dst_port);
	h->len = htole32(h->len);
	h->type = htole16(h->type);
	h->op = htole16(h->op);
	h->flags = htole32(h->flags);
	h->buf_alloc = htole32(h->buf_alloc);
	h->fwd_cnt = htole32(h->fwd_cnt);
}

void pkt_rst(struct virtio_vsock_hdr *h, uint64_t src_cid, uint32_t src_port, uint64_t dst_cid,
	     uint32_t dst_port, uint16_t type)
{
	*h = (struct virtio_vsock_hdr){
		.src_cid = src_cid,
		.dst_cid = dst_cid,
		.src_port = src_port,
		.dst_port = dst_port,
		.type = type,
		.op = VIRTIO_VSOCK_OP_RST,
	};
}

void pkt_rst_reply(struct virtio_vsock_hdr *h, const struct virtio_vsock_hdr *in, uint16_t type)
{
	pkt_rst(h, in->dst_cid, in->dst_port, in->src_cid, in->src_port, type);
}

enum pkt_err pkt_parse_tx(const struct vq_chain *c, uint64_t guest_cid, bool seqpacket, bool dgram,
			  struct vsock_pkt *p)
{
	struct virtio_vsock_hdr *h = &p->hdr;

	if (c->in_len || c->n_in)
		return PKT_ERR_WRITABLE;
	if (c->out_len < VSOCK_HDR_LEN ||
	    iov_read(c->iov, c->n_out, 0, h, VSOCK_HDR_LEN) != VSOCK_HDR_LEN)
		return PKT_ERR_SHORT;
	pkt_hdr_from_le(h);
	p->payload_off = VSOCK_HDR_LEN;
	if (h->type != VIRTIO_VSOCK_TYPE_STREAM &&
	    !(h->type == VIRTIO_VSOCK_TYPE_SEQPACKET && seqpacket) &&
	    !(h->type == VIRTIO_VSOCK_TYPE_DGRAM && dgram))
		return PKT_ERR_TYPE;
	if (h->op < VIRTIO_VSOCK_OP_REQUEST || h->op > VIRTIO_VSOCK_OP_CREDIT_REQUEST ||
	    (h->type == VIRTIO_VSOCK_TYPE_DGRAM && h->op != VIRTIO_VSOCK_OP_RW))
		return PKT_ERR_OP;
	if (h->len > VIRTIO_VSOCK_MAX_PKT_BUF_SIZE || h->len > c->out_len - VSOCK_HDR_LEN)
		return PKT_ERR_LEN;
	if (h->src_cid != guest_cid)
		return PKT_ERR_SRC_CID;
	if (h->type == VIRTIO_VSOCK_TYPE_DGRAM && h->flags)
		return PKT_ERR_FLAGS;
	if (h->dst_cid != VSOCK_CID_HOST)
		return PKT_ERR_DST_CID;
	return PKT_OK;
}
