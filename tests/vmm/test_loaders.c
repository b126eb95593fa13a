// SPDX-License-Identifier: MIT
/*
 * x86-64 boot loaders on synthetic images, no KVM: bzImage (setup header,
 * zero page, e820, command line, initrd placement), ELF vmlinux, tiny
 * guests, page tables, GDT, MP table; and the malformed images they refuse.
 */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf_load.h"
#include "mem.h"
#include "skiff/tiny_guest_abi.h"
#include "x86.h"

#define RAM (64ull << 20)

static struct guest_mem mem;

static void setup(void)
{
	ck_assert_int_eq(guest_mem_create(&mem, RAM), 0);
	memset(mem.hva, 0xaa, RAM); /* so that zero-filling is visible */
}

static void teardown(void)
{
	guest_mem_destroy(&mem);
}

static uint16_t rd16(uint64_t gpa)
{
	uint16_t v;

	memcpy(&v, guest_mem_ptr(&mem, gpa, 2), 2);
	return v;
}

static uint32_t rd32(uint64_t gpa)
{
	uint32_t v;

	memcpy(&v, guest_mem_ptr(&mem, gpa, 4), 4);
	return v;
}

static uint64_t rd64(uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, guest_mem_ptr(&mem, gpa, 8), 8);
	return v;
}

static void w16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void w32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

#define BZ_SETUP_SECTS 2
#define BZ_PM_LEN 8192
#define BZ_LEN ((BZ_SETUP_SECTS + 1) * 512 + BZ_PM_LEN)

/* A bzImage with a valid 2.15 header and a recognisable protected-mode part. */
static uint8_t *make_bzimage(void)
{
	uint8_t *img = calloc(1, BZ_LEN);
	unsigned int i;

	img[0x1f1] = BZ_SETUP_SECTS;
	w16(img + 0x1fe, 0xaa55);
	img[0x200] = 0xeb;
	img[0x201] = 0x6a; /* header ends at 0x26c */
	memcpy(img + 0x202, "HdrS", 4);
	w16(img + 0x206, 0x020f);
	w32(img + 0x22c, 0x7fffffff); /* initrd_addr_max */
	w32(img + 0x230, 0x200000); /* kernel_alignment */
	w16(img + 0x236, 0x1 | 0x2); /* XLF_KERNEL_64 | XLF_CAN_BE_LOADED_ABOVE_4G */
	w32(img + 0x238, 2047); /* cmdline_size */
	w32(img + 0x260, 0x400000); /* init_size */
	for (i = 0; i < BZ_PM_LEN; i++)
		img[(BZ_SETUP_SECTS + 1) * 512 + i] = (uint8_t)(i * 13 + 1);
	return img;
}

