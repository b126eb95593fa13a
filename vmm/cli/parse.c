// SPDX-License-Identifier: MIT
/* Option value parsers for the skiff CLI (see parse.h). */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k':
		shift = 10;
		break;
	case 'm':
		shift = 20;
		break;
	case 'g':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (shift) {
		end++;
		if (*end && strcasecmp(end, "ib") && strcasecmp(end, "b"))
			return -EINVAL;
	}
	if (v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int parse_vsock(char *s, struct vsock_opt *out, const char **bad)
{
	char *save = NULL, *tok;
	uint64_t v;

	memset(out, 0, sizeof(*out));
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		*bad = tok;
		if (!eq)
			return -EINVAL;
		*eq = '\0';
		if (!strcmp(tok, "cid")) {
			if (parse_uint(eq + 1, 0, UINT64_MAX, &out->cid))
				goto bad;
			out->cid_set = true;
		} else if (!strcmp(tok, "uds")) {
			if (!eq[1])
				goto bad;
			out->uds = eq + 1;
		} else if (!strcmp(tok, "rx-threads")) {
			if (parse_uint(eq + 1, 0, 64, &v))
				goto bad;
			out->rx_threads = (unsigned int)v;
		} else if (!strcmp(tok, "mrg-rxbuf")) {
			if (!strcmp(eq + 1, "on"))
				out->mrg_rxbuf = true;
			else if (!strcmp(eq + 1, "off"))
				out->mrg_rxbuf = false;
			else
				goto bad;
		} else {
			goto bad;
		}
		*eq = '=';
	}
	*bad = NULL;
	return 0;
bad:
	*strchr(*bad, '\0') = '=';
	return -EINVAL;
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
