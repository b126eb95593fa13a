// SPDX-License-Identifier: MIT
/*
 * x86-64 Linux boot: bzImage or ELF vmlinux, entered through the 64-bit boot
 * protocol (Documentation/x86/boot.rst, "64-bit Boot Protocol"; zero page
 * layout in Documentation/x86/zero-page.rst). The zero page is built as a
 * byte array at the documented offsets rather than a copy of Linux's struct.
 */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "le_bytes.h"
#include "elf_load.h"
#include "x86.h"

#define BZ_MIN_VERSION 0x020c /* 2.12: xloadflags, 64-bit entry */
#define XLF_KERNEL_64 0x1
#define LOADFLAGS_LOADED_HIGH 0x01
#define LOADFLAGS_CAN_USE_HEAP 0x80
#define KERNEL_MAP_BASE 0xffffffff80000000ull /* __START_KERNEL_map */
#define ELF_INITRD_ADDR_MAX 0x7fffffffull

static bool is_bzimage(const uint8_t *img, size_t len)
{
	return len >= 0x270 && le_get16(img + ZP_BOOT_FLAG) == 0xaa55 &&
	       !memcmp(img + ZP_HEADER, "HdrS", 4);
}

int x86_linux_probe(const uint8_t *img, size_t len)
{
	if (is_bzimage(img, len)) {
		if (le_get16(img + ZP_VERSION) < BZ_MIN_VERSION ||
		    !(le_get16(img + ZP_XLOADFLAGS) & XLF_KERNEL_64))
			return -ENOEXEC;
		return 0;
	}
	return elf_probe(img, len, EM_X86_64);
}

static void e820_add(uint8_t *zp, uint64_t addr, uint64_t size, uint32_t type)
{
	uint8_t n = zp[ZP_E820_ENTRIES];
	uint8_t *e = zp + ZP_E820_TABLE + 20u * n;

	le_put64(e, addr);
	le_put64(e + 8, size);
	le_put32(e + 16, type);
	zp[ZP_E820_ENTRIES] = (uint8_t)(n + 1);
}

/* bzImage: copy the setup header, load the protected-mode part. Sets *entry, *end. */
static int load_bzimage(const struct guest_mem *mem, const uint8_t *img, size_t len, uint8_t *zp,
			uint64_t *entry, uint64_t *end, uint64_t *initrd_max, uint32_t *cmd_max)
{
	unsigned int setup_sects = img[ZP_SETUP_SECTS] ? img[ZP_SETUP_SECTS] : 4;
	size_t setup_size = (setup_sects + 1) * 512u;
	size_t hdr_end = ZP_HEADER + img[ZP_JUMP + 1];
	uint64_t need;
	int err;

	err = x86_linux_probe(img, len);
	if (err)
		return err;
	if (setup_size >= len || hdr_end > 0x280 || hdr_end > len)
		return -ENOEXEC;
	memcpy(zp + ZP_SETUP_SECTS, img + ZP_SETUP_SECTS, hdr_end - ZP_SETUP_SECTS);

	/* The decompressor needs init_size bytes from the load address. */
	need = le_get32(img + ZP_INIT_SIZE);
	if (need < len - setup_size)
		need = len - setup_size;
	if (!guest_mem_ptr(mem, X86_KERNEL_LOAD_GPA, need))
		return -E2BIG;
	err = guest_mem_write(mem, X86_KERNEL_LOAD_GPA, img + setup_size, len - setup_size);
	if (err)
		return -E2BIG;
	le_put32(zp + ZP_CODE32_START, (uint32_t)X86_KERNEL_LOAD_GPA);
	zp[ZP_LOADFLAGS] |= LOADFLAGS_LOADED_HIGH | LOADFLAGS_CAN_USE_HEAP;
	le_put16(zp + ZP_HEAP_END_PTR, 0xfe00);
	*entry = X86_KERNEL_LOAD_GPA + 0x200; /* startup_64 of the compressed kernel */
	*end = X86_KERNEL_LOAD_GPA + need;
	*initrd_max = le_get32(img + ZP_INITRD_ADDR_MAX);
	*cmd_max = le_get32(img + ZP_CMDLINE_SIZE);
	return 0;
}