START_TEST(bzimage_ok)
{
	uint8_t *img = make_bzimage();
	uint8_t initrd[10000];
	struct boot_info b;
	uint64_t initrd_gpa;
	const char *cmd = "console=ttyS0 quiet";

	memset(initrd, 0x5c, sizeof(initrd));
	ck_assert_int_eq(x86_linux_probe(img, BZ_LEN), 0);
	ck_assert_int_eq(x86_linux_load(&mem, img, BZ_LEN, initrd, sizeof(initrd), cmd, &b), 0);
	ck_assert_uint_eq(b.entry, 0x100200);
	ck_assert_uint_eq(b.rsi, X86_ZERO_PAGE_GPA);
	ck_assert(!b.user_mode);
	ck_assert_mem_eq(guest_mem_ptr(&mem, 0x100000, BZ_PM_LEN), img + 3 * 512, BZ_PM_LEN);

	/* setup header copied, loader fields filled */
	ck_assert_uint_eq(rd16(X86_ZERO_PAGE_GPA + 0x206), 0x020f);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x202), 0x53726448);
	ck_assert_uint_eq(*(uint8_t *)guest_mem_ptr(&mem, X86_ZERO_PAGE_GPA + 0x210, 1), 0xff);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x228), X86_CMDLINE_GPA);
	ck_assert_str_eq(guest_mem_ptr(&mem, X86_CMDLINE_GPA, 1), cmd);
	ck_assert_uint_eq(rd16(X86_ZERO_PAGE_GPA + 0x1fa), 0xffff);
	/* beyond the copied header the zero page is zero (was 0xaa) */
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x270), 0);

	/* initrd at the top of RAM, page aligned */
	initrd_gpa = rd32(X86_ZERO_PAGE_GPA + 0x218);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x21c), sizeof(initrd));
	ck_assert_uint_eq(initrd_gpa % 4096, 0);
	ck_assert_uint_le(initrd_gpa + sizeof(initrd), RAM);
	ck_assert_uint_gt(initrd_gpa + sizeof(initrd) + 4096, RAM);
	ck_assert_mem_eq(guest_mem_ptr(&mem, initrd_gpa, sizeof(initrd)), initrd, sizeof(initrd));

	/* e820: low RAM, EBDA, BIOS, high RAM */
	ck_assert_uint_eq(*(uint8_t *)guest_mem_ptr(&mem, X86_ZERO_PAGE_GPA + 0x1e8, 1), 4);
	ck_assert_uint_eq(rd64(X86_ZERO_PAGE_GPA + 0x2d0), 0);
	ck_assert_uint_eq(rd64(X86_ZERO_PAGE_GPA + 0x2d0 + 8), 0x9fc00);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x2d0 + 16), 1);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x2d0 + 20 + 16), 2);
	/* BIOS area with the ACPI (0xe0000) and MP (0xf0000) tables: reserved */
	ck_assert_uint_eq(rd64(X86_ZERO_PAGE_GPA + 0x2d0 + 40), 0xe0000);
	ck_assert_uint_eq(rd64(X86_ZERO_PAGE_GPA + 0x2d0 + 48), 0x20000);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x2d0 + 56), 2);
	ck_assert_uint_eq(rd64(X86_ZERO_PAGE_GPA + 0x2d0 + 60), 0x100000);
	ck_assert_uint_eq(rd64(X86_ZERO_PAGE_GPA + 0x2d0 + 68), RAM - 0x100000);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x2d0 + 76), 1);

	/* identity map: PML4 -> PDPT -> PD, 2 MiB pages, supervisor only */
	ck_assert_uint_eq(rd64(X86_BOOT_PGTABLE_GPA), (X86_BOOT_PGTABLE_GPA + 0x1000) | 3);
	ck_assert_uint_eq(rd64(X86_BOOT_PGTABLE_GPA + 0x1000 + 3 * 8),
			  (X86_BOOT_PGTABLE_GPA + 0x5000) | 3);
	ck_assert_uint_eq(rd64(X86_BOOT_PGTABLE_GPA + 0x2000 + 5 * 8), (5ull << 21) | 0x83);
	ck_assert_uint_eq(rd64(X86_BOOT_PGTABLE_GPA + 0x5000 + 511 * 8), 0xffe00000ull | 0x83);
	/* GDT: __BOOT_CS is a 64-bit DPL0 code segment, __BOOT_DS flat data */
	ck_assert_uint_eq(rd64(X86_BOOT_GDT_GPA + 0x10), 0x00af9b000000ffffull);
	ck_assert_uint_eq(rd64(X86_BOOT_GDT_GPA + 0x18), 0x00cf93000000ffffull);
	ck_assert_uint_eq(rd64(X86_BOOT_GDT_GPA + 0x28), 0x00affb000000ffffull);
	free(img);
}
END_TEST

