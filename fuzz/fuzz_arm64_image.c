// SPDX-License-Identifier: MIT
/*
 * Harness: the arm64 kernel loader (vmm/arch/aarch64/arm64_image.c:
 * arm64_boot_load(), so arm64_image_parse() and arm64_boot_plan()) on a
 * fake guest RAM, and the device tree builder (arm64_fdt.c) writing into the
 * DTB slot the plan reserved. RAM is one 16 MiB heap block, not cleared
 * between inputs; the window the loader sees is a prefix of it.
 *
 * Input: byte 0 = mode (bit 0: pass an initrd of (u16 * 16) bytes; bit 1:
 * build the DTB into its slot; bit 2: RAM at the top of the 64-bit address
 * space instead of ARM64_RAM_BASE; bit 3: a DTB slot of the u32's value
 * instead of 64 KiB); byte 1 = RAM size knob ((knob + 1) * 64 KiB); u16 =
 * RAM base knob (4 KiB pages, so unaligned bases too); u16 = initrd knob;
 * u32 = DTB slot; the rest is the kernel image (a copy in its own heap
 * block, so reading past its end is an ASan report).
 *
 * Checked besides ASan/UBSan: the result is 0 or a documented -errno with a
 * message; on success kernel, initrd and DTB slot lie in RAM in that order
 * without overlap, the kernel on a 2 MiB boundary plus text_offset, the DTB
 * slot 2 MiB aligned and at most 2 MiB, the kernel and initrd bytes are in
 * RAM, and a DTB built there passes fdt_check_full() within its slot.
 */
#include <errno.h>
#include <libfdt.h>

#include "arm64_fdt.h"
#include "arm64_image.h"
#include "arm64_layout.h"
#include "fuzz_input.h"

#define RAM_MAX (16u << 20)

static uint8_t *g_ram;

static void build_dtb(uint8_t *slot, const struct arm64_boot_layout *l, uint64_t ram_base,
		      uint64_t ram_size, uint8_t knob)
{
	struct arm64_fdt_config c;
	char msg[256];
	size_t len = 0;
	int ret;

	arm64_fdt_config_platform(&c, 1u + knob % 8u);
	c.ram_base = ram_base;
	c.ram_size = ram_size;
	c.bootargs = "console=ttyS0";
	c.has_initrd = l->initrd_end != 0;
	c.initrd_start = l->initrd_gpa;
	c.initrd_end = l->initrd_end;
	ret = arm64_fdt_build(&c, slot, l->dtb_max, &len, msg, sizeof(msg));

	/* The RAM at the top of the address space overlaps nothing; the GIC/UART never RAM. */
	FZ_CHECK(ret == 0 || ret == -ENOSPC);
	if (!ret) {
		FZ_CHECK(len <= l->dtb_max);
		FZ_CHECK(fdt_check_full(slot, len) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arm64_boot_layout l;
	uint64_t ram_base, ram_size, dtb_max;
	uint8_t *img, *initrd = NULL, mode, knob;
	size_t img_len, initrd_len = 0;
	struct arm64_ram ram;
	uint16_t base_knob;
	char msg[256];
	struct fz f;
	int ret;

	if (!g_ram && !(g_ram = calloc(1, RAM_MAX)))
		abort();
	fz_init(&f, data, size);
	mode = fz_u8(&f);
	knob = fz_u8(&f);
	base_knob = fz_u16(&f);
	if (mode & 1)
		initrd_len = (size_t)fz_u16(&f) * 16u;
	else
		(void)fz_u16(&f);
	dtb_max = fz_u32(&f);
	if (!(mode & 8))
		dtb_max = 64u << 10;
	img_len = fz_left(&f);
	img = malloc(img_len ? img_len : 1);
	if (initrd_len)
		initrd = malloc(initrd_len);
	if (!img || (initrd_len && !initrd))
		abort();
	fz_bytes(&f, img, img_len);
	if (initrd_len)
		memset(initrd, 0x5a, initrd_len);

	ram_size = ((uint64_t)knob + 1) * (64u << 10);
	if (mode & 4)
		ram_base =
			(0 - ram_size) - (uint64_t)base_knob * 4096u; /* 0: ends at 2^64, -EINVAL */
	else
		ram_base = ARM64_RAM_BASE + (uint64_t)base_knob * 4096u;
	ram = (struct arm64_ram){ g_ram, ram_base, ram_size };

	msg[0] = 0;
	ret = arm64_boot_load(&ram, img, img_len, initrd, initrd_len, dtb_max, &l, msg,
			      sizeof(msg));
	FZ_CHECK(ret == 0 || ret == -ENOEXEC || ret == -E2BIG || ret == -EINVAL);
	FZ_CHECK(memchr(msg, 0, sizeof(msg)));
	if (ret) {
		FZ_CHECK(msg[0]);
	} else {
		uint64_t off = l.kernel_gpa - ram_base;

		FZ_CHECK(l.kernel_gpa >= ram_base && l.kernel_end > l.kernel_gpa);
		FZ_CHECK((l.kernel_gpa & ~(ARM64_KERNEL_ALIGN - 1)) >= ram_base);
		FZ_CHECK(l.kernel_end - l.kernel_gpa >= img_len);
		FZ_CHECK(!memcmp(g_ram + off, img, img_len));
		if (initrd_len) {
			FZ_CHECK(l.initrd_gpa >= l.kernel_end);
			FZ_CHECK(l.initrd_end - l.initrd_gpa == initrd_len);
			FZ_CHECK(l.dtb_gpa >= l.initrd_end);
			FZ_CHECK(!memcmp(g_ram + (l.initrd_gpa - ram_base), initrd, initrd_len));
		} else {
			FZ_CHECK(!l.initrd_gpa && !l.initrd_end && l.dtb_gpa >= l.kernel_end);
		}
		FZ_CHECK(l.dtb_gpa % ARM64_DTB_ALIGN == 0);
		FZ_CHECK(l.dtb_max == dtb_max && dtb_max <= ARM64_DTB_MAX_SIZE);
		FZ_CHECK(l.dtb_gpa - ram_base <= ram_size &&
			 dtb_max <= ram_size - (l.dtb_gpa - ram_base));
		if (mode & 2)
			build_dtb(g_ram + (l.dtb_gpa - ram_base), &l, ram_base, ram_size, knob);
	}
	free(img);
	free(initrd);
	return 0;
}
