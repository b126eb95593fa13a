// SPDX-License-Identifier: MIT
/*
 * Harness: vhost-user message framing and request handling
 * (vhost_user/vu_msg.c, vu_backend.c, vu_mem.c) in front of the real device
 * model, over a socketpair, the way skiff-vsock serves a frontend
 * (vu_server.c: vu_backend_handle_one() until it fails, then
 * vu_backend_disconnect()).
 *
 * Input: a sequence of messages, each
 *   u8 request, u8 flags byte, u8 fd kind, u8 payload length, payload
 * The header's flags are 0x1 (version 1) with bit 3 (need_reply) from
 * flags bit 0, unless flags bit 1 asks for the raw flags byte instead (bad
 * versions, reply bit). flags bit 2 declares a header size that differs
 * from the bytes sent (next input byte), to cut the stream short. The fd
 * kind attaches SCM_RIGHTS fds: 0 none, 1 an eventfd, 2 a pipe's write end,
 * 3 one 64 KiB memfd per declared memory region (nregions of a
 * SET_MEM_TABLE payload, up to 8), 4 nine eventfds (over the cap). The
 * memfd holds bytes 0x00.. of the input after the messages, so device
 * rings in it can carry chains. The writer then closes its end.
 *
 * Checked besides ASan/UBSan/LSan: no fd is leaked (the process's fd count
 * is the same after every input), replies are well formed (version 1,
 * reply bit, payload size they claim).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "skiff/vhost_user.h"
#include "vu_proto.h"

#define MEMFD_SIZE 0x10000u

static struct vsock_dev *g_dev;
static struct vu_backend *g_vb;

static void setup_once(void)
{
	static char path[108];
	struct vsock_dev_config cfg = { .guest_cid = 3, .uds_path = path, .rx_threads = 1 };

	/* As skiff-vsock's main(): a call fd may be a pipe the frontend closed. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(path, sizeof(path), "%s/vu.sock", fz_scratch_dir());
	if (vsock_dev_create(&cfg, &g_dev) || vu_backend_create(g_dev, false, &g_vb)) {
		fprintf(stderr, "fuzz: device or backend create failed\n");
		abort();
	}
}

static int make_memfd(const uint8_t *fill, size_t fill_len)
{
	int fd = memfd_create("fuzz-guest", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, MEMFD_SIZE))
		abort();
	if (fill_len) {
		size_t n = fill_len < MEMFD_SIZE ? fill_len : MEMFD_SIZE;

		if (pwrite(fd, fill, n, 0) != (ssize_t)n)
			abort();
	}
	return fd;
}

/* Send one message with @nfds fds from @fds (closed here afterwards). */
static void send_msg(int sock, const void *buf, size_t len, int *fds, unsigned int nfds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)(uintptr_t)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	unsigned int i;

	if (nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)len)
		abort(); /* the socket buffer holds a whole input */
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

/* Read back every reply the backend wrote and check its framing. */
static void check_replies(int sock)
{
	uint8_t buf[4096];
	size_t have = 0, off = 0;
	ssize_t r;

	while ((r = recv(sock, buf + have, sizeof(buf) - have, MSG_DONTWAIT)) > 0) {
		have += (size_t)r;
		while (have - off >= sizeof(struct vu_hdr)) {
			struct vu_hdr h;

			memcpy(&h, buf + off, sizeof(h));
			FZ_CHECK((h.flags & VU_FLAG_VERSION_MASK) == VU_VERSION);
			FZ_CHECK(h.flags & VU_FLAG_REPLY);
			FZ_CHECK(h.size <= VU_MAX_PAYLOAD);
			if (have - off < sizeof(h) + h.size)
				break;
			off += sizeof(h) + h.size;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
		off = 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timeval tv = { .tv_sec = 5 };
	unsigned int fds_before, nmsg = 0;
	int sv[2], big = 1 << 20;
	const uint8_t *fill;
	size_t fill_len;
	struct fz f;

	if (!g_vb)
		setup_once();
	fds_before = fz_count_fds();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	/* Messages first; whatever bytes remain fill the memfds. */
	fz_init(&f, data, size);
	while (fz_left(&f) >= 4 && nmsg++ < 64) {
		uint8_t msg[sizeof(struct vu_hdr) + 256];
		struct vu_hdr h = { 0 };
		uint8_t req = fz_u8(&f), fl = fz_u8(&f), kind = fz_u8(&f), plen = fz_u8(&f);
		int fds[16];
		unsigned int nfds = 0, i;

		h.request = req;
		h.flags = (fl & 2) ? fz_u8(&f) : (VU_VERSION | ((fl & 1) ? VU_FLAG_NEED_REPLY : 0));
		h.size = (fl & 4) ? fz_u8(&f) : plen;
		fz_bytes(&f, msg + sizeof(h), plen);
		memcpy(msg, &h, sizeof(h));
		fill = data + f.off;
		fill_len = fz_left(&f);
		switch (kind % 5) {
		case 1:
			fds[nfds++] = eventfd(0, EFD_CLOEXEC);
			break;
		case 2: {
			int p[2];

			if (pipe2(p, O_CLOEXEC))
				abort();
			close(p[0]);
			fds[nfds++] = p[1];
			break;
		}
		case 3: {
			uint32_t n = 0;

			if (plen >= 4)
				memcpy(&n, msg + sizeof(h), 4);
			for (i = 0; i < (n > 8 ? 1 : n); i++)
				fds[nfds++] = make_memfd(fill, fill_len);
			break;
		}
		case 4:
			for (i = 0; i < 9; i++)
				fds[nfds++] = eventfd(0, EFD_CLOEXEC);
			break;
		}
		for (i = 0; i < nfds; i++)
			if (fds[i] < 0)
				abort();
		send_msg(sv[1], msg, sizeof(h) + plen, fds, nfds);
	}
	shutdown(sv[1], SHUT_WR);

	while (vu_backend_handle_one(g_vb, sv[0]) == 0)
		;
	vu_backend_disconnect(g_vb);
	FZ_CHECK(!vu_backend_started(g_vb));
	check_replies(sv[1]);
	close(sv[0]);
	close(sv[1]);
	FZ_CHECK(fz_count_fds() == fds_before);
	return 0;
}