/* ELF vmlinux: segments at their physical addresses; a made-up minimal header. */
static int load_vmlinux(const struct guest_mem *mem, const uint8_t *img, size_t len, uint8_t *zp,
			uint64_t *entry, uint64_t *end, uint64_t *initrd_max, uint32_t *cmd_max)
{
	struct elf_image ei;
	int err;

	err = elf_load(mem, img, len, EM_X86_64, X86_HIMEM_GPA, &ei);
	if (err)
		return err;
	if (ei.entry >= KERNEL_MAP_BASE)
		ei.entry -= KERNEL_MAP_BASE;
	if (ei.entry < ei.lo || ei.entry >= ei.hi)
		return -ENOEXEC;
	le_put16(zp + ZP_BOOT_FLAG, 0xaa55);
	memcpy(zp + ZP_HEADER, "HdrS", 4);
	le_put16(zp + ZP_VERSION, BZ_MIN_VERSION);
	le_put32(zp + ZP_KERNEL_ALIGNMENT, 0x1000000);
	zp[ZP_LOADFLAGS] |= LOADFLAGS_LOADED_HIGH;
	*entry = ei.entry;
	*end = ei.hi;
	*initrd_max = ELF_INITRD_ADDR_MAX;
	*cmd_max = X86_CMDLINE_MAX - 1;
	return 0;
}

int x86_linux_load(const struct guest_mem *mem, const uint8_t *img, size_t len,
		   const uint8_t *initrd, size_t initrd_len, const char *cmdline,
		   struct boot_info *boot)
{
	uint8_t *zp = guest_mem_ptr(mem, X86_ZERO_PAGE_GPA, 4096);
	uint64_t entry, kernel_end, initrd_max, top;
	size_t cmd_len = strlen(cmdline);
	uint32_t cmd_max;
	int err;

	if (!zp || mem->size < X86_HIMEM_GPA + (2u << 20))
		return -E2BIG;
	memset(zp, 0, 4096);
	if (is_bzimage(img, len))
		err = load_bzimage(mem, img, len, zp, &entry, &kernel_end, &initrd_max, &cmd_max);
	else
		err = load_vmlinux(mem, img, len, zp, &entry, &kernel_end, &initrd_max, &cmd_max);
	if (err)
		return err;

	if (cmd_max > X86_CMDLINE_MAX - 1)
		cmd_max = X86_CMDLINE_MAX - 1;
	if (cmd_len > cmd_max)
		return -ENAMETOOLONG;
	err = guest_mem_write(mem, X86_CMDLINE_GPA, cmdline, cmd_len + 1);
	if (err)
		return err;
	le_put32(zp + ZP_CMD_LINE_PTR, (uint32_t)X86_CMDLINE_GPA);
	le_put32(zp + ZP_EXT_CMD_LINE_PTR, 0);
	le_put32(zp + ZP_CMDLINE_SIZE, cmd_max);
	le_put16(zp + ZP_VID_MODE, 0xffff); /* "normal" */
	zp[ZP_TYPE_OF_LOADER] = 0xff; /* undefined boot loader */

	if (initrd && initrd_len) {
		uint64_t addr;

		top = mem->size;
		if (initrd_max && initrd_max + 1 < top)
			top = initrd_max + 1;
		if (initrd_len > top)
			return -E2BIG;
		addr = (top - initrd_len) & ~0xfffull;
		if (addr < kernel_end)
			return -E2BIG;
		err = guest_mem_write(mem, addr, initrd, initrd_len);
		if (err)
			return -E2BIG;
		le_put32(zp + ZP_RAMDISK_IMAGE, (uint32_t)addr);
		le_put32(zp + ZP_RAMDISK_SIZE, (uint32_t)initrd_len);
	}

	zp[ZP_E820_ENTRIES] = 0;
	e820_add(zp, 0, X86_EBDA_GPA, E820_RAM);
	e820_add(zp, X86_EBDA_GPA, 0xa0000 - X86_EBDA_GPA, E820_RESERVED);
	e820_add(zp, 0xe0000, 0x20000, E820_RESERVED); /* ACPI tables, MP tables */
	e820_add(zp, X86_HIMEM_GPA, mem->size - X86_HIMEM_GPA, E820_RAM);

	err = x86_write_gdt(mem, X86_BOOT_GDT_GPA);
	if (!err)
		err = x86_write_identity_map(mem, X86_BOOT_PGTABLE_GPA, false);
	if (err)
		return err;
	memset(boot, 0, sizeof(*boot));
	boot->entry = entry;
	boot->rsi = X86_ZERO_PAGE_GPA;
	boot->rsp = X86_BOOT_STACK_GPA;
	boot->user_mode = false;
	return 0;
}
