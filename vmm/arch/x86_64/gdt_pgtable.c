// SPDX-License-Identifier: MIT
/*
 * Flat GDT and identity page tables for 64-bit entry (Intel SDM vol. 3A,
 * 3.4.5 "Segment Descriptors" and 4.5 "4-Level Paging").
 */
#include <errno.h>
#include <string.h>

#include "x86.h"

/* A code/data descriptor: flags = G, D/B, L, AVL nibble; access = P, DPL, S, type. */
static uint64_t seg_desc(uint32_t base, uint32_t limit, uint8_t flags, uint8_t access)
{
	return ((uint64_t)(base & 0xff000000u) << 32) | ((uint64_t)(flags & 0xf) << 52) |
	       ((uint64_t)(limit & 0xf0000u) << 32) | ((uint64_t)access << 40) |
	       ((uint64_t)(base & 0x00ffffffu) << 16) | (limit & 0xffffu);
}

int x86_write_gdt(const struct guest_mem *mem, uint64_t gdt_gpa)
{
	uint64_t gdt[X86_GDT_ENTRIES] = { 0 };
	uint64_t tss = gdt_gpa + X86_TSS_OFFSET;
	uint8_t zero_tss[0x68] = { 0 };
	int err;

	gdt[X86_SEL_KCODE >> 3] = seg_desc(0, 0xfffff, 0xa, 0x9b); /* G, L; P DPL0 code */
	gdt[X86_SEL_KDATA >> 3] = seg_desc(0, 0xfffff, 0xc, 0x93); /* G, D; P DPL0 data */
	gdt[X86_SEL_UDATA >> 3] = seg_desc(0, 0xfffff, 0xc, 0xf3); /* P DPL3 data */
	gdt[X86_SEL_UCODE >> 3] = seg_desc(0, 0xfffff, 0xa, 0xfb); /* P DPL3 code, L */
	/* 64-bit TSS: 16 bytes, type 9 (available), base bits 63:32 in the 2nd qword */
	gdt[X86_SEL_TSS >> 3] = seg_desc((uint32_t)tss, sizeof(zero_tss) - 1, 0, 0x89);
	gdt[(X86_SEL_TSS >> 3) + 1] = tss >> 32;
	err = guest_mem_write(mem, gdt_gpa, gdt, sizeof(gdt));
	if (err)
		return err;
	return guest_mem_write(mem, tss, zero_tss, sizeof(zero_tss));
}

#define PTE_P 0x1ull
#define PTE_RW 0x2ull
#define PTE_US 0x4ull
#define PTE_PS 0x80ull

int x86_write_identity_map(const struct guest_mem *mem, uint64_t gpa, bool user)
{
	uint64_t *pml4 = guest_mem_ptr(mem, gpa, 6 * 4096);
	uint64_t *pdpt, *pd, flags = PTE_P | PTE_RW | (user ? PTE_US : 0);
	unsigned int i;

	if (!pml4)
		return -EFAULT;
	memset(pml4, 0, 6 * 4096);
	pdpt = pml4 + 512;
	pd = pdpt + 512;
	pml4[0] = (gpa + 4096) | flags;
	for (i = 0; i < 4; i++)
		pdpt[i] = (gpa + (2 + i) * 4096ull) | flags;
	for (i = 0; i < 4 * 512; i++)
		pd[i] = ((uint64_t)i << 21) | flags | PTE_PS;
	return 0;
}