START_TEST(bzimage_refused)
{
	uint8_t *img = make_bzimage();
	struct boot_info b;
	char longcmd[3000];

	/* too old a boot protocol for the 64-bit entry */
	w16(img + 0x206, 0x020b);
	ck_assert_int_eq(x86_linux_probe(img, BZ_LEN), -ENOEXEC);
	ck_assert_int_eq(x86_linux_load(&mem, img, BZ_LEN, NULL, 0, "", &b), -ENOEXEC);
	w16(img + 0x206, 0x020f);
	/* no 64-bit entry */
	w16(img + 0x236, 0);
	ck_assert_int_eq(x86_linux_load(&mem, img, BZ_LEN, NULL, 0, "", &b), -ENOEXEC);
	w16(img + 0x236, 1);
	/* setup sectors beyond the file */
	img[0x1f1] = 200;
	ck_assert_int_eq(x86_linux_load(&mem, img, BZ_LEN, NULL, 0, "", &b), -ENOEXEC);
	img[0x1f1] = BZ_SETUP_SECTS;
	/* header claims to run past 0x280 */
	img[0x201] = 0x7f;
	ck_assert_int_eq(x86_linux_load(&mem, img, BZ_LEN, NULL, 0, "", &b), -ENOEXEC);
	img[0x201] = 0x6a;
	/* decompression needs more than RAM */
	w32(img + 0x260, (uint32_t)RAM);
	ck_assert_int_eq(x86_linux_load(&mem, img, BZ_LEN, NULL, 0, "", &b), -E2BIG);
	w32(img + 0x260, 0x400000);
	/* command line longer than cmdline_size */
	memset(longcmd, 'x', sizeof(longcmd) - 1);
	longcmd[sizeof(longcmd) - 1] = 0;
	ck_assert_int_eq(x86_linux_load(&mem, img, BZ_LEN, NULL, 0, longcmd, &b), -ENAMETOOLONG);
	/* initrd larger than the RAM left above the kernel */
	ck_assert_int_eq(
		x86_linux_load(&mem, img, BZ_LEN, (const uint8_t *)img, RAM - 0x200000, "", &b),
		-E2BIG);
	/* truncated */
	ck_assert_int_eq(x86_linux_probe(img, 0x200), -ENOEXEC);
	free(img);
}
END_TEST

struct seg {
	uint64_t paddr, vaddr, filesz, memsz;
};

/* An ELF64 x86-64 executable whose segments hold bytes (i + segment index). */
static uint8_t *make_elf(const struct seg *segs, unsigned int n, uint64_t entry, size_t *len)
{
	size_t off = sizeof(Elf64_Ehdr) + n * sizeof(Elf64_Phdr), total = off;
	Elf64_Ehdr *eh;
	uint8_t *buf;
	unsigned int i;

	for (i = 0; i < n; i++)
		total += segs[i].filesz;
	buf = calloc(1, total);
	eh = (Elf64_Ehdr *)buf;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = entry;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = (uint16_t)n;
	for (i = 0; i < n; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(Elf64_Ehdr)) + i;
		uint64_t j;

		ph->p_type = PT_LOAD;
		ph->p_offset = off;
		ph->p_paddr = segs[i].paddr;
		ph->p_vaddr = segs[i].vaddr;
		ph->p_filesz = segs[i].filesz;
		ph->p_memsz = segs[i].memsz;
		for (j = 0; j < segs[i].filesz; j++)
			buf[off + j] = (uint8_t)(j + i);
		off += segs[i].filesz;
	}
	*len = total;
	return buf;
}

START_TEST(vmlinux_ok)
{
	const struct seg segs[] = { { 0x1000000, 0xffffffff81000000ull, 300, 300 },
				    { 0x1200000, 0xffffffff81200000ull, 100, 5000 } };
	struct boot_info b;
	size_t len;
	uint8_t *img = make_elf(segs, 2, 0xffffffff81000000ull + 0x40, &len);
	const uint8_t *p;
	unsigned int i;

	ck_assert_int_eq(x86_linux_probe(img, len), 0);
	ck_assert_int_eq(x86_linux_load(&mem, img, len, NULL, 0, "quiet", &b), 0);
	ck_assert_uint_eq(b.entry, 0x1000040); /* __START_KERNEL_map taken off */
	p = guest_mem_ptr(&mem, 0x1200000, 5000);
	for (i = 0; i < 100; i++)
		ck_assert_uint_eq(p[i], (uint8_t)(i + 1));
	for (; i < 5000; i++)
		ck_assert_uint_eq(p[i], 0); /* bss zeroed */
	/* a minimal header the kernel checks */
	ck_assert_uint_eq(rd16(X86_ZERO_PAGE_GPA + 0x1fe), 0xaa55);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x202), 0x53726448);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x228), X86_CMDLINE_GPA);
	ck_assert_uint_eq(rd32(X86_ZERO_PAGE_GPA + 0x218), 0); /* no initrd */
	free(img);
}
END_TEST

