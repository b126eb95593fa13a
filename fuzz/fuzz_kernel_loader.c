// SPDX-License-Identifier: MIT
/*
 * Harness: the kernel image loaders on a fake guest RAM: x86_linux_load()
 * (bzImage and ELF vmlinux, vmm/arch/x86_64/boot_linux.c), x86_tiny_load()
 * (tiny CPL3 ELF guests, tiny.c) and elf_load() (vmm/src/elf_load.c) under
 * both. RAM is 4 MiB from guest_mem_create(), not cleared between inputs
 * (the loaders never read it).
 *
 * Input: byte 0 = mode (bit 0: tiny loader instead of the Linux one, bit 1:
 * pass an initrd of (byte 1 * 4099) bytes, bit 2: a command line of
 * (byte 1 * 9) bytes instead of a short one); byte 1 = size knob; the rest
 * is the kernel image (a copy in its own heap block, so reading past its
 * end is an ASan report).
 *
 * Checked besides ASan/UBSan: on success the entry point lies in RAM, and
 * for a tiny guest the stack top too.
 */
#include <errno.h>

#include "fuzz_input.h"
#include "x86.h"

#define RAM_SIZE (4u << 20)

static struct guest_mem g_mem;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char short_cmd[] = "console=ttyS0 quiet";
	struct boot_info boot;
	uint8_t *img, *initrd = NULL, mode, knob;
	size_t img_len, initrd_len = 0;
	char *cmd;
	struct fz f;
	int ret;

	if (!g_mem.hva && guest_mem_create(&g_mem, RAM_SIZE))
		abort();
	fz_init(&f, data, size);
	mode = fz_u8(&f);
	knob = fz_u8(&f);
	img_len = fz_left(&f);
	img = malloc(img_len ? img_len : 1);
	fz_bytes(&f, img, img_len);
	if (mode & 2) {
		initrd_len = (size_t)knob * 4099u;
		initrd = calloc(1, initrd_len ? initrd_len : 1);
	}
	if (mode & 4) {
		size_t n = (size_t)knob * 9u;

		cmd = malloc(n + 1);
		memset(cmd, 'a', n);
		cmd[n] = 0;
	} else {
		cmd = strdup(short_cmd);
	}
	if (!img || !cmd || ((mode & 2) && !initrd))
		abort();

	(void)x86_linux_probe(img, img_len);
	if (mode & 1)
		ret = x86_tiny_load(&g_mem, img, img_len, cmd, &boot);
	else
		ret = x86_linux_load(&g_mem, img, img_len, initrd, initrd_len, cmd, &boot);
	FZ_CHECK(ret == 0 || ret == -ENOEXEC || ret == -E2BIG || ret == -ENAMETOOLONG ||
		 ret == -EFAULT);
	if (!ret) {
		FZ_CHECK(boot.entry < RAM_SIZE);
		if (mode & 1)
			FZ_CHECK(boot.rsp <= RAM_SIZE);
	}
	free(img);
	free(initrd);
	free(cmd);
	return 0;
}
