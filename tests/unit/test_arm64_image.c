// SPDX-License-Identifier: MIT
/*
 * The arm64 Image loader (vmm/arch/aarch64/arm64_image.c) on any host, with
 * hand-made headers: every header field's check (magic, size, endianness
 * and page-size flags, text_offset, image_size 0, the compressed and foreign
 * formats it names), the placement of kernel, initrd and DTB in RAM
 * (values, alignment, the RAM and 32 GiB window limits, every overflow),
 * and a load into a fake RAM followed by the DTB that describes it.
 */
#include <check.h>
#include <errno.h>
#include <libfdt.h>
#include <stdlib.h>
#include <string.h>

#include "arm64_fdt.h"
#include "arm64_image.h"
#include "arm64_layout.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static void put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A 64-byte header (and zeros up to @len) as Linux's head.S lays it out. */
static void make_image(uint8_t *img, size_t len, uint64_t text_offset, uint64_t image_size,
		       uint64_t flags)
{
	memset(img, 0, len);
	put_le(img, 0x91005a4d, 4); /* code0: "MZ" + add x13, x18, #0x16 (EFI stub) */
	put_le(img + 4, 0x14000000 | 0x4000, 4); /* code1: b primary_entry */
	put_le(img + 8, text_offset, 8);
	put_le(img + 16, image_size, 8);
	put_le(img + 24, flags, 8);
	memcpy(img + 56, "ARM\x64", 4);
	put_le(img + 60, 0x40, 4); /* PE header offset */
}

static int parse(const uint8_t *img, size_t len, struct arm64_image *h, char *msg)
{
	msg[0] = 0;
	return arm64_image_parse(img, len, h, msg, 256);
}

START_TEST(valid_header)
{
	static const unsigned int page[4] = { 0, 4096, 16384, 65536 };
	uint8_t img[4096];
	struct arm64_image h;
	char msg[256];
	uint64_t f;

	for (f = 0; f < 4; f++) {
		make_image(img, sizeof(img), 0x80000, 24 * MIB, f << 1);
		memset(&h, 0xff, sizeof(h));
		ck_assert_int_eq(parse(img, sizeof(img), &h, msg), 0);
		ck_assert_str_eq(msg, "");
		ck_assert_uint_eq(h.text_offset, 0x80000);
		ck_assert_uint_eq(h.image_size, 24 * MIB);
		ck_assert_uint_eq(h.flags, f << 1);
		ck_assert_uint_eq(h.page_size, page[f]);
	}
	/* Placement bit, reserved flag bits and reserved words are accepted. */
	make_image(img, sizeof(img), 0, 1, ARM64_IMAGE_FLAG_ANYWHERE | 0xfff0ull | (1ull << 63));
	put_le(img + 32, 0x1234, 8);
	put_le(img + 48, ~0ull, 8);
	ck_assert_int_eq(parse(img, ARM64_IMAGE_HDR_SIZE, &h, msg), 0);
	ck_assert_uint_eq(h.text_offset, 0);
	ck_assert_uint_eq(h.image_size, 1);
	ck_assert_uint_eq(h.page_size, 0);
	/* The largest text_offset: 4 KiB below 2 MiB. */
	make_image(img, sizeof(img), ARM64_KERNEL_ALIGN - 4096, 4096, 2);
	ck_assert_int_eq(parse(img, sizeof(img), &h, msg), 0);
	ck_assert_uint_eq(h.text_offset, ARM64_KERNEL_ALIGN - 4096);
}
END_TEST

/*
 * One bad header per _i: the good header of bad_header() cut to @len bytes
 * and patched with up to two byte strings; each is -ENOEXEC with a message
 * containing @words.
 */
