/* SPDX-License-Identifier: MIT */
/*
 * skiff virtio-vsock device model: the contract between the device and its
 * transports (virtio-mmio in vmm/, vhost-user in vhost_user/).
 *
 * The device knows nothing of KVM. A transport gives it:
 *   - guest memory, as regions (GPA, size, HVA);
 *   - the negotiated feature bits;
 *   - per queue: size, ring addresses (GPA), a kick eventfd, and either a call
 *     eventfd or a notify callback for interrupts;
 * and the device owns the split virtqueues, the vsock protocol, the connection
 * table, credit flow control, the host side (Firecracker-style hybrid Unix
 * sockets) and its threads.
 *
 * Life cycle, per virtio 1.2 section 3.1 as seen from the device:
 *
 *   vsock_dev_create()                      once
 *   vsock_dev_set_mem()                     any time; the device pauses itself
 *   vsock_dev_set_features()                before start, after a reset
 *   vsock_dev_set_vring() per queue         before start
 *   vsock_dev_start()                       driver is ready (DRIVER_OK / vrings enabled)
 *   ... traffic ...
 *   vsock_dev_stop()                        pause, keep connections (vhost-user GET_VRING_BASE)
 *   vsock_dev_reset()                       driver wrote status 0 / frontend gone:
 *                                           all connections closed, state cleared
 *   vsock_dev_destroy()                     once
 *
 * Unless said otherwise, calls are made from one control thread (the
 * transport's); the device's own threads never call back into the transport
 * except through notify().
 *
 * Errors: every call returns 0 or a negative errno. Guest mistakes never make a
 * call fail: they are counted (see struct vsock_dev_counters), the offending
 * chain is returned to the guest and, where a connection is involved, that
 * connection is reset.
 */
#ifndef SKIFF_VSOCK_DEV_H
#define SKIFF_VSOCK_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "skiff/vsock_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vsock_dev;

/* One guest memory region: [gpa, gpa + size) is mapped at hva in this process. */
struct vsock_mem_region {
	uint64_t gpa;
	uint64_t size;
	void *hva;
};

/* Longest routing group name (struct vsock_dev_config.group), without the NUL. */
#define VSOCK_GROUP_NAME_MAX 63

/* Most RX pump threads (struct vsock_dev_config.rx_threads); more are clamped to it. */
#define VSOCK_MAX_RX_THREADS 16u

/* The most regions a memory table may hold (vhost-user's usual limit). */
#define VSOCK_MAX_MEM_REGIONS 8

/*
 * Interrupt output. Called by a device thread after it published used
 * entries on @queue and event-index suppression (if negotiated) said the
 * driver wants an interrupt. Must be thread safe and must not block. When
 * NULL, the device writes 1 to the queue's call_fd instead.
 */
typedef void (*vsock_notify_fn)(void *opaque, unsigned int queue);

/* The device's thread types, for vsock_spawn_fn. */
enum vsock_thread_kind {
	VSOCK_THREAD_CTL = 0, /* control thread: TX queue, kicks, listener, connects */
	VSOCK_THREAD_RX_PUMP = 1, /* RX pump threads: host sockets to the RX queue */
	VSOCK_THREAD_LOBBY = 2, /* lobby: holds host clients while the device is not started */
};

/*
 * Where the control thread's work (TX queue, kicks, listener, connects)
 * runs: struct vsock_dev_config.ctl_thread.
 */
#define VSOCK_HAVE_CTL_THREAD 1 /* this header has enum vsock_ctl_thread */
enum vsock_ctl_thread {
	/* VSOCK_CTL_ON_PUMP0 when at most 2 CPUs are online, else VSOCK_CTL_OWN. */
	VSOCK_CTL_AUTO = 0,
	VSOCK_CTL_OWN = 1, /* a thread of its own */
	/*
	 * One thread with RX pump 0 (spawned as VSOCK_THREAD_CTL; no
	 * VSOCK_THREAD_RX_PUMP thread for pump 0): a guest CREDIT_UPDATE
	 * then reaches pump 0's connections without a thread wake-up. Not
	 * used when a queue has no kick fd (the device polls): own thread.
	 */
	VSOCK_CTL_ON_PUMP0 = 2,
};

/*
 * Thread creation, when the transport wants a say (skiff's seccomp sandbox
 * creates device threads from its spawner thread and gives each the filter of
 * its @kind). Same contract as pthread_create(3) with default attributes:
 * 0 or a positive errno, the thread joinable, fn(arg) run on it.
 */
