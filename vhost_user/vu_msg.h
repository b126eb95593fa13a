/* SPDX-License-Identifier: MIT */
/* vhost-user message framing: read one message with its fds, send a reply. */
#ifndef SKIFF_VU_MSG_H
#define SKIFF_VU_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "vu_proto.h"

/* One received message. fds[] are owned by the message until taken. */
struct vu_msg {
	struct vu_hdr hdr;
	union {
		uint64_t u64;
		struct vu_vring_state state;
		struct vu_vring_addr addr;
		struct vu_mem_table mem;
		struct vu_config_hdr config;
		uint8_t raw[VU_MAX_PAYLOAD];
	} p;
	int fds[VU_MAX_FDS];
	unsigned int nfds;
};

/*
 * vu_msg_recv() - read exactly one message (header, then hdr.size payload
 * bytes) from stream socket @sock, collecting SCM_RIGHTS fds (close-on-exec)
 * that arrive with any of its bytes.
 * Return: 0; -ECONNRESET on EOF before the first byte; -EPROTO on EOF inside
 * the message, a payload larger than VU_MAX_PAYLOAD, truncated control data
 * or more than VU_MAX_FDS fds (every fd received is closed then);
 * -ETIMEDOUT when SO_RCVTIMEO expired; other -errno from recvmsg(2).
 */
int vu_msg_recv(int sock, struct vu_msg *msg);

/* vu_msg_close_fds() - close the fds still owned by @msg. */
void vu_msg_close_fds(struct vu_msg *msg);

/*
 * vu_msg_reply() - send the reply to @req: same request code, flags
 * VERSION | REPLY, @len payload bytes from @payload.
 * Return: 0; -errno from sendmsg(2) (-EPIPE when the peer is gone; no
 * SIGPIPE is raised).
 */
int vu_msg_reply(int sock, const struct vu_hdr *req, const void *payload, uint32_t len);

#endif /* SKIFF_VU_MSG_H */
