/* SPDX-License-Identifier: MIT */
/*
 * Running the device's threads' work by hand, one step at a time, on the
 * calling thread: for fuzzers and tests that drive the device
 * synchronously (fuzz/fuzz_vsock_tx.c). Internal: not part of
 * skiff/vsock_dev.h.
 *
 * The caller stands in for the control thread and for a pump thread, so
 * neither may run: the device is not started (vsock_dev_start() never
 * called, or stopped) and its lobby thread is stopped (lobby_stop()). The
 * queues are set up by the caller (vq_setup(), as dev_resume() does).
 */
#ifndef SKIFF_VSOCK_DEV_STEP_H
#define SKIFF_VSOCK_DEV_STEP_H

#include <stdbool.h>

struct vsock_dev;
struct pump;

/*
 * ctl_step_claim() - make the calling thread @dev's control thread for
 * ctl_is_current() (a pending CONNECT adopted then arms the kill queue's
 * timer, as on the control thread).
 */
void ctl_step_claim(struct vsock_dev *dev);

/*
 * ctl_step_tx() - one turn of the control thread over the TX queue: pop,
 * validate and handle chains (at most its per-turn budget), publish the
 * used entries; first, free the datagram sockets closed since the last
 * step (dgram_reap()). Return: true when chains are left for another turn.
 */
bool ctl_step_tx(struct vsock_dev *dev);

/*
 * ctl_step_clients() - accept the host clients waiting on the listener and
 * read once from every pending CONNECT line: a complete line connects
 * (REQUEST to the guest), a bad one closes the client, an incomplete one
 * stays pending.
 */
void ctl_step_clients(struct vsock_dev *dev);

/*
 * ctl_step_dgram() - what the control thread does when datagram sockets
 * are readable: dgram_rx() on the gateway and every guest-port socket
 * once, then dgram_reap().
 */
void ctl_step_dgram(struct vsock_dev *dev);

/*
 * pump_step() - one turn of pump @p's loop without waiting: its host
 * socket events, every connection on its work list (served as the pump
 * thread serves them), for pump 0 the conn-less RSTs and packets from
 * other guests, then the used entries published.
 */
void pump_step(struct pump *p);

/*
 * pump_step_end() - what a stopping pump does: publish what is left, give
 * its reserved RX chains back to the pool, drop its retired connections.
 */
void pump_step_end(struct pump *p);

#endif
