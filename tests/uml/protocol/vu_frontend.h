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

#endif /* SKIFF_VU_FRONTEND_H */
