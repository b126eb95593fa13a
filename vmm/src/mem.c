// SPDX-License-Identifier: MIT
/* Guest RAM from a memfd (see mem.h). */
#include "mem.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Map @size bytes of @fd at a 2 MiB-aligned address: reserve @size + 2 MiB of address
 * space, map the file over its first aligned byte (MAP_FIXED), give back both ends.
 * Returns the mapping or MAP_FAILED (errno set).
 */
static void *map_aligned(int fd, uint64_t size)
{
	uint8_t *r, *p;
	uintptr_t a;

	r = mmap(NULL, size + GUEST_MEM_HUGE_ALIGN, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return MAP_FAILED;
	a = ((uintptr_t)r + GUEST_MEM_HUGE_ALIGN - 1) & ~(uintptr_t)(GUEST_MEM_HUGE_ALIGN - 1);
	p = mmap((void *)a, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE | MAP_FIXED,
		 fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;

		munmap(r, size + GUEST_MEM_HUGE_ALIGN);
		errno = e;
		return MAP_FAILED;
	}
	if (p > r)
		munmap(r, (size_t)(p - r));
	if (r + GUEST_MEM_HUGE_ALIGN > p)
		munmap(p + size, (size_t)(r + GUEST_MEM_HUGE_ALIGN - p));
	return p;
}

int guest_mem_create(struct guest_mem *mem, uint64_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	int fd;

	mem->fd = -1;
	mem->hva = NULL;
	mem->size = 0;
	mem->base = 0;
	if (!size || size % (uint64_t)page || size > UINT64_MAX - GUEST_MEM_HUGE_ALIGN)
		return -EINVAL;
	fd = memfd_create("skiff-guest-ram", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto err;
	p = map_aligned(fd, size);
	if (p == MAP_FAILED)
		goto err;
	/* Guest RAM is never part of a core dump of the VMM. */
	madvise(p, size, MADV_DONTDUMP);
	/*
	 * Best effort: where the host backs shared memory with transparent huge pages
	 * (/sys/kernel/mm/transparent_hugepage/shmem_enabled "advise" or "always"), KVM maps
	 * guest RAM with 2 MiB EPT/NPT entries (arch/x86/kvm/mmu: host_pfn_mapping_level()):
	 * fewer two-dimensional TLB misses and 512 times fewer first-touch EPT/NPT faults. A
	 * host without it (EINVAL) keeps 4 KiB pages.
	 */
	madvise(p, size, MADV_HUGEPAGE);
	mem->fd = fd;
	mem->hva = p;
	mem->size = size;
	return 0;
err:
	size = (uint64_t)errno;
	close(fd);
	return -(int)size;
}

void guest_mem_destroy(struct guest_mem *mem)
{
	if (mem->hva)
		munmap(mem->hva, mem->size);
	if (mem->fd >= 0)
		close(mem->fd);
	mem->hva = NULL;
	mem->fd = -1;
	mem->size = 0;
}

void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	if (!mem->hva || gpa < mem->base)
		return NULL;
	gpa -= mem->base;
	if (gpa > mem->size || len > mem->size - gpa)
		return NULL;
	return mem->hva + gpa;
}

int guest_mem_write(const struct guest_mem *mem, uint64_t gpa, const void *src, uint64_t len)
{
	void *dst = guest_mem_ptr(mem, gpa, len);

	if (!dst)
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}
