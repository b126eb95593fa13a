/* SPDX-License-Identifier: MIT */
/*
 * vhost-user wire format, backend side: the subset skiff-vsock speaks.
 *
 * Source: QEMU docs/interop/vhost-user.rst (the protocol specification), the
 * frontends we serve (QEMU 7.2 hw/virtio/vhost-user.c, Linux 6.1
 * arch/um/drivers/virtio_uml.c). All fields are in the host's byte order
 * (the protocol is local to one machine).
 *
 * A message is a 12-byte header (request, flags, payload size) followed by
 * the payload; file descriptors travel as SCM_RIGHTS ancillary data with the
 * message's bytes.
 */
#ifndef SKIFF_VU_PROTO_H
#define SKIFF_VU_PROTO_H

#include <stdint.h>

/* Frontend requests (vhost-user.rst, "Front-end message types"). */
enum vu_request {
	VU_REQ_NONE = 0,
	VU_REQ_GET_FEATURES = 1,
	VU_REQ_SET_FEATURES = 2,
	VU_REQ_SET_OWNER = 3,
	VU_REQ_RESET_OWNER = 4,
	VU_REQ_SET_MEM_TABLE = 5,
	VU_REQ_SET_LOG_BASE = 6,
	VU_REQ_SET_LOG_FD = 7,
	VU_REQ_SET_VRING_NUM = 8,
	VU_REQ_SET_VRING_ADDR = 9,
	VU_REQ_SET_VRING_BASE = 10,
	VU_REQ_GET_VRING_BASE = 11,
	VU_REQ_SET_VRING_KICK = 12,
	VU_REQ_SET_VRING_CALL = 13,
	VU_REQ_SET_VRING_ERR = 14,
	VU_REQ_GET_PROTOCOL_FEATURES = 15,
	VU_REQ_SET_PROTOCOL_FEATURES = 16,
	VU_REQ_GET_QUEUE_NUM = 17,
	VU_REQ_SET_VRING_ENABLE = 18,
	VU_REQ_SEND_RARP = 19,
	VU_REQ_NET_SET_MTU = 20,
	VU_REQ_SET_SLAVE_REQ_FD = 21,
	VU_REQ_IOTLB_MSG = 22,
	VU_REQ_SET_VRING_ENDIAN = 23,
	VU_REQ_GET_CONFIG = 24,
	VU_REQ_SET_CONFIG = 25,
	VU_REQ_MAX = 41,
};

/* Header flags: bits 0-1 version (always 1), bit 2 reply, bit 3 need_reply. */
#define VU_FLAG_VERSION_MASK 0x3u
#define VU_VERSION 0x1u
#define VU_FLAG_REPLY (1u << 2)
#define VU_FLAG_NEED_REPLY (1u << 3)

/* Virtio feature bit 30, vhost-user specific: protocol features exist. */
#define VU_F_PROTOCOL_FEATURES 30

/* Protocol feature bits (vhost-user.rst, "Protocol features"). */
#define VU_PROTOCOL_F_MQ 0
#define VU_PROTOCOL_F_REPLY_ACK 3
#define VU_PROTOCOL_F_SLAVE_REQ 5
#define VU_PROTOCOL_F_CONFIG 9

/* SET_VRING_KICK/CALL/ERR payload: bits 0-7 index, bit 8 "no fd" (polling). */
#define VU_VRING_IDX_MASK 0xffull
#define VU_VRING_NOFD_MASK (1ull << 8)

/* The most regions in SET_MEM_TABLE and the most fds on one message. */
#define VU_MAX_REGIONS 8
#define VU_MAX_FDS 8

/* Largest config space GET_CONFIG may ask for (vhost-user.rst: 256 bytes). */
#define VU_MAX_CONFIG_SIZE 256

struct vu_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* payload bytes after this header */
} __attribute__((packed));

/* SET_VRING_NUM, SET_VRING_BASE, GET_VRING_BASE, SET_VRING_ENABLE. */
struct vu_vring_state {
	uint32_t index;
	uint32_t num;
} __attribute__((packed));

/* SET_VRING_ADDR: frontend user addresses (note: used before avail). */
struct vu_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc_user_addr;
	uint64_t used_user_addr;
	uint64_t avail_user_addr;
	uint64_t log_guest_addr;
} __attribute__((packed));

struct vu_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t mmap_offset;
} __attribute__((packed));

/* SET_MEM_TABLE: nregions used entries (frontends send all 8 slots or fewer). */
struct vu_mem_table {
	uint32_t nregions;
	uint32_t padding;
	struct vu_mem_region regions[VU_MAX_REGIONS];
} __attribute__((packed));

/* GET_CONFIG / SET_CONFIG: this, then size bytes of config space. */
struct vu_config_hdr {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
} __attribute__((packed));

/* The largest payload we accept: a full memory table. */
#define VU_MAX_PAYLOAD (sizeof(struct vu_config_hdr) + VU_MAX_CONFIG_SIZE)

_Static_assert(sizeof(struct vu_hdr) == 12, "vhost-user header is 12 bytes");
_Static_assert(sizeof(struct vu_mem_table) == 8 + 8 * 32, "memory table layout");
_Static_assert(sizeof(struct vu_vring_addr) == 40, "vring address layout");
_Static_assert(sizeof(struct vu_mem_table) <= VU_MAX_PAYLOAD, "payload buffer fits a table");

#endif /* SKIFF_VU_PROTO_H */
