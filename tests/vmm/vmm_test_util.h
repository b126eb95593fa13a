/* SPDX-License-Identifier: MIT */
/* Helpers shared by the VMM tests. */
#ifndef VMM_TEST_UTIL_H
#define VMM_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libskiff.h"

/* Exit code ctest treats as "skipped". */
#define SKIP_CODE 77

/* kvm_present() - false (and a message on stderr) when /dev/kvm does not exist. */
bool kvm_present(void);

/* guest_path() - GUEST_DIR "/" name ".elf" in a static buffer. */
const char *guest_path(const char *name);

/*
 * run_tiny() - boot a tiny guest with libskiff and wait (at most timeout_ms).
 * @vm_out: if not NULL, receives the (ended, not destroyed) VM. Return: 0 or -errno.
 */
int run_tiny(const char *guest, const char *cmdline, uint64_t mem, int timeout_ms,
	     struct skiff_exit *ex, struct skiff_vm **vm_out);

/*
 * run_cmd() - run @argv (NULL-terminated) with @env_extra ("K=V" or NULL) added,
 * stdout and stderr captured into @out (NUL-terminated, truncated to @out_len).
 * Return: the exit status, 128+signal, or -errno.
 */
int run_cmd(const char *const argv[], const char *env_extra, char *out, size_t out_len,
	    int timeout_s);

/* make_tmpdir() - a fresh directory under /tmp; path in a static buffer per call site. */
void make_tmpdir(char *buf, size_t len);

#endif /* VMM_TEST_UTIL_H */
