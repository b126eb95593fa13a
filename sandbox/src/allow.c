// SPDX-License-Identifier: MIT
/*
 * The allowlists, one per thread type (sandbox/README.md explains each
 * entry). Everything not listed hits the filter's default action (TRAP in
 * kill mode, LOG in log mode).
 *
 * Names, never numbers: SCMP_SYS() resolves them for the architecture built
 * for. arm64 (asm-generic system calls) has none of x86-64's legacy calls
 * (poll, unlink, open, stat, epoll_wait, ...): glibc makes them with ppoll,
 * unlinkat, openat, newfstatat, epoll_pwait there, so every list that names a
 * legacy call names its replacement too. A legacy name on arm64 is one of
 * libseccomp's negative pseudo numbers, which seccomp_rule_add() leaves out
 * of that architecture's filter (no error).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox_int.h"

/* libseccomp reports a rule that an earlier one already covers as -EEXIST. */
static int allow(scmp_filter_ctx ctx, int nr)
{
	int ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);

	return ret == -EEXIST ? 0 : ret;
}

static int allow_if(scmp_filter_ctx ctx, int nr, struct scmp_arg_cmp cmp)
{
	int ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, cmp);

	return ret == -EEXIST ? 0 : ret;
}

static int allow_list(scmp_filter_ctx ctx, const int *nrs, size_t n)
{
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = allow(ctx, nrs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

#define ALLOW_LIST(ctx, arr) allow_list(ctx, arr, sizeof(arr) / sizeof(arr[0]))

/*
 * The kick signal of libskiff's vCPU threads (SKIFF_KICK_SIGNAL in
 * vmm/src/vm.h): threads that end the VM send it to every vCPU.
 */
#define VMM_KICK_SIGNAL (SIGRTMIN + 6)

/*
 * tgkill(2) of signal @sig to a thread of this process only (the filters are
 * compiled in the process that installs them; a fork child has another pid
 * and cannot signal).
 */
static int allow_signal(scmp_filter_ctx ctx, int sig)
{
	int ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 2,
				   SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()),
				   SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)sig));

	return ret == -EEXIST ? 0 : ret;
}

/* Every thread: locks, signal return, memory for malloc, its own death. */
static int add_common(scmp_filter_ctx ctx)
{
	static const int nrs[] = {
		SCMP_SYS(futex),	  SCMP_SYS(exit),
		SCMP_SYS(exit_group),	  SCMP_SYS(rt_sigreturn),
		SCMP_SYS(rt_sigprocmask), SCMP_SYS(restart_syscall),
		SCMP_SYS(getpid),	  SCMP_SYS(gettid),
		SCMP_SYS(clock_gettime),  SCMP_SYS(clock_nanosleep),
		SCMP_SYS(nanosleep),	  SCMP_SYS(sched_yield),
		SCMP_SYS(getrandom),	  SCMP_SYS(brk),
		SCMP_SYS(munmap),	  SCMP_SYS(madvise),
		SCMP_SYS(mremap),
	};
	int ret = ALLOW_LIST(ctx, nrs);

	/* malloc arenas and thread stacks, never executable */
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(mmap), SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(mprotect), SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* the SIGSYS handler: its message, then SIGSYS to itself */
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(write), SCMP_A0(SCMP_CMP_EQ, 2));
	if (!ret)
		ret = allow_signal(ctx, SIGSYS);
#ifdef SKIFF_SANITIZED
	if (!ret)
		ret = sandbox_add_sanitizer(ctx);
#endif
	return ret;
}

static int allow_kick(scmp_filter_ctx ctx)
{
	return allow_signal(ctx, VMM_KICK_SIGNAL);
}

