/* SPDX-License-Identifier: MIT */
/*
 * Simulated virtio-vsock driver: plays the guest for device tests and
 * benchmarks, over real shared memory (a memfd) and real eventfds.
 *
 * What it owns:
 *   - guest memory: one memfd, exposed to the device as 1 or 2 regions
 *     (struct vsock_mem_region), optionally with a GPA hole between them or
 *     adjacent so that a buffer straddles the boundary (different HVAs);
 *   - the driver side of the three split virtqueues (virtio 1.2 section 2.7):
 *     descriptor tables, avail rings, used ring consumption, EVENT_IDX from
 *     the driver side (used_event, avail_event), indirect tables;
 *   - a service thread that takes interrupts (call eventfds or the notify
 *     callback), parses RX packets (num_buffers reassembly with MRG_RXBUF),
 *     reaps TX chains and keeps the RX queue filled;
 *   - a small guest vsock stack with Linux's credit rules
 *     (net/vmw_vsock/virtio_transport_common.c): connect/listen/accept,
 *     send/recv, SEQPACKET messages, shutdown, close, credit updates;
 *   - raw hooks to build malformed input (arbitrary descriptors and headers).
 *
 * The driver checks the device as it goes: CIDs, used lengths against the
 * header, credit never exceeded, packets after RST. Each violation bumps
 * sim_drv_stats.proto_errors (or credit_violations) and is kept as text in
 * sim_drv_last_error(); tests assert both are zero at the end.
 *
 * Locking: one mutex per driver (drv->lock in sim_driver.c) protects the
 * queues, the connection table and every connection; one condition variable
 * is broadcast on any change. All functions here are thread safe, except
 * that one connection must be sent on by one thread at a time, and
 * create/attach/reset/destroy are called from one control thread.
 */
#ifndef SKIFF_SIM_DRIVER_H
#define SKIFF_SIM_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "skiff/vsock_abi.h"
#include "skiff/vsock_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sim_drv;
struct sim_conn;
struct sim_listener;

/*
 * Descriptor chain shapes, for TX packets (readable) and RX buffers
 * (writable). The device must accept every one of them.
 */
enum sim_shape {
	SIM_SHAPE_LINEAR, /* one descriptor: header and payload together */
	SIM_SHAPE_HDR_SEP, /* header descriptor, then one payload descriptor */
	SIM_SHAPE_SPLIT, /* header over 3 descriptors (7, 20, rest), payload over chunk-sized ones */
	SIM_SHAPE_INDIRECT, /* SIM_SHAPE_SPLIT inside one indirect table */
	SIM_SHAPE_NUM
};

const char *sim_shape_name(enum sim_shape shape);

