/* SPDX-License-Identifier: MIT */
/*
 * The command line of `skiff run`: one or more VMs, each with its own options,
 * separated by --vm (see parse_run()). Values are checked by parse.c and
 * cli_common/; what is only wrong across VMs (a CID or a socket path used
 * twice, two consoles on stdio) is checked here too.
 */
#ifndef SKIFF_CLI_OPTS_H
#define SKIFF_CLI_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "libskiff.h"
#include "parse.h"
#include "skiff/sandbox.h"

/* The options of one VM. */
struct vm_opts {
	const char *kernel, *initrd, *cmdline; /* point into argv; NULL: not given */
	bool tiny;
	bool mem_set;
	uint64_t mem; /* bytes, when mem_set */
	unsigned int cpus; /* 1 .. SKIFF_MAX_VCPUS */
	bool vsock_set;
	char *vsock_buf; /* the --vsock copy that vsock.uds points into; run_opts_free() */
	struct vsock_opt vsock;
	enum skiff_console_kind console;
	const char *console_path; /* SKIFF_CONSOLE_FILE: points into argv */
	bool any; /* some option of this VM was given */
};

/* The whole command line of run. */
struct run_opts {
	struct vm_opts *vms; /* nr_vms of them, in command-line order (VM 1 first) */
	unsigned int nr_vms;
	enum sandbox_mode seccomp; /* process-wide: every VM's threads */
};

/*
 * parse_run() - the arguments of `skiff run` (@argv[0] is "run") into @o:
 * VM options, a --vm, the next VM's options, and so on (a --vm before the
 * first VM's options may be given or left out); --seccomp anywhere, once.
 * Every VM needs --kernel. Across VMs: vsock CIDs and uds paths differ, at
 * most one console is stdio (the default). @o is zeroed first; free it with
 * run_opts_free() whatever this returns.
 * Return: 0; 1 when -h/--help was given (nothing printed: the caller prints
 * the help); -EINVAL after one line on stderr naming the option, value or
 * VMs and what is valid; -ENOMEM after a message.
 */
int parse_run(int argc, char **argv, struct run_opts *o);

/* run_opts_free() - free what parse_run() allocated in @o (not @o itself). */
void run_opts_free(struct run_opts *o);

/* is_run_option() - is @arg an option of run ("--kernel", "--kernel=X", ...)? */
bool is_run_option(const char *arg);

#endif /* SKIFF_CLI_OPTS_H */
