/* SPDX-License-Identifier: MIT */
/*
 * The lobby thread (host_lobby.c): host clients while the device is not
 * started.
 */
#ifndef SKIFF_VSOCK_LOBBY_H
#define SKIFF_VSOCK_LOBBY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"

struct vsock_dev;

/*
 * Host clients accepted while the device is not started (no DRIVER_OK, no
 * vhost-user frontend), held by the lobby thread for at most host_wait_ms,
 * then closed without OK; handed to the control thread as pending CONNECTs
 * when the device starts. The lobby thread runs only while the control
 * thread does not (host_lobby.c), so the two never share the listener,
 * dev->spare_fd, dev->ctl.pending or dev->ctl.listen_paused.
 */
struct lobby {
	pthread_t thread;
	bool running;
	int wake_fd; /* eventfd: stop */
	unsigned int n;
	int fd[DEV_MAX_PENDING_CONNECT];
	int pid[DEV_MAX_PENDING_CONNECT]; /* SO_PEERCRED of each, for slot_victim() */
	int64_t since_ms[DEV_MAX_PENDING_CONNECT];
};

/* host_lobby.c: see struct lobby. Transport thread, device not started. */
int lobby_start(struct vsock_dev *dev);
/* lobby_stop() - join the lobby thread; with @handover, held clients become pending CONNECTs. */
void lobby_stop(struct vsock_dev *dev, bool handover);
/* lobby_drop() - close every held client (reset, destroy; thread stopped). */
void lobby_drop(struct vsock_dev *dev);

#endif
