// SPDX-License-Identifier: MIT
/*
 * Guest memory from SET_MEM_TABLE (vhost-user.rst): each region comes with
 * an fd and an offset into it; we map [mmap_offset, mmap_offset + size) of
 * the fd shared and read-write. The device is only ever told GPAs. Caps:
 * VU_MAX_REGIONS regions, VU_MAX_MEM_BYTES in all.
 *
 * Guard: a frontend may shrink its memory file after we mapped it (UML's
 * O_TMPFILE and QEMU's memory-backend-file cannot be sealed; only QEMU's
 * memfd backend seals by default), and the next access of any of our
 * threads to a page past the new end raises SIGBUS, which would end every
 * guest of the process. Every mapping is registered in a lock-free table;
 * the SIGBUS handler finds the mapping holding the faulting address,
 * replaces it whole with private anonymous memory (zeros: the access is
 * retried and succeeds, the device sees an empty ring), and writes to that
 * frontend's fault eventfd, so its server drops it. A SIGBUS elsewhere keeps
 * its usual effect.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vu_fd.h"
#include "vu_mem.h"

/*
 * 64 guests (main.c's cap), each with an old and a new table during a
 * SET_MEM_TABLE; a map beyond this fails with -ENOSPC.
 */
#define GUARD_SLOTS (64 * 2 * VU_MAX_REGIONS)

struct guard_slot {
	atomic_uint seq; /* odd while the slot changes */
	atomic_bool used;
	atomic_uintptr_t start; /* read by the handler between two even seq */
	atomic_size_t len;
	atomic_int fault_fd;
};

static struct guard_slot guards[GUARD_SLOTS];
static struct sigaction prev_sigbus;
static atomic_ullong guard_faults;

/* The slot holding @addr, its [start, len) and fault fd; false if none. */
static bool guard_find(uintptr_t addr, uintptr_t *start, size_t *len, int *fd)
{
	unsigned int i;

	for (i = 0; i < GUARD_SLOTS; i++) {
		struct guard_slot *g = &guards[i];
		unsigned int s1, s2;
		bool hit;

		do {
			s1 = atomic_load_explicit(&g->seq, memory_order_acquire);
			hit = !(s1 & 1) && atomic_load_explicit(&g->used, memory_order_relaxed) &&
			      addr >= atomic_load_explicit(&g->start, memory_order_relaxed) &&
			      addr - atomic_load_explicit(&g->start, memory_order_relaxed) <
				      atomic_load_explicit(&g->len, memory_order_relaxed);
			*start = atomic_load_explicit(&g->start, memory_order_relaxed);
			*len = atomic_load_explicit(&g->len, memory_order_relaxed);
			*fd = atomic_load_explicit(&g->fault_fd, memory_order_relaxed);
			atomic_thread_fence(memory_order_acquire);
			s2 = atomic_load_explicit(&g->seq, memory_order_relaxed);
		} while (s1 != s2 || (s1 & 1));
		if (hit)
			return true;
	}
	return false;
}

static void sigbus_handler(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "skiff-vsock: SIGBUS outside guest memory\n";
	uintptr_t start;
	uint64_t one = 1;
	size_t len;
	ssize_t r;
	int fd;

	/* si_code > 0: raised by the kernel for an access, si_addr is the address */
	if (si->si_code > 0 && guard_find((uintptr_t)si->si_addr, &start, &len, &fd) &&
	    mmap((void *)start, len, PROT_READ | PROT_WRITE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED) {
		atomic_fetch_add(&guard_faults, 1);
		r = write(fd, &one, sizeof(one));
		(void)r;
		return; /* the access is retried on the zero pages */
	}
	/* Not ours: what would have happened without us. */
	if (prev_sigbus.sa_flags & SA_SIGINFO) {
		prev_sigbus.sa_sigaction(sig, si, uc);
		return;
	}
	if (prev_sigbus.sa_handler != SIG_DFL && prev_sigbus.sa_handler != SIG_IGN) {
		prev_sigbus.sa_handler(sig);
		return;
	}
	r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	signal(SIGBUS, SIG_DFL);
	if (si->si_code <= 0)
		raise(SIGBUS); /* sent, not a fault: deliver it as it was meant */
	/* a fault repeats on return and ends the process */
}

static int guard_ret;

static void guard_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigbus_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &prev_sigbus) < 0)
		guard_ret = -errno;
}

int vu_mem_guard_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, guard_install);
	return guard_ret;
}

uint64_t vu_mem_guard_faults(void)
{
	return atomic_load(&guard_faults);
}

static int guard_add(void *start, size_t len, int fault_fd)
{
	unsigned int i;

	for (i = 0; i < GUARD_SLOTS; i++) {
		struct guard_slot *g = &guards[i];
		bool expect = false;

		if (!atomic_compare_exchange_strong(&g->used, &expect, true))
			continue;
		atomic_fetch_add_explicit(&g->seq, 1, memory_order_acq_rel);
		atomic_store_explicit(&g->start, (uintptr_t)start, memory_order_relaxed);
		atomic_store_explicit(&g->len, len, memory_order_relaxed);
		atomic_store_explicit(&g->fault_fd, fault_fd, memory_order_relaxed);
		atomic_fetch_add_explicit(&g->seq, 1, memory_order_release);
		return (int)i;
	}
	return -ENOSPC;
}