START_TEST(elf_refused)
{
	struct seg segs[] = { { 0x1000000, 0x1000000, 300, 300 } };
	struct boot_info b;
	struct elf_image ei;
	size_t len;
	uint8_t *img = make_elf(segs, 1, 0x1000000, &len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));

	eh->e_machine = EM_AARCH64;
	ck_assert_int_eq(x86_linux_probe(img, len), -ENOEXEC);
	eh->e_machine = EM_X86_64;
	/* segment data beyond the file */
	ph->p_filesz = len;
	ck_assert_int_eq(x86_linux_load(&mem, img, len, NULL, 0, "", &b), -ENOEXEC);
	ph->p_filesz = 300;
	/* filesz > memsz */
	ph->p_memsz = 10;
	ck_assert_int_eq(elf_load(&mem, img, len, EM_X86_64, 0, &ei), -ENOEXEC);
	ph->p_memsz = 300;
	/* outside RAM, and wrapping around */
	ph->p_paddr = RAM - 100;
	ck_assert_int_eq(x86_linux_load(&mem, img, len, NULL, 0, "", &b), -E2BIG);
	ph->p_paddr = UINT64_MAX - 10;
	ck_assert_int_eq(elf_load(&mem, img, len, EM_X86_64, 0, &ei), -E2BIG);
	/* below 1 MiB (would overwrite the zero page) */
	ph->p_paddr = 0x7000;
	ck_assert_int_eq(x86_linux_load(&mem, img, len, NULL, 0, "", &b), -E2BIG);
	ph->p_paddr = 0x1000000;
	/* entry outside every segment */
	eh->e_entry = 0x3000000;
	ck_assert_int_eq(x86_linux_load(&mem, img, len, NULL, 0, "", &b), -ENOEXEC);
	eh->e_entry = 0x1000000;
	/* program headers beyond the file */
	eh->e_phnum = 1000;
	ck_assert_int_eq(elf_probe(img, len, EM_X86_64), -ENOEXEC);
	free(img);
}
END_TEST

START_TEST(tiny_ok)
{
	const struct seg segs[] = { { 0x400000, 0x400000, 64, 8192 } };
	struct boot_info b;
	size_t len;
	uint8_t *img = make_elf(segs, 1, 0x400010, &len);

	ck_assert_int_eq(x86_tiny_load(&mem, img, len, "port=5 mib=2", &b), 0);
	ck_assert(b.user_mode);
	ck_assert_uint_eq(b.entry, 0x400010);
	ck_assert_uint_eq(b.rdi, SKIFF_TINY_CMDLINE_GPA);
	ck_assert_uint_eq(b.rsi, RAM);
	ck_assert_uint_eq(b.rsp, RAM);
	ck_assert_str_eq(guest_mem_ptr(&mem, SKIFF_TINY_CMDLINE_GPA, 1), "port=5 mib=2");
	/* user bit on every level */
	ck_assert_uint_eq(rd64(SKIFF_TINY_PGTABLE_GPA), (SKIFF_TINY_PGTABLE_GPA + 0x1000) | 7);
	ck_assert_uint_eq(rd64(SKIFF_TINY_PGTABLE_GPA + 0x2000 + 2 * 8), (2ull << 21) | 0x87);
	/* the MMIO windows are mapped */
	ck_assert_uint_eq(rd64(SKIFF_TINY_PGTABLE_GPA + 0x2000 + (SKIFF_DEBUG_MMIO_GPA >> 21) * 8),
			  (SKIFF_DEBUG_MMIO_GPA & ~0x1fffffull) | 0x87);
	free(img);
}
END_TEST