static const struct {
	const char *what, *words;
	size_t len;
	struct {
		size_t off;
		const char *bytes;
		size_t n;
	} patch[2];
} bad[] = {
	{ "short", "fewer than an arm64 Image header", ARM64_IMAGE_HDR_SIZE - 1, { { 0 } } },
	{ "empty", "fewer than an arm64 Image header", 0, { { 0 } } },
	{ "magic", "no arm64 Image magic", 4096, { { 56, "ARM\x65", 4 } } },
	{ "magic-last-byte", "no arm64 Image magic", 4096, { { 59, "", 1 } } },
	{ "big-endian", "big-endian", 4096, { { 24, "\x01", 1 } } },
	{ "big-endian-64k", "CONFIG_CPU_LITTLE_ENDIAN", 4096, { { 24, "\x0f", 1 } } },
	{ "text_offset-unaligned", "text_offset 0x80001", 4096, { { 8, "\x01\x00\x08", 3 } } },
	{ "text_offset-2mib",
	  "not a 4 KiB multiple below 2 MiB",
	  4096,
	  { { 8, "\x00\x00\x20", 3 } } },
	{ "text_offset-huge",
	  "text_offset 0xfffffffffffff000",
	  4096,
	  { { 8, "\x00\xf0\xff\xff\xff\xff\xff\xff", 8 } } },
	{ "image_size-0", "3.17", 4096, { { 16, "\0\0\0\0\0\0\0", 8 } } },
	{ "gzip", "gzip-compressed", 4096, { { 0, "\x1f\x8b\x08\x00", 4 } } },
	{ "xz",
	  "xz-compressed",
	  4096,
	  { { 0,
	      "\xfd"
	      "7zXZ\x00",
	      6 } } },
	{ "zstd", "zstd-compressed", 4096, { { 0, "\x28\xb5\x2f\xfd", 4 } } },
	{ "bzip2", "bzip2-compressed", 4096, { { 0, "BZh9", 4 } } },
	{ "efi-zboot", "EFI zboot", 4096, { { 0, "MZ\0\0zimg", 8 } } },
	{ "elf",
	  "ELF file",
	  4096,
	  { { 0,
	      "\x7f"
	      "ELF\x02\x01\x01",
	      7 } } },
	{ "bzimage", "x86 bzImage", 4096, { { 0x202, "HdrS", 4 }, { 56, "\0\0\0", 4 } } },
};

START_TEST(bad_header)
{
	uint8_t img[4096];
	struct arm64_image h;
	char msg[256];
	int k;

	make_image(img, sizeof(img), 0, 16 * MIB, 2);
	for (k = 0; k < 2 && bad[_i].patch[k].n; k++)
		memcpy(img + bad[_i].patch[k].off, bad[_i].patch[k].bytes, bad[_i].patch[k].n);
	memset(&h, 0x5a, sizeof(h));
	ck_assert_int_eq(parse(img, bad[_i].len, &h, msg), -ENOEXEC);
	ck_assert_msg(strstr(msg, bad[_i].words), "%s: message '%s'", bad[_i].what, msg);
	ck_assert_uint_eq(h.image_size, 0x5a5a5a5a5a5a5a5aull); /* untouched */
	ck_assert_int_eq(arm64_image_parse(img, bad[_i].len, &h, NULL, 0), -ENOEXEC);
}
END_TEST

static struct arm64_image hdr(uint64_t text_offset, uint64_t image_size)
{
	struct arm64_image h = { text_offset, image_size, 2, 4096 };

	return h;
}

/* What every successful plan promises (arm64_image.h, booting.rst). */
static void check_layout(const struct arm64_boot_layout *l, const struct arm64_image *h,
			 uint64_t file_len, uint64_t ram_base, uint64_t ram_size,
			 uint64_t initrd_len, uint64_t dtb_max)
{
	uint64_t ram_end = ram_base + ram_size; /* tests keep RAM below 2^64 */

	ck_assert_uint_eq((l->kernel_gpa - h->text_offset) % ARM64_KERNEL_ALIGN, 0);
	ck_assert_uint_ge(l->kernel_gpa - h->text_offset, ram_base);
	ck_assert_uint_lt(l->kernel_gpa - h->text_offset, ram_base + ARM64_KERNEL_ALIGN);
	ck_assert_uint_eq(l->kernel_end - l->kernel_gpa,
			  h->image_size > file_len ? h->image_size : file_len);
	ck_assert_uint_le(l->kernel_end, ram_end);
	if (initrd_len) {
		ck_assert_uint_eq(l->initrd_gpa % ARM64_INITRD_ALIGN, 0);
		ck_assert_uint_ge(l->initrd_gpa, l->kernel_end);
		ck_assert_uint_eq(l->initrd_end - l->initrd_gpa, initrd_len);
		ck_assert_uint_le(l->initrd_end, ram_end);
		ck_assert_uint_le(l->initrd_end - (l->kernel_gpa & ~(GIB - 1)), 32 * GIB);
		ck_assert_uint_ge(l->dtb_gpa, l->initrd_end);
	} else {
		ck_assert_uint_eq(l->initrd_gpa, 0);
		ck_assert_uint_eq(l->initrd_end, 0);
		ck_assert_uint_ge(l->dtb_gpa, l->kernel_end);
	}
	ck_assert_uint_eq(l->dtb_gpa % 8, 0);
	/* In one 2 MiB block, so the kernel's cacheable block mapping covers nothing else. */
	ck_assert_uint_eq(l->dtb_gpa / (2 * MIB), (l->dtb_gpa + dtb_max - 1) / (2 * MIB));
	ck_assert_uint_eq(l->dtb_max, dtb_max);
	ck_assert_uint_le(l->dtb_gpa + dtb_max, ram_end);
}