typedef int (*vsock_spawn_fn)(void *opaque, enum vsock_thread_kind kind, pthread_t *thread,
			      void *(*fn)(void *), void *arg);

#ifdef SKIFF_TEST_HOOKS
/*
 * vsock_dev_config.test_fault: what the lying RW packet header says. Test
 * builds only: SKIFF_TEST_HOOKS comes with the library (a PUBLIC definition
 * of the skiff_vsock CMake target when -DSKIFF_TEST_HOOKS=ON, the default
 * with the tests), so the library and its users agree on the layout.
 */
enum vsock_test_fault {
	VSOCK_TEST_FAULT_NONE = 0,
	VSOCK_TEST_FAULT_NUMBUF_ZERO, /* num_buffers = 0 */
	VSOCK_TEST_FAULT_NUMBUF_OVER, /* num_buffers = chains used + 1 */
	VSOCK_TEST_FAULT_NUMBUF_RING, /* num_buffers = RX queue size + 1 */
	VSOCK_TEST_FAULT_LEN_OVER, /* hdr.len = bytes written + 1 */
	VSOCK_TEST_FAULT_LEN_UNDER, /* hdr.len = bytes written - 1 (payload >= 1) */
};
#endif

struct vsock_dev_config {
	/* Guest CID, >= 3 and < 2^32 - 1 (VMADDR_CID_ANY). */
	uint64_t guest_cid;
	/*
	 * Host-side Unix socket path (Firecracker hybrid model): the device
	 * listens here for "CONNECT <port>\n"; guest-initiated connections to
	 * port P go to "<uds_path>_<P>". At most 107 bytes with the suffix room
	 * the device needs; a stale socket file is replaced. NULL: no host
	 * side (guest packets to CID 2 get an RST, nothing listens); the
	 * device then only talks to other guests of its group.
	 */
	const char *uds_path;
	/*
	 * Routing group (guest-to-guest traffic): the devices of this process
	 * with the same group name see each other by CID; a guest packet whose
	 * dst_cid is another started member's CID goes to that member's RX
	 * queue, with no host socket in between. NULL or "" is the default
	 * group, so by default every device of a process is in one group.
	 * Devices of different groups cannot reach each other (RST, as for an
	 * unknown CID). At most VSOCK_GROUP_NAME_MAX bytes; copied.
	 */
	const char *group;
	/*
	 * RX pump threads, at most VSOCK_MAX_RX_THREADS (more are clamped);
	 * 0 picks a default: one per online core, at most 4.
	 */
	unsigned int rx_threads;
	/* Where the control work runs: enum vsock_ctl_thread (0: auto). */
	unsigned int ctl_thread;
	/* Offer VIRTIO_VSOCK_F_MRG_RXBUF (bit 4). */
	bool mrg_rxbuf;
	/*
	 * Offer VIRTIO_VSOCK_F_DGRAM (bit 3, experimental): datagrams, with
	 * the AF_UNIX SOCK_DGRAM host side under uds_path ("<uds_path>_dgram",
	 * "<uds_path>_dgram_<port>", "<uds_path>_dgram_g<port>"; README
	 * "Datagrams"). uds_path must then be at most 89 bytes.
	 */
	bool dgram;
	/* Connection cap; 0 picks the default (1024). Beyond it: RST. */
	unsigned int max_conns;
	/*
	 * Host fds this device may hold at once for host clients and
	 * connections (each connection's host socket, each host client still
	 * writing its CONNECT line or waiting in the lobby). Beyond it a guest
	 * REQUEST gets an RST and a new host client is closed without "OK";
	 * the other devices of the process are not affected. 0: an equal share
	 * of the process's RLIMIT_NOFILE soft limit (as seen at the last
	 * vsock_dev_create()) among the devices alive: (limit - 64) / devices
	 * - 32, at least 16, at most max_conns + 128.
	 */
	uint32_t max_host_fds;
	/*
	 * Receive buffer the device advertises to the guest per connection
	 * (buf_alloc), in bytes; 0 picks the default (256 KiB). It also bounds
	 * what the device buffers per connection for a slow host peer.
	 */
	uint32_t conn_buf_size;
	/*
	 * Cap on the payload of one RX (host to guest) RW packet, in bytes;
	 * 0 means no cap beyond 64 KiB and the guest's buffers. For benchmarks
	 * that must show the guest packets of a given size.
	 */
	uint32_t rx_pkt_max;
#ifdef SKIFF_TEST_HOOKS
	/*
	 * Test only (SKIFF_TEST_HOOKS builds): make the header of every RX RW
	 * packet to guest port test_fault_port (0: any port) lie about the
	 * packet's layout, as a broken or hostile device would, while the used
	 * ring entries stay true. Applies only when MRG_RXBUF is negotiated
	 * (num_buffers exists only then). See enum vsock_test_fault.
	 */
	unsigned int test_fault;
	uint32_t test_fault_port;
#endif
	/* Interrupt output; see vsock_notify_fn. */
	vsock_notify_fn notify;
	void *notify_opaque;
	/*
	 * How long a host client connected to uds_path may wait, in ms, while
	 * the device is not started (no DRIVER_OK yet, no vhost-user
	 * frontend, stopped or reset): then it is closed without "OK".
	 * 0 picks the default (5000 ms).
	 */
	uint32_t host_wait_ms;
	/* Thread creation; NULL: pthread_create(3). See vsock_spawn_fn. */
	vsock_spawn_fn spawn;
	void *spawn_opaque;
};

