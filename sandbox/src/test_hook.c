// SPDX-License-Identifier: MIT
/*
 * Test-only (SKIFF_TEST_HOOKS builds): SKIFF_TEST_SECCOMP_VIOLATE=<kind>:<call>
 * makes the first thread of type <kind> try a system call its filter forbids,
 * right after the filter is installed. The calls are harmless should they
 * run (mode log): an empty execve path, a directory opened and closed, a TCP
 * socket closed, a ptrace request on no process.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox_int.h"

enum hook_call { CALL_NONE, CALL_EXECVE, CALL_OPEN, CALL_SOCKET, CALL_PTRACE };

static int hook_kind = -1; /* set once at init, then read-only */
static enum hook_call hook_call;
static bool hook_fired; /* only the first thread of the type */

void sandbox_test_hook_init(void)
{
	static const char *const calls[] = { "", "execve", "open", "socket", "ptrace" };
	const char *v = getenv("SKIFF_TEST_SECCOMP_VIOLATE");
	const char *colon;
	unsigned int k, c;

	if (!v || !(colon = strchr(v, ':')))
		return;
	for (k = 0; k < SANDBOX_KIND_NUM; k++) {
		const char *name = sandbox_kind_name(k);

		if (strlen(name) != (size_t)(colon - v) || strncmp(v, name, strlen(name)))
			continue;
		for (c = CALL_EXECVE; c <= CALL_PTRACE; c++) {
			if (!strcmp(colon + 1, calls[c])) {
				hook_kind = (int)k;
				hook_call = c;
			}
		}
	}
}

void sandbox_test_hook_run(enum sandbox_kind kind)
{
	int fd;

	if ((int)kind != hook_kind || __atomic_exchange_n(&hook_fired, true, __ATOMIC_RELAXED))
		return;
	switch (hook_call) {
	case CALL_EXECVE:
		syscall(SYS_execve, "", NULL, NULL);
		break;
	case CALL_OPEN:
		fd = (int)syscall(SYS_openat, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		break;
	case CALL_SOCKET:
		fd = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0)
			close(fd);
		break;
	case CALL_PTRACE:
		syscall(SYS_ptrace, PTRACE_PEEKDATA, 0, NULL, NULL);
		break;
	case CALL_NONE:
		break;
	}
}
