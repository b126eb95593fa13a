/* SPDX-License-Identifier: MIT */
/*
 * skiff_sandbox: one seccomp filter per thread type (libseccomp), for skiff
 * and skiff-vsock. The per-type allowlists and the plan behind them are in
 * sandbox/README.md.
 *
 * Use:
 *   sandbox_init(mode, "skiff")      main thread, before any filter: compiles
 *                                    every type's BPF program, resolves the
 *                                    system call names, installs the SIGSYS
 *                                    handler, starts the spawner thread
 *   sandbox_enter(kind)              on a thread, once its set-up is done
 *   sandbox_spawn(kind, ...)         create a filtered thread (device threads)
 *
 * Filters are inherited by threads a filtered thread creates, and stack (the
 * strictest verdict wins), so threads created after set-up come from the
 * spawner thread, whose own filter is the union of its children's plus what
 * thread creation needs. A thread that only asks the spawner needs neither
 * clone nor mmap for stacks.
 *
 * Modes: KILL traps a forbidden call (SCMP_ACT_TRAP) and the SIGSYS handler
 * writes "<prog>: seccomp: thread '<kind>' made a forbidden system call
 * <name> (<nr>)" to stderr and ends the process by SIGSYS. LOG lets the call
 * through and the kernel logs it (SCMP_ACT_LOG, audit/kernel log). OFF
 * installs nothing.
 */
#ifndef SKIFF_SANDBOX_H
#define SKIFF_SANDBOX_H

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sandbox_mode {
	SANDBOX_OFF = 0,
	SANDBOX_LOG = 1,
	SANDBOX_KILL = 2,
};

/* Thread types; sandbox_kind_name() gives the name used in messages. */
enum sandbox_kind {
	SANDBOX_VMM_MAIN, /* "main": skiff's main thread once the VM runs */
	SANDBOX_VMM_SIGNAL, /* "signal": skiff's SIGINT/SIGTERM thread */
	SANDBOX_VCPU, /* "vcpu" */
	SANDBOX_SERIAL_IN, /* "serial-in": console input (stdin is a tty) */
	SANDBOX_VSOCK_CTL, /* "vsock-ctl": device control thread (TX, kicks, listener) */
	SANDBOX_VSOCK_PUMP, /* "vsock-pump": device RX pump threads */
	SANDBOX_VSOCK_LOBBY, /* "vsock-lobby": holds host clients while the device is stopped */
	SANDBOX_VU_MAIN, /* "vu-main": skiff-vsock's listening/frontend thread */
	SANDBOX_VU_SIGNAL, /* "vu-signal": skiff-vsock's SIGUSR1 counter thread */
	SANDBOX_SPAWNER, /* "spawner": creates the threads of the types above */
	SANDBOX_KIND_NUM,
};

/*
 * sandbox_parse_mode() - "kill", "log" or "off" to a mode.
 * Return: 0; -EINVAL for anything else.
 */
int sandbox_parse_mode(const char *s, enum sandbox_mode *out);

/* sandbox_mode_name() - "kill", "log", "off". */
const char *sandbox_mode_name(enum sandbox_mode mode);

/* sandbox_kind_name() - "vcpu", "vsock-ctl", ... ("?" when out of range). */
const char *sandbox_kind_name(enum sandbox_kind kind);

/*
 * sandbox_init() - set the process up for filtered threads. Call from a
 * thread that has no filter, before the threads to be filtered run. @prog
 * starts the violation message (not copied: a string literal).
 *
 * Process-wide and idempotent: a second call with the same mode is a no-op
 * (also after fork(), where it starts a new spawner in the child).
 * Return: 0; -EBUSY when already set up with another mode; -ENOTSUP when the
 * kernel lacks the seccomp actions the mode needs (LOG needs API level 3,
 * Linux 4.14); -ENOMEM; -errno from libseccomp, memfd_create(2),
 * sigaction(2), pthread_create(3).
 */
int sandbox_init(enum sandbox_mode mode, const char *prog);

/* sandbox_mode() - the mode sandbox_init() set (SANDBOX_OFF before). */
enum sandbox_mode sandbox_mode(void);

/*
 * sandbox_enter() - install @kind's filter on the calling thread (after
 * prctl(PR_SET_NO_NEW_PRIVS)). A no-op when the mode is OFF. In builds with
 * SKIFF_TEST_HOOKS, then makes the forbidden call named in the environment
 * variable SKIFF_TEST_SECCOMP_VIOLATE ("<kind>:<call>", call one of execve,
 * open, socket, ptrace) when <kind> is this thread's.
 * Return: 0; -EINVAL when sandbox_init() was not called; -errno from
 * prctl(2) or seccomp(2).
 */
int sandbox_enter(enum sandbox_kind kind);

/*
 * sandbox_spawn() - like pthread_create(@thread, NULL, @fn, @arg), but the
 * thread is created by the spawner thread and enters @kind's filter before
 * @fn runs; its signal mask blocks every asynchronous signal. The thread is
 * joinable. Without sandbox_init() or in mode OFF it is plain
 * pthread_create() from the caller.
 * Return: 0 or a positive errno, as pthread_create(3).
 */
int sandbox_spawn(enum sandbox_kind kind, pthread_t *thread, void *(*fn)(void *), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* SKIFF_SANDBOX_H */
