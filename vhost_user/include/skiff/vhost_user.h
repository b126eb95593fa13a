/* SPDX-License-Identifier: MIT */
/*
 * skiff vhost-user backend: serves the vsock device model (skiff/vsock_dev.h)
 * to a vhost-user frontend (QEMU 7.2 vhost-user-vsock-device, Linux 6.1 UML
 * virtio_uml) over a Unix stream socket.
 *
 * Two layers, both usable without a process of their own:
 *   - struct vu_backend: the protocol. It reads one message at a time from a
 *     connected socket, checks it, applies it to the device and answers.
 *     Tests drive it over a socketpair.
 *   - vu_server_*: a listening socket that serves one frontend at a time;
 *     a frontend that connects while another is served takes over (the
 *     current one is disconnected; see vu_server.c for why: UML reboots).
 *
 * Device life cycle as driven by the backend: the device is started when the
 * RX and TX vrings each have a size, addresses, a kick (or "no fd") and are
 * enabled, and memory and features are known; the event vring is passed too
 * when it is ready (UML sets it up, QEMU keeps it). Any change to a vring,
 * the memory table or the features pauses the device (vsock_dev_stop, which
 * keeps connections) and restarts it once the conditions hold again.
 * GET_VRING_BASE stops the ring until its next SET_VRING_KICK. A frontend
 * that disconnects leaves nothing behind: vsock_dev_reset(), memory
 * unmapped, every received fd closed.
 *
 * Threading: every call is made from one thread (the control thread); the
 * backend has no lock of its own.
 */
#ifndef SKIFF_VHOST_USER_H
#define SKIFF_VHOST_USER_H

#include <stdbool.h>
#include <stdint.h>

#include "skiff/vsock_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vu_backend;

/* Counters of the protocol layer, monotonic since create. */
struct vu_backend_stats {
	uint64_t msgs; /* messages read and framed */
	uint64_t rejected; /* messages answered with an error or ignored */
	uint64_t disconnects; /* frontends that went away or were dropped */
	uint64_t dev_starts; /* successful vsock_dev_start() calls */
	uint64_t mem_faults; /* frontends dropped because their memory faulted (SIGBUS) */
};

/*
 * vu_backend_create() - protocol state for @dev, which the caller keeps
 * owning (it must outlive the backend). @verbose: log every request to
 * stderr. The first call installs the process's SIGBUS handler for guest
 * memory (vu_mem.c): make it before threads get seccomp filters.
 * Return: 0; -ENOMEM; -errno from eventfd(2), sigaction(2).
 */
int vu_backend_create(struct vsock_dev *dev, bool verbose, struct vu_backend **out);

/* vu_backend_destroy() - vu_backend_disconnect(), then free. NULL is a no-op. */
void vu_backend_destroy(struct vu_backend *vb);

/*
 * vu_backend_handle_one() - read one message from the connected stream
 * socket @sock (blocking; give it SO_RCVTIMEO so a stalled frontend cannot
 * hold the backend), handle it and write the reply, if any, to @sock.
 *
 * Return: 0 when the message was handled (also when it was rejected with
 * an error reply, or ignored and logged); -ECONNRESET when the frontend
 * closed the socket between messages; -EPROTO when the stream cannot be
 * trusted any more (bad version flags, a reply flag, payload over the
 * largest we accept, EOF inside a message, truncated fds): the caller must
 * call vu_backend_disconnect() and close @sock; other -errno from
 * recvmsg(2)/sendmsg(2) (-ETIMEDOUT for a stall), same treatment.
 */
int vu_backend_handle_one(struct vu_backend *vb, int sock);

/*
 * vu_backend_disconnect() - the frontend is gone: stop and reset the device
 * (host connections get EOF/ECONNRESET), unmap guest memory, close every
 * fd the frontend sent, forget all negotiated state. The caller closes the
 * socket itself. Safe to call twice.
 */
void vu_backend_disconnect(struct vu_backend *vb);

/*
 * vu_backend_fault_fd() - an eventfd that becomes readable when a thread
 * of this process faulted (SIGBUS) on the guest memory this frontend
 * shared: it shrank its memory file after SET_MEM_TABLE. The fault was
 * survived (the region now reads as zeros, see vu_mem.c); the caller must
 * drop the frontend: vu_backend_disconnect() (which counts it in
 * mem_faults and clears the fd), close the socket. vu_server_serve() does.
 */
int vu_backend_fault_fd(const struct vu_backend *vb);

/* vu_backend_started() - whether the device is running now (any thread). */
bool vu_backend_started(const struct vu_backend *vb);

/* vu_backend_get_stats() - snapshot of the protocol counters (any thread; each counter read atomically). */
void vu_backend_get_stats(const struct vu_backend *vb, struct vu_backend_stats *out);

/*
 * vu_server_listen() - create, bind and listen on a Unix stream socket at
 * @path (blocking, close-on-exec, backlog 4): skiff_uds_listen()
 * (skiff/uds_listen.h), the same rules as the device's uds_path. A stale
 * socket file (it refuses connections) is replaced.
 * Return: 0 and the fd in *@out_fd; -EINVAL, -ENAMETOOLONG; -EADDRINUSE
 * when a live server owns @path; -ENOTSOCK when @path exists and is not a
 * socket (left alone); other -errno as skiff_uds_listen() says.
 */
int vu_server_listen(const char *path, int *out_fd);

/*
 * vu_server_serve() - accept frontends on @listen_fd one at a time and serve
 * each with @vb until it goes away, until @stop_fd (an eventfd, signalfd or
 * pipe) becomes readable. The current frontend, if any, is then
 * disconnected. A connection made while a frontend is served replaces it
 * (the old one is disconnected as if it had closed).
 * Out of fds (EMFILE, ENFILE, ENOBUFS, ENOMEM from accept4(2)) the
 * frontend stays in the listen backlog and the listener is ignored for
 * 250 ms, then tried again: no busy loop, the current frontend still served.
 * Return: 0 when stopped through @stop_fd; -errno from poll(2)/accept4(2)
 * for errors that are not transient.
 */
int vu_server_serve(int listen_fd, struct vu_backend *vb, int stop_fd);

#ifdef __cplusplus
}
#endif

#endif /* SKIFF_VHOST_USER_H */
