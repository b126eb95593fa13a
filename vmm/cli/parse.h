/* SPDX-License-Identifier: MIT */
/* Parsing of `skiff run` option values (numbers and sizes: skiff/cli.h). */
#ifndef SKIFF_CLI_PARSE_H
#define SKIFF_CLI_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "libskiff.h"

/* The syntax of --vsock, as the messages and --help give it. */
#define VSOCK_FORM                                                                        \
	"cid=N,uds=PATH[,rx-threads=N][,mrg-rxbuf=on|off][,dgram=on|off][,conn-buf=SIZE]" \
	"[,ctl-thread=auto|own|pump0]"

struct vsock_opt {
	uint64_t cid; /* 3 .. 0xfffffffe */
	char *uds; /* points into the string given to parse_vsock() */
	unsigned int rx_threads; /* 0 (not given: device default) or 1 .. max */
	bool mrg_rxbuf;
	bool dgram; /* offer VIRTIO_VSOCK_F_DGRAM */
	uint32_t
		conn_buf; /* buf_alloc per connection, bytes: 0 (device default) or 4 KiB .. 64 MiB */
	unsigned int ctl_thread; /* enum skiff_vsock_ctl_thread (0: auto) */
};

/*
 * parse_vsock() - VSOCK_FORM into @out. @s is a copy of @orig that is cut up
 * in place (out->uds points into it). cid and uds are required; each key
 * at most once. Return: 0; -EINVAL after one line on stderr naming the
 * item, key or value and what is valid.
 */
int parse_vsock(char *s, const char *orig, struct vsock_opt *out);

/*
 * parse_console() - "stdio", "none" or "file:PATH" (*path points into @s).
 * Return: 0; -EINVAL (nothing printed).
 */
int parse_console(const char *s, enum skiff_console_kind *kind, const char **path);

#endif /* SKIFF_CLI_PARSE_H */
