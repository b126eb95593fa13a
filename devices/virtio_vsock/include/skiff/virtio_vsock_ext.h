/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * Experimental virtio-vsock ABI shared by the skiff device and the patched
 * Linux guest driver. None of this is in the virtio 1.2 specification.
 *
 * This one file is used unchanged on both sides: the device includes it
 * from skiff/vsock_abi.h, and the guest kernel has it as the uapi header
 * <linux/virtio_vsock_ext.h>, included at the end of <linux/virtio_vsock.h>.
 * Include it only after struct virtio_vsock_hdr has been defined, as both
 * of those headers do.
 *
 * All multi-byte fields are little endian.
 */
#ifndef _UAPI_LINUX_VIRTIO_VSOCK_EXT_H
#define _UAPI_LINUX_VIRTIO_VSOCK_EXT_H

#include <linux/types.h>

/*
 * SOCK_DGRAM over virtio-vsock, as proposed by the virtio-vsock datagram
 * RFC series.
 */
#define VIRTIO_VSOCK_F_DGRAM		3

/*
 * Packet type (virtio_vsock_hdr.type) of a datagram, after STREAM (1) and
 * SEQPACKET (2). Only with VIRTIO_VSOCK_F_DGRAM, and only with op RW: one
 * packet is one whole datagram of at most 64 KiB, with buf_alloc, fwd_cnt
 * and flags zero.
 */
#define VIRTIO_VSOCK_TYPE_DGRAM		3

/*
 * Mergeable receive buffers. When negotiated, every packet the device
 * places in the RX virtqueue starts with struct virtio_vsock_mrg_hdr
 * instead of struct virtio_vsock_hdr, and the packet may occupy several
 * descriptor chains (used ring entries).
 */
#define VIRTIO_VSOCK_F_MRG_RXBUF	4

/*
 * RX packet header with VIRTIO_VSOCK_F_MRG_RXBUF (46 bytes).
 *
 * @hdr:         the usual packet header; hdr.len is the payload length of
 *               the whole packet, at most 64 KiB.
 * @num_buffers: number of descriptor chains the packet occupies, this one
 *               included; at least 1. The payload starts right after this
 *               field in the first chain and continues at the start of
 *               each following chain, in used ring order.
 */
struct virtio_vsock_mrg_hdr {
	struct virtio_vsock_hdr hdr;
	__le16 num_buffers;
} __attribute__((packed));

#endif /* _UAPI_LINUX_VIRTIO_VSOCK_EXT_H */
