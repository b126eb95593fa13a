// SPDX-License-Identifier: MIT
/* Helpers shared by the VMM tests (see vmm_test_util.h). */
#include "vmm_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

bool kvm_present(void)
{
	if (access("/dev/kvm", F_OK) == 0)
		return true;
	fprintf(stderr, "SKIP: /dev/kvm does not exist on this host\n");
	return false;
}

const char *guest_path(const char *name)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s.elf", GUEST_DIR, name);
	return buf;
}

int run_tiny(const char *guest, const char *cmdline, uint64_t mem, int timeout_ms,
	     struct skiff_exit *ex, struct skiff_vm **vm_out)
{
	struct skiff_vm *vm;
	int err;

	err = skiff_vm_create(&vm);
	if (err)
		return err;
	err = skiff_vm_set_kernel(vm, guest_path(guest), SKIFF_KERNEL_TINY);
	if (!err && cmdline)
		err = skiff_vm_set_cmdline(vm, cmdline);
	if (!err)
		err = skiff_vm_set_memory(vm, mem);
	if (!err)
		err = skiff_vm_set_console(vm, SKIFF_CONSOLE_NONE, NULL, -1);
	if (!err)
		err = skiff_vm_start(vm);
	if (!err)
		err = skiff_vm_wait(vm, timeout_ms, ex);
	if (err || !vm_out)
		skiff_vm_destroy(vm);
	else
		*vm_out = vm;
	return err;
}

int run_cmd(const char *const argv[], const char *env_extra, char *out, size_t out_len,
	    int timeout_s)
{
	int pfd[2], status;
	size_t got = 0;
	time_t deadline = time(NULL) + timeout_s;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		if (env_extra)
			putenv((char *)(uintptr_t)env_extra);
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int left = (int)(deadline - time(NULL));
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left * 1000) == 0) {
			kill(pid, SIGKILL);
			break;
		}
		n = read(pfd[0], out + got, out_len - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == out_len - 1)
			break;
	}
	out[got] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

void make_tmpdir(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/skiff-test-XXXXXX");
	if (!mkdtemp(buf))
		buf[0] = '\0';
}