START_TEST(tiny_refused)
{
	struct seg segs[] = { { 0x1000, 0x1000, 64, 64 } };
	struct boot_info b;
	size_t len;
	uint8_t *img = make_elf(segs, 1, 0x1000, &len);
	char cmd[SKIFF_TINY_CMDLINE_MAX + 1];

	/* would overwrite the GDT and page tables */
	ck_assert_int_eq(x86_tiny_load(&mem, img, len, "", &b), -E2BIG);
	free(img);
	segs[0].paddr = RAM - 0x8000; /* no room for the stack */
	img = make_elf(segs, 1, RAM - 0x8000, &len);
	ck_assert_int_eq(x86_tiny_load(&mem, img, len, "", &b), -E2BIG);
	free(img);
	segs[0].paddr = 0x400000;
	img = make_elf(segs, 1, 0x400000, &len);
	memset(cmd, 'a', sizeof(cmd) - 1);
	cmd[sizeof(cmd) - 1] = 0;
	ck_assert_int_eq(x86_tiny_load(&mem, img, len, cmd, &b), -ENAMETOOLONG);
	free(img);
}
END_TEST

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

START_TEST(mptable)
{
	const uint8_t *fp, *tbl;
	unsigned int ncpus = 4, i;
	uint16_t len, count;

	ck_assert_int_eq(x86_write_mptable(&mem, 0), -EINVAL);
	ck_assert_int_eq(x86_write_mptable(&mem, ncpus), 0);
	fp = guest_mem_ptr(&mem, 0xf0000, 16);
	ck_assert_mem_eq(fp, "_MP_", 4);
	ck_assert_uint_eq(sum(fp, 16), 0);
	tbl = guest_mem_ptr(&mem, rd32(0xf0004), 44);
	ck_assert_mem_eq(tbl, "PCMP", 4);
	memcpy(&len, tbl + 4, 2);
	memcpy(&count, tbl + 34, 2);
	ck_assert_uint_eq(sum(guest_mem_ptr(&mem, rd32(0xf0004), len), len), 0);
	ck_assert_uint_eq(count, ncpus + 2 + 15 + 2); /* no entry for the cascade IRQ 2 */
	for (i = 0; i < ncpus; i++) {
		const uint8_t *e = tbl + 44 + 20 * i;

		ck_assert_uint_eq(e[0], 0);
		ck_assert_uint_eq(e[1], i);
		ck_assert_uint_eq(e[3], i == 0 ? 3 : 1);
	}
	ck_assert_uint_eq(tbl[44 + 20 * ncpus], 1); /* bus */
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 8], 2); /* IOAPIC */
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 8 + 1], ncpus);
	/* first I/O interrupt entry: ISA IRQ 0 (PIT) on IOAPIC pin 2, as the MADT says */
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 16], 3);
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 16 + 5], 0);
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 16 + 7], 2);
	/* second: ISA IRQ 1 on pin 1 (IRQ 2 skipped), third: IRQ 3 on pin 3 */
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 24 + 5], 1);
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 24 + 7], 1);
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 32 + 5], 3);
	ck_assert_uint_eq(tbl[44 + 20 * ncpus + 32 + 7], 3);
}
END_TEST

/* A note: namesz, descsz, type, name (padded to 4), desc (padded to 4). */
static size_t put_note(uint8_t *p, const char *name, uint32_t descsz)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1, type = 1;

	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	memset(p + 12, 0, ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u));
	memcpy(p + 12, name, namesz);
	return 12 + ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
}

/* ELF64 header, one PT_NOTE program header at 64, @notes at 0x1000 (a file). */
static int note_file(const uint8_t *notes, size_t len, uint8_t *head, size_t head_len)
{
	char path[] = "/tmp/skiff-note-XXXXXX";
	Elf64_Ehdr *eh = (Elf64_Ehdr *)(void *)head;
	Elf64_Phdr ph = { .p_type = PT_NOTE, .p_offset = 0x1000, .p_filesz = len };
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	memset(head, 0, head_len);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_phoff = 64;
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 1;
	memcpy(head + 64, &ph, sizeof(ph));
	ck_assert_int_eq(pwrite(fd, head, head_len, 0), (ssize_t)head_len);
	ck_assert_int_eq(pwrite(fd, notes, len, 0x1000), (ssize_t)len);
	return fd;
}

