/* SPDX-License-Identifier: MIT */
/* The device model's thread creation hook, backed by the sandbox's spawner. */
#ifndef SKIFF_SANDBOX_VSOCK_H
#define SKIFF_SANDBOX_VSOCK_H

#include "skiff/sandbox.h"
#include "skiff/vsock_dev.h"

/*
 * sandbox_vsock_spawn() - a vsock_spawn_fn (skiff/vsock_dev.h): the control
 * thread gets the "vsock-ctl" filter, an RX pump "vsock-pump", the lobby
 * "vsock-lobby". @opaque is unused. Return: 0 or a positive errno (see sandbox_spawn()).
 */
int sandbox_vsock_spawn(void *opaque, enum vsock_thread_kind kind, pthread_t *thread,
			void *(*fn)(void *), void *arg);

#endif