static int plan(const struct arm64_image *h, uint64_t file_len, uint64_t ram_base,
		uint64_t ram_size, uint64_t initrd_len, uint64_t dtb_max,
		struct arm64_boot_layout *l, char *msg)
{
	int err;

	msg[0] = 0;
	memset(l, 0xee, sizeof(*l));
	err = arm64_boot_plan(h, file_len, ram_base, ram_size, initrd_len, dtb_max, l, msg, 256);
	if (!err) {
		ck_assert_str_eq(msg, "");
		check_layout(l, h, file_len, ram_base, ram_size, initrd_len, dtb_max);
	} else {
		ck_assert_uint_eq(l->kernel_gpa, 0xeeeeeeeeeeeeeeeeull); /* untouched */
		ck_assert_msg(strlen(msg) > 20, "message '%s'", msg);
	}
	return err;
}

START_TEST(placement)
{
	struct arm64_image h = hdr(0, 20 * MIB);
	struct arm64_boot_layout l;
	char msg[256];

	/* Linux 5.8+: text_offset 0. Kernel at RAM's base, initrd and DTB after it. */
	ck_assert_int_eq(
		plan(&h, 18 * MIB, ARM64_RAM_BASE, 512 * MIB, 5 * MIB + 3, 2 * MIB, &l, msg), 0);
	ck_assert_uint_eq(l.kernel_gpa, ARM64_RAM_BASE);
	ck_assert_uint_eq(l.kernel_end, ARM64_RAM_BASE + 20 * MIB);
	ck_assert_uint_eq(l.initrd_gpa, ARM64_RAM_BASE + 20 * MIB);
	ck_assert_uint_eq(l.initrd_end, ARM64_RAM_BASE + 25 * MIB + 3);
	ck_assert_uint_eq(l.dtb_gpa, ARM64_RAM_BASE + 26 * MIB);

	/* Older kernels: text_offset 0x80000; an odd image_size; no initrd; a small DTB slot. */
	h = hdr(0x80000, 0x1234567);
	ck_assert_int_eq(plan(&h, 0x1000000, ARM64_RAM_BASE, 64 * MIB, 0, 64 * 1024, &l, msg), 0);
	ck_assert_uint_eq(l.kernel_gpa, ARM64_RAM_BASE + 0x80000);
	ck_assert_uint_eq(l.kernel_end, ARM64_RAM_BASE + 0x80000 + 0x1234567);
	ck_assert_uint_eq(l.dtb_gpa, ARM64_RAM_BASE + 20 * MIB);

	/* RAM not 2 MiB aligned: the kernel goes to the next 2 MiB boundary. */
	h = hdr(0x1000, 4 * MIB);
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE + 0x1000, 64 * MIB, 4096, 8, &l, msg), 0);
	ck_assert_uint_eq(l.kernel_gpa, ARM64_RAM_BASE + 2 * MIB + 0x1000);
	ck_assert_uint_eq(l.initrd_gpa, ARM64_RAM_BASE + 6 * MIB + 0x10000);
	ck_assert_uint_eq(l.dtb_gpa, ARM64_RAM_BASE + 8 * MIB);

	/* A file longer than image_size: its whole length counts. */
	h = hdr(0, 4 * MIB);
	ck_assert_int_eq(plan(&h, 5 * MIB, ARM64_RAM_BASE, 64 * MIB, 0, 8, &l, msg), 0);
	ck_assert_uint_eq(l.kernel_end, ARM64_RAM_BASE + 5 * MIB);
	ck_assert_uint_eq(l.dtb_gpa, ARM64_RAM_BASE + 6 * MIB);
}
END_TEST

