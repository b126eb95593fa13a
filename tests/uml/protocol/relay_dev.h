/* SPDX-License-Identifier: MIT */
/*
 * A device handle that is really a vhost-user connection: the simulated
 * driver (tests/support/sim_driver.h) calls vsock_dev_*() on it as it would
 * on a device, and each call becomes the vhost-user requests a frontend
 * (QEMU, UML) would send for it. The test executable is linked with
 * -Wl,--wrap for those functions; calls on any other handle go to the real
 * device model.
 */
#ifndef SKIFF_RELAY_DEV_H
#define SKIFF_RELAY_DEV_H

#include "skiff/vsock_dev.h"

/* The handle to give sim_drv_attach(). */
struct vsock_dev *relay_dev(void);

/*
 * relay_connect() - connect the relay to the backend listening at @path
 * (SET_OWNER, protocol features). Return: 0 or -errno.
 */
int relay_connect(const char *path);

/* relay_disconnect() - close the socket at once, as a frontend that dies. */
void relay_disconnect(void);

/*
 * relay_resend_call() - SET_VRING_CALL again for vring @q with the same fd,
 * as QEMU does right after starting (its guest notifiers come last).
 */
int relay_resend_call(unsigned int q);

/* Number of vhost-user requests the backend rejected (non-zero acks). */
unsigned int relay_nacks(void);

#endif /* SKIFF_RELAY_DEV_H */
