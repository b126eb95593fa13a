/* SPDX-License-Identifier: MIT */
/*
 * skiff_mono_ms() - CLOCK_MONOTONIC in milliseconds: the one clock of the
 * device's deadlines (the kill queue, CONNECT lines, the lobby, a paused
 * listener) and of skiff-vsock's listener back-off. Header-only, so that
 * vhost_user/ (which links only the device's public headers into its
 * protocol library) shares it without linking the device.
 */
#ifndef SKIFF_MONO_MS_H
#define SKIFF_MONO_MS_H

#include <stdint.h>
#include <time.h>

static inline int64_t skiff_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
