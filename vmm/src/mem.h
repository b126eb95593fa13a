/* SPDX-License-Identifier: MIT */
/*
 * Guest RAM: one memfd-backed region at GPA @base (x86-64 0, arm64 2 GiB:
 * arch_ram_base()), and the one GPA-to-HVA accessor.
 */
#ifndef SKIFF_MEM_H
#define SKIFF_MEM_H

#include <stddef.h>
#include <stdint.h>

struct guest_mem {
	int fd; /* memfd, so the memory can be shared with another process */
	uint8_t *hva; /* mapping of the whole of RAM, MAP_SHARED */
	uint64_t size; /* bytes, multiple of the page size */
	uint64_t base; /* GPA of the first byte; 0 from guest_mem_create(), set by the VM */
};

/* The alignment of guest RAM's mapping: a transparent huge page (x86-64 PMD). */
#define GUEST_MEM_HUGE_ALIGN (2ull << 20)

/*
 * guest_mem_create() - allocate @size bytes of zeroed guest RAM from a memfd, mapped
 * at a GUEST_MEM_HUGE_ALIGN-aligned HVA and advised for transparent huge pages
 * (MADV_HUGEPAGE, best effort), so that KVM can map it with 2 MiB EPT/NPT entries.
 * Return: 0; -EINVAL for a zero or unaligned size; -errno from memfd_create(2),
 * ftruncate(2), mmap(2).
 */
int guest_mem_create(struct guest_mem *mem, uint64_t size);

/* guest_mem_destroy() - unmap and close; safe on a zeroed or destroyed struct. */
void guest_mem_destroy(struct guest_mem *mem);

/*
 * guest_mem_ptr() - the host pointer for [gpa, gpa + len), or NULL when any
 * byte of it (overflow included) is outside RAM [base, base + size). The only GPA-to-HVA
 * conversion in the VMM.
 */
void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);

/* guest_mem_write() - copy @len bytes to @gpa. Return: 0; -EFAULT when outside RAM. */
int guest_mem_write(const struct guest_mem *mem, uint64_t gpa, const void *src, uint64_t len);

#endif /* SKIFF_MEM_H */
