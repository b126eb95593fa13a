/* SPDX-License-Identifier: MIT */
/* `skiff run`: boot the VMs of a parsed command line and wait for them (run.c). */
#ifndef SKIFF_CLI_RUN_H
#define SKIFF_CLI_RUN_H

#include <stdint.h>

#include "opts.h"

/*
 * run_vms() - create, configure and start every VM of @o (in command-line
 * order), wait until all have ended, write SKIFF_STATS, destroy them.
 * @t_main_ns: CLOCK_MONOTONIC at main(), for the stats' main_to_first_run_ns.
 * Return: the process exit status: 0 when every VM ended with status 0;
 * else that of the first VM (in time) to end otherwise, which stopped the
 * others; 128 + the signal after SIGINT/SIGTERM; 64 for a configuration
 * error, 70 for a host failure (messages on stderr).
 */
int run_vms(const struct run_opts *o, uint64_t t_main_ns);

#endif /* SKIFF_CLI_RUN_H */
