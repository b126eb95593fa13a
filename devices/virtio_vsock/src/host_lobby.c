// SPDX-License-Identifier: MIT
/*
 * The lobby: host clients of uds_path while the device is not started.
 *
 * The control thread only runs between vsock_dev_start() and the next
 * stop/reset, and before this file existed nothing accepted on uds_path
 * meanwhile: a host client that connected before the guest driver set
 * DRIVER_OK (or before a vhost-user frontend came) waited in the listen
 * backlog with no answer, for as long as that took. The lobby thread
 * accepts those clients and holds them for at most cfg.host_wait_ms; if
 * the device starts in time they become pending CONNECTs of the control
 * thread (their line, already written, is read then), else they are closed
 * without "OK" (the same refusal as every other: EOF before "OK").
 *
 * It also expires the pending CONNECTs left over from before a
 * vsock_dev_stop(), and refuses clients at EMFILE like the control thread
 * (uds_accept()). It runs only while the control thread does not: started
 * at create and after stop/reset, stopped (joined) before start and
 * destroy, all from the transport's thread, so it shares nothing with the
 * control thread at run time and needs no lock. It is created through
 * dev_spawn() (VSOCK_THREAD_LOBBY) like the other device threads: the
 * transport's thread (a vCPU, vu-main) may be under a seccomp filter that
 * has no clone(2), and a thread inherits its creator's filter.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dev.h"
#include "lobby.h"

/* Close held client @i; the last one takes its place. */
static void lobby_remove(struct vsock_dev *dev, unsigned int i)
{
	struct lobby *lb = &dev->lobby;

	dev_fd_close(dev, lb->fd[i]);
	lb->n--;
	lb->fd[i] = lb->fd[lb->n];
	lb->pid[i] = lb->pid[lb->n];
	lb->since_ms[i] = lb->since_ms[lb->n];
}

/*
 * Hold client @fd of peer @pid: within the fd budget, and when all slots
 * are taken, in the place of another peer's oldest (slot_victim()).
 */
static void lobby_hold(struct vsock_dev *dev, int fd, int64_t now)
{
	struct lobby *lb = &dev->lobby;
	int pid, v;

	if (!dev_fd_admit(dev, fd))
		return;
	pid = uds_peer_pid(fd);
	v = slot_victim(lb->pid, lb->since_ms, lb->n, DEV_MAX_PENDING_CONNECT, pid);
	if (v == SLOT_REFUSE) {
		CTR_ADD(dev, conns_refused, 1);
		dev_fd_close(dev, fd);
		return;
	}
	if (v >= 0) {
		CTR_ADD(dev, conns_refused, 1);
		lobby_remove(dev, (unsigned int)v);
	}
	lb->fd[lb->n] = fd;
	lb->pid[lb->n] = pid;
	lb->since_ms[lb->n] = now;
	lb->n++;
}

/* Close held clients whose wait is over. Return: the next expiry or INT64_MAX. */
static int64_t lobby_expire(struct vsock_dev *dev, int64_t now)
{
	struct lobby *lb = &dev->lobby;
	int64_t next = INT64_MAX;
	unsigned int i = 0;

	while (i < lb->n) {
		int64_t end = lb->since_ms[i] + dev->cfg.host_wait_ms;

		if (end <= now) {
			/* EOF without OK: the device did not start in time */
			CTR_ADD(dev, conns_refused, 1);
			lobby_remove(dev, i);
			continue;
		}
		if (end < next)
			next = end;
		i++;
	}
	return next;
}

/* Accept what the backlog holds. Return: false when out of fds (back off). */
static bool lobby_accept(struct vsock_dev *dev, int64_t now)
{
	for (;;) {
		int fd = uds_accept(dev->listen_fd, &dev->spare_fd);

		if (fd == -ECONNREFUSED) {
			CTR_ADD(dev, conns_refused, 1);
			continue;
		}
		if (fd == -EAGAIN)
			return true;
		if (fd < 0)
			return false;
		lobby_hold(dev, fd, now);
	}
}

static void *lobby_main(void *arg)
{
	struct vsock_dev *dev = arg;
	int64_t paused_until = 0;

	pthread_setname_np(pthread_self(), "vsock-lobby");
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = dev->lobby.wake_fd, .events = POLLIN },
			{ .fd = dev->listen_fd, .events = POLLIN },
		};
		int64_t now = killq_now(&dev->kq), next, pend;
		int timeout, n;

		next = lobby_expire(dev, now);
		pend = ctl_expire_pending(dev, now);
		if (pend < next)
			next = pend;
		if (paused_until > now) {
			p[1].fd = -1; /* out of fds: ignore the listener for a while */
			if (paused_until < next)
				next = paused_until;
		}
		timeout = next == INT64_MAX ? -1 : (int)(next - now > 60000 ? 60000 : next - now);
		n = poll(p, 2, timeout);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && p[0].revents)
			break;
		if (n > 0 && p[1].revents && !lobby_accept(dev, killq_now(&dev->kq)))
			paused_until = killq_now(&dev->kq) + DEV_ACCEPT_BACKOFF_MS;
	}
	return NULL;
}

int lobby_start(struct vsock_dev *dev)
{
	struct lobby *lb = &dev->lobby;
	uint64_t v;
	int ret;

	if (lb->running || dev->listen_fd < 0) /* no host side: nothing to hold */
		return 0;
	if (lb->wake_fd < 0) {
		lb->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (lb->wake_fd < 0)
			return -errno;
	}
	while (read(lb->wake_fd, &v, sizeof(v)) > 0)
		;
	ret = -dev_spawn(dev, VSOCK_THREAD_LOBBY, &lb->thread, lobby_main, dev);
	if (ret)
		return ret;
	lb->running = true;
	return 0;
}

void lobby_stop(struct vsock_dev *dev, bool handover)
{
	struct lobby *lb = &dev->lobby;
	uint64_t one = 1;
	unsigned int i;

	if (lb->running) {
		ssize_t r = write(lb->wake_fd, &one, sizeof(one));

		(void)r;
		pthread_join(lb->thread, NULL);
		lb->running = false;
	}
	if (!handover)
		return;
	for (i = 0; i < lb->n; i++)
		ctl_adopt(dev, lb->fd[i], lb->pid[i]);
	lb->n = 0;
}

void lobby_drop(struct vsock_dev *dev)
{
	struct lobby *lb = &dev->lobby;

	/* closed without "OK": refusals (struct vsock_dev_counters) */
	CTR_ADD(dev, conns_refused, lb->n);
	while (lb->n)
		dev_fd_close(dev, lb->fd[--lb->n]);
}
