// SPDX-License-Identifier: MIT
/*
 * The spawner thread: creates every thread that starts after set-up (the
 * device's control and RX pump threads, started when the driver sets
 * DRIVER_OK or the vhost-user frontend enables the vrings).
 *
 * Why a thread of its own: a seccomp filter is inherited by the threads its
 * thread creates and stacks with theirs (the strictest verdict wins, Linux
 * kernel/seccomp.c), so a device thread started by a vCPU would only ever be
 * allowed what the vCPU is. The spawner's filter is its children's union plus
 * clone; callers only post a request and sleep on a futex.
 *
 * Requests are a list under sp_lock; requester and spawner wait on sp_cond.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "sandbox_int.h"

struct spawn_req {
	enum sandbox_kind kind;
	void *(*fn)(void *);
	void *arg;
	pthread_t thread;
	int err; /* positive errno, as pthread_create */
	bool done;
	struct spawn_req *next;
};

/* What the new thread needs before @fn runs (freed by it). */
struct tramp {
	enum sandbox_kind kind;
	void *(*fn)(void *);
	void *arg;
};

static pthread_mutex_t sp_lock = PTHREAD_MUTEX_INITIALIZER; /* protects sp_* below */
static pthread_cond_t sp_cond = PTHREAD_COND_INITIALIZER;
static struct spawn_req *sp_head;
static pid_t sp_pid; /* process the spawner runs in (0: none); fork leaves it behind */

static void die(const char *msg)
{
	ssize_t w = write(STDERR_FILENO, msg, __builtin_strlen(msg));

	(void)w;
	_exit(70);
}

static void *trampoline(void *p)
{
	struct tramp t = *(struct tramp *)p;

	free(p);
	/* Refusing to run the thread unfiltered is the only safe answer. */
	if (sandbox_enter(t.kind))
		die("skiff: seccomp: cannot install a device thread's filter\n");
	return t.fn(t.arg);
}

static int spawn_now(struct spawn_req *r)
{
	struct tramp *t = malloc(sizeof(*t));
	int err;

	if (!t)
		return ENOMEM;
	t->kind = r->kind;
	t->fn = r->fn;
	t->arg = r->arg;
	err = pthread_create(&r->thread, NULL, trampoline, t);
	if (err)
		free(t);
	return err;
}

static void *spawner_main(void *unused)
{
	if (sandbox_enter(SANDBOX_SPAWNER))
		die("skiff: seccomp: cannot install the spawner's filter\n");
	pthread_mutex_lock(&sp_lock);
	for (;;) {
		struct spawn_req *r;

		while (!sp_head)
			pthread_cond_wait(&sp_cond, &sp_lock);
		r = sp_head;
		sp_head = r->next;
		pthread_mutex_unlock(&sp_lock);
		r->err = spawn_now(r);
		pthread_mutex_lock(&sp_lock);
		r->done = true;
		pthread_cond_broadcast(&sp_cond);
	}
	return NULL;
}

int sandbox_spawner_start(void)
{
	sigset_t all, old;
	pthread_t t;
	int err = 0;

	pthread_mutex_lock(&sp_lock);
	if (sp_pid == getpid())
		goto out;
	/* Children inherit the mask: asynchronous signals are for other threads. */
	sigfillset(&all);
	sigdelset(&all, SIGSYS);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGABRT);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&t, NULL, spawner_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		goto out;
	pthread_detach(t);
	sp_head = NULL; /* a fork child may have inherited requests of no thread */
	sp_pid = getpid();
out:
	pthread_mutex_unlock(&sp_lock);
	return -err;
}

int sandbox_spawn(enum sandbox_kind kind, pthread_t *thread, void *(*fn)(void *), void *arg)
{
	struct spawn_req r = { .kind = kind, .fn = fn, .arg = arg };
	int err;

	if (sandbox_mode() == SANDBOX_OFF)
		return pthread_create(thread, NULL, fn, arg);
	err = -sandbox_spawner_start(); /* after a fork: this process's own spawner */
	if (err)
		return err;
	pthread_mutex_lock(&sp_lock);
	r.next = sp_head;
	sp_head = &r;
	pthread_cond_broadcast(&sp_cond);
	while (!r.done)
		pthread_cond_wait(&sp_cond, &sp_lock);
	pthread_mutex_unlock(&sp_lock);
	if (!r.err)
		*thread = r.thread;
	return r.err;
}
