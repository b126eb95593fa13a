// SPDX-License-Identifier: MIT
/* Fault injection shim for device tests: see fault_shim.h. */
#include "fault_shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

/* The real calls (ld --wrap). */
int __real_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int __real_epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout);
int __real_poll(struct pollfd *p, nfds_t n, int timeout);
int __real_socket(int domain, int type, int proto);
int __real_connect(int fd, const struct sockaddr *sa, socklen_t len);
int __real_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags);
ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __real_readv(int fd, const struct iovec *iov, int n);
ssize_t __real_recv(int fd, void *buf, size_t n, int flags);
ssize_t __real_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *sa,
			socklen_t *len);
int __real_bind(int fd, const struct sockaddr *sa, socklen_t len);
ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
int __real_setsockopt(int fd, int level, int name, const void *v, socklen_t len);
int __real_fcntl(int fd, int cmd, ...);
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);

/* Present in sanitizer builds (ASan, UBSan runtimes). */
void __sanitizer_symbolize_pc(void *pc, const char *fmt, char *out, size_t len)
	__attribute__((weak));

#define ERR(e) (1u << (e))

static const char *const fn_names[FAULT_FN_NUM] = {
	"epoll_ctl", "epoll_wait", "poll",     "socket",  "connect",	"accept4",
	"read",	     "readv",	   "recv",     "sendmsg", "setsockopt", "fcntl",
	"malloc",    "calloc",	   "recvfrom", "bind",
};

static const struct {
	int err;
	const char *name;
} errs[FE_NUM] = {
	[FE_ENOMEM] = { ENOMEM, "ENOMEM" }, [FE_ENOSPC] = { ENOSPC, "ENOSPC" },
	[FE_EMFILE] = { EMFILE, "EMFILE" }, [FE_EAGAIN] = { EAGAIN, "EAGAIN" },
	[FE_EINTR] = { EINTR, "EINTR" },
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fault_site sites[FAULT_MAX_SITES];
static unsigned int n_sites;

static struct {
	bool on, by_site, fired;
	struct fault_site site; /* by_site: fn and pcs */
	uint64_t nth;
	enum fault_fn fn; /* !by_site */
	unsigned int skip;
	int err;
	struct fault_site where;
} armed;

static struct {
	bool on;
	enum fault_fn fn;
	enum vsock_thread_kind kind;
	unsigned int skip;
	unsigned int hit, released; /* pauses hit, released (tickets) */
} hold;
static pthread_cond_t pause_cond = PTHREAD_COND_INITIALIZER;

static unsigned long real_eagain; /* atomic */
static __thread bool marked, inside;
static __thread int thread_kind = -1; /* enum vsock_thread_kind of a fault_spawn() thread */

void fault_init(void)
{
	void *pcs[4];

	backtrace(pcs, 4); /* loads the unwinder now, not inside a wrapped call */
}

void fault_thread_mark(bool on)
{
	marked = on;
}

struct trampoline {
	void *(*fn)(void *);
	void *arg;
	enum vsock_thread_kind kind;
};

static void *marked_start(void *p)
{
	struct trampoline t = *(struct trampoline *)p;

	free(p);
	marked = true;
	thread_kind = (int)t.kind;
	return t.fn(t.arg);
}

int fault_spawn(void *opaque, enum vsock_thread_kind kind, pthread_t *t, void *(*fn)(void *),
		void *arg)
{
	struct trampoline *tr = __real_malloc(sizeof(*tr));
	int ret;

	if (!tr)
		return ENOMEM;
	tr->fn = fn;
	tr->arg = arg;
	tr->kind = kind;
	ret = pthread_create(t, NULL, marked_start, tr);
	if (ret)
		free(tr);
	return ret;
}

void fault_reset(void)
{
	pthread_mutex_lock(&lock);
	n_sites = 0;
	memset(&armed, 0, sizeof(armed));
	hold.on = false;
	pthread_mutex_unlock(&lock);
}

unsigned int fault_sites(struct fault_site *out, unsigned int cap)
{
	unsigned int n;

	pthread_mutex_lock(&lock);
	n = n_sites;
	memcpy(out, sites, (n < cap ? n : cap) * sizeof(*out));
	pthread_mutex_unlock(&lock);
	return n;
}

void fault_arm_site(const struct fault_site *site, int err, uint64_t nth)
{
	pthread_mutex_lock(&lock);
	memset(&armed, 0, sizeof(armed));
	armed.on = armed.by_site = true;
	armed.site = *site;
	armed.nth = nth;
	armed.err = err;
	pthread_mutex_unlock(&lock);
}

void fault_arm_call(enum fault_fn fn, int err, unsigned int skip)
{
	pthread_mutex_lock(&lock);
	memset(&armed, 0, sizeof(armed));
	armed.on = true;
	armed.fn = fn;
	armed.skip = skip;
	armed.err = err;
	pthread_mutex_unlock(&lock);
}

void fault_pause_call(enum fault_fn fn, enum vsock_thread_kind kind, unsigned int skip)
{
	pthread_mutex_lock(&lock);
	hold.on = true;
	hold.fn = fn;
	hold.kind = kind;
	hold.skip = skip;
	pthread_mutex_unlock(&lock);
}

int fault_wait_paused(unsigned int n, int timeout_ms)
{
	struct timespec dl;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&lock);
	while (hold.hit < n && !ret)
		ret = pthread_cond_timedwait(&pause_cond, &lock, &dl);
	ret = hold.hit < n ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&lock);
	return ret;
}

