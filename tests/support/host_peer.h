/* SPDX-License-Identifier: MIT */
/*
 * Host-side peers for device tests and benchmarks: the Firecracker hybrid
 * Unix socket protocol seen from the host application (see vsock_dev.h):
 *   - host-initiated: connect to uds_path, write "CONNECT <port>\n", read
 *     "OK <host port>\n", then data;
 *   - guest-initiated to port P: the device connects to "<uds_path>_<P>".
 * Plus small I/O helpers with timeouts, a data pattern and a hash.
 * All functions return 0 / a count, or a negative errno.
 */
#ifndef SKIFF_HOST_PEER_H
#define SKIFF_HOST_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A fresh, unused socket path under /tmp for this process (short enough for the suffix). */
void hp_tmp_path(char *buf, size_t cap, const char *tag);

/* Listen (SOCK_STREAM, or SOCK_SEQPACKET when @seqpacket) on "<uds>_<port>". Return: fd. */
int hp_listen_port(const char *uds, uint32_t port, int backlog, int seqpacket);
/* Accept on @lfd within @timeout_ms. Return: fd; -ETIMEDOUT. */
int hp_accept(int lfd, int timeout_ms);
/* Connect to @uds without sending anything. Return: fd. */
int hp_connect_raw(const char *uds);
/*
 * hp_connect() - connect to @uds, send "CONNECT <port>\n", read the reply
 * byte by byte (no data is consumed). @host_port: the port in "OK <port>".
 * Return: fd; -ECONNREFUSED when the device closed without OK; -EPROTO for
 * another reply; -ETIMEDOUT.
 */
int hp_connect(const char *uds, uint32_t port, uint32_t *host_port, int timeout_ms);
/* Read one "\n"-terminated line (the newline dropped). Return: length; 0 at EOF. */
ssize_t hp_read_line(int fd, char *buf, size_t cap, int timeout_ms);

/* Write all @len bytes (MSG_NOSIGNAL). Return: @len; -errno; -ETIMEDOUT. */
ssize_t hp_write_all(int fd, const void *buf, size_t len, int timeout_ms);
/* Read until @len bytes or EOF. Return: bytes read; -errno; -ETIMEDOUT. */
ssize_t hp_read_full(int fd, void *buf, size_t len, int timeout_ms);
/*
 * hp_wait_eof() - wait for EOF on @fd without data in between.
 * Return: 0 at EOF; -ECONNRESET; -EPROTO if data came; -ETIMEDOUT.
 */
int hp_wait_eof(int fd, int timeout_ms);
/* Nothing readable on @fd within @ms (and no EOF). Return: 1 if quiet. */
int hp_quiet(int fd, int ms);

/* FNV-1a 64 over @len bytes, chained from @h (start with HP_HASH_INIT). */
#define HP_HASH_INIT 0xcbf29ce484222325ull
uint64_t hp_hash(uint64_t h, const void *buf, size_t len);
/* xorshift64* pseudo-random numbers and pattern fill (state must be non-zero). */
uint64_t hp_rand(uint64_t *state);
void hp_fill(uint64_t *state, void *buf, size_t len);
/* Milliseconds on CLOCK_MONOTONIC. */
int64_t hp_now_ms(void);

#endif /* SKIFF_HOST_PEER_H */
