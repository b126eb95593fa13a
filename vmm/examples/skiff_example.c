// SPDX-License-Identifier: MIT
/*
 * The smallest useful libskiff program: boot a tiny guest, wait for it, print
 * how it ended and a few counters.
 *
 *   skiff_example GUEST_ELF [CMDLINE]
 *
 * Exit status: the guest's (skiff_exit_status()), or 64 on bad use.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "libskiff.h"

int main(int argc, char **argv)
{
	struct skiff_counters c;
	struct skiff_exit ex;
	struct skiff_vm *vm;
	int err;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s GUEST_ELF [CMDLINE]\n", argv[0]);
		return SKIFF_STATUS_USAGE;
	}
	err = skiff_vm_create(&vm);
	if (err) {
		fprintf(stderr, "skiff_example: skiff_vm_create: %s\n", strerror(-err));
		return SKIFF_STATUS_VMM_ERROR;
	}
	err = skiff_vm_set_kernel(vm, argv[1], SKIFF_KERNEL_TINY);
	if (!err && argc == 3)
		err = skiff_vm_set_cmdline(vm, argv[2]);
	if (!err)
		err = skiff_vm_set_memory(vm, 16u << 20);
	if (!err)
		err = skiff_vm_start(vm);
	if (!err)
		err = skiff_vm_wait(vm, -1, &ex);
	if (err) {
		fprintf(stderr, "skiff_example: %s\n", strerror(-err));
		skiff_vm_destroy(vm);
		return SKIFF_STATUS_VMM_ERROR;
	}
	skiff_vm_get_counters(vm, &c);
	printf("exit: %s code=%" PRIu64 " (%s)\n", skiff_exit_reason_name(ex.reason), ex.code,
	       ex.message);
	printf("vm_exits=%" PRIu64 " mmio=%" PRIu64 " setup_us=%" PRIu64 "\n", c.vm_exits,
	       c.exits_mmio, c.setup_ns / 1000);
	skiff_vm_destroy(vm);
	return skiff_exit_status(&ex);
}