struct sim_drv_config {
	uint64_t guest_cid; /* 0: 3 */
	uint16_t queue_size; /* power of two; 0: 256 */
	/*
	 * Features the driver accepts; negotiated = this & device offer.
	 * 0: everything this driver knows (VERSION_1, EVENT_IDX,
	 * INDIRECT_DESC, STREAM, SEQPACKET, MRG_RXBUF).
	 */
	uint64_t features;
	unsigned int nregions; /* 1 (0 means 1) or 2 */
	/*
	 * With 2 regions: GPA hole between them. 0 puts them back to back in
	 * GPA space (but not in HVA space), with the boundary inside the TX
	 * buffer area so that TX buffers straddle it. Non-zero puts the TX
	 * area in region 0 and the RX area in region 1.
	 */
	uint64_t region_gap;
	bool notify_cb; /* interrupts through vsock_notify_fn, not call eventfds */
	uint32_t buf_alloc; /* receive buffer per connection; 0: 256 KiB */
	enum sim_shape tx_shape; /* default SIM_SHAPE_HDR_SEP (Linux 6.1 TX) */
	uint32_t tx_chunk; /* payload piece for SPLIT/INDIRECT; 0: 1024 */
	uint32_t tx_pkt_max; /* payload cap per TX RW packet; 0: 64 KiB */
	enum sim_shape rx_shape; /* default SIM_SHAPE_LINEAR (Linux 6.1 RX) */
	/*
	 * Bytes of one RX buffer chain, header included. 0: 4096 with
	 * MRG_RXBUF (page-sized buffers), else 4096 + 44 (Linux 6.1).
	 */
	uint32_t rx_buf_size;
	uint32_t rx_chunk; /* piece size for SPLIT/INDIRECT RX buffers; 0: 1024 */
	uint16_t rx_bufs; /* RX chains kept posted; 0: as many as fit */
	bool no_auto_rst; /* do not answer unmatched packets with RST */
	/*
	 * Accept packets from other guests' CIDs (guest-to-guest routing
	 * tests); without it only CID 2 may be a source.
	 */
	bool peer_guests;
	bool no_rx_refill; /* do not repost consumed RX buffers (sim_rx_refill) */
	/*
	 * Repost consumed RX buffers as soon as they are consumed. Default
	 * (false): as Linux 6.1 does (net/vmw_vsock/virtio_transport.c,
	 * virtio_transport_rx_work()), refill the queue to the full target
	 * only once fewer than half of it is left with the device.
	 */
	bool rx_refill_eager;
	bool rx_start_empty; /* attach posts no RX buffers (with no_rx_refill) */
	/*
	 * Reuse the most recently freed descriptors first (LIFO), so that a new
	 * chain gets the buffers of the chain completed last, still in the CPU
	 * caches, as a guest's freshly written skbs would be. Default (false):
	 * FIFO, heads and buffers rotate over the whole ring (what tests want).
	 * For benchmarks: TX buffers that nobody writes and that rotate over
	 * megabytes are read from DRAM, a cost a real guest does not impose.
	 */
	bool lifo_descs;
	/*
	 * The per-packet receive overhead a guest charges against buf_alloc:
	 * 0 (Linux 6.1, which counts payload bytes only), or the SKB_TRUESIZE(0)
	 * of a guest from 6.12.92 on, which resets a connection when an RW packet
	 * arrives while (queued packets + 1) x overhead > buf_alloc. Every
	 * unconsumed RW packet counts as queued (Linux may merge a small payload
	 * into the previous skb; this driver never does, so it is the stricter).
	 */
	uint32_t rx_pkt_overhead;
	/*
	 * Credit rules. Default (false): those of the 6.1 kernel our guests
	 * run (Debian's 6.1.192, net/vmw_vsock/virtio_transport_common.c):
	 *   - send at most min(peer's buf_alloc, our own) unacknowledged
	 *     (virtio_transport_tx_buf_size());
	 *   - STREAM: after a read, a CREDIT_UPDATE when unreported bytes were
	 *     consumed and our free space is under 64 KiB or the read left
	 *     fewer than SO_RCVLOWAT (1) bytes queued
	 *     (virtio_transport_stream_do_dequeue()); with a sink, each pass
	 *     over the RX queue counts as one read (a reader woken per
	 *     interrupt that takes what is queued);
	 *   - SEQPACKET: a CREDIT_UPDATE after every message read
	 *     (virtio_transport_seqpacket_do_dequeue()).
	 * True: 6.1.0's, which the benchmarks and tests used before 2 Dec
	 * 2026: the window is the peer's buf_alloc alone, and a CREDIT_UPDATE
	 * goes only when the free space falls under 64 KiB.
	 */
	bool credit_6_1_0;
};

