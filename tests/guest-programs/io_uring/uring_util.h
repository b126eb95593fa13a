/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the io_uring receive-queue-hint selftest (vsock_uring_test.c):
 * vsock socket pairs, the test-only receive probe, and io_uring provided
 * buffer rings with multishot receives. Guest side only; static build.
 */
#ifndef SKIFF_URING_UTIL_H
#define SKIFF_URING_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <liburing.h>

/*
 * Test-only getsockopt() options at level AF_VSOCK, added by
 * guest-kernel-patches/test-only/recv-count-*.patch (not in any released
 * kernel): calls into the socket's recvmsg, and the msg_inq hint the last
 * successful hint-asking receive returned to its in-kernel caller.
 */
#define SO_VM_SOCKETS_TEST_RECV_CALLS 0x5c01
#define SO_VM_SOCKETS_TEST_LAST_INQ 0x5c02

/* Generous bound for anything that must "eventually" happen, in ms. */
#define UT_TIMEOUT_MS 10000

/*
 * probe_read() - read one test-only probe value of a vsock socket.
 * Returns 0, -ENOPROTOOPT on a kernel without the probe patch, or -errno.
 */
int probe_read(int fd, int opt, int64_t *val);

/*
 * vsock_listen() - a listening vsock socket of @type bound to any CID, @port.
 * vsock_connect() - a socket of @type connected to (@cid, @port), blocking.
 * vsock_loop_pair() - @client connected to @server over vsock loopback
 * (CID 1) on @port: both ends in this guest, made without a second thread.
 * All return a descriptor (or 0) on success and -errno on failure.
 */
int vsock_listen(int type, unsigned int port);
int vsock_connect(int type, unsigned int cid, unsigned int port);
int vsock_loop_pair(int type, unsigned int port, int *client, int *server);

/*
 * wait_readable() - wait up to UT_TIMEOUT_MS until @fd has @bytes readable
 * (SO_RCVLOWAT + poll) and also reports every one of @events (e.g. POLLRDHUP),
 * or until it reports POLLERR/POLLHUP. Returns the union of the revents seen
 * (the caller checks which it needs), 0 if none before the timeout, -errno
 * on failure.
 */
int wait_readable(int fd, int bytes, short events);

/* send_all() - send @len bytes from @buf; 0 or -errno (-EPIPE if closed). */
int send_all(int fd, const void *buf, size_t len);

/* Provided-buffer ring: @nbufs buffers of @buf_len bytes in group @bgid. */
struct buf_ring {
	struct io_uring_buf_ring *br;
	unsigned char *mem;
	unsigned int nbufs;
	unsigned int buf_len;
	int bgid;
};

/*
 * buf_ring_setup(): register and fill; 0 or -errno. buf_ring_free(): free
 * the memory, after io_uring_queue_exit() (which drops the registration and
 * cancels the requests that could still write to it); no-op if zeroed.
 */
int buf_ring_setup(struct io_uring *ring, struct buf_ring *b, int bgid, unsigned int nbufs,
		   unsigned int buf_len);
void buf_ring_free(struct buf_ring *b);
/* buf_ring_recycle(): hand buffer @bid back to the kernel. */
void buf_ring_recycle(struct buf_ring *b, unsigned int bid);
/* buf_ring_ptr(): start of buffer @bid, NULL if @bid is out of range. */
unsigned char *buf_ring_ptr(struct buf_ring *b, unsigned int bid);

/*
 * Multishot receive kinds: IORING_OP_RECV, and IORING_OP_RECVMSG, whose
 * buffers start with a struct io_uring_recvmsg_out header.
 */
enum mshot_op { MSHOT_RECV, MSHOT_RECVMSG };

/*
 * mshot_arm() - submit a multishot receive of @op on @fd from buffer group
 * @b with user_data @tag. Returns 0 or -errno from io_uring_submit().
 * The msghdr that RECVMSG needs is kept in static storage.
 */
int mshot_arm(struct io_uring *ring, struct buf_ring *b, int fd, enum mshot_op op, uint64_t tag);

/* One multishot completion, decoded. */
struct mshot_cqe {
	int res; /* CQE result (bytes of the buffer, or -errno) */
	unsigned int flags; /* CQE flags */
	const unsigned char *data; /* payload, NULL if none */
	size_t len; /* payload bytes */
	int bid; /* buffer id to recycle, -1 if none */
};

/*
 * mshot_wait() - wait up to UT_TIMEOUT_MS for the next CQE with user_data
 * @tag (others are an error), and decode it for @op. Returns 0, -ETIME on
 * timeout, -EPROTO on a malformed completion, or -errno.
 */
int mshot_wait(struct io_uring *ring, struct buf_ring *b, enum mshot_op op, uint64_t tag,
	       struct mshot_cqe *out);

/*
 * uring_recv_once() - one single-shot receive (IORING_OP_RECV, or RECVMSG
 * if @use_msg) of up to @len bytes into @buf; waits for its CQE.
 * Returns 0 with *res and *flags set, or -errno.
 */
int uring_recv_once(struct io_uring *ring, int fd, void *buf, size_t len, bool use_msg, int *res,
		    unsigned int *flags);

/* Timing helpers: monotonic seconds, and this thread's CPU seconds. */
double now_s(void);
double thread_cpu_s(void);

#endif