static int allow_ioctls(scmp_filter_ctx ctx, const unsigned long *reqs, size_t n)
{
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = allow_if(ctx, SCMP_SYS(ioctl), SCMP_A1(SCMP_CMP_EQ, reqs[i]));
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Device calls made by the transport's thread (vCPU or vu-main):
 * vsock_dev_stop/reset/destroy join the device threads, close connections,
 * take the listener's backlog, disarm the timer; a start asks the spawner.
 */
static const int dev_control_nrs[] = {
	SCMP_SYS(close),
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(accept4),
	SCMP_SYS(timerfd_settime),
	SCMP_SYS(shutdown),
	SCMP_SYS(read),
	SCMP_SYS(write),
	/* glibc's qsort (the RX chain pool on stop) sizes its buffer by RAM: sysinfo */
	SCMP_SYS(sysinfo),
};

static int add_vcpu(scmp_filter_ctx ctx)
{
	static const unsigned long reqs[] = {
		KVM_RUN,
		KVM_GET_REGS,
		KVM_SET_REGS,
		KVM_GET_SREGS,
		KVM_TRANSLATE,
		KVM_GET_VCPU_EVENTS,
		KVM_SET_VCPU_EVENTS,
		KVM_IRQ_LINE,
		KVM_GET_FPU, /* the fwait answer (vmm/arch/x86_64/x86.c) */
		/*
		 * arm64's exit messages read PC, PSTATE, SP_EL1
		 * (vmm/arch/aarch64/arm64_vcpu.c); allowed on every
		 * architecture, so that one table of call sites
		 * (tests/seccomp/test_ioctl_sites.c) holds for both
		 */
		KVM_GET_ONE_REG,
	};
	int ret = allow_ioctls(ctx, reqs, sizeof(reqs) / sizeof(reqs[0]));

	if (!ret)
		ret = ALLOW_LIST(ctx, dev_control_nrs);
	if (!ret)
		ret = allow_kick(ctx);
	if (!ret)
		ret = seccomp_syscall_priority(ctx, SCMP_SYS(ioctl), 255);
	return ret;
}

/* skiff's main thread once the VM runs: wait, then tear everything down. */
static int add_vmm_main(scmp_filter_ctx ctx)
{
	/* virtio-mmio teardown: deassign its ioeventfds and irqfd */
	static const unsigned long reqs[] = { KVM_IOEVENTFD, KVM_IRQFD };
	static const int nrs[] = { SCMP_SYS(unlink), SCMP_SYS(unlinkat), SCMP_SYS(fstat),
				   SCMP_SYS(newfstatat), SCMP_SYS(lseek) };
	int ret = allow_ioctls(ctx, reqs, sizeof(reqs) / sizeof(reqs[0]));

	if (!ret)
		ret = ALLOW_LIST(ctx, dev_control_nrs);
	if (!ret)
		ret = ALLOW_LIST(ctx, nrs);
	if (!ret)
		ret = allow_kick(ctx);
	return ret;
}

/* sigwait(), then skiff_vm_stop(). */
static int add_vmm_signal(scmp_filter_ctx ctx)
{
	int ret = allow(ctx, SCMP_SYS(rt_sigtimedwait));

	if (!ret)
		ret = allow(ctx, SCMP_SYS(write));
	if (!ret)
		ret = allow_kick(ctx);
	return ret;
}

/* poll stdin and the stop eventfd, read, raise the UART interrupt. */
static int add_serial_in(scmp_filter_ctx ctx)
{
	static const int nrs[] = { SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(read),
				   SCMP_SYS(write) };
	int ret = ALLOW_LIST(ctx, nrs);

	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(ioctl), SCMP_A1(SCMP_CMP_EQ, KVM_IRQ_LINE));
	return ret;
}

/* Host socket I/O shared by both device thread types. */
static const int dev_io_nrs[] = {
	SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),	 SCMP_SYS(read),       SCMP_SYS(write),
	SCMP_SYS(readv),      SCMP_SYS(writev),		 SCMP_SYS(sendmsg),    SCMP_SYS(recvmsg),
	SCMP_SYS(sendto),     SCMP_SYS(recvfrom),	 SCMP_SYS(close),      SCMP_SYS(epoll_ctl),
	SCMP_SYS(shutdown),   SCMP_SYS(timerfd_settime), SCMP_SYS(getsockopt), SCMP_SYS(setsockopt),
	SCMP_SYS(poll),	      SCMP_SYS(ppoll),
};

static int add_dev_io(scmp_filter_ctx ctx)
{
	int ret = ALLOW_LIST(ctx, dev_io_nrs);

	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(prctl), SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
	if (!ret)
		ret = seccomp_syscall_priority(ctx, SCMP_SYS(epoll_wait), 250);
	if (!ret)
		ret = seccomp_syscall_priority(ctx, SCMP_SYS(sendmsg), 250);
	if (!ret)
		ret = seccomp_syscall_priority(ctx, SCMP_SYS(readv), 250);
	return ret;
}

/*
 * Out of fds, uds_accept() (host_uds.c) gives back its reserved fd, takes the
 * client off the backlog, closes it and reserves again with
 * fcntl(listener, F_DUPFD_CLOEXEC, 0): that command only.
 */
static int allow_spare_fd(scmp_filter_ctx ctx)
{
	return allow_if(ctx, SCMP_SYS(fcntl), SCMP_A1(SCMP_CMP_EQ, F_DUPFD_CLOEXEC));
}

/*
 * The control thread is the only device thread that makes host sockets:
 * accept4 on the listener (host-initiated), socket(AF_UNIX) + connect to
 * <uds>_<port> (guest-initiated), and with datagrams (dgram.c,
 * host_dgram.c) socket(AF_UNIX) + bind of a guest port's socket at
 * <uds>_dgram_g<port>: a stale socket file there is checked (lstat:
 * newfstatat), tried (connect) and removed (unlink), as are the sockets it
 * reclaims.
 */
static int add_vsock_ctl(scmp_filter_ctx ctx)
{
	static const int dgram_nrs[] = { SCMP_SYS(bind), SCMP_SYS(unlink), SCMP_SYS(unlinkat),
					 SCMP_SYS(newfstatat) };
	int ret = add_dev_io(ctx);

	if (!ret)
		ret = ALLOW_LIST(ctx, dgram_nrs);
	if (!ret)
		ret = allow(ctx, SCMP_SYS(accept4));
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(socket), SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	if (!ret)
		ret = allow(ctx, SCMP_SYS(connect));
	if (!ret)
		ret = allow_spare_fd(ctx);
	return ret;
}

