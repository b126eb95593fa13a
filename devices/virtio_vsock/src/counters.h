/* SPDX-License-Identifier: MIT */
/*
 * The device's counters (vsock_dev_get_counters(), README "Counters"): one
 * struct shared by every layer that counts, each field a relaxed atomic so
 * that any thread adds to it without a lock. No dependency on the device.
 */
#ifndef SKIFF_VSOCK_COUNTERS_H
#define SKIFF_VSOCK_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>

struct dev_counters {
	_Atomic uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes, kicks, irqs_sent, irqs_suppressed,
		conn_resets, dropped_pkts, malformed_pkts, conns_opened, conns_closed, dev_resets;
	_Atomic uint64_t rx_chains_max, conns_refused, stray_pkts, rx_pkt_limit_stalls;
	/* Datagrams (VIRTIO_VSOCK_F_DGRAM): tx guest to host/guest, rx to this guest. */
	_Atomic uint64_t dgram_tx_pkts, dgram_tx_bytes, dgram_tx_drop_malformed,
		dgram_tx_drop_no_dest, dgram_tx_drop_full, dgram_tx_drop_err;
	_Atomic uint64_t dgram_rx_pkts, dgram_rx_bytes, dgram_rx_drop_no_buf, dgram_rx_drop_too_big,
		dgram_rx_drop_bad_addr, dgram_rx_drop_err, dgram_rx_drop_no_dest;
};

/* CTR() - add @n to counter @field of @ctr (a struct dev_counters *), any thread. */
#define CTR(ctr, field, n) atomic_fetch_add_explicit(&(ctr)->field, (n), memory_order_relaxed)

/* ctr_max() - raise counter @c to @v if below (lock free; concurrent writers may race). */
static inline void ctr_max(_Atomic uint64_t *c, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(c, memory_order_relaxed);

	while (cur < v && !atomic_compare_exchange_weak_explicit(c, &cur, v, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

#endif