START_TEST(elf_linux_note)
{
	uint8_t notes[256], head[128];
	size_t n = 0;
	uint32_t huge = 0x7fffffff;
	int fd;

	/* GNU build id, then a Linux note: found past the first note */
	n += put_note(notes + n, "GNU", 20);
	n += put_note(notes + n, "Linux", 4);
	fd = note_file(notes, n, head, sizeof(head));
	ck_assert_int_eq(elf_has_note(fd, head, sizeof(head), "Linux"), 1);
	ck_assert_int_eq(elf_has_note(fd, head, sizeof(head), "Xen"), 0);
	ck_assert_int_eq(elf_has_note(fd, head, sizeof(head), "Linu"), 0);
	close(fd);

	/* only a GNU note (a tiny guest, a user program) */
	n = put_note(notes, "GNU", 20);
	fd = note_file(notes, n, head, sizeof(head));
	ck_assert_int_eq(elf_has_note(fd, head, sizeof(head), "Linux"), 0);
	close(fd);

	/* a first note whose descsz runs past the segment ends the walk */
	n = put_note(notes, "GNU", 4);
	memcpy(notes + 4, &huge, 4);
	n += put_note(notes + n, "Linux", 4);
	fd = note_file(notes, n, head, sizeof(head));
	ck_assert_int_eq(elf_has_note(fd, head, sizeof(head), "Linux"), 0);
	close(fd);

	/* the program header table outside the bytes given: not found */
	fd = note_file(notes, n, head, sizeof(head));
	ck_assert_int_eq(elf_has_note(fd, head, 64, "Linux"), 0);
	close(fd);
}
END_TEST

START_TEST(guest_mem_bounds)
{
	ck_assert_ptr_nonnull(guest_mem_ptr(&mem, 0, RAM));
	ck_assert_ptr_nonnull(guest_mem_ptr(&mem, RAM - 1, 1));
	ck_assert_ptr_nonnull(guest_mem_ptr(&mem, RAM, 0));
	ck_assert_ptr_null(guest_mem_ptr(&mem, RAM - 1, 2));
	ck_assert_ptr_null(guest_mem_ptr(&mem, RAM + 1, 0));
	ck_assert_ptr_null(guest_mem_ptr(&mem, 1, UINT64_MAX));
	ck_assert_ptr_null(guest_mem_ptr(&mem, UINT64_MAX, 2));
}
END_TEST

/* Is the page at @p mapped? madvise(2) fails with ENOMEM on unmapped addresses. */
static bool page_mapped(void *p)
{
	if (!madvise(p, 4096, MADV_NORMAL))
		return true;
	ck_assert_int_eq(errno, ENOMEM);
	return false;
}

/*
 * Guest RAM is mapped at a 2 MiB-aligned HVA (for transparent huge pages), every byte of
 * it usable, and the address space reserved to align it is given back: the page after
 * RAM was always part of that reservation (guest_mem_create() reserves 2 MiB more than
 * it maps), and it is unmapped again.
 */
START_TEST(guest_mem_huge_aligned)
{
	static const uint64_t sizes[] = { 4096, 2ull << 20, (3ull << 20) + 4096, 64ull << 20 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct guest_mem m;

		ck_assert_int_eq(guest_mem_create(&m, sizes[i]), 0);
		ck_assert_uint_eq((uintptr_t)m.hva % GUEST_MEM_HUGE_ALIGN, 0);
		m.hva[0] = 1;
		m.hva[sizes[i] - 1] = 2;
		ck_assert_int_eq(m.hva[0] + m.hva[sizes[i] - 1], 3);
		ck_assert(page_mapped(m.hva + sizes[i] - 4096));
		ck_assert(!page_mapped(m.hva + sizes[i]));
		guest_mem_destroy(&m);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vmm_loaders");
	TCase *tc = tcase_create("loaders");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bzimage_ok);
	tcase_add_test(tc, bzimage_refused);
	tcase_add_test(tc, vmlinux_ok);
	tcase_add_test(tc, elf_refused);
	tcase_add_test(tc, tiny_ok);
	tcase_add_test(tc, tiny_refused);
	tcase_add_test(tc, mptable);
	tcase_add_test(tc, elf_linux_note);
	tcase_add_test(tc, guest_mem_bounds);
	tcase_add_test(tc, guest_mem_huge_aligned);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
