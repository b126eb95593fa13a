/* SPDX-License-Identifier: MIT */
/*
 * Host side of vsock datagrams (VIRTIO_VSOCK_F_DGRAM): AF_UNIX SOCK_DGRAM
 * socket paths and the one line a host sender writes to reach a guest port
 * no one has named yet. No state, no device: the paths, the parsers and the
 * socket calls, each checked (README "Datagrams, host side").
 *
 * With U the device's uds_path:
 *   - "U_dgram_<P>"  (host-owned): a host program binds it to receive the
 *     guest's datagrams to host port P; datagrams it sends from there come
 *     from host port P;
 *   - "U_dgram_g<Q>" (device-owned, one per guest port Q that is in use):
 *     guest port Q's datagrams come from it (recvfrom() names Q), and what
 *     a host program sends to it goes to guest port Q;
 *   - "U_dgram"      (device-owned gateway): "SEND <Q>\n" then the payload,
 *     for the first datagram to a guest port Q.
 * None can equal a stream path ("U" or "U_<digits>").
 */
#ifndef SKIFF_VSOCK_HOST_DGRAM_H
#define SKIFF_VSOCK_HOST_DGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

/* Longest uds_path with datagrams on: room for "_dgram_g4294967295" and the NUL. */
#define DGRAM_UDS_PATH_MAX (108u - 19u)
#define DGRAM_GATEWAY_LINE_MAX 16u /* "SEND 4294967295\n" */

/* Which host path of a datagram port. */
enum dgram_path_kind {
	DGRAM_PATH_HOST, /* "U_dgram_<P>" */
	DGRAM_PATH_GUEST, /* "U_dgram_g<Q>" */
	DGRAM_PATH_GATEWAY, /* "U_dgram" (@port ignored) */
};

/*
 * dgram_addr() - the AF_UNIX address of path @kind for port @port under
 * @uds into @sa, *@len its length for bind/sendto.
 * Return: 0; -ENAMETOOLONG (longer than sun_path).
 */
int dgram_addr(const char *uds, enum dgram_path_kind kind, uint32_t port, struct sockaddr_un *sa,
	       socklen_t *len);

/*
 * dgram_src_port() - the host port a datagram came from: its sender's
 * address @sa (@len bytes, as recvfrom() gave it) must be "<uds>_dgram_<P>"
 * with P 1 to 10 digits, <= 4294967295, no leading zero unless "0".
 * Return: 0 with *@port; -EINVAL for any other address (unbound, abstract,
 * another path).
 */
int dgram_src_port(const char *uds, const struct sockaddr_un *sa, socklen_t len, uint32_t *port);

/*
 * dgram_parse_gateway() - the "SEND" SP 1*10DIGIT LF line at the start of
 * the @len bytes of @buf (same number rules as dgram_src_port()).
 * Return: 0 with *@port and *@consumed (line length, LF included); -EINVAL
 * when malformed or no LF within DGRAM_GATEWAY_LINE_MAX bytes.
 */
int dgram_parse_gateway(const uint8_t *buf, size_t len, uint32_t *port, size_t *consumed);

/*
 * dgram_bind() - a non-blocking, close-on-exec AF_UNIX SOCK_DGRAM socket
 * bound at @sa (@len): a stale socket file there is replaced, anything else
 * that is not a socket is left alone. SO_SNDBUF raised so that one 64 KiB
 * datagram always fits. Return: the fd; -ENOTSOCK (a non-socket file is
 * there); -errno of socket(2), bind(2).
 */
int dgram_bind(const struct sockaddr_un *sa, socklen_t len);

/* Why a guest datagram did not reach its host socket. */
enum dgram_send_err {
	DGRAM_SENT = 0,
	DGRAM_NO_DEST, /* nobody bound at the path (ENOENT, ECONNREFUSED...) */
	DGRAM_FULL, /* the receiver's queue or our send buffer is full (EAGAIN, ENOBUFS) */
	DGRAM_ERR, /* any other error */
};

/*
 * dgram_send() - one datagram: the @n iovecs @iov from socket @fd to @to
 * (@to_len), never blocking (MSG_DONTWAIT, MSG_NOSIGNAL; EINTR retried).
 * Return: DGRAM_SENT or the class of the failure.
 */
enum dgram_send_err dgram_send(int fd, const struct sockaddr_un *to, socklen_t to_len,
			       const struct iovec *iov, unsigned int n);

#endif
