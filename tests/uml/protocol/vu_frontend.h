/* SPDX-License-Identifier: MIT */
/*
 * A minimal vhost-user frontend for tests: builds and sends requests (with
 * fds), reads replies. Speaks the same wire format as QEMU and UML.
 */
#ifndef SKIFF_VU_FRONTEND_H
#define SKIFF_VU_FRONTEND_H

#include <stddef.h>
#include <stdint.h>

#include "vu_proto.h"

/* fe_build() - header + payload into @buf (>= 12 + size). Returns bytes. */
size_t fe_build(void *buf, uint32_t req, uint32_t flags, const void *payload, uint32_t size);

/*
 * fe_send() - one request in one sendmsg(2), @nfds fds attached.
 * @flags: extra header flags (VU_FLAG_NEED_REPLY); the version is added.
 * Return: 0 or -errno.
 */
int fe_send(int sock, uint32_t req, uint32_t flags, const void *payload, uint32_t size,
	    const int *fds, unsigned int nfds);

/*
 * fe_recv() - read one reply; checks version and reply flags and that it
 * answers @req. Up to @cap payload bytes into @payload, size in *@size.
 * Return: 0; -EPROTO for a bad header; -ECONNRESET on EOF; -errno.
 */
int fe_recv(int sock, uint32_t req, void *payload, uint32_t cap, uint32_t *size);

/* fe_recv_u64() - a reply carrying one u64. Return: 0 or -errno. */
int fe_recv_u64(int sock, uint32_t req, uint64_t *v);

/* fe_connect() - a stream socket connected to @path. Return: the fd or -errno. */
int fe_connect(const char *path);

/*
 * fe_set() - a "set" request with need_reply; waits for the REPLY_ACK.
 * Return: 0 when acked 0; -(the acked errno); -errno of the transport.
 */
int fe_set(int sock, uint32_t req, const void *payload, uint32_t size, const int *fds,
	   unsigned int nfds);

/* fe_set_fd() - SET_VRING_KICK/CALL/ERR of vring @q with @fd (-1: NOFD). */
int fe_set_fd(int sock, uint32_t req, unsigned int q, int fd);

/* fe_set_state() - SET_VRING_NUM/BASE/ENABLE of vring @q to @num. */
int fe_set_state(int sock, uint32_t req, unsigned int q, uint32_t num);

/* A guest's memory and vrings as the test frontend lays them out. */
#define FE_GUEST_MEM 0x10000u /* one memfd region at GPA 0 */
#define FE_GUEST_QSIZE 16u
#define FE_GUEST_RING(q) ((uint64_t)(q)*0x1000u) /* desc; avail +0x400, used +0x800 */

struct fe_guest {
	int sock;
	int memfd;
	uint8_t *mem; /* the frontend's mapping; its address is the user address */
	int kick[3], call[3]; /* eventfds, the frontend's copies */
};

/*
 * fe_guest_up() - connect to the backend at @path and bring a device up as
 * UML does: owner, protocol features (REPLY_ACK), @features (plus bit 30),
 * a memfd of FE_GUEST_MEM bytes, then vrings 0..@nrings-1 (call, num, base,
 * addr, kick, enable), all rings empty. Return: 0 or -errno; on error
 * nothing is left open.
 */
int fe_guest_up(struct fe_guest *g, const char *path, uint64_t features, unsigned int nrings);

/* fe_guest_close() - close the socket, the fds and the mapping. */
void fe_guest_close(struct fe_guest *g);

#endif /* SKIFF_VU_FRONTEND_H */