/* Exactly enough RAM works; one byte less is -E2BIG naming the RAM that would do. */
START_TEST(ram_limits)
{
	struct arm64_image h = hdr(0x80000, 8 * MIB + 1);
	struct arm64_boot_layout l;
	uint64_t need;
	char msg[256];

	/* kernel to base + 0x80000 + 8 MiB + 1, initrd (64 KiB aligned) 1 MiB, DTB 2 MiB. */
	need = 0x80000 + 8 * MIB + 0x10000 + 1 * MIB;
	need = (need + 2 * MIB - 1) / (2 * MIB) * (2 * MIB) + 2 * MIB;
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, need, 1 * MIB, 2 * MIB, &l, msg), 0);
	ck_assert_uint_eq(l.dtb_gpa + 2 * MIB, ARM64_RAM_BASE + need);
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, need - 1, 1 * MIB, 2 * MIB, &l, msg),
			 -E2BIG);
	ck_assert_msg(strstr(msg, "device tree") && strstr(msg, "give at least 12 MiB"), "%s", msg);

	/* The initrd does not fit: the message names it and the RAM it needs. */
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 16 * MIB, 16 * MIB, 2 * MIB, &l, msg),
			 -E2BIG);
	ck_assert_msg(strstr(msg, "initrd") && strstr(msg, "give at least 25 MiB"), "%s", msg);

	/* The kernel itself does not fit: image too big for RAM. */
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 8 * MIB, 0, 2 * MIB, &l, msg), -E2BIG);
	ck_assert_msg(strstr(msg, "kernel") && strstr(msg, "give at least 9 MiB"), "%s", msg);
	/* RAM smaller than the distance to the first 2 MiB boundary. */
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE + 4096, 1 * MIB, 0, 8, &l, msg), -E2BIG);
}
END_TEST

START_TEST(initrd_window)
{
	struct arm64_image h = hdr(0, 30 * MIB);
	struct arm64_boot_layout l;
	char msg[256];
	uint64_t room = 32 * GIB - 30 * MIB; /* kernel at RAM's 1 GiB boundary: initrd room */

	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 64 * GIB, room, 2 * MIB, &l, msg), 0);
	ck_assert_uint_eq(l.initrd_end - ARM64_RAM_BASE, 32 * GIB);
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 64 * GIB, room + 1, 2 * MIB, &l, msg),
			 -E2BIG);
	ck_assert_ptr_nonnull(strstr(msg, "32 GiB window"));
}
END_TEST

/* Sums that would pass 2^64, and bad arguments. */
START_TEST(overflow_and_args)
{
	struct arm64_image h = hdr(0, 8 * MIB);
	struct arm64_boot_layout l;
	char msg[256];
	uint64_t top = 0ull - 64 * MIB; /* RAM [top, 2^64 - 1) is allowed... */

	ck_assert_int_eq(plan(&h, 4096, top, 64 * MIB - 1, 4096, 2 * MIB, &l, msg), 0);
	/* ...but a placement whose end passes 2^64 is -E2BIG, not a wrapped address. */
	ck_assert_int_eq(plan(&h, 4096, top, 64 * MIB - 1, 64 * MIB, 2 * MIB, &l, msg), -E2BIG);
	ck_assert_ptr_nonnull(strstr(msg, "top of the address space"));
	h.image_size = UINT64_MAX;
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 64 * MIB, 0, 8, &l, msg), -E2BIG);
	ck_assert_int_eq(plan(&h, 4096, top, 64 * MIB - 1, 0, 8, &l, msg), -E2BIG);
	h.image_size = 8 * MIB;
	ck_assert_int_eq(plan(&h, UINT64_MAX, ARM64_RAM_BASE, 64 * MIB, 0, 8, &l, msg), -E2BIG);
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 64 * MIB, UINT64_MAX, 8, &l, msg), -E2BIG);
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 64 * MIB, UINT64_MAX - 0xffff, 8, &l, msg),
			 -E2BIG);
	/* RAM at the top whose first 2 MiB boundary is past 2^64. */
	ck_assert_int_eq(plan(&h, 4096, UINT64_MAX - 4095, 4095, 0, 8, &l, msg), -E2BIG);

	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 0, 0, 8, &l, msg), -EINVAL);
	ck_assert_int_eq(plan(&h, 4096, top, 64 * MIB + 1, 0, 8, &l, msg), -EINVAL);
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 64 * MIB, 0, 0, &l, msg), -EINVAL);
	ck_assert_int_eq(plan(&h, 4096, ARM64_RAM_BASE, 64 * MIB, 0, 2 * MIB + 1, &l, msg),
			 -EINVAL);
}
END_TEST

