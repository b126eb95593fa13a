/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for device tests: a link-time shim (-Wl,--wrap=NAME, see
 * FAULT_WRAP_OPTIONS in CMakeLists.txt) over the system calls and
 * allocations the device makes on paths a guest or a host client reaches.
 *
 * Only calls made by marked threads count: the device threads started
 * through fault_spawn() (a vsock_spawn_fn), or any thread that called
 * fault_thread_mark(true). The simulated driver, the host peers and the
 * test itself are never touched.
 *
 * A call site is where the call comes from: the two innermost return
 * addresses (the caller and its caller), so that one helper called from
 * several places (send_iov() from batch_send(), conn_flush(), send_ok())
 * counts as several sites. In recording mode every site is counted with
 * the errno classes its calls can meet (fault_errs()); with a fault armed,
 * the nth call at that site fails with that errno (-1 and errno set, or
 * NULL for an allocation) without reaching the kernel, once.
 */
#ifndef SKIFF_FAULT_SHIM_H
#define SKIFF_FAULT_SHIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "skiff/vsock_dev.h"

enum fault_fn {
	FAULT_EPOLL_CTL,
	FAULT_EPOLL_WAIT,
	FAULT_POLL,
	FAULT_SOCKET,
	FAULT_CONNECT,
	FAULT_ACCEPT4,
	FAULT_READ,
	FAULT_READV,
	FAULT_RECV,
	FAULT_SENDMSG,
	FAULT_SETSOCKOPT,
	FAULT_FCNTL,
	FAULT_MALLOC,
	FAULT_CALLOC,
	FAULT_RECVFROM,
	FAULT_BIND,
	FAULT_FN_NUM
};

/* The errno classes, as bits of fault_site.errs. */
enum fault_err { FE_ENOMEM, FE_ENOSPC, FE_EMFILE, FE_EAGAIN, FE_EINTR, FE_NUM };

#define FAULT_PCS 2 /* return addresses that name a site */
#define FAULT_MAX_SITES 512

struct fault_site {
	enum fault_fn fn;
	const void *pc[FAULT_PCS];
	uint64_t hits; /* calls counted since fault_reset() */
	unsigned int errs; /* (1u << FE_*) the classes its calls can meet */
};

/* fault_init() - once, before any thread is started. */
void fault_init(void);

/* Count (and possibly fail) the calls of the calling thread from now on, or stop. */
void fault_thread_mark(bool on);

/* A vsock_spawn_fn: pthread_create() of a thread that starts marked. */
int fault_spawn(void *opaque, enum vsock_thread_kind kind, pthread_t *t, void *(*fn)(void *),
		void *arg);

/* Forget every site and disarm. */
void fault_reset(void);

/* The sites counted so far (at most @cap copied). Return: how many there are. */
unsigned int fault_sites(struct fault_site *out, unsigned int cap);

/* Fail the @nth (from 1) call at @site (fn and pcs) with @err, once. */
void fault_arm_site(const struct fault_site *site, int err, uint64_t nth);

/*
 * fault_arm_call() - fail the call after @skip more matching ones of @fn
 * at any site with @err, once. For FAULT_EPOLL_CTL only EPOLL_CTL_ADD of a
 * socket matches.
 */
void fault_arm_call(enum fault_fn fn, int err, unsigned int skip);

/*
 * fault_pause_call() - make the call after @skip more ones of @fn by a
 * thread of @kind (see fault_spawn()) wait, before the real call, until
 * fault_release(). Independent of the armed fault; a new pause replaces
 * one not hit yet.
 */
void fault_pause_call(enum fault_fn fn, enum vsock_thread_kind kind, unsigned int skip);
/* fault_wait_paused() - wait until @n pauses were hit in all. Return: 0; -ETIMEDOUT. */
int fault_wait_paused(unsigned int n, int timeout_ms);
/* fault_release() - let every paused thread go on. */
void fault_release(void);

/* fault_real_eagain() - how many real (not injected) sendmsg() calls of device threads met EAGAIN. */
unsigned long fault_real_eagain(void);

/* Whether the armed fault fired; where (a copy of the site) when @where. */
bool fault_fired(struct fault_site *where);

/* The errno value of class @e; its name. */
int fault_errno(enum fault_err e);
const char *fault_err_name(enum fault_err e);
const char *fault_fn_name(enum fault_fn fn);

/* "sendmsg in batch_send conn.c:301 <- conn_tx_flush conn.c:340" (best effort). */
void fault_describe(const struct fault_site *s, char *buf, size_t len);

#endif /* SKIFF_FAULT_SHIM_H */