static int add_vsock_pump(scmp_filter_ctx ctx)
{
	return add_dev_io(ctx);
}

/*
 * The lobby (devices/virtio_vsock/src/host_lobby.c), while the device is not
 * started: poll its wake eventfd (never read there) and the listener, accept4
 * host clients and hold them, close them when their wait is over, and expire
 * the pending CONNECTs left from before a stop (epoll_ctl(EPOLL_CTL_DEL) from
 * the control thread's epoll, close). Its name: prctl(PR_SET_NAME). Each
 * client's pid, for the fair share of the slots (slot_victim()):
 * getsockopt(SOL_SOCKET, SO_PEERCRED) only.
 */
static int add_vsock_lobby(scmp_filter_ctx ctx)
{
	static const int nrs[] = { SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(accept4),
				   SCMP_SYS(close) };
	int ret = ALLOW_LIST(ctx, nrs);

	if (!ret)
		ret = allow_spare_fd(ctx);
	if (!ret) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(getsockopt), 2,
				       SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
				       SCMP_A2(SCMP_CMP_EQ, SO_PEERCRED));
		ret = ret == -EEXIST ? 0 : ret;
	}
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(epoll_ctl), SCMP_A1(SCMP_CMP_EQ, EPOLL_CTL_DEL));
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(prctl), SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
	return ret;
}

/* skiff-vsock's frontend thread: vhost-user messages, memory table, device control. */
static int add_vu_main(scmp_filter_ctx ctx)
{
	static const int nrs[] = {
		SCMP_SYS(poll),	      SCMP_SYS(ppoll),	    SCMP_SYS(recvmsg), SCMP_SYS(sendmsg),
		SCMP_SYS(recvfrom),   SCMP_SYS(sendto),	    SCMP_SYS(fstat),   SCMP_SYS(newfstatat),
		SCMP_SYS(setsockopt), SCMP_SYS(getsockopt), SCMP_SYS(unlink),  SCMP_SYS(unlinkat),
		SCMP_SYS(lseek),
	};
	int ret = ALLOW_LIST(ctx, dev_control_nrs);

	if (!ret)
		ret = ALLOW_LIST(ctx, nrs);
	/* the type of a frontend's fd: its /proc/self/fd link (vhost_user/vu_fd.c) */
	if (!ret)
		ret = allow(ctx, SCMP_SYS(readlinkat));
	/* F_GETFL/F_SETFL: kick, call and err fds made non-blocking (vu_fd.c) */
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(fcntl), SCMP_A1(SCMP_CMP_EQ, F_GETFL));
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(fcntl), SCMP_A1(SCMP_CMP_EQ, F_SETFL));
	return ret;
}

static int add_vu_signal(scmp_filter_ctx ctx)
{
	int ret = allow(ctx, SCMP_SYS(rt_sigtimedwait));

	if (!ret)
		ret = allow(ctx, SCMP_SYS(write));
	return ret;
}

/*
 * The spawner: thread creation (clone with CLONE_THREAD only; clone3 says
 * ENOSYS so that glibc falls back to clone, whose flags a filter can read),
 * the new thread's start-up and filter installation, and, because a filter
 * is inherited and the strictest verdict wins, everything its children need.
 */
static int add_spawner(scmp_filter_ctx ctx)
{
	static const int nrs[] = { SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
				   SCMP_SYS(sigaltstack) };
	int ret = add_vsock_ctl(ctx);

	if (!ret)
		ret = add_vsock_pump(ctx);
	if (!ret)
		ret = add_vsock_lobby(ctx);
	if (!ret)
		ret = ALLOW_LIST(ctx, nrs);
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(clone),
			       SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(prctl), SCMP_A0(SCMP_CMP_EQ, PR_SET_NO_NEW_PRIVS));
	if (!ret)
		ret = allow_if(ctx, SCMP_SYS(seccomp),
			       SCMP_A0(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER));
	return ret;
}

int sandbox_add_rules(scmp_filter_ctx ctx, enum sandbox_kind kind)
{
	int ret = add_common(ctx);

	if (ret)
		return ret;
	switch (kind) {
	case SANDBOX_VMM_MAIN:
		return add_vmm_main(ctx);
	case SANDBOX_VMM_SIGNAL:
		return add_vmm_signal(ctx);
	case SANDBOX_VCPU:
		return add_vcpu(ctx);
	case SANDBOX_SERIAL_IN:
		return add_serial_in(ctx);
	case SANDBOX_VSOCK_CTL:
		return add_vsock_ctl(ctx);
	case SANDBOX_VSOCK_PUMP:
		return add_vsock_pump(ctx);
	case SANDBOX_VSOCK_LOBBY:
		return add_vsock_lobby(ctx);
	case SANDBOX_VU_MAIN:
		return add_vu_main(ctx);
	case SANDBOX_VU_SIGNAL:
		return add_vu_signal(ctx);
	case SANDBOX_SPAWNER:
		return add_spawner(ctx);
	case SANDBOX_KIND_NUM:
		break;
	}
	return -EINVAL;
}