/* One virtqueue as the driver set it up (virtio 1.2 section 2.7). */
struct vsock_vring_config {
	uint16_t num; /* queue size: a power of two, 1..32768 */
	uint64_t desc_gpa; /* descriptor table, 16-byte aligned */
	uint64_t avail_gpa; /* available ring, 2-byte aligned */
	uint64_t used_gpa; /* used ring, 4-byte aligned */
	/*
	 * Where the device resumes: next avail index to consume, and the used
	 * index it will write next. 0 and 0 for a fresh queue; vhost-user's
	 * SET_VRING_BASE gives the first, and the second is then read from the
	 * used ring.
	 */
	uint16_t last_avail_idx;
	int kick_fd; /* eventfd the driver signals; -1: device polls (tests) */
	int call_fd; /* eventfd the device signals; -1: use notify() */
};

/*
 * Counters, monotonic since create but for the two marked "now". Read with
 * vsock_dev_get_counters(). Each means one thing, so that errors show: in a
 * clean open/close loop conn_resets, dropped_pkts and malformed_pkts stay
 * 0 and conns_open and host_fds come back to where they were.
 */
struct vsock_dev_counters {
	uint64_t tx_pkts; /* packets taken from the TX queue (guest to host) */
	uint64_t tx_bytes; /* payload bytes delivered to host sockets */
	uint64_t rx_pkts; /* packets put on the RX queue (host to guest) */
	uint64_t rx_bytes; /* payload bytes put on the RX queue */
	uint64_t kicks; /* queue notifications consumed (all queues) */
	uint64_t irqs_sent; /* interrupts raised */
	uint64_t irqs_suppressed; /* interrupts skipped by EVENT_IDX or NO_INTERRUPT */
	/*
	 * Established connections that ended by a reset, not the close
	 * handshake (a SHUTDOWN RCV|SEND either way, then an RST): a host
	 * socket error, a guest packet breaking the protocol or its credit, a
	 * close deadline passed, a guest RST out of the blue (an abortive
	 * close), a routed connection whose other guest went away.
	 */
	uint64_t conn_resets;
	/*
	 * Valid packets the device threw away undelivered: an RST owed with
	 * the RST queue full, a guest-to-guest packet whose destination went
	 * away while it waited.
	 */
	uint64_t dropped_pkts;
	uint64_t malformed_pkts; /* chains or headers that failed validation */
	uint64_t conns_opened; /* connections entered in the table, both directions */
	uint64_t conns_closed; /* ... whose host fd has been closed since */
	uint64_t dev_resets; /* vsock_dev_reset() calls */
	uint64_t rx_chains_max; /* most RX chains one packet took (MRG_RXBUF), a maximum */
	/* now: conns_opened - conns_closed, connections holding a host fd */
	uint64_t conns_open;
	/*
	 * Connection attempts that never became one: guest REQUESTs answered
	 * with an RST (no listener, connection cap, fd budget, no host side,
	 * another guest unreachable), host clients closed without "OK" (bad
	 * or late CONNECT line, slots taken, fd budget, connection cap, the
	 * guest refused or did not answer, the device not started in time).
	 */
	uint64_t conns_refused;
	/*
	 * Guest packets naming no connection (answered with an RST unless an
	 * RST): a few are normal, packets in flight when a connection closed.
	 */
	uint64_t stray_pkts;
	/*
	 * Times a connection's host-to-guest data was held because the guest
	 * had as many unconsumed RX packets as the device allows it (conn.h,
	 * conn_rx_pkt_limit(): a host writing in small pieces to a slow
	 * reader), until its fwd_cnt showed some consumed.
	 */
	uint64_t rx_pkt_limit_stalls;
	/*
	 * Datagrams (README "Datagrams"). tx: from this guest (to the host or
	 * another guest); rx: to this guest (from the host or another guest).
	 * Delivered: dgram_tx_pkts/bytes (taken by the host socket or the
	 * other guest's forward queue), dgram_rx_pkts/bytes (on the RX queue).
	 * Dropped, one counter per reason:
	 *   tx_drop_malformed: header failed validation (op not RW, len,
	 *     flags, src_cid, dst_cid; also in malformed_pkts);
	 *   tx_drop_no_dest: no host socket bound at "<uds>_dgram_<port>", no
	 *     host side, an unknown, offline or non-DGRAM guest CID;
	 *   tx_drop_full: the host socket's queue full (EAGAIN/ENOBUFS), the
	 *     other guest's datagram forward queue full;
	 *   tx_drop_err: any other socket error, no socket for the guest port;
	 *   rx_drop_no_buf: no RX buffer free for it at that moment (beyond
	 *     the quarter of the queue kept for streams);
	 *   rx_drop_too_big: over 64 KiB from the host, or without MRG_RXBUF
	 *     larger than one RX buffer;
	 *   rx_drop_bad_addr: host sender not bound at "<uds>_dgram_<port>",
	 *     or a bad "SEND <port>" line on the gateway;
	 *   rx_drop_no_dest: host datagrams for a guest that did not
	 *     negotiate DGRAM;
	 *   rx_drop_err: a receive error on a host datagram socket (the
	 *     datagram stays queued; after 8 in a row the socket is closed).
	 */
	uint64_t dgram_tx_pkts, dgram_tx_bytes, dgram_tx_drop_malformed, dgram_tx_drop_no_dest,
		dgram_tx_drop_full, dgram_tx_drop_err;
	uint64_t dgram_rx_pkts, dgram_rx_bytes, dgram_rx_drop_no_buf, dgram_rx_drop_too_big,
		dgram_rx_drop_bad_addr, dgram_rx_drop_err, dgram_rx_drop_no_dest;
	/* now: host fds held for host clients and connections (max_host_fds counts these) */
	uint64_t host_fds;
};

