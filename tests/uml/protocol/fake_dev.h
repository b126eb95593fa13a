/* SPDX-License-Identifier: MIT */
/*
 * A recording stand-in for the device model (skiff/vsock_dev.h), so the
 * vhost-user protocol layer can be tested on its own: it keeps what each
 * call was given and checks the call order the header demands (no
 * set_features/set_vring while started, RX and TX before start, rings
 * inside the memory table).
 */
#ifndef SKIFF_FAKE_DEV_H
#define SKIFF_FAKE_DEV_H

#include <stdbool.h>

#include "skiff/vsock_dev.h"

#define FAKE_DEV_FEATURES                                                          \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) |        \
	 (1ull << VIRTIO_RING_F_INDIRECT_DESC) | (1ull << VIRTIO_VSOCK_F_STREAM) | \
	 (1ull << VIRTIO_VSOCK_F_SEQPACKET) | (1ull << VIRTIO_VSOCK_F_MRG_RXBUF))

struct fake_dev_state {
	uint64_t cid;
	bool started;
	bool has_features;
	uint64_t features;
	unsigned int nregions; /* 0: no table */
	struct vsock_mem_region regions[VSOCK_MAX_MEM_REGIONS];
	bool vring_set[VSOCK_VQ_NUM];
	struct vsock_vring_config vring[VSOCK_VQ_NUM];
	uint16_t stop_avail[VSOCK_VQ_NUM]; /* what vsock_dev_stop() reports */
	unsigned int starts, stops, resets;
	unsigned int order_errors; /* calls the contract forbids at that point */
};

/* The fake's state; tests may change stop_avail. */
struct fake_dev_state *fake_dev_state(struct vsock_dev *dev);

#endif /* SKIFF_FAKE_DEV_H */
