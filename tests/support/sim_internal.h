/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by sim_driver.c (memory, virtqueues, service thread) and
 * sim_conn.c (the guest vsock stack). Not for tests: use sim_driver.h.
 */
#ifndef SKIFF_SIM_INTERNAL_H
#define SKIFF_SIM_INTERNAL_H

#include <linux/virtio_ring.h>
#include <pthread.h>

#include "sim_driver.h"

#define SIM_HDR_LEN ((uint32_t)sizeof(struct virtio_vsock_hdr))
#define SIM_MRG_HDR_LEN ((uint32_t)sizeof(struct virtio_vsock_mrg_hdr))
#define SIM_MAX_RAW_PAYLOAD (128u * 1024u)
#define SIM_PIECE_GAP 16u
#define SIM_CTL_MAX 4096u
#define SIM_STRAY_MAX 4096u
#define SIM_DGRAM_MAX 4096u /* datagrams queued for sim_dgram_recv() */
#define SIM_MAX_IOV 2048

/* A piece of a descriptor chain, in the driver's linear view of memory. */
struct sim_piece {
	uint64_t lin;
	uint32_t len;
};

enum sim_chain_kind { SIM_CH_FREE, SIM_CH_TX, SIM_CH_RX, SIM_CH_EVT, SIM_CH_RAW };

/* A chain the driver made available, indexed by its head descriptor. */
struct sim_chain {
	uint8_t kind; /* enum sim_chain_kind */
	bool done; /* raw chains: back in the used ring */
	uint16_t ndesc; /* ring descriptors it holds (1 for indirect) */
	uint16_t npieces;
	uint32_t used_len;
	uint32_t cap; /* writable bytes (RX) */
	uint16_t *descs; /* [num]: the ring descriptor indices it holds */
	struct sim_piece *pieces; /* [num]: its buffers in order */
};

/* Driver side of one split virtqueue. Protected by drv->lock. */
struct sim_vq {
	uint16_t num;
	uint64_t desc_lin, avail_lin, used_lin;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx; /* next avail index we publish */
	uint16_t kicked_idx; /* avail index at the last kick decision */
	uint16_t last_used; /* next used entry to consume */
	uint16_t *free_ring; /* FIFO of free descriptor indices */
	uint16_t free_head, free_cnt;
	struct sim_chain *chains; /* [num], by head */
	unsigned int inflight; /* chains made available, not consumed */
	uint64_t slot_lin; /* buffers of the chain with head h: slot_lin + h * slot_size */
	uint32_t slot_size;
	int kick_fd; /* eventfd: driver -> device */
	int irq_fd; /* eventfd: device (or notify callback) -> service thread */
	bool suppress; /* interrupts suppressed by the test */
	bool lifo; /* cfg.lifo_descs: free descriptors are a stack */
	bool ready;
};

struct sim_ctl {
	struct virtio_vsock_hdr hdr;
	struct sim_ctl *next;
};

struct sim_stray {
	struct sim_pkt pkt;
	struct sim_stray *next;
};

/* A FIFO of received packets, payload copied (drv->lock). */
struct sim_pktq {
	struct sim_stray *head, *tail;
	unsigned int n;
};

/* A guest connection. Protected by drv->lock. */
struct sim_conn {
	struct sim_drv *drv;
	struct sim_conn *next; /* drv->conns list, while in_table */
	struct sim_conn *aq_next; /* listener accept queue */
	struct sim_listener *listener; /* set while waiting in an accept queue */
	uint64_t peer_cid; /* VSOCK_CID_HOST, or another guest's CID */
	uint32_t local_port, peer_port;
	uint16_t type;
	bool in_table, established, reset, done;
	uint32_t peer_shutdown, our_shutdown;
	/* TX side: the peer's credit (Linux virtio_transport_get_credit) */
	uint32_t peer_buf_alloc, peer_fwd_cnt, tx_cnt;
	/* RX side: our buffer and what we told the peer */
	uint32_t buf_alloc, fwd_cnt, adv_fwd_cnt, rx_cnt;
	uint8_t *ring; /* buf_alloc bytes */
	uint32_t ring_head, ring_len;
	/* SEQPACKET: message ends, as rx_cnt values, FIFO */
	uint32_t *end_at, *end_flags;
	unsigned int ends_cap, ends_head, nends;
	/*
	 * RW packets received and not wholly consumed, as their end (rx_cnt after
	 * each), FIFO: the skbs a Linux guest would hold in its rx_queue.
	 */
	uint32_t *pkt_end;
	unsigned int pkts_cap, pkts_head, npkts, npkts_max;
	sim_sink_fn sink;
	void *sink_opaque;
	bool sink_read; /* the sink consumed since the last sim__sink_read_ends() */
	uint64_t credit_updates_rx;
};

