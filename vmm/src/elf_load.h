/* SPDX-License-Identifier: MIT */
/* ELF64 executables: check and load PT_LOAD segments into guest RAM by p_paddr. */
#ifndef SKIFF_ELF_H
#define SKIFF_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"

struct elf_image {
	uint64_t entry; /* e_entry */
	uint64_t lo, hi; /* [lo, hi): lowest and highest paddr of any PT_LOAD (memsz) */
};

/*
 * elf_probe() - is @buf an ELF64 little-endian executable for @machine
 * (EM_X86_64 = 62) with a sane program header table inside the file?
 * Return: 0; -ENOEXEC otherwise.
 */
int elf_probe(const uint8_t *buf, size_t len, uint16_t machine);

/*
 * elf_load() - copy every PT_LOAD segment to its p_paddr (zero-filling
 * p_memsz beyond p_filesz) and report entry and extent. Every segment must
 * lie inside the file and inside [min_gpa, RAM end).
 * Return: 0; -ENOEXEC for a malformed file (bad header, segment outside the
 * file, filesz > memsz, no PT_LOAD, an ET_DYN segment below min_gpa);
 * -E2BIG when a segment is outside RAM.
 */
int elf_load(const struct guest_mem *mem, const uint8_t *buf, size_t len, uint16_t machine,
	     uint64_t min_gpa, struct elf_image *out);

/*
 * elf_has_note() - does the ELF64 file @fd carry a note whose owner (name)
 * is @owner in one of its PT_NOTE segments (System V gABI, "Note Section")?
 * A Linux vmlinux always has "Linux" notes (include/linux/build-salt.h),
 * other executables do not. @head/@head_len: the file's first bytes, with
 * the ELF and program headers (elf_probe() passed). Each note segment is
 * read with pread(2), at most 64 KiB of it.
 * Return: 1 found; 0 not found (malformed notes end the walk); -errno from
 * pread(2).
 */
int elf_has_note(int fd, const uint8_t *head, size_t head_len, const char *owner);

#endif /* SKIFF_ELF_H */
