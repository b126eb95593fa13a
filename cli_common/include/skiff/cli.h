/* SPDX-License-Identifier: MIT */
/*
 * Command-line helpers shared by skiff (vmm/cli/) and skiff-vsock
 * (vhost_user/main.c), so both tools parse numbers, sizes and key=value
 * lists the same way and word their errors the same way: one line on
 * stderr that starts with the tool's name and names the option, the value
 * and what is valid. The tool then exits 64 (sysexits' EX_USAGE; skiff's
 * SKIFF_STATUS_USAGE).
 *
 * Parsers (cli_parse_*, cli_kv_parse) return 0 or -EINVAL and never print;
 * the reporting and checking functions print that one line.
 */
#ifndef SKIFF_CLI_H
#define SKIFF_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

/*
 * cli_parse_uint() - a decimal number (digits only: no sign, no 0x, no
 * octal) in [@min, @max]. Return: 0 with *@out set; -EINVAL otherwise.
 */
int cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * cli_parse_size() - a byte count: decimal digits with an optional binary
 * suffix K, M or G (case-insensitive, optionally followed by "B" or "iB"):
 * "65536", "256K", "2MiB". Return: 0 with *@out set; -EINVAL otherwise
 * (also on overflow). The caller checks the range.
 */
int cli_parse_size(const char *s, uint64_t *out);

/*
 * cli_bad_value() - print "<tool>: bad <opt> '<val>': <what is valid>\n".
 * @opt names the option (and key), e.g. "--cpus" or "--vsock rx-threads".
 */
void cli_bad_value(const char *tool, const char *opt, const char *val, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Most keys one key=value list may know (struct cli_kv.keys). */
#define CLI_KV_MAX_KEYS 8

enum cli_kv_error {
	CLI_KV_OK,
	CLI_KV_EMPTY, /* the list is the empty string */
	CLI_KV_EMPTY_ITEM, /* a leading comma or two commas in a row */
	CLI_KV_TRAILING_COMMA,
	CLI_KV_NOT_KV, /* an item without '=' or with nothing before it */
	CLI_KV_NO_VALUE, /* "key=" */
	CLI_KV_UNKNOWN_KEY,
	CLI_KV_REPEATED_KEY,
};

/* A "key=value,key=value" list: the known keys in, the values (or the error) out. */
struct cli_kv {
	const char *const *keys; /* in: known keys, NULL-terminated, <= CLI_KV_MAX_KEYS */
	char *val[CLI_KV_MAX_KEYS]; /* out: value of keys[i] (points into the list) or NULL */
	enum cli_kv_error err; /* out: why cli_kv_parse() failed */
	unsigned int item; /* out, on error: 1-based index of the offending item */
	const char *bad; /* out, on error: the offending item, or its key */
	const char *first, *second; /* out, CLI_KV_REPEATED_KEY: the two values */
};

/*
 * cli_kv_parse() - split @s ("key=value,...") in place (commas and the first
 * '=' of each item become NULs) into @kv->val. Every item is key=value with
 * a known key, a non-empty value (which may contain '='), each key at most
 * once, items separated by single commas. Which keys are required is the
 * caller's business. Return: 0; -EINVAL with @kv->err and the detail set.
 */
int cli_kv_parse(char *s, struct cli_kv *kv);

/*
 * cli_kv_report() - print why cli_kv_parse() refused @list (the caller's
 * unmodified copy of it) as the value of @opt; @form is the list's syntax,
 * e.g. "cid=N,uds=PATH[,rx-threads=N]".
 */
void cli_kv_report(const char *tool, const char *opt, const char *list, const struct cli_kv *kv,
		   const char *form);

/*
 * cli_once() - refuse an option given a second time.
 * @seen: the caller's table of first arguments, indexed by the option's
 * getopt value (0..255), zero-initialised; @c: getopt_long()'s return value;
 * @arg: optarg; @why: what to say instead of "give it once", or NULL.
 * Return: 0 (first time: recorded); -EINVAL after a message naming the
 * option and both values.
 */
int cli_once(const char *tool, const struct option *opts, const char **seen, int c, const char *arg,
	     const char *why);

/*
 * cli_getopt_error() - print why getopt_long() returned '?' or ':' (@c),
 * for a caller that set opterr = 0 and an optstring starting with ':':
 * an unknown option, an ambiguous abbreviation (with the candidates), a
 * missing value, or a value given to an option that takes none.
 */
void cli_getopt_error(const char *tool, int c, char *const *argv, const struct option *opts);

/*
 * cli_check_sock_path() - can a Unix socket be bound at @path? Checks that
 * it is not empty, fits sun_path with @room bytes to spare (skiff's vsock
 * device appends "_<port>": 11), is not an existing file other than a
 * socket (a stale socket is replaced by its user), and that its directory
 * exists, is a directory and is writable.
 * @what: what the socket is ("vsock socket"); @opt: what the user changes
 * ("uds=PATH", "--socket PATH").
 * Return: 0; -EINVAL after a message naming the path and the remedy.
 */
int cli_check_sock_path(const char *tool, const char *what, const char *opt, const char *path,
			size_t room);

/*
 * cli_check_out_file() - can @path be opened for appending (created if
 * missing)? As cli_check_sock_path() for the directory; an existing @path
 * must be writable and not a directory. Return: 0; -EINVAL after a message.
 */
int cli_check_out_file(const char *tool, const char *what, const char *opt, const char *path);

#endif /* SKIFF_CLI_H */