/*
 * vsock_dev_create() - make a device, stopped, with no memory or queues.
 * @cfg: copied; strings are duplicated. @out: the new device.
 *
 * Binds and listens on cfg->uds_path right away (replacing a stale socket
 * file), so host clients can connect before the guest is up; their CONNECTs
 * wait until the device is started, at most cfg->host_wait_ms, then they
 * are closed without "OK".
 *
 * Joins its routing group (cfg->group) right away too; it is reachable by
 * the other members only while started.
 *
 * Return: 0; -EINVAL for a CID < 3 or >= 0xffffffff, an empty uds_path or
 * a ctl_thread that is not an enum vsock_ctl_thread;
 * -ENAMETOOLONG when uds_path plus "_<port>" does not fit sockaddr_un, or
 * the group name is longer than VSOCK_GROUP_NAME_MAX; -EADDRINUSE when a
 * live listener owns uds_path, or another device of the same group has
 * this CID; -ENOTSOCK when uds_path exists and is not a socket (it is left
 * alone); -ENOMEM; other -errno from
 * socket(2), bind(2), listen(2), epoll_create1(2), pthread_create(3).
 */
int vsock_dev_create(const struct vsock_dev_config *cfg, struct vsock_dev **out);

/*
 * vsock_dev_destroy() - stop threads, close every host fd, unlink uds_path,
 * leave the routing group (peers get an RST for every guest-to-guest
 * connection through this device), free everything. NULL is a no-op.
 */
void vsock_dev_destroy(struct vsock_dev *dev);

/*
 * vsock_dev_features() - device feature bits to offer (virtio 1.2 5.10.3):
 * VERSION_1, EVENT_IDX, INDIRECT_DESC, STREAM, SEQPACKET, and MRG_RXBUF when
 * configured.
 */
uint64_t vsock_dev_features(const struct vsock_dev *dev);