static void guard_del(int slot)
{
	struct guard_slot *g = &guards[slot];

	atomic_fetch_add_explicit(&g->seq, 1, memory_order_acq_rel);
	atomic_store_explicit(&g->start, 0, memory_order_relaxed);
	atomic_store_explicit(&g->len, 0, memory_order_relaxed);
	atomic_store_explicit(&g->fault_fd, -1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g->seq, 1, memory_order_release);
	atomic_store(&g->used, false);
}

static int ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static int check_table(const struct vu_mem_table *t, unsigned int nfds)
{
	uint64_t total = 0;
	unsigned int i, j;

	if (t->nregions == 0 || t->nregions > VU_MAX_REGIONS || t->nregions != nfds)
		return -EINVAL;
	for (i = 0; i < t->nregions; i++) {
		const struct vu_mem_region *r = &t->regions[i];

		/* total stays <= VU_MAX_MEM_BYTES, so the sum cannot wrap */
		if (r->memory_size > VU_MAX_MEM_BYTES - total)
			return -E2BIG;
		total += r->memory_size;
		if (r->memory_size == 0 ||
		    r->guest_phys_addr + r->memory_size < r->guest_phys_addr ||
		    r->userspace_addr + r->memory_size < r->userspace_addr ||
		    r->mmap_offset + r->memory_size < r->mmap_offset)
			return -EINVAL;
		for (j = 0; j < i; j++) {
			const struct vu_mem_region *o = &t->regions[j];

			if (ranges_overlap(r->guest_phys_addr, r->memory_size, o->guest_phys_addr,
					   o->memory_size) ||
			    ranges_overlap(r->userspace_addr, r->memory_size, o->userspace_addr,
					   o->memory_size))
				return -EINVAL;
		}
	}
	return 0;
}

static int map_one(const struct vu_mem_region *r, int fd, int fault_fd, struct vu_mem_map *out)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t off, delta;
	struct stat st;
	char what[64];
	int slot;
	void *p;

	if (vu_fd_check(fd, VU_FD_MEM, what, sizeof(what)) || fstat(fd, &st) < 0)
		return -EINVAL;
	/* A short file would turn guest accesses into SIGBUS. */
	if ((uint64_t)st.st_size < r->mmap_offset + r->memory_size)
		return -EINVAL;
	off = r->mmap_offset & ~((uint64_t)page - 1);
	delta = r->mmap_offset - off;
	if (r->memory_size > SIZE_MAX - delta)
		return -EINVAL;
	p = mmap(NULL, (size_t)(r->memory_size + delta), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_NORESERVE, fd, (off_t)off);
	if (p == MAP_FAILED)
		return -errno;
	slot = guard_add(p, (size_t)(r->memory_size + delta), fault_fd);
	if (slot < 0) {
		munmap(p, (size_t)(r->memory_size + delta));
		return slot;
	}
	out->guard = slot;
	out->gpa = r->guest_phys_addr;
	out->size = r->memory_size;
	out->uaddr = r->userspace_addr;
	out->map_base = p;
	out->map_len = (size_t)(r->memory_size + delta);
	out->hva = (char *)p + delta;
	return 0;
}

int vu_mem_map_table(const struct vu_mem_table *t, int *fds, unsigned int nfds, int fault_fd,
		     struct vu_mem *out)
{
	unsigned int i;
	int ret;

	ret = check_table(t, nfds);
	if (ret)
		goto out_close;
	out->n = 0;
	for (i = 0; i < t->nregions; i++) {
		ret = map_one(&t->regions[i], fds[i], fault_fd, &out->maps[i]);
		if (ret) {
			vu_mem_unmap(out);
			goto out_close;
		}
		out->n = i + 1;
	}
out_close:
	for (i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
	return ret;
}

void vu_mem_unmap(struct vu_mem *m)
{
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		guard_del(m->maps[i].guard);
		munmap(m->maps[i].map_base, m->maps[i].map_len);
	}
	memset(m, 0, sizeof(*m));
}

int vu_mem_uaddr_to_gpa(const struct vu_mem *m, uint64_t uaddr, uint64_t *gpa)
{
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		const struct vu_mem_map *r = &m->maps[i];

		if (uaddr >= r->uaddr && uaddr - r->uaddr < r->size) {
			*gpa = r->gpa + (uaddr - r->uaddr);
			return 0;
		}
	}
	return -EFAULT;
}

unsigned int vu_mem_regions(const struct vu_mem *m, struct vsock_mem_region *out)
{
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		out[i].gpa = m->maps[i].gpa;
		out[i].size = m->maps[i].size;
		out[i].hva = m->maps[i].hva;
	}
	return m->n;
}
