/* SPDX-License-Identifier: MIT */
/*
 * vsock packets on a descriptor chain (virtio 1.2 5.10.6): the 44-byte
 * header copied once into host byte order, validated, and the payload as the
 * byte stream that follows it in the chain's readable part.
 */
#ifndef SKIFF_VSOCK_PACKET_H
#define SKIFF_VSOCK_PACKET_H

#include <stdbool.h>
#include <stdint.h>

#include "skiff/vsock_abi.h"
#include "virtqueue.h"

#define VSOCK_HDR_LEN ((uint32_t)sizeof(struct virtio_vsock_hdr))
#define VSOCK_MRG_HDR_LEN ((uint32_t)sizeof(struct virtio_vsock_mrg_hdr))

/* A header in host byte order, plus where its payload sits in the chain. */
struct vsock_pkt {
	struct virtio_vsock_hdr hdr; /* host byte order */
	uint32_t payload_off; /* offset of the payload in the readable stream */
};

/* Why pkt_parse_tx() refused a chain (for logs and tests). */
enum pkt_err {
	PKT_OK = 0,
	PKT_ERR_SHORT, /* fewer than 44 readable bytes */
	PKT_ERR_WRITABLE, /* TX chain has writable descriptors */
	PKT_ERR_TYPE, /* type not STREAM, SEQPACKET or DGRAM (or not negotiated) */
	PKT_ERR_OP, /* op not in 1..7; for DGRAM, not RW */
	PKT_ERR_LEN, /* len > 64 KiB or > readable bytes after the header */
	PKT_ERR_SRC_CID, /* src_cid != guest CID */
	PKT_ERR_DST_CID, /* dst_cid != VSOCK_CID_HOST */
	PKT_ERR_FLAGS, /* DGRAM with flags != 0 */
};

/*
 * pkt_parse_tx() - copy and validate the header of a TX (driver to device)
 * chain @c. @seqpacket, @dgram: whether SEQPACKET, DGRAM were negotiated.
 * Checks, in order: no writable part, at least 44 readable bytes, type,
 * op (RW only for DGRAM: the datagram RFC uses no other), len <=
 * VIRTIO_VSOCK_MAX_PKT_BUF_SIZE and <= readable bytes - 44, src_cid ==
 * @guest_cid, for DGRAM flags == 0 (buf_alloc and fwd_cnt are ignored),
 * dst_cid == 2 (the caller routes PKT_ERR_DST_CID to other guests).
 * Bytes past hdr.len in the chain are ignored.
 * Return: PKT_OK with @p filled, or the first failed check.
 */
enum pkt_err pkt_parse_tx(const struct vq_chain *c, uint64_t guest_cid, bool seqpacket, bool dgram,
			  struct vsock_pkt *p);

/*
 * pkt_rst() - the RST header (host order) from @src_cid:@src_port to
 * @dst_cid:@dst_port for a connection of socket type @type; len, flags and
 * credit (buf_alloc, fwd_cnt) are 0: an RST carries none (as Linux's
 * virtio_transport_reset_no_sock()).
 */
void pkt_rst(struct virtio_vsock_hdr *h, uint64_t src_cid, uint32_t src_port, uint64_t dst_cid,
	     uint32_t dst_port, uint16_t type);

/*
 * pkt_rst_reply() - pkt_rst() answering packet @in (host order): from its
 * destination to its source, CIDs and ports swapped, of type @type.
 */
void pkt_rst_reply(struct virtio_vsock_hdr *h, const struct virtio_vsock_hdr *in, uint16_t type);

/* pkt_hdr_to_le() - convert a host-order header to wire (little endian) order in place. */
void pkt_hdr_to_le(struct virtio_vsock_hdr *h);

/* pkt_hdr_from_le() - convert a wire header to host order in place. */
void pkt_hdr_from_le(struct virtio_vsock_hdr *h);

#endif
