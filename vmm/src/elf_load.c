// SPDX-License-Identifier: MIT
/* ELF64 loading (System V gABI, "Program Header"): see elf.h. */
#include "elf_load.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOTE_SEG_MAX 65536u

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
		/* Linked at 0 or low: a PIE or shared object is no guest image. */
		if (ph.p_paddr < min_gpa)
			return eh.e_type == ET_DYN ? -ENOEXEC : -E2BIG;
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

/* Walk the notes in @p[0..len): 1 when one is owned by @owner. */
static int notes_have_owner(const uint8_t *p, size_t len, const char *owner)
{
	size_t off = 0, olen = strlen(owner) + 1;

	while (len - off >= 12) {
		uint32_t namesz, descsz;
		size_t name_end, next;

		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		name_end = off + 12 + (((size_t)namesz + 3) & ~(size_t)3);
		if (name_end > len || off + 12 + namesz > len)
			return 0;
		next = name_end + (((size_t)descsz + 3) & ~(size_t)3);
		if (namesz == olen && !memcmp(p + off + 12, owner, olen))
			return 1;
		if (next > len || next <= off)
			return 0;
		off = next;
	}
	return 0;
}

int elf_has_note(int fd, const uint8_t *head, size_t head_len, const char *owner)
{
	Elf64_Ehdr eh;
	unsigned int i;

	if (head_len < sizeof(eh))
		return 0;
	memcpy(&eh, head, sizeof(eh));
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		size_t n;
		uint8_t *buf;
		ssize_t got;
		int found;

		if (eh.e_phoff + (uint64_t)(i + 1) * sizeof(ph) > head_len)
			return 0;
		memcpy(&ph, phdr_at(head, &eh, i), sizeof(ph));
		if (ph.p_type != PT_NOTE || !ph.p_filesz)
			continue;
		n = ph.p_filesz < NOTE_SEG_MAX ? (size_t)ph.p_filesz : NOTE_SEG_MAX;
		buf = malloc(n);
		if (!buf)
			return -ENOMEM;
		got = pread(fd, buf, n, (off_t)ph.p_offset);
		if (got < 0) {
			free(buf);
			return -errno;
		}
		found = notes_have_owner(buf, (size_t)got, owner);
		free(buf);
		if (found)
			return 1;
	}
	return 0;
}