void fault_release(void)
{
	pthread_mutex_lock(&lock);
	hold.released = hold.hit;
	pthread_cond_broadcast(&pause_cond);
	pthread_mutex_unlock(&lock);
}

/* Wait here if a pause matches this call (lock held). */
static void maybe_pause(enum fault_fn fn)
{
	unsigned int ticket;

	if (!hold.on || hold.fn != fn || thread_kind != (int)hold.kind || hold.skip--)
		return;
	hold.on = false;
	ticket = ++hold.hit;
	pthread_cond_broadcast(&pause_cond);
	while (hold.released < ticket)
		pthread_cond_wait(&pause_cond, &lock);
}

unsigned long fault_real_eagain(void)
{
	return __atomic_load_n(&real_eagain, __ATOMIC_RELAXED);
}

bool fault_fired(struct fault_site *where)
{
	bool fired;

	pthread_mutex_lock(&lock);
	fired = armed.fired;
	if (where)
		*where = armed.where;
	pthread_mutex_unlock(&lock);
	return fired;
}

int fault_errno(enum fault_err e)
{
	return errs[e].err;
}

const char *fault_err_name(enum fault_err e)
{
	return errs[e].name;
}

const char *fault_fn_name(enum fault_fn fn)
{
	return fn_names[fn];
}

static void describe_pc(const void *pc, char *buf, size_t len)
{
	Dl_info di;

	/* pc is a return address: pc - 1 is inside the call instruction. */
	if (__sanitizer_symbolize_pc) {
		__sanitizer_symbolize_pc((void *)((uintptr_t)pc - 1), "%f %s:%l", buf, len);
		return;
	}
	if (dladdr(pc, &di) && di.dli_fname)
		snprintf(buf, len, "%s+%#lx",
			 strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 : di.dli_fname,
			 (unsigned long)((uintptr_t)pc - 1 - (uintptr_t)di.dli_fbase));
	else
		snprintf(buf, len, "%p", pc);
}

void fault_describe(const struct fault_site *s, char *buf, size_t len)
{
	char a[160], b[160];

	describe_pc(s->pc[0], a, sizeof(a));
	describe_pc(s->pc[1], b, sizeof(b));
	snprintf(buf, len, "%s in %s <- %s", fn_names[s->fn], a, b);
}

static struct fault_site *site_find(enum fault_fn fn, void *const pcs[FAULT_PCS])
{
	unsigned int i;

