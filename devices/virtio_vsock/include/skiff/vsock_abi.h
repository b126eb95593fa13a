/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * virtio-vsock wire format: what the device and the guest driver agree on.
 *
 * Standard part: virtio 1.2 section 5.10 (device id 19) and Linux
 * include/uapi/linux/virtio_vsock.h. Experimental part (not in the spec; the
 * guest kernel patches in guest-kernel-patches/ carry the same definitions):
 * feature bit 3 DGRAM and bit 4 MRG_RXBUF, and the num_buffers field that
 * follows the header in RX packets when MRG_RXBUF was negotiated.
 *
 * All multi-byte fields are little endian on the wire.
 */
#ifndef SKIFF_VSOCK_ABI_H
#define SKIFF_VSOCK_ABI_H

#include <stdint.h>

#define VIRTIO_ID_VSOCK 19

/* Device feature bits (virtio 1.2 5.10.3, plus the experimental ones). */
#define VIRTIO_VSOCK_F_STREAM 0
#define VIRTIO_VSOCK_F_SEQPACKET 1
#define VIRTIO_VSOCK_F_NO_IMPLIED_STREAM 2
/* Experimental bits DGRAM (3) and MRG_RXBUF (4): skiff/virtio_vsock_ext.h. */

/* Transport feature bits (virtio 1.2 section 6). */
#define VIRTIO_RING_F_INDIRECT_DESC 28
#define VIRTIO_RING_F_EVENT_IDX 29
#define VIRTIO_F_VERSION_1 32

/* Queue indexes (virtio 1.2 5.10.2). */
#define VSOCK_VQ_RX 0
#define VSOCK_VQ_TX 1
#define VSOCK_VQ_EVENT 2
#define VSOCK_VQ_NUM 3

/* Well-known CIDs. */
#define VSOCK_CID_HYPERVISOR 0
#define VSOCK_CID_LOCAL 1
#define VSOCK_CID_HOST 2

/* Packet types (hdr.type). */
#define VIRTIO_VSOCK_TYPE_STREAM 1
#define VIRTIO_VSOCK_TYPE_SEQPACKET 2
/* Experimental type DGRAM (3): skiff/virtio_vsock_ext.h. */

/* Operations (hdr.op). */
enum virtio_vsock_op {
	VIRTIO_VSOCK_OP_INVALID = 0,
	VIRTIO_VSOCK_OP_REQUEST = 1,
	VIRTIO_VSOCK_OP_RESPONSE = 2,
	VIRTIO_VSOCK_OP_RST = 3,
	VIRTIO_VSOCK_OP_SHUTDOWN = 4,
	VIRTIO_VSOCK_OP_RW = 5,
	VIRTIO_VSOCK_OP_CREDIT_UPDATE = 6,
	VIRTIO_VSOCK_OP_CREDIT_REQUEST = 7,
};

/* hdr.flags for OP_SHUTDOWN. */
#define VIRTIO_VSOCK_SHUTDOWN_RCV 1u
#define VIRTIO_VSOCK_SHUTDOWN_SEND 2u

/* hdr.flags for OP_RW on SEQPACKET: end of message, end of record. */
#define VIRTIO_VSOCK_SEQ_EOM 1u
#define VIRTIO_VSOCK_SEQ_EOR 2u

/* Event queue: transport reset event id. */
#define VIRTIO_VSOCK_EVENT_TRANSPORT_RESET 0

/* The largest payload of one packet, both directions (Linux 6.1 limit). */
#define VIRTIO_VSOCK_MAX_PKT_BUF_SIZE (64u * 1024u)

/*
 * The packet header, 44 bytes, packed. Never overlay it on guest memory:
 * copy it into a local struct first, then validate the copy.
 */
struct virtio_vsock_hdr {
	uint64_t src_cid;
	uint64_t dst_cid;
	uint32_t src_port;
	uint32_t dst_port;
	uint32_t len;
	uint16_t type;
	uint16_t op;
	uint32_t flags;
	uint32_t buf_alloc;
	uint32_t fwd_cnt;
} __attribute__((packed));

_Static_assert(sizeof(struct virtio_vsock_hdr) == 44, "vsock header is 44 bytes");

/*
 * The experimental part (feature bits DGRAM and MRG_RXBUF, and struct
 * virtio_vsock_mrg_hdr, the RX header with num_buffers) lives in one header
 * shared byte for byte with the guest kernel patches, which add it as
 * include/uapi/linux/virtio_vsock_ext.h. It needs struct virtio_vsock_hdr
 * defined first.
 */
#include "skiff/virtio_vsock_ext.h"

_Static_assert(sizeof(struct virtio_vsock_mrg_hdr) == 46, "mergeable header is 46 bytes");

/* Event queue element (virtio 1.2 5.10.6.5). */
struct virtio_vsock_event {
	uint32_t id;
} __attribute__((packed));

/* Device configuration layout (virtio 1.2 5.10.4). */
struct virtio_vsock_config {
	uint64_t guest_cid;
} __attribute__((packed));

#endif /* SKIFF_VSOCK_ABI_H */