/* Driver-side statistics, monotonic since create. */
struct sim_drv_stats {
	uint64_t kicks_sent; /* eventfd writes to kick_fd (all queues) */
	uint64_t kicks_suppressed; /* kicks skipped: avail_event / NO_NOTIFY */
	uint64_t irqs; /* interrupts taken (eventfd reads or notify calls) */
	uint64_t irqs_per_q[VSOCK_VQ_NUM];
	uint64_t rx_pkts; /* packets parsed from the RX queue */
	uint64_t rx_bytes; /* their payload bytes */
	uint64_t rx_chains; /* RX used entries consumed */
	uint64_t rx_empty; /* RX chains returned with used len 0 (unused) */
	uint64_t tx_pkts; /* packets put on the TX queue (raw chains too) */
	uint64_t tx_bytes;
	uint64_t events; /* event queue entries (transport reset) */
	uint64_t stray_pkts; /* RX packets that matched no connection */
	uint64_t max_num_buffers; /* largest num_buffers seen (MRG_RXBUF) */
	uint64_t max_rx_payload; /* largest RX packet payload seen */
	uint64_t credit_violations; /* device sent beyond our credit */
	uint64_t stale_fwd_cnt; /* packets with an older fwd_cnt than one before (also an error) */
	uint64_t proto_errors; /* anything else the device got wrong */
	uint64_t pkt_overhead_resets; /* connections reset by the rx_pkt_overhead rule */
	uint64_t dgram_rx; /* DGRAM packets received and queued (sim_dgram_recv()) */
	uint64_t dgram_rx_dropped; /* ... dropped: the datagram queue was full (SIM_DGRAM_MAX) */
};

/*
 * sim_drv_create() - allocate guest memory and the driver side of the queues.
 * Return: 0; -EINVAL for a bad config; -ENOMEM; -errno from memfd_create,
 * mmap, eventfd.
 */
int sim_drv_create(const struct sim_drv_config *cfg, struct sim_drv **out);

/*
 * sim_drv_notify() - a vsock_notify_fn for struct vsock_dev_config when the
 * driver was created with notify_cb (opaque = the sim_drv). Thread safe.
 */
void sim_drv_notify(void *opaque, unsigned int queue);

/* sim_drv_destroy() - stop the service thread, free all. Call after the device is reset or destroyed. */
void sim_drv_destroy(struct sim_drv *drv);

/*
 * sim_drv_attach() - the driver initialisation sequence against @dev
 * (virtio 1.2 section 3.1.1 as a transport would relay it): read the offer,
 * accept features, set memory, set the three vrings, post RX and event
 * buffers, start the device, start the service thread.
 * Return: 0 or the -errno of the failing vsock_dev_* call.
 */
int sim_drv_attach(struct sim_drv *drv, struct vsock_dev *dev);

/*
 * sim_drv_reset() - driver writes status 0: vsock_dev_reset(), then every
 * connection is marked reset (waiters get -ECONNRESET), the queues and
 * pending packets are cleared. sim_drv_attach() makes it usable again.
 */
int sim_drv_reset(struct sim_drv *drv);

uint64_t sim_drv_features(const struct sim_drv *drv); /* negotiated */
uint64_t sim_drv_guest_cid(const struct sim_drv *drv);
void sim_drv_get_stats(struct sim_drv *drv, struct sim_drv_stats *out);
/* Text of the last protocol error seen, "" if none. Copied into @buf. */
void sim_drv_last_error(struct sim_drv *drv, char *buf, size_t len);

/* ---- guest memory ---- */

/* The regions to give the device (also what sim_drv_attach() passes). */
const struct vsock_mem_region *sim_drv_regions(const struct sim_drv *drv, unsigned int *n);
/* First GPA past guest memory (the end of the last region). */
uint64_t sim_drv_mem_end(const struct sim_drv *drv);
/* GPA where region 1 starts (0 with one region). */
uint64_t sim_drv_boundary_gpa(const struct sim_drv *drv);
/* GPA of the end of region 0 (start of the hole with a gap). */
uint64_t sim_drv_region0_end(const struct sim_drv *drv);
/*
 * sim_alloc() - test-owned guest memory, never freed before destroy.
 * @align: power of two. Return: the GPA, or 0 when the arena is exhausted.
 */
uint64_t sim_alloc(struct sim_drv *drv, uint64_t len, uint64_t align);
/* Driver's view of [gpa, gpa + len): a pointer, or NULL if not all guest memory. */
void *sim_gpa_ptr(struct sim_drv *drv, uint64_t gpa, uint64_t len);

