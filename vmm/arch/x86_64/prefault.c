// SPDX-License-Identifier: MIT
/*
 * The prefault stub: 47 bytes of x86-64 code that vCPU 0 runs before a Linux kernel's
 * 64-bit entry when prefault is asked for (skiff_vm_set_prefault()). With interrupts
 * off it does a locked OR of 0 on one byte of every 4 KiB page of guest RAM (so no byte
 * changes), which makes KVM map all of RAM writable in the EPT/NPT before the guest can
 * take an interrupt; then it clears the registers it used and jumps to the entry. The
 * boot protocol's registers (rsi, rsp) and state pass through untouched.
 */
#include <errno.h>
#include <string.h>

#include "x86.h"

/* Offsets of the operands patched in below. */
#define STUB_END_IMM 5 /* movabs rdx, imm64 */
#define STUB_ENTRY_IMM 39 /* jmp qword [rip + 0]; .quad entry */
#define STUB_LEN 47

/* clang-format off */
static const uint8_t stub[STUB_LEN] = {
	0x48, 0x31, 0xc9,				/*  0: xor rcx, rcx */
	0x48, 0xba, 0, 0, 0, 0, 0, 0, 0, 0,		/*  3: movabs rdx, END */
	0xf0, 0x80, 0x09, 0x00,				/* 13: lock or byte [rcx], 0 */
	0x48, 0x81, 0xc1, 0x00, 0x10, 0x00, 0x00,	/* 17: add rcx, 4096 */
	0x48, 0x39, 0xd1,				/* 24: cmp rcx, rdx */
	0x72, 0xf0,					/* 27: jb 13 */
	0x31, 0xc9,					/* 29: xor ecx, ecx */
	0x31, 0xd2,					/* 31: xor edx, edx */
	0xff, 0x25, 0x00, 0x00, 0x00, 0x00,		/* 33: jmp qword [rip + 0] */
	0, 0, 0, 0, 0, 0, 0, 0,				/* 39: ENTRY */
};
/* clang-format on */

static void put64(uint8_t *p, uint64_t v)
{
	unsigned int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int x86_write_prefault_stub(const struct guest_mem *mem, uint64_t entry)
{
	uint8_t *p = guest_mem_ptr(mem, X86_PREFAULT_STUB_GPA, sizeof(stub));

	if (!p || mem->size % 4096 || mem->size > X86_MMIO_HOLE_GPA)
		return -EFAULT;
	memcpy(p, stub, sizeof(stub));
	put64(p + STUB_END_IMM, mem->size);
	put64(p + STUB_ENTRY_IMM, entry);
	return 0;
}
