/* SPDX-License-Identifier: MIT */
/* x86-64 internals shared by the files of arch/x86_64 (and the loader tests). */
#ifndef SKIFF_X86_H
#define SKIFF_X86_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "vm.h"

/* Linux boot memory map (guest-physical), all below 1 MiB except the kernel. */
#define X86_BOOT_GDT_GPA 0x500ull
#define X86_ZERO_PAGE_GPA 0x7000ull /* struct boot_params */
#define X86_BOOT_STACK_GPA 0x8ff0ull
#define X86_BOOT_PGTABLE_GPA 0x9000ull /* PML4, PDPT, 4 PDs: up to 0xefff */
#define X86_CMDLINE_GPA 0x20000ull
#define X86_CMDLINE_MAX 2048u
#define X86_EBDA_GPA 0x9fc00ull /* MP floating pointer and table live here */
#define X86_HIMEM_GPA 0x100000ull
#define X86_KERNEL_LOAD_GPA 0x100000ull /* bzImage protected-mode code */
#define X86_MMIO_HOLE_GPA 0xc0000000ull /* RAM ends below; devices above */

/* GDT selectors (same layout for Linux boot and tiny guests). */
#define X86_SEL_KCODE 0x10 /* __BOOT_CS */
#define X86_SEL_KDATA 0x18 /* __BOOT_DS */
#define X86_SEL_UDATA 0x23 /* index 4, RPL 3 */
#define X86_SEL_UCODE 0x2b /* index 5, RPL 3 */
#define X86_SEL_TSS 0x30 /* index 6 (16-byte descriptor) */
#define X86_GDT_ENTRIES 8
#define X86_TSS_OFFSET 0x100 /* TSS, in the GDT page */

#define X86_IRQ_COM1 4
#define X86_IRQ_VIRTIO 5
#define X86_IOAPIC_PINS 24 /* KVM's in-kernel IOAPIC */

/*
 * x86_write_gdt() - the GDT above at @gdt_gpa and a TSS at gdt_gpa +
 * X86_TSS_OFFSET. Return: 0; -EFAULT outside RAM.
 */
int x86_write_gdt(const struct guest_mem *mem, uint64_t gdt_gpa);

/*
 * x86_write_identity_map() - 4-level page tables at @gpa (6 pages) mapping
 * the low 4 GiB 1:1 with 2 MiB pages, writable, with the user bit when
 * @user. Return: 0; -EFAULT outside RAM.
 */
int x86_write_identity_map(const struct guest_mem *mem, uint64_t gpa, bool user);

/*
 * x86_linux_probe() - 0 for a bzImage with a 64-bit entry (boot protocol
 * >= 2.12, XLF_KERNEL_64) or an x86-64 ELF; -ENOEXEC otherwise.
 */
int x86_linux_probe(const uint8_t *img, size_t len);

/*
 * x86_linux_load() - Documentation/x86/boot.rst, "64-bit Boot Protocol":
 * kernel, initrd (top of RAM below initrd_addr_max), command line, zero
 * page with e820, page tables and GDT; @boot gets the 64-bit entry point and
 * rsi = zero page. Return: 0; -ENOEXEC for a bad image; -E2BIG when
 * something does not fit RAM; -ENAMETOOLONG when the command line is longer
 * than the kernel's cmdline_size (at most 2047 bytes).
 */
int x86_linux_load(const struct guest_mem *mem, const uint8_t *img, size_t len,
		   const uint8_t *initrd, size_t initrd_len, const char *cmdline,
		   struct boot_info *boot);

/*
 * x86_tiny_load() - a tiny CPL3 guest (skiff/tiny_guest_abi.h): ELF,
 * command line, user page tables, GDT; @boot gets entry, rdi, rsi, rsp.
 * Return: 0; -ENOEXEC (also a PIE linked low); -E2BIG when it does not fit RAM;
 * -ENAMETOOLONG for a command line of SKIFF_TINY_CMDLINE_MAX bytes or more.
 */
int x86_tiny_load(const struct guest_mem *mem, const uint8_t *img, size_t len, const char *cmdline,
		  struct boot_info *boot);

/*
 * x86_write_mptable() - Intel MP specification 1.4 tables at X86_EBDA_GPA:
 * floating pointer, config table with @ncpus processors, one ISA bus, one
 * IOAPIC, ISA IRQs 1 and 3..15 routed 1:1 to IOAPIC pins and IRQ 0 (PIT) to
 * pin 2, LINT0 ExtINT and LINT1
 * NMI. Return: 0; -EINVAL for ncpus 0 or > 254; -EFAULT outside RAM.
 */
int x86_write_mptable(const struct guest_mem *mem, unsigned int ncpus);

/* Zero page (struct boot_params) field offsets, Documentation/x86/zero-page.rst. */
#define ZP_ACPI_RSDP_ADDR 0x070
#define ZP_EXT_CMD_LINE_PTR 0x0c8
#define ZP_E820_ENTRIES 0x1e8
#define ZP_SETUP_SECTS 0x1f1
#define ZP_VID_MODE 0x1fa
#define ZP_BOOT_FLAG 0x1fe
#define ZP_JUMP 0x200
#define ZP_HEADER 0x202
#define ZP_VERSION 0x206
#define ZP_TYPE_OF_LOADER 0x210
#define ZP_LOADFLAGS 0x211
#define ZP_CODE32_START 0x214
#define ZP_RAMDISK_IMAGE 0x218
#define ZP_RAMDISK_SIZE 0x21c
#define ZP_HEAP_END_PTR 0x224
#define ZP_CMD_LINE_PTR 0x228
#define ZP_INITRD_ADDR_MAX 0x22c
#define ZP_KERNEL_ALIGNMENT 0x230
#define ZP_RELOCATABLE 0x234
#define ZP_XLOADFLAGS 0x236
#define ZP_CMDLINE_SIZE 0x238
#define ZP_PREF_ADDRESS 0x258
#define ZP_INIT_SIZE 0x260
#define ZP_E820_TABLE 0x2d0
#define ZP_E820_MAX 128
#define E820_RAM 1
#define E820_RESERVED 2

/* elf_probe() for EM_X86_64. */
int elf_probe_x86(const uint8_t *img, size_t len);

#endif /* SKIFF_X86_H */
