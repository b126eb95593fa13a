/* SPDX-License-Identifier: MIT */
/*
 * Host side of the guest kernel's boot self-test (guest-kernel-patches/
 * test-only/kvm-selftest-0001-*.patch, vsock_selftest.port=P): a thread that
 * accepts the guest's connection on the Unix socket "<uds>_<P>" (where the
 * device sends guest connections to host port P), checks the message and
 * answers it.
 *
 * Wire format (both directions one stream, no framing beyond this):
 *   guest -> host  "skiff-selftest <len> <fnv1a32 %08x>\n" + <len> bytes,
 *                  byte i = (u8)(i * 131 + (i >> 8) + 7), len 4096
 *   host -> guest  "skiff-reply <len> <fnv1a32 %08x>\n" + the bytes reversed
 * then the guest shuts the connection down (the host sees EOF).
 */
#ifndef SKIFF_TESTS_VSOCK_SELFTEST_PEER_H
#define SKIFF_TESTS_VSOCK_SELFTEST_PEER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SELFTEST_PAYLOAD 4096u

struct selftest_peer {
	int listen_fd;
	int conn_fd; /* the guest's connection, -1 before accept */
	int stop_pipe[2]; /* selftest_peer_stop() writes [1]; every wait polls [0] */
	int gate_pipe[2]; /* hold_reply: selftest_peer_release() writes [1] */
	bool hold_reply;
	int budget_ms; /* for the guest to connect, then for each read/write */
	pthread_t thread;
	/* Set by the thread (__atomic), readable while it runs. */
	bool got_message; /* the guest's message was right (reply maybe held) */
	bool checked; /* the guest's message was right and the reply is sent */
	bool guest_closed; /* then the guest closed its side (EOF), nothing more */
	bool done; /* the thread has finished (verdict final) */
	/* Valid after selftest_peer_stop(). */
	int err; /* 0: message checked and reply sent; else -errno */
	char why[160]; /* what failed, for the test's message */
};

/*
 * selftest_peer_start() - listen on @path (a fresh Unix stream socket path)
 * and start the peer thread. With @hold_reply the reply waits (after the
 * message is checked) until selftest_peer_release(), so that the caller can
 * finish other checks before the guest's self-test completes and, with
 * vsock_selftest.poweroff=1, powers the guest off. Return: 0, or -errno from
 * pipe/socket/bind/listen/pthread_create (everything is then closed).
 */
int selftest_peer_start(struct selftest_peer *p, const char *path, int budget_ms, bool hold_reply);

/* selftest_peer_release() - let a held reply go. Return: 0 or -errno. */
int selftest_peer_release(struct selftest_peer *p);

/* selftest_peer_flag() - read one of the flags above while the thread runs. */
bool selftest_peer_flag(const bool *flag);

/*
 * selftest_peer_stop() - make the thread give up waiting (a wait it leaves
 * this way is -ECANCELED, except the wait for EOF after the reply, which is
 * optional), join it, close every descriptor. p->err is then the verdict.
 */
void selftest_peer_stop(struct selftest_peer *p);

#endif
