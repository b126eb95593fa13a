// SPDX-License-Identifier: MIT
/* Tiny CPL3 guests: the layout of skiff/tiny_guest_abi.h. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "elf_load.h"
#include "skiff/tiny_guest_abi.h"
#include "x86.h"

int x86_tiny_load(const struct guest_mem *mem, const uint8_t *img, size_t len, const char *cmdline,
		  struct boot_info *boot)
{
	size_t cmd_len = strlen(cmdline);
	struct elf_image ei;
	int err;

	if (cmd_len >= SKIFF_TINY_CMDLINE_MAX)
		return -ENAMETOOLONG;
	err = elf_load(mem, img, len, EM_X86_64, SKIFF_TINY_LOAD_MIN, &ei);
	if (err)
		return err;
	/* Keep 64 KiB of stack above the image. */
	if (ei.entry < ei.lo || ei.entry >= ei.hi || ei.hi + 0x10000 > mem->size)
		return ei.hi + 0x10000 > mem->size ? -E2BIG : -ENOEXEC;
	err = guest_mem_write(mem, SKIFF_TINY_CMDLINE_GPA, cmdline, cmd_len + 1);
	if (!err)
		err = x86_write_gdt(mem, SKIFF_TINY_GDT_GPA);
	if (!err)
		err = x86_write_identity_map(mem, SKIFF_TINY_PGTABLE_GPA, true);
	if (err)
		return err;
	memset(boot, 0, sizeof(*boot));
	boot->entry = ei.entry;
	boot->rdi = SKIFF_TINY_CMDLINE_GPA;
	boot->rsi = mem->size;
	boot->rsp = mem->size & ~0xfull;
	boot->user_mode = true;
	return 0;
}

int elf_probe_x86(const uint8_t *img, size_t len)
{
	return elf_probe(img, len, EM_X86_64);
}
