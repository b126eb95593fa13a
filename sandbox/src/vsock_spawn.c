// SPDX-License-Identifier: MIT
#include <errno.h>

#include "skiff/sandbox_vsock.h"

int sandbox_vsock_spawn(void *opaque, enum vsock_thread_kind kind, pthread_t *thread,
			void *(*fn)(void *), void *arg)
{
	enum sandbox_kind sk;

	(void)opaque;
	switch (kind) {
	case VSOCK_THREAD_CTL:
		sk = SANDBOX_VSOCK_CTL;
		break;
	case VSOCK_THREAD_RX_PUMP:
		sk = SANDBOX_VSOCK_PUMP;
		break;
	case VSOCK_THREAD_LOBBY:
		sk = SANDBOX_VSOCK_LOBBY;
		break;
	default:
		return EINVAL; /* an unknown kind never runs unfiltered */
	}
	return sandbox_spawn(sk, thread, fn, arg);
}
