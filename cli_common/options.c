// SPDX-License-Identifier: MIT
/* getopt_long() errors and once-only options, worded by the tool (see skiff/cli.h). */
#include "skiff/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct option *by_val(const struct option *opts, int c)
{
	for (; opts->name; opts++)
		if (opts->val == c && !opts->flag)
			return opts;
	return NULL;
}

int cli_once(const char *tool, const struct option *opts, const char **seen, int c, const char *arg,
	     const char *why)
{
	const struct option *o = by_val(opts, c);

	if (c < 0 || c > 255)
		return 0;
	if (!seen[c]) {
		seen[c] = arg ? arg : "";
		return 0;
	}
	fprintf(stderr, "%s: --%s given twice ('%s', then '%s'); %s\n", tool, o ? o->name : "?",
		seen[c], arg ? arg : "", why ? why : "give it once");
	return -EINVAL;
}

void cli_getopt_error(const char *tool, int c, char *const *argv, const struct option *opts)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	const struct option *o;
	size_t len;
	int n = 0;

	if (c == ':') {
		fprintf(stderr, "%s: option '%s' needs a value; see %s --help\n", tool, arg, tool);
		return;
	}
	if (optopt && strncmp(arg, "--", 2)) {
		fprintf(stderr, "%s: unknown option '-%c'; see %s --help\n", tool, optopt, tool);
		return;
	}
	if (optopt && (o = by_val(opts, optopt)) && o->has_arg == no_argument) {
		fprintf(stderr, "%s: option '--%s' takes no value (got '%s'); see %s --help\n",
			tool, o->name, arg, tool);
		return;
	}
	/* A long option getopt did not take: unknown, or an ambiguous abbreviation. */
	len = strncmp(arg, "--", 2) ? 0 : strcspn(arg + 2, "=");
	for (o = opts; len && o->name; o++)
		n += !strncmp(o->name, arg + 2, len);
	if (n > 1) {
		fprintf(stderr, "%s: option '%.*s' is ambiguous; it could be", tool, (int)len + 2,
			arg);
		for (o = opts; o->name; o++)
			if (!strncmp(o->name, arg + 2, len))
				fprintf(stderr, " --%s", o->name);
		fprintf(stderr, "\n");
		return;
	}
	fprintf(stderr, "%s: unknown option '%s'; see %s --help\n", tool, arg, tool);
}