	for (i = 0; i < n_sites; i++)
		if (sites[i].fn == fn && !memcmp(sites[i].pc, pcs, sizeof(sites[i].pc)))
			return &sites[i];
	if (n_sites == FAULT_MAX_SITES)
		return NULL;
	/* A fresh entry: a slot reused after fault_reset() keeps no count. */
	memset(&sites[n_sites], 0, sizeof(sites[n_sites]));
	sites[n_sites].fn = fn;
	memcpy(sites[n_sites].pc, pcs, sizeof(sites[n_sites].pc));
	return &sites[n_sites++];
}

/*
 * Count a call of @fn that may meet the errno classes @can (bits of
 * FE_*), made from return address @pc (__builtin_return_address(0) of the
 * wrapper). @match: it matches a fault_arm_call() of @fn. Return: 0 to make
 * the real call, or the errno to fail with.
 */
static int check(enum fault_fn fn, const void *pc, unsigned int can, bool match)
{
	void *bt[16], *pcs[FAULT_PCS] = { (void *)(uintptr_t)pc };
	struct fault_site *s;
	int n, k, err = 0;

	if (!marked || inside || !can)
		return 0;
	inside = true;
	/* The caller's caller: the frame after @pc (the shim's own frames vary). */
	n = backtrace(bt, 16);
	for (k = 0; k + 1 < n; k++) {
		if (bt[k] == pc) {
			pcs[1] = bt[k + 1];
			break;
		}
	}
	pthread_mutex_lock(&lock);
	maybe_pause(fn);
	s = site_find(fn, pcs);
	if (s) {
		s->hits++;
		s->errs |= can;
	}
	if (armed.on && !armed.fired && s) {
		bool hit;

		if (armed.by_site)
			hit = armed.site.fn == fn && !memcmp(armed.site.pc, s->pc, sizeof(s->pc)) &&
			      s->hits == armed.nth;
		else
			hit = armed.fn == fn && match && !armed.skip--;
		if (hit) {
			armed.fired = true;
			armed.where = *s;
			err = armed.err;
		}
	}
	pthread_mutex_unlock(&lock);
	inside = false;
	return err;
}

static bool is_socket(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISSOCK(st.st_mode);
}

#define FAIL_IF(check_call)                   \
	do {                                  \
		int fail_err_ = (check_call); \
		if (fail_err_) {              \
			errno = fail_err_;    \
			return -1;            \
		}                             \
	} while (0)

int __wrap_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int __wrap_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	unsigned int can = op == EPOLL_CTL_ADD ? ERR(FE_ENOMEM) | ERR(FE_ENOSPC) :
			   op == EPOLL_CTL_MOD ? ERR(FE_ENOMEM) :
						 0;

	FAIL_IF(check(FAULT_EPOLL_CTL, __builtin_return_address(0), can,
		      op == EPOLL_CTL_ADD && is_socket(fd)));
	return __real_epoll_ctl(epfd, op, fd, ev);
}

int __wrap_epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout);
int __wrap_epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout)
{
	FAIL_IF(check(FAULT_EPOLL_WAIT, __builtin_return_address(0), ERR(FE_EINTR), true));
	return __real_epoll_wait(epfd, ev, n, timeout);
}

int __wrap_poll(struct pollfd *p, nfds_t n, int timeout);
int __wrap_poll(struct pollfd *p, nfds_t n, int timeout)
{
	FAIL_IF(check(FAULT_POLL, __builtin_return_address(0), ERR(FE_EINTR) | ERR(FE_ENOMEM),
		      true));
	return __real_poll(p, n, timeout);
}

int __wrap_socket(int domain, int type, int proto);
int __wrap_socket(int domain, int type, int proto)
{
	FAIL_IF(check(FAULT_SOCKET, __builtin_return_address(0), ERR(FE_EMFILE) | ERR(FE_ENOMEM),
		      true));
	return __real_socket(domain, type, proto);
}