/* ---- packets ---- */

/* One received packet, payload gathered into a malloc'd buffer. */
struct sim_pkt {
	struct virtio_vsock_hdr hdr;
	uint16_t num_buffers; /* 1 without MRG_RXBUF */
	uint8_t *payload; /* hdr.len bytes; free with sim_pkt_free() */
};
void sim_pkt_free(struct sim_pkt *pkt);

/* Fill @hdr: src = guest CID/@src_port, dst = host/@dst_port, len 0, flags 0, credit 0. */
void sim_hdr_init(struct sim_drv *drv, struct virtio_vsock_hdr *hdr, uint32_t src_port,
		  uint32_t dst_port, uint16_t type, uint16_t op);

/*
 * sim_send_pkt() - put one packet on the TX queue over a chain of @shape:
 * @hdr verbatim (hdr->len is NOT set from @len, so it may lie), then @len
 * payload bytes (at most 128 KiB; @payload NULL leaves the buffer as is). Waits up to @timeout_ms for descriptors.
 * Return: the chain's head index (>= 0); -ETIMEDOUT; -EINVAL; -ENOTCONN
 * when not attached.
 */
int sim_send_pkt(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr, const void *payload,
		 uint32_t len, enum sim_shape shape, int timeout_ms);

/*
 * sim_pkt_recv() - next packet that matched no connection or listener
 * (FIFO), waiting up to @timeout_ms. Return: 0; -ETIMEDOUT.
 */
int sim_pkt_recv(struct sim_drv *drv, struct sim_pkt *pkt, int timeout_ms);
/* Drop all queued stray packets. Return: how many. */
unsigned int sim_pkt_flush(struct sim_drv *drv);

/*
 * sim_wait_tx_idle() - wait until the device has returned every TX chain.
 * Return: 0; -ETIMEDOUT.
 */
int sim_wait_tx_idle(struct sim_drv *drv, int timeout_ms);

/* Change the chain shape of TX packets from now on (any thread). */
void sim_drv_set_tx_shape(struct sim_drv *drv, enum sim_shape shape);

/* ---- datagrams (VIRTIO_VSOCK_F_DGRAM, the datagram RFC's wire format) ---- */

/*
 * sim_dgram_send() - one datagram of @len bytes (at most 64 KiB: -EMSGSIZE,
 * as the RFC's guest) from guest port @src_port to (@dst_cid, @dst_port):
 * one DGRAM RW packet, flags and credit fields 0, over the TX shape in
 * use. Waits up to @timeout_ms for descriptors (a guest's sk_sndbuf).
 * Return: 0; -EMSGSIZE; -EOPNOTSUPP (DGRAM not negotiated); as
 * sim_send_pkt().
 */
int sim_dgram_send(struct sim_drv *drv, uint64_t dst_cid, uint32_t src_port, uint32_t dst_port,
		   const void *buf, uint32_t len, int timeout_ms);
/*
 * sim_dgram_recv() - the next datagram received (any port, FIFO), waiting
 * up to @timeout_ms. The driver queues at most SIM_DGRAM_MAX (its
 * sk_rcvbuf) and drops beyond (stats.dgram_rx_dropped). Each DGRAM packet
 * is checked as it arrives: negotiated, op RW, flags 0, buf_alloc and
 * fwd_cnt 0, to this CID (else a proto_error).
 * Return: 0 with @pkt (free with sim_pkt_free()); -ETIMEDOUT.
 */
int sim_dgram_recv(struct sim_drv *drv, struct sim_pkt *pkt, int timeout_ms);
/* sim_dgram_flush() - drop the queued datagrams. Return: how many. */
unsigned int sim_dgram_flush(struct sim_drv *drv);

/* ---- raw chains (malformed input) ---- */

