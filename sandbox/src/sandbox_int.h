/* SPDX-License-Identifier: MIT */
/* Internals of skiff_sandbox shared by its files. */
#ifndef SKIFF_SANDBOX_INT_H
#define SKIFF_SANDBOX_INT_H

#include <seccomp.h>

#include "skiff/sandbox.h"

/* allow.c: add @kind's allowlist to @ctx. Return: 0 or -errno from libseccomp. */
int sandbox_add_rules(scmp_filter_ctx ctx, enum sandbox_kind kind);

#ifdef SKIFF_SANITIZED
/* sanitizer.c: what ASan/UBSan's runtime calls on any thread. */
int sandbox_add_sanitizer(scmp_filter_ctx ctx);
#endif

#ifdef SKIFF_TEST_HOOKS
/* test_hook.c: read SKIFF_TEST_SECCOMP_VIOLATE (at init, unfiltered). */
void sandbox_test_hook_init(void);
/* test_hook.c: make the forbidden call when it names @kind. */
void sandbox_test_hook_run(enum sandbox_kind kind);
#endif

/* spawner.c: start the spawner thread (again after fork). Return: 0 or -errno. */
int sandbox_spawner_start(void);

#endif