int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	FAIL_IF(check(FAULT_CONNECT, __builtin_return_address(0),
		      ERR(FE_EAGAIN) | ERR(FE_EINTR) | ERR(FE_ENOMEM), true));
	return __real_connect(fd, sa, len);
}

int __wrap_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags);
int __wrap_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	FAIL_IF(check(FAULT_ACCEPT4, __builtin_return_address(0),
		      ERR(FE_EMFILE) | ERR(FE_ENOMEM) | ERR(FE_EAGAIN) | ERR(FE_EINTR), true));
	return __real_accept4(fd, sa, len, flags);
}

/*
 * The device's read() calls are all on level-triggered fds (eventfds, the
 * timerfd, host sockets still writing their CONNECT line): EAGAIN is a real
 * answer there. Its readv()/recv() calls read edge-triggered host sockets
 * after an EPOLLIN edge: there the kernel answers EAGAIN only when the
 * socket is empty, so EAGAIN is not injected (it would stand for data that
 * does not exist).
 */
ssize_t __wrap_read(int fd, void *buf, size_t n);
ssize_t __wrap_read(int fd, void *buf, size_t n)
{
	FAIL_IF(check(FAULT_READ, __builtin_return_address(0), ERR(FE_EAGAIN) | ERR(FE_EINTR),
		      true));
	return __real_read(fd, buf, n);
}

ssize_t __wrap_readv(int fd, const struct iovec *iov, int n);
ssize_t __wrap_readv(int fd, const struct iovec *iov, int n)
{
	FAIL_IF(check(FAULT_READV, __builtin_return_address(0), ERR(FE_EINTR) | ERR(FE_ENOMEM),
		      true));
	return __real_readv(fd, iov, n);
}

ssize_t __wrap_recv(int fd, void *buf, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t n, int flags)
{
	FAIL_IF(check(FAULT_RECV, __builtin_return_address(0), ERR(FE_EINTR) | ERR(FE_ENOMEM),
		      true));
	return __real_recv(fd, buf, n, flags);
}

ssize_t __wrap_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *sa,
			socklen_t *len);
ssize_t __wrap_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *sa, socklen_t *len)
{
	FAIL_IF(check(FAULT_RECVFROM, __builtin_return_address(0), ERR(FE_EINTR) | ERR(FE_ENOMEM),
		      true));
	return __real_recvfrom(fd, buf, n, flags, sa, len);
}

int __wrap_bind(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	FAIL_IF(check(FAULT_BIND, __builtin_return_address(0), ERR(FE_ENOMEM) | ERR(FE_ENOSPC),
		      true));
	return __real_bind(fd, sa, len);
}

ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
	ssize_t r;

	FAIL_IF(check(FAULT_SENDMSG, __builtin_return_address(0),
		      ERR(FE_EAGAIN) | ERR(FE_EINTR) | ERR(FE_ENOMEM), true));
	r = __real_sendmsg(fd, m, flags);
	if (r < 0 && errno == EAGAIN && marked)
		__atomic_add_fetch(&real_eagain, 1, __ATOMIC_RELAXED);
	return r;
}

int __wrap_setsockopt(int fd, int level, int name, const void *v, socklen_t len);
int __wrap_setsockopt(int fd, int level, int name, const void *v, socklen_t len)
{
	FAIL_IF(check(FAULT_SETSOCKOPT, __builtin_return_address(0), ERR(FE_ENOMEM), true));
	return __real_setsockopt(fd, level, name, v, len);
}

int __wrap_fcntl(int fd, int cmd, ...);
int __wrap_fcntl(int fd, int cmd, ...)
{
	bool dup = cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	FAIL_IF(check(FAULT_FCNTL, __builtin_return_address(0), dup ? ERR(FE_EMFILE) : 0, true));
	return __real_fcntl(fd, cmd, arg);
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	if (check(FAULT_MALLOC, __builtin_return_address(0), ERR(FE_ENOMEM), true)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	if (check(FAULT_CALLOC, __builtin_return_address(0), ERR(FE_ENOMEM), true)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}