#define SIM_NEXT_AUTO (-1) /* next = the following entry of this chain */
#define SIM_NEXT_CHAIN(i) (0x10000 + (i)) /* next = entry i of this chain */
/* any other value 0..0xffff: written verbatim (e.g. >= queue size) */

struct sim_raw_desc {
	uint64_t gpa;
	uint32_t len;
	uint16_t flags; /* VRING_DESC_F_* verbatim */
	int32_t next; /* SIM_NEXT_AUTO, SIM_NEXT_CHAIN(i) or a raw index */
};

/*
 * sim_raw_chain() - write @n descriptors as given on queue @q, publish the
 * first as a head and kick. The chain's completion is kept for
 * sim_raw_wait() instead of being parsed. Return: head index; -ENOSPC;
 * -EINVAL.
 */
int sim_raw_chain(struct sim_drv *drv, unsigned int q, const struct sim_raw_desc *d,
		  unsigned int n);
/*
 * sim_raw_wait() - wait for raw chain @head on @q to come back in the used
 * ring. @used_len: what the device wrote there. Return: 0; -ETIMEDOUT.
 */
int sim_raw_wait(struct sim_drv *drv, unsigned int q, int head, uint32_t *used_len, int timeout_ms);

/* ---- queue control ---- */

/* Stop/start reposting RX buffers; sim_rx_refill() posts up to @n more now. */
void sim_rx_set_refill(struct sim_drv *drv, bool on);
int sim_rx_refill(struct sim_drv *drv, unsigned int n);
/* RX chains currently posted and not yet used. */
unsigned int sim_rx_posted(struct sim_drv *drv);
/*
 * sim_vq_suppress_irq() - ask the device for no interrupts on @q (used_event
 * left behind with EVENT_IDX, else VRING_AVAIL_F_NO_INTERRUPT). The service
 * thread then polls every 10 ms instead.
 */
void sim_vq_suppress_irq(struct sim_drv *drv, unsigned int q, bool suppress);

/* ---- connections (guest vsock stack) ---- */

/*
 * Called by the service thread with the driver lock held for each RW
 * payload of a connection that has a sink: the bytes are consumed at once
 * (fwd_cnt advances), nothing is buffered. Must not call back into the
 * driver.
 */
typedef void (*sim_sink_fn)(void *opaque, const struct iovec *iov, int iovcnt, size_t len,
			    uint32_t flags);

/*
 * sim_connect() - guest connects to host port @port (REQUEST, then wait
 * for RESPONSE). @type: VIRTIO_VSOCK_TYPE_STREAM or _SEQPACKET.
 * Return: 0; -ECONNRESET (RST); -ETIMEDOUT; -ENOMEM; -ENOTCONN (not attached).
 */
int sim_connect(struct sim_drv *drv, uint32_t port, uint16_t type, int timeout_ms,
		struct sim_conn **out);

/*
 * sim_connect_cid() - sim_connect() to port @port of CID @cid (another
 * guest through the device's routing; set peer_guests to get its answers).
 */
int sim_connect_cid(struct sim_drv *drv, uint64_t cid, uint32_t port, uint16_t type, int timeout_ms,
		    struct sim_conn **out);

/* sim_listen() - accept REQUESTs to guest port @port (from the host, or any CID with peer_guests). */
int sim_listen(struct sim_drv *drv, uint32_t port, uint16_t type, unsigned int backlog,
	       struct sim_listener **out);
/* sim_accept() - Return: 0; -ETIMEDOUT. */
int sim_accept(struct sim_listener *l, int timeout_ms, struct sim_conn **out);
/* sim_unlisten() - stop listening; unaccepted connections get RST and are freed. */
void sim_unlisten(struct sim_listener *l);

/*
 * sim_send() - send all @len bytes (STREAM), in packets of at most
 * tx_pkt_max and the peer's credit, waiting for credit as Linux does.
 * Return: @len; -EPIPE after our SHUTDOWN SEND or the peer's SHUTDOWN RCV;
 * -ECONNRESET; -ETIMEDOUT when nothing could be sent for @timeout_ms (the
 * bytes sent so far are lost to the caller: tests treat it as failure).
 * @buf NULL sends @len bytes of whatever the TX buffers hold, without a
 * copy: a guest that costs nothing, for benchmarks.
 */