/* Load into a fake RAM, then build the DTB for it into the slot the plan reserved. */
START_TEST(load_and_dtb)
{
	const uint64_t ram_size = 32 * MIB;
	struct arm64_ram ram = { calloc(1, ram_size), ARM64_RAM_BASE, ram_size };
	size_t klen = 256 * 1024, ilen = 100 * 1000 + 7, dtb_len = 0, i;
	uint8_t *kernel = malloc(klen), *initrd = malloc(ilen);
	struct arm64_fdt_config c = { 0 };
	struct arm64_boot_layout l;
	const fdt64_t *p;
	char msg[256] = "";
	void *dtb;
	int node;

	ck_assert_ptr_nonnull(ram.hva);
	ck_assert_ptr_nonnull(kernel);
	ck_assert_ptr_nonnull(initrd);
	make_image(kernel, klen, 0, 4 * MIB, 2);
	for (i = ARM64_IMAGE_HDR_SIZE; i < klen; i++)
		kernel[i] = (uint8_t)(i * 7);
	for (i = 0; i < ilen; i++)
		initrd[i] = (uint8_t)(i * 13 + 1);

	/* A bad kernel leaves RAM untouched. */
	kernel[56] = 'X';
	ck_assert_int_eq(
		arm64_boot_load(&ram, kernel, klen, initrd, ilen, 64 * 1024, &l, msg, sizeof(msg)),
		-ENOEXEC);
	for (i = 0; i < ram_size; i += 4096)
		ck_assert_uint_eq(ram.hva[i], 0);
	kernel[56] = 'A';

	ck_assert_int_eq(
		arm64_boot_load(&ram, kernel, klen, initrd, ilen, 64 * 1024, &l, msg, sizeof(msg)),
		0);
	ck_assert_mem_eq(ram.hva + (l.kernel_gpa - ram.base), kernel, klen);
	ck_assert_mem_eq(ram.hva + (l.initrd_gpa - ram.base), initrd, ilen);

	c.ram_base = ram.base;
	c.ram_size = ram.size;
	c.nr_vcpus = 1;
	c.bootargs = "console=ttyS0";
	c.has_initrd = true;
	c.initrd_start = l.initrd_gpa;
	c.initrd_end = l.initrd_end;
	c.gicd_base = ARM64_GICD_BASE;
	c.gicd_size = ARM64_GICD_SIZE;
	c.gicr_base = ARM64_GICR_BASE;
	c.gicr_size = ARM64_GICR_STRIDE;
	c.timer_ppi[0] = ARM64_TIMER_PPI_SEC_PHYS;
	c.timer_ppi[1] = ARM64_TIMER_PPI_PHYS;
	c.timer_ppi[2] = ARM64_TIMER_PPI_VIRT;
	c.timer_ppi[3] = ARM64_TIMER_PPI_HYP;
	c.uart_base = ARM64_UART_BASE;
	c.uart_size = ARM64_UART_SIZE;
	c.uart_spi = ARM64_UART_SPI;
	c.uart_clock_hz = ARM64_UART_CLOCK_HZ;
	dtb = ram.hva + (l.dtb_gpa - ram.base);
	ck_assert_int_eq(arm64_fdt_build(&c, dtb, l.dtb_max, &dtb_len, msg, sizeof(msg)), 0);
	ck_assert_uint_le(dtb_len, l.dtb_max);
	ck_assert_int_eq(fdt_check_full(dtb, dtb_len), 0);
	node = fdt_path_offset(dtb, "/chosen");
	p = fdt_getprop(dtb, node, "linux,initrd-start", NULL);
	ck_assert_uint_eq(fdt64_ld(p), l.initrd_gpa);
	p = fdt_getprop(dtb, node, "linux,initrd-end", NULL);
	ck_assert_uint_eq(fdt64_ld(p), l.initrd_gpa + ilen);
	/* The kernel and initrd are still intact after the DTB went in. */
	ck_assert_mem_eq(ram.hva + (l.kernel_gpa - ram.base), kernel, klen);
	ck_assert_mem_eq(ram.hva + (l.initrd_gpa - ram.base), initrd, ilen);

	/* Not enough RAM: -E2BIG from the plan, nothing copied. */
	ram.size = 4 * MIB;
	memset(ram.hva, 0, ram_size);
	ck_assert_int_eq(arm64_boot_load(&ram, kernel, klen, NULL, 0, 8, &l, msg, sizeof(msg)),
			 -E2BIG);
	for (i = 0; i < ram_size; i += 4096)
		ck_assert_uint_eq(ram.hva[i], 0);
	free(ram.hva);
	free(kernel);
	free(initrd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("unit-arm64-image");
	TCase *tc = tcase_create("image");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, valid_header);
	tcase_add_loop_test(tc, bad_header, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, placement);
	tcase_add_test(tc, ram_limits);
	tcase_add_test(tc, initrd_window);
	tcase_add_test(tc, overflow_and_args);
	tcase_add_test(tc, load_and_dtb);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