/*
 * vsock_dev_read_config() - read @len bytes at @offset of the device config
 * space (struct virtio_vsock_config, little endian) into @buf.
 * Return: 0; -EINVAL when [offset, offset + len) is outside the config space.
 */
int vsock_dev_read_config(const struct vsock_dev *dev, uint32_t offset, void *buf, uint32_t len);

/*
 * vsock_dev_set_features() - the features the driver accepted.
 * Return: 0; -EINVAL when @features has a bit the device did not offer or
 * lacks VERSION_1; -EBUSY while started.
 */
int vsock_dev_set_features(struct vsock_dev *dev, uint64_t features);

/*
 * vsock_dev_set_mem() - replace the guest memory table. Regions must not
 * overlap in GPA space, nor wrap. If the device is running it pauses its
 * threads around the swap. The memory stays owned by the caller and must stay
 * mapped until the next set_mem, reset or destroy.
 * Return: 0; -EINVAL for n > VSOCK_MAX_MEM_REGIONS, a zero size, overlap or
 * wrap-around.
 */
int vsock_dev_set_mem(struct vsock_dev *dev, const struct vsock_mem_region *regions,
		      unsigned int n);

/*
 * vsock_dev_set_vring() - configure queue @q (VSOCK_VQ_RX/TX/EVENT).
 * The device duplicates neither fd: they stay owned by the caller and must
 * stay open until reset or destroy. The event queue is optional (QEMU keeps
 * it); RX and TX are required before start.
 * Return: 0; -EINVAL for a bad index, size or alignment, or rings outside
 * guest memory; -EBUSY while started.
 */
int vsock_dev_set_vring(struct vsock_dev *dev, unsigned int q,
			const struct vsock_vring_config *vring);

/*
 * vsock_dev_clear_vring() - forget queue @q: the next start runs without it
 * (RX and TX are required, so only VSOCK_VQ_EVENT can be left out and
 * still start), and the device keeps no copy of its fds, which the caller
 * may then close. A transport that closes or replaces a queue's fds must
 * clear (or set again) that queue before the next start.
 * Return: 0; -EINVAL for a bad index; -EBUSY while started.
 */
int vsock_dev_clear_vring(struct vsock_dev *dev, unsigned int q);

/*
 * vsock_dev_start() - begin processing: TX queue, RX pump, host side.
 * Return: 0; -EINVAL when memory, features or the RX/TX queues are missing;
 * -EALREADY when started.
 */
int vsock_dev_start(struct vsock_dev *dev);

/*
 * vsock_dev_stop() - pause processing, keep connections and host fds.
 * @last_avail: if not NULL, receives each queue's next avail index
 * (for vhost-user GET_VRING_BASE). Returns when no device thread touches
 * guest memory any more. Guest-to-guest connections do not survive it:
 * the device becomes unreachable for its group until the next start, and
 * each peer gets an RST for every connection it had through this device.
 * Return: 0 (also when already stopped).
 */
int vsock_dev_stop(struct vsock_dev *dev, uint16_t last_avail[VSOCK_VQ_NUM]);

/*
 * vsock_dev_reset() - device reset (virtio 1.2 2.1.2, driver wrote 0 to
 * status; or the vhost-user frontend went away). Stops the device, closes
 * every connection's host fd (host peers see EOF/ECONNRESET), drops pending
 * CONNECTs, forgets queues, features and the memory table (call
 * vsock_dev_set_mem() again before the next start). The listener on uds_path
 * stays. Guest-to-guest connections are reset as by vsock_dev_stop().
 * Return: 0.
 */
int vsock_dev_reset(struct vsock_dev *dev);

/* vsock_dev_get_counters() - snapshot of the counters; thread safe. */
void vsock_dev_get_counters(const struct vsock_dev *dev, struct vsock_dev_counters *out);

/*
 * vsock_dev_conn_dump() - for diagnostics (tests, debugging): one line of
 * text in @buf (@len bytes, NUL-terminated, cut to fit) describing the
 * connection between host port @host_port and guest port @guest_port:
 * state, pending packets, and the credit counters of both directions as the
 * device sees them. Thread safe. Return: 0; -ENOENT when no such connection
 * is in the table (@buf says so).
 */
int vsock_dev_conn_dump(struct vsock_dev *dev, uint32_t host_port, uint32_t guest_port, char *buf,
			size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SKIFF_VSOCK_DEV_H */