struct sim_listener {
	struct sim_drv *drv;
	struct sim_listener *next;
	uint32_t port;
	uint16_t type;
	unsigned int backlog, qlen;
	struct sim_conn *q_head, *q_tail;
};

struct sim_drv {
	struct sim_drv_config cfg;
	struct vsock_dev *dev;
	uint64_t features; /* negotiated */
	bool mrg;
	uint32_t rx_hdr_len; /* 44, or 46 with MRG_RXBUF */

	/* guest memory */
	int memfd;
	uint8_t *lin; /* driver's linear view of the memfd */
	uint64_t lin_size;
	uint64_t r0_size; /* linear bytes in region 0 */
	uint64_t gap; /* GPA hole between the regions */
	unsigned int nregions;
	struct vsock_mem_region regions[2];
	uint64_t misc_lin, misc_end, misc_next; /* sim_alloc() arena */

	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t cond; /* broadcast on any change */
	struct sim_vq vq[VSOCK_VQ_NUM];
	bool attached;
	bool refill;
	unsigned int rx_target; /* RX chains to keep posted */
	unsigned int rx_posted; /* RX chains (not raw) on the queue */
	struct iovec *iov; /* [SIM_MAX_IOV] scratch for parsing RX packets */
	struct sim_drv_stats stats;
	char last_error[256];
	struct sim_ctl *ctl_head, *ctl_tail; /* control packets waiting for descriptors */
	unsigned int nctl;
	struct sim_pktq stray; /* packets of no connection (sim_pkt_recv()) */
	struct sim_pktq dgrams; /* received datagrams (sim_dgram_recv(), sim_dgram.c) */
	struct sim_conn *conns;
	struct sim_listener *listeners;
	uint32_t next_port;
	uint64_t changes; /* bumped with every broadcast */

	pthread_t thread;
	bool thread_running;
	bool stop; /* protected by lock; wake_fd wakes the thread */
	int wake_fd;
};

/* sim_driver.c, all with drv->lock held */
void sim__proto_error(struct sim_drv *drv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int sim__tx_pkt(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr, const void *payload,
		uint32_t len, enum sim_shape shape);
unsigned int sim__tx_descs_needed(struct sim_drv *drv, enum sim_shape shape, uint32_t len);
void sim__tx_kick(struct sim_drv *drv);
void sim__queue_ctl(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr);
void sim__flush_ctl(struct sim_drv *drv);
void sim__stray_add(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr,
		    const struct iovec *iov, int iovcnt, uint32_t len);
/*
 * sim__pktq_add() - append a copy of packet @hdr with payload @iov (@len
 * bytes) to @q unless it holds @max already. Return: false when not added
 * (full, or out of memory).
 */
bool sim__pktq_add(struct sim_pktq *q, unsigned int max, const struct virtio_vsock_hdr *hdr,
		   const struct iovec *iov, int iovcnt, uint32_t len);
/* sim__pktq_recv() - take the first packet of @q, waiting up to @timeout_ms (lock not held). */
int sim__pktq_recv(struct sim_drv *drv, struct sim_pktq *q, struct sim_pkt *pkt, int timeout_ms);
/* sim__pktq_flush() - drop every packet of @q (lock not held). Return: how many. */
unsigned int sim__pktq_flush(struct sim_drv *drv, struct sim_pktq *q);
int sim__wait(struct sim_drv *drv, const struct timespec *deadline);
void sim__deadline(struct timespec *ts, int timeout_ms);

/* sim_dgram.c, with drv->lock held */
void sim__dgram_rx(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr, const struct iovec *iov,
		   int iovcnt, uint32_t len);

/* sim_conn.c, with drv->lock held */
void sim__dispatch(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr, const struct iovec *iov,
		   int iovcnt, uint32_t len);
void sim__reset_all_conns(struct sim_drv *drv);
/* sim__sink_read_ends() - one read ended for every connection a sink consumed on (6.1.192 credit). */
void sim__sink_read_ends(struct sim_drv *drv);
void sim__free_all_conns(struct sim_drv *drv);

#endif /* SKIFF_SIM_INTERNAL_H */
