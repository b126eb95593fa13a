/* SPDX-License-Identifier: MIT */
/*
 * Unix stream listeners at a path, shared by the device's host side
 * (devices/virtio_vsock: uds_path) and the vhost-user backend (vhost_user/:
 * the frontend's socket), so both treat a file already at the path the same
 * way: a socket nobody listens on is a stale one from an earlier run and is
 * replaced; a live listener or anything that is not a socket is left alone.
 */
#ifndef SKIFF_UDS_LISTEN_H
#define SKIFF_UDS_LISTEN_H

#include <sys/un.h>

/*
 * skiff_uds_addr() - fill @sa with AF_UNIX address @path (a file path, not
 * an abstract name). Return: 0; -EINVAL for an empty @path; -ENAMETOOLONG
 * when it does not fit sun_path with its NUL (107 bytes at most).
 */
int skiff_uds_addr(const char *path, struct sockaddr_un *sa);

/*
 * skiff_uds_listen() - bind a SOCK_STREAM socket (close-on-exec, plus
 * @sock_flags: 0 or SOCK_NONBLOCK) at @path and listen(2) with @backlog.
 * A socket file at @path that refuses a connection (ECONNREFUSED: nobody
 * listens) is unlinked first.
 * Return: 0 with the fd in *@out; -EINVAL, -ENAMETOOLONG (skiff_uds_addr());
 * -EADDRINUSE when a listener answers at @path; -ENOTSOCK when @path exists
 * and is not a socket (left alone); -errno from lstat(2), socket(2),
 * connect(2) when it fails otherwise (the path's state is then unknown and
 * it is left alone), unlink(2), bind(2), listen(2).
 */
int skiff_uds_listen(const char *path, int sock_flags, int backlog, int *out);

/*
 * skiff_uds_clear_stale() - the stale-socket rule alone, for a socket of
 * @type (SOCK_STREAM or SOCK_DGRAM) about to be bound at @sa: nothing at the
 * path, or a socket file whose connect(2) is refused (ECONNREFUSED: nobody
 * bound or listening there), which is unlinked. Used by skiff_uds_listen()
 * and by the device's datagram sockets (host_dgram.c).
 * Return: 0 when the path is free now; -EADDRINUSE when something answers;
 * -ENOTSOCK when the path is not a socket (left alone); -errno from lstat(2),
 * socket(2), connect(2) failing otherwise (left alone), unlink(2).
 */
int skiff_uds_clear_stale(const struct sockaddr_un *sa, int type);

#endif /* SKIFF_UDS_LISTEN_H */
