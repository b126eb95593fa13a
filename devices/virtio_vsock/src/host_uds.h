/* SPDX-License-Identifier: MIT */
/*
 * Host side: Firecracker-compatible hybrid Unix sockets.
 *   - host-initiated: the host app connects to uds_path and writes
 *     "CONNECT <port>\n"; the device answers "OK <local port>\n" once the
 *     guest accepted;
 *   - guest-initiated to port P: the device connects to "<uds_path>_<P>".
 */
#ifndef SKIFF_VSOCK_HOST_UDS_H
#define SKIFF_VSOCK_HOST_UDS_H

#include <stddef.h>
#include <stdint.h>

/* Longest uds_path: room for "_4294967295" and the NUL in sun_path (108). */
#define UDS_PATH_MAX (108u - 12u)

/*
 * uds_listen() - bind and listen (SOCK_STREAM, non-blocking, close-on-exec)
 * on @path. A socket file nobody listens on (connect gets ECONNREFUSED) is
 * a stale one from an earlier run and is replaced.
 * Return: 0 with *fd set; -ENAMETOOLONG; -EADDRINUSE when a live listener
 * answers at @path; -ENOTSOCK when @path exists and is not a socket (a
 * regular file, a directory...: left alone); other -errno from socket(2),
 * bind(2), listen(2).
 */
int uds_listen(const char *path, int *fd);

/*
 * uds_parse_connect() - parse a host CONNECT line at the start of @buf.
 * Grammar: "CONNECT" SP 1*10DIGIT LF, the number <= 4294967295.
 * Return: 0 with *port and *consumed (bytes up to and including LF); -EAGAIN
 * when @buf is a valid prefix shorter than @max without LF yet; -EINVAL when
 * malformed (wrong keyword, non-digit, too many digits, out of range, no LF
 * within @max bytes).
 */
int uds_parse_connect(const char *buf, size_t len, size_t max, uint32_t *port, size_t *consumed);

/*
 * uds_connect_port() - non-blocking connect to "<path>_<port>" with socket
 * type @type (SOCK_STREAM or SOCK_SEQPACKET).
 * On Linux an AF_UNIX connect completes at once or fails: no listener
 * (-ENOENT / -ECONNREFUSED) and a full backlog (-EAGAIN, a listener that
 * does not accept) are all refusals; EINTR is retried.
 * Return: 0 with *fd (non-blocking, close-on-exec); -errno.
 */
int uds_connect_port(const char *path, uint32_t port, int type, int *fd);

/*
 * uds_spare_open() - an fd held in reserve (a close-on-exec duplicate of
 * @like_fd, the listener: no file is opened, so no path or open(2) is
 * needed) so that uds_accept() can still take a client off the backlog and
 * refuse it when the process is out of fds. Return: the fd, or -1.
 */
int uds_spare_open(int like_fd);

/*
 * uds_accept() - accept one host client on @listen_fd (non-blocking,
 * close-on-exec). When the process or the system is out of fds (EMFILE,
 * ENFILE, ENOBUFS, ENOMEM from accept4(2)), *@spare (from uds_spare_open(),
 * may be -1) is closed to accept the client and close it at once, then
 * reopened: the client sees EOF instead of waiting in the backlog, and a
 * level-triggered listener does not stay readable.
 * Return: the fd; -EAGAIN when the backlog is empty (also ECONNABORTED);
 * -ECONNREFUSED when a client was refused that way (call again); -EMFILE,
 * -ENFILE, ... when even that failed (the client is still queued: back off
 * before the next call, or the listener stays readable and the caller spins).
 */
int uds_accept(int listen_fd, int *spare);

/* uds_peer_pid() - the pid of @fd's peer (SO_PEERCRED, at its connect()), or 0 if unknown. */
int uds_peer_pid(int fd);

#define SLOT_ROOM (-1)
#define SLOT_REFUSE (-2)
/*
 * slot_victim() - share @cap slots fairly among host clients by peer pid.
 * @n slots are taken, slot i by a client of @pid[i] since @since[i] (any
 * clock; smaller is older). A newcomer of @newcomer wants one.
 * Return: SLOT_ROOM when @n < @cap; else the index of the slot to free for
 * it: the oldest slot of the peer holding the most slots, when that peer
 * holds more than the newcomer's peer (so one peer, however many clients
 * it opens, cannot keep another out); else SLOT_REFUSE (the newcomer's
 * peer already holds as many as anybody: it is refused, not its own
 * older clients).
 */
int slot_victim(const int *pid, const int64_t *since, unsigned int n, unsigned int cap,
		int newcomer);

/* uds_format_ok() - "OK <port>\n" into @buf (>= 16 bytes). Return: its length. */
size_t uds_format_ok(char *buf, uint32_t port);

/*
 * uds_send_ok() - write the "OK <port>\n" reply of a host-initiated
 * connection to host client @fd (non-blocking, no SIGPIPE). Return: 0;
 * -EPIPE or -ECONNRESET when the client will not read any more (it closed,
 * or shut down its reading side); -EIO (short write) or another -errno.
 */
int uds_send_ok(int fd, uint32_t port);

#endif