ssize_t sim_send(struct sim_conn *c, const void *buf, size_t len, int timeout_ms);
/*
 * sim_send_msg() - SEQPACKET: one message, EOM on its last packet, EOR too
 * when @eor. Return: @len or as sim_send().
 */
ssize_t sim_send_msg(struct sim_conn *c, const void *buf, size_t len, bool eor, int timeout_ms);
/*
 * sim_recv() - up to @cap bytes. Return: > 0; 0 at EOF (peer SHUTDOWN SEND
 * and nothing left); -ECONNRESET; -ETIMEDOUT.
 */
ssize_t sim_recv(struct sim_conn *c, void *buf, size_t cap, int timeout_ms);
/*
 * sim_recv_msg() - SEQPACKET: one whole message (truncated to @cap, the
 * rest discarded, as MSG_TRUNC). @flags: the EOM/EOR bits of its last packet.
 * Return: the message length; 0 at EOF; -ECONNRESET; -ETIMEDOUT.
 */
ssize_t sim_recv_msg(struct sim_conn *c, void *buf, size_t cap, uint32_t *flags, int timeout_ms);
/* sim_shutdown() - send SHUTDOWN with VIRTIO_VSOCK_SHUTDOWN_RCV/SEND @flags. */
int sim_shutdown(struct sim_conn *c, uint32_t flags);
/*
 * sim_wait_peer_shutdown() - wait until the peer's SHUTDOWN flags include
 * @flags, or RST. Return: 0; -ECONNRESET; -ETIMEDOUT.
 */
int sim_wait_peer_shutdown(struct sim_conn *c, uint32_t flags, int timeout_ms);
/* sim_wait_reset() - wait for the peer's RST. Return: 0; -ETIMEDOUT. */
int sim_wait_reset(struct sim_conn *c, int timeout_ms);
/*
 * sim_close() - Linux close(): SHUTDOWN RCV|SEND (unless reset), wait up to
 * @timeout_ms for the peer's RST, send RST if none came, free @c.
 * Return: 0 when the peer answered with RST; -ETIMEDOUT otherwise.
 */
int sim_close(struct sim_conn *c, int timeout_ms);
/* sim_abort() - send RST (unless reset already) and free @c. */
void sim_abort(struct sim_conn *c);

/* Request a CREDIT_UPDATE from the peer (CREDIT_REQUEST). */
int sim_credit_request(struct sim_conn *c);
/* Replace the receive path by @fn (see sim_sink_fn); NULL restores buffering. */
void sim_conn_set_sink(struct sim_conn *c, sim_sink_fn fn, void *opaque);

struct sim_conn_info {
	uint32_t local_port, peer_port;
	uint16_t type;
	bool established, reset;
	uint32_t peer_shutdown; /* VIRTIO_VSOCK_SHUTDOWN_* received */
	uint32_t peer_buf_alloc, peer_fwd_cnt; /* last seen from the device */
	uint32_t tx_cnt; /* payload bytes we sent */
	uint32_t rx_cnt; /* payload bytes received */
	uint32_t fwd_cnt; /* bytes consumed */
	uint32_t rx_queued; /* received, not yet consumed */
	uint32_t rx_queued_pkts; /* RW packets not wholly consumed */
	uint32_t rx_queued_pkts_max; /* the most there ever were at once */
	uint64_t credit_updates_rx; /* CREDIT_UPDATE packets from the device */
};
void sim_conn_info(struct sim_conn *c, struct sim_conn_info *out);
/* The driver @c belongs to. */
struct sim_drv *sim_conn_drv(struct sim_conn *c);

#ifdef __cplusplus
}
#endif

#endif /* SKIFF_SIM_DRIVER_H */
