/* SPDX-License-Identifier: MIT */
/* Parsing of `skiff run` option values. Each returns 0 or -EINVAL and never prints. */
#ifndef SKIFF_CLI_PARSE_H
#define SKIFF_CLI_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "libskiff.h"

/* "512M", "1G", "65536", "2MiB": bytes, K/M/G binary suffixes, case-insensitive. */
int parse_size(const char *s, uint64_t *out);

/* A decimal unsigned number in [min, max]. */
int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

struct vsock_opt {
	bool cid_set;
	uint64_t cid; /* range is checked by the caller, to name the problem */
	char *uds; /* points into the string given to parse_vsock() */
	unsigned int rx_threads;
	bool mrg_rxbuf;
};

/*
 * parse_vsock() - "cid=N,uds=PATH[,rx-threads=N][,mrg-rxbuf=on|off]"; @s is
 * modified in place. On -EINVAL, *bad points at the offending key=value.
 */
int parse_vsock(char *s, struct vsock_opt *out, const char **bad);

/* parse_console() - "stdio", "none" or "file:PATH" (*path points into @s). */
int parse_console(const char *s, enum skiff_console_kind *kind, const char **path);

#endif /* SKIFF_CLI_PARSE_H */
