// SPDX-License-Identifier: MIT
/* Option value parsers for the skiff CLI (see parse.h). */
#include "parse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "skiff/cli.h"

enum {
	VSOCK_CID,
	VSOCK_UDS,
	VSOCK_RX_THREADS,
	VSOCK_MRG_RXBUF,
	VSOCK_DGRAM,
	VSOCK_CONN_BUF,
	VSOCK_CTL_THREAD
};

int parse_vsock(char *s, const char *orig, struct vsock_opt *out)
{
	static const char *const keys[] = { "cid",   "uds",	 "rx-threads", "mrg-rxbuf",
					    "dgram", "conn-buf", "ctl-thread", NULL };
	struct cli_kv kv = { .keys = keys };
	const char *mrg, *dgram, *ctl;
	uint64_t v;

	memset(out, 0, sizeof(*out));
	if (cli_kv_parse(s, &kv)) {
		cli_kv_report("skiff", "--vsock", orig, &kv, VSOCK_FORM);
		return -EINVAL;
	}
	if (!kv.val[VSOCK_CID] || !kv.val[VSOCK_UDS]) {
		fprintf(stderr, "skiff: --vsock needs both cid=N and uds=PATH (e.g. --vsock "
				"cid=3,uds=/tmp/skiff.sock)\n");
		return -EINVAL;
	}
	if (cli_parse_uint(kv.val[VSOCK_CID], 3, 0xfffffffeull, &out->cid)) {
		cli_bad_value("skiff", "--vsock cid", kv.val[VSOCK_CID],
			      "give a CID from 3 to 4294967294, e.g. cid=3 (0, 1 and 2 are "
			      "reserved: hypervisor, local, host; 4294967295 means any)");
		return -EINVAL;
	}
	out->uds = kv.val[VSOCK_UDS];
	if (kv.val[VSOCK_RX_THREADS]) {
		if (cli_parse_uint(kv.val[VSOCK_RX_THREADS], 1, SKIFF_VSOCK_MAX_RX_THREADS, &v)) {
			cli_bad_value("skiff", "--vsock rx-threads", kv.val[VSOCK_RX_THREADS],
				      "give a number of RX pump threads from 1 to %u, or leave "
				      "rx-threads out for the default (one per online core, at "
				      "most 4)",
				      SKIFF_VSOCK_MAX_RX_THREADS);
			return -EINVAL;
		}
		out->rx_threads = (unsigned int)v;
	}
	mrg = kv.val[VSOCK_MRG_RXBUF];
	if (mrg && strcmp(mrg, "on") && strcmp(mrg, "off")) {
		cli_bad_value("skiff", "--vsock mrg-rxbuf", mrg, "give on or off (default off)");
		return -EINVAL;
	}
	out->mrg_rxbuf = mrg && !strcmp(mrg, "on");
	dgram = kv.val[VSOCK_DGRAM];
	if (dgram && strcmp(dgram, "on") && strcmp(dgram, "off")) {
		cli_bad_value("skiff", "--vsock dgram", dgram, "give on or off (default off)");
		return -EINVAL;
	}
	out->dgram = dgram && !strcmp(dgram, "on");
	if (kv.val[VSOCK_CONN_BUF]) {
		if (cli_parse_size(kv.val[VSOCK_CONN_BUF], &v) || v < 4096 || v > (64u << 20)) {
			cli_bad_value("skiff", "--vsock conn-buf", kv.val[VSOCK_CONN_BUF],
				      "give a buffer size in bytes from 4096 (4K) to 67108864 "
				      "(64M), or leave conn-buf out for the default (256K)");
			return -EINVAL;
		}
		out->conn_buf = (uint32_t)v;
	}
	ctl = kv.val[VSOCK_CTL_THREAD];
	if (ctl) {
		if (!strcmp(ctl, "own")) {
			out->ctl_thread = SKIFF_VSOCK_CTL_OWN;
		} else if (!strcmp(ctl, "pump0")) {
			out->ctl_thread = SKIFF_VSOCK_CTL_ON_PUMP0;
		} else if (strcmp(ctl, "auto")) {
			cli_bad_value("skiff", "--vsock ctl-thread", ctl,
				      "give auto, own or pump0 (default auto: pump0 on machines of "
				      "2 CPUs or fewer)");
			return -EINVAL;
		}
	}
	return 0;
}

int parse_console(const char *s, enum skiff_console_kind *kind, const char **path)
{
	*path = NULL;
	if (!strcmp(s, "stdio")) {
		*kind = SKIFF_CONSOLE_STDIO;
	} else if (!strcmp(s, "none")) {
		*kind = SKIFF_CONSOLE_NONE;
	} else if (!strncmp(s, "file:", 5) && s[5]) {
		*kind = SKIFF_CONSOLE_FILE;
		*path = s + 5;
	} else {
		return -EINVAL;
	}
	return 0;
}
