// SPDX-License-Identifier: MIT
/*
 * Helpers of the io_uring receive-queue-hint selftest: see uring_util.h.
 */
#include "uring_util.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

int probe_read(int fd, int opt, int64_t *val)
{
	socklen_t len = sizeof(*val);

	*val = 0;
	if (getsockopt(fd, AF_VSOCK, opt, val, &len) < 0)
		return -errno;
	if (len != sizeof(*val))
		return -EPROTO;
	return 0;
}

static struct sockaddr_vm vm_addr(unsigned int cid, unsigned int port)
{
	struct sockaddr_vm a;

	memset(&a, 0, sizeof(a));
	a.svm_family = AF_VSOCK;
	a.svm_cid = cid;
	a.svm_port = port;
	return a;
}

int vsock_listen(int type, unsigned int port)
{
	struct sockaddr_vm a = vm_addr(VMADDR_CID_ANY, port);
	int fd, err;

	fd = socket(AF_VSOCK, type, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int vsock_connect(int type, unsigned int cid, unsigned int port)
{
	struct sockaddr_vm a = vm_addr(cid, port);
	int fd, err, tries;

	/*
	 * io_uring task work (from a ring being torn down, for instance) sets
	 * TIF_NOTIFY_SIGNAL, which interrupts vsock's connect wait with -EINTR
	 * and leaves the socket closed: retry on a fresh socket.
	 */
	for (tries = 0;; tries++) {
		fd = socket(AF_VSOCK, type, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			return fd;
		err = -errno;
		close(fd);
		if (err != -EINTR || tries == 10)
			return err;
	}
}

int vsock_loop_pair(int type, unsigned int port, int *client, int *server)
{
	struct sockaddr_vm mine, peer;
	socklen_t len = sizeof(mine);
	int l, c, s = -1, err = 0, tries;

	l = vsock_listen(type, port);
	if (l < 0)
		return l;
	/* The loopback handshake completes in the kernel: no accept() needed. */
	c = vsock_connect(type, VMADDR_CID_LOCAL, port);
	if (c < 0) {
		close(l);
		return c;
	}
	if (getsockname(c, (struct sockaddr *)&mine, &len) < 0) {
		err = -errno;
		goto out;
	}
	/*
	 * A connect that vsock_connect() retried after -EINTR may have left a
	 * child of its first attempt in the accept queue, ahead of ours, reset
	 * by then (its sends fail with EPIPE): the likely cause of an EPIPE on
	 * the server end seen once in seven runs in a guest under emulation.
	 * Take the child whose peer is @c and close the others (at most one
	 * per attempt: vsock_connect() makes at most 11).
	 */
	for (tries = 0; tries < 11; tries++) {
		len = sizeof(peer);
		s = accept(l, (struct sockaddr *)&peer, &len);
		if (s < 0) {
			err = -errno;
			goto out;
		}
		if (peer.svm_port == mine.svm_port)
			break;
		close(s);
		s = -1;
	}
	if (s < 0)
		err = -ECONNREFUSED;
out:
	close(l);
	if (err) {
		close(c);
		return err;
	}
	*client = c;
	*server = s;
	return 0;
}

int wait_readable(int fd, int bytes, short events)
{
	const short want = POLLIN | events;
	const double deadline = now_s() + UT_TIMEOUT_MS / 1000.0;
	struct pollfd p = { .fd = fd };
	short seen = 0;
	int one = 1, n, left, err = 0;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof(bytes)) < 0)
		return -errno;
	/*
	 * poll() returns as soon as any one requested event holds, so data can
	 * be reported before a shutdown that is still on its way (loopback
	 * queues them as separate packets). Poll again for what is missing;
	 * POLLIN is level-triggered and stays true while nothing is read.
	 */
	while ((seen & want) != want) {
		left = (int)((deadline - now_s()) * 1000.0);
		if (left <= 0)
			break;
		p.events = want & ~seen;
		n = poll(&p, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		seen |= p.revents;
		if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
			break;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one)) < 0 && !err)
		err = -errno;
	if (err)
		return err;
	return seen;
}

int send_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int buf_ring_setup(struct io_uring *ring, struct buf_ring *b, int bgid, unsigned int nbufs,
		   unsigned int buf_len)
{
	struct io_uring_buf_reg reg;
	size_t ring_size = nbufs * sizeof(struct io_uring_buf);
	void *mem;
	unsigned int i;
	int err;

	memset(b, 0, sizeof(*b));
	/* The ring must be page aligned; nbufs must be a power of two. */
	mem = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	b->br = mem;
	b->mem = malloc((size_t)nbufs * buf_len);
	if (!b->mem) {
		err = -ENOMEM;
		goto err_unmap;
	}
	b->nbufs = nbufs;
	b->buf_len = buf_len;
	b->bgid = bgid;

	memset(&reg, 0, sizeof(reg));
	reg.ring_addr = (unsigned long)b->br;
	reg.ring_entries = nbufs;
	reg.bgid = (uint16_t)bgid;
	io_uring_buf_ring_init(b->br);
	err = io_uring_register_buf_ring(ring, &reg, 0);
	if (err)
		goto err_free;
	for (i = 0; i < nbufs; i++)
		io_uring_buf_ring_add(b->br, b->mem + (size_t)i * buf_len, buf_len,
				      (unsigned short)i, io_uring_buf_ring_mask(nbufs), (int)i);
	io_uring_buf_ring_advance(b->br, (int)nbufs);
	return 0;

err_free:
	free(b->mem);
err_unmap:
	munmap(b->br, ring_size);
	memset(b, 0, sizeof(*b));
	return err;
}

