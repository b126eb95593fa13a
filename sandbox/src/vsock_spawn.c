// SPDX-License-Identifier: MIT
#include "skiff/sandbox_vsock.h"

int sandbox_vsock_spawn(void *opaque, enum vsock_thread_kind kind, pthread_t *thread,
			void *(*fn)(void *), void *arg)
{
	return sandbox_spawn(kind == VSOCK_THREAD_CTL ? SANDBOX_VSOCK_CTL : SANDBOX_VSOCK_PUMP,
			     thread, fn, arg);
}
