// SPDX-License-Identifier: MIT
/* Guest RAM from a memfd (see mem.h). */
#include "mem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int guest_mem_create(struct guest_mem *mem, uint64_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	int fd;

	mem->fd = -1;
	mem->hva = NULL;
	mem->size = 0;
	if (!size || size % (uint64_t)page)
		return -EINVAL;
	fd = memfd_create("skiff-guest-ram", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto err;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED)
		goto err;
	/* Guest RAM is never part of a core dump of the VMM. */
	madvise(p, size, MADV_DONTDUMP);
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
	if (!mem->hva || gpa > mem->size || len > mem->size - gpa)
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