void buf_ring_free(struct buf_ring *b)
{
	if (!b->br)
		return;
	munmap(b->br, b->nbufs * sizeof(struct io_uring_buf));
	free(b->mem);
	memset(b, 0, sizeof(*b));
}

unsigned char *buf_ring_ptr(struct buf_ring *b, unsigned int bid)
{
	if (bid >= b->nbufs)
		return NULL;
	return b->mem + (size_t)bid * b->buf_len;
}

void buf_ring_recycle(struct buf_ring *b, unsigned int bid)
{
	io_uring_buf_ring_add(b->br, buf_ring_ptr(b, bid), b->buf_len, (unsigned short)bid,
			      io_uring_buf_ring_mask(b->nbufs), 0);
	io_uring_buf_ring_advance(b->br, 1);
}

/* RECVMSG multishot reads the msghdr at issue: keep it alive. */
static struct msghdr mshot_msg;

int mshot_arm(struct io_uring *ring, struct buf_ring *b, int fd, enum mshot_op op, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int n;

	if (!sqe)
		return -EBUSY;
	if (op == MSHOT_RECV) {
		io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
	} else {
		memset(&mshot_msg, 0, sizeof(mshot_msg));
		io_uring_prep_recvmsg_multishot(sqe, fd, &mshot_msg, 0);
	}
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (uint16_t)b->bgid;
	io_uring_sqe_set_data64(sqe, tag);
	n = io_uring_submit(ring);
	if (n < 0)
		return n;
	return n == 1 ? 0 : -EIO;
}

static int wait_cqe_ms(struct io_uring *ring, struct io_uring_cqe **cqe, int ms)
{
	struct __kernel_timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long long)(ms % 1000) * 1000000,
	};
	int err;

	do
		err = io_uring_wait_cqe_timeout(ring, cqe, &ts);
	while (err == -EINTR);
	return err;
}

int mshot_wait(struct io_uring *ring, struct buf_ring *b, enum mshot_op op, uint64_t tag,
	       struct mshot_cqe *out)
{
	struct io_uring_cqe *cqe;
	unsigned char *buf;
	int err;

	memset(out, 0, sizeof(*out));
	out->bid = -1;
	err = wait_cqe_ms(ring, &cqe, UT_TIMEOUT_MS);
	if (err)
		return err;
	out->res = cqe->res;
	out->flags = cqe->flags;
	err = cqe->user_data == tag ? 0 : -EPROTO;
	io_uring_cqe_seen(ring, cqe);
	if (err)
		return err;
	if (!(out->flags & IORING_CQE_F_BUFFER))
		return out->res > 0 ? -EPROTO : 0;

	out->bid = (int)(out->flags >> IORING_CQE_BUFFER_SHIFT);
	buf = buf_ring_ptr(b, (unsigned int)out->bid);
	if (!buf || out->res < 0 || (unsigned int)out->res > b->buf_len)
		return -EPROTO;
	if (op == MSHOT_RECV) {
		out->data = buf;
		out->len = (size_t)out->res;
		return 0;
	}

	/* RECVMSG: header, no name, no control, then the payload. */
	{
		struct io_uring_recvmsg_out hdr;

		if ((size_t)out->res < sizeof(hdr))
			return -EPROTO;
		memcpy(&hdr, buf, sizeof(hdr));
		out->data = buf + sizeof(hdr);
		out->len = (size_t)out->res - sizeof(hdr);
		if (hdr.payloadlen != out->len)
			return -EPROTO;
	}
	return 0;
}

int uring_recv_once(struct io_uring *ring, int fd, void *buf, size_t len, bool use_msg, int *res,
		    unsigned int *flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int err;

	if (!sqe)
		return -EBUSY;
	if (use_msg) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		io_uring_prep_recvmsg(sqe, fd, &msg, 0);
	} else {
		io_uring_prep_recv(sqe, fd, buf, len, 0);
	}
	io_uring_sqe_set_data64(sqe, 1);
	err = io_uring_submit(ring);
	if (err < 0)
		return err;
	err = wait_cqe_ms(ring, &cqe, UT_TIMEOUT_MS);
	if (err)
		return err;
	*res = cqe->res;
	*flags = cqe->flags;
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double thread_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}
