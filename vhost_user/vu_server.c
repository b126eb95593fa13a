// SPDX-License-Identifier: MIT
/*
 * The listening side of skiff-vsock: one frontend at a time. QEMU and UML
 * connect as vhost-user frontends (the backend is the socket server).
 *
 * A frontend that connects while another is served takes over: the current
 * one is disconnected (device reset, its state dropped) and the newcomer is
 * served, once it has sent its first request. The reason is UML's reboot: arch/um/os-Linux/main.c re-executes
 * the UML binary, and the vhost-user socket (opened without close-on-exec
 * by os_connect_socket()) survives the exec unused, so the old connection
 * never ends while the rebooted guest connects again.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <skiff/uds_listen.h>
#include <unistd.h>

#include "skiff/mono_ms.h"
#include "skiff/vhost_user.h"

/* A frontend that stops mid-message for this long is dropped. */
#define VU_RECV_TIMEOUT_S 10
/* After accept(2) ran out of fds, the listener is ignored this long (no spin). */
#define VU_ACCEPT_BACKOFF_MS 250

/* accept(2) failed for want of fds or memory: the connection stays queued. */
static bool out_of_fds(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

int vu_server_listen(const char *path, int *out_fd)
{
	return skiff_uds_listen(path, 0, 4, out_fd);
}

static void set_timeouts(int conn)
{
	struct timeval tv = { .tv_sec = VU_RECV_TIMEOUT_S };

	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A newcomer has spoken (data, not just EOF or an error). */
static bool has_data(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

/*
 * Serve the connected frontend @conn until it goes away. A newcomer is held
 * aside until it sends its first bytes, and only then replaces the current
 * frontend: a connection that closes without a word (another skiff-vsock
 * probing whether the socket is live) must not cost the guest its device.
 * Return: 1 when asked to stop; 0 when the frontend left, with the newcomer
 * that was waiting, if any, in *@next (-1: none), to be served next.
 */
static int serve_one(int conn, int listen_fd, struct vu_backend *vb, int stop_fd, int *next_out)
{
	int stop = 0, pending = -1;
	int64_t retry_at = 0; /* listener ignored until then (out of fds) */

	set_timeouts(conn);
	for (;;) {
		struct pollfd p[5] = {
			{ .fd = conn, .events = POLLIN },
			{ .fd = stop_fd, .events = POLLIN },
			{ .fd = listen_fd, .events = POLLIN },
			{ .fd = pending, .events = POLLIN },
			{ .fd = vu_backend_fault_fd(vb), .events = POLLIN },
		};
		int ret, next, timeout = -1;

		if (retry_at) {
			int64_t now = skiff_mono_ms();

			if (now >= retry_at) {
				retry_at = 0;
			} else {
				p[2].fd = -1;
				timeout = (int)(retry_at - now);
			}
		}
		if (poll(p, 5, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents) {
			stop = 1;
			break;
		}
		if (p[4].revents) {
			/* A device thread faulted on this frontend's memory (vu_mem.c). */
			fprintf(stderr, "skiff-vsock: frontend dropped: its guest memory faulted "
					"(SIGBUS: the memory file shrank after SET_MEM_TABLE)\n");
			break;
		}
		if (p[2].revents) {
			next = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (next >= 0) {
				if (pending >= 0)
					close(pending);
				pending = next;
			} else if (out_of_fds(errno)) {
				retry_at =
					skiff_mono_ms() + VU_ACCEPT_BACKOFF_MS; /* still queued */
			}
			continue;
		}
		if (pending >= 0 && p[3].revents) {
			if (!has_data(pending)) {
				close(pending);
				pending = -1;
				continue;
			}
			fprintf(stderr, "skiff-vsock: a new frontend takes over\n");
			vu_backend_disconnect(vb);
			close(conn);
			conn = pending;
			pending = -1;
			set_timeouts(conn);
			continue;
		}
		if (!p[0].revents)
			continue;
		ret = vu_backend_handle_one(vb, conn);
		if (ret) {
			if (ret != -ECONNRESET)
				fprintf(stderr, "skiff-vsock: frontend dropped: %s\n",
					strerror(-ret));
			break;
		}
	}
	vu_backend_disconnect(vb);
	close(conn);
	if (pending >= 0 && stop) {
		close(pending);
		pending = -1;
	}
	*next_out = pending;
	return stop;
}

/*
 * Serve @conn, then each newcomer that was waiting when its predecessor
 * left, in a loop: a connect/close cycle costs no stack (issue 22, finding
 * 6: this was a tail call, a loop only at -O2).
 */
static int serve_conn(int conn, int listen_fd, struct vu_backend *vb, int stop_fd)
{
	while (conn >= 0) {
		if (serve_one(conn, listen_fd, vb, stop_fd, &conn))
			return 1;
	}
	return 0;
}

int vu_server_serve(int listen_fd, struct vu_backend *vb, int stop_fd)
{
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = listen_fd, .events = POLLIN },
			{ .fd = stop_fd, .events = POLLIN },
		};
		int conn;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents)
			return 0;
		if (!p[0].revents)
			continue;
		conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			/* The peer may have gone already; keep listening. */
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
				continue;
			/* Out of fds: the frontend stays queued; retry without spinning. */
			if (out_of_fds(errno)) {
				poll(p + 1, 1, VU_ACCEPT_BACKOFF_MS);
				continue;
			}
			return -errno;
		}
		if (serve_conn(conn, listen_fd, vb, stop_fd))
			return 0;
	}
}
