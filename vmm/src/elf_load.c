// SPDX-License-Identifier: MIT
/* ELF64 loading (System V gABI, "Program Header"): see elf.h. */
#include "elf_load.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

static const Elf64_Phdr *phdr_at(const uint8_t *buf, const Elf64_Ehdr *eh, unsigned int i)
{
	return (const Elf64_Phdr *)(const void *)(buf + eh->e_phoff +
						  (uint64_t)i * sizeof(Elf64_Phdr));
}

int elf_probe(const uint8_t *buf, size_t len, uint16_t machine)
{
	Elf64_Ehdr eh;

	if (len < sizeof(eh))
		return -ENOEXEC;
	memcpy(&eh, buf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != machine ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return -ENOEXEC;
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum || eh.e_phoff > len ||
	    (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff)
		return -ENOEXEC;
	return 0;
}

int elf_load(const struct guest_mem *mem, const uint8_t *buf, size_t len, uint16_t machine,
	     uint64_t min_gpa, struct elf_image *out)
{
	Elf64_Ehdr eh;
	unsigned int i, loads = 0;
	uint64_t lo = UINT64_MAX, hi = 0;

	if (elf_probe(buf, len, machine))
		return -ENOEXEC;
	memcpy(&eh, buf, sizeof(eh));
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		uint8_t *dst;

		memcpy(&ph, phdr_at(buf, &eh, i), sizeof(ph));
		if (ph.p_type != PT_LOAD || !ph.p_memsz)
			continue;
		if (ph.p_filesz > ph.p_memsz || ph.p_offset > len ||
		    ph.p_filesz > len - ph.p_offset)
			return -ENOEXEC;
		if (ph.p_paddr < min_gpa)
			return -E2BIG;
		dst = guest_mem_ptr(mem, ph.p_paddr, ph.p_memsz);
		if (!dst)
			return -E2BIG;
		memcpy(dst, buf + ph.p_offset, ph.p_filesz);
		memset(dst + ph.p_filesz, 0, ph.p_memsz - ph.p_filesz);
		if (ph.p_paddr < lo)
			lo = ph.p_paddr;
		if (ph.p_paddr + ph.p_memsz > hi)
			hi = ph.p_paddr + ph.p_memsz;
		loads++;
	}
	if (!loads)
		return -ENOEXEC;
	out->entry = eh.e_entry;
	out->lo = lo;
	out->hi = hi;
	return 0;
}
