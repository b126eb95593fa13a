/* SPDX-License-Identifier: MIT */
/*
 * Device-test fixture: one device (skiff_vsock) driven by one simulated
 * driver, its uds_path under /tmp, plus Check helpers. Every test ends with
 * fx_teardown(), which asserts that the driver saw no protocol error and no
 * credit violation unless the test said it expects some.
 */
#ifndef SKIFF_DEVICE_FIXTURE_H
#define SKIFF_DEVICE_FIXTURE_H

#include <check.h>
#include <pthread.h>
#include <stddef.h>

#include "host_peer.h"
#include "sim_driver.h"

struct fx_opts {
	bool mrg; /* device offers MRG_RXBUF (the driver accepts it unless drv.features says no) */
	bool dgram; /* device offers DGRAM (vsock_dev_config.dgram) */
	unsigned int rx_threads;
	/*
	 * vsock_dev_config.ctl_thread; 0: as SKIFF_TEST_CTL says (own, pump0
	 * or auto; unset: auto), see fx_ctl_thread().
	 */
	unsigned int ctl_thread;
	unsigned int max_conns;
	uint32_t max_host_fds; /* vsock_dev_config.max_host_fds (0: the automatic share) */
	uint32_t conn_buf_size;
	uint32_t rx_pkt_max;
	uint32_t host_wait_ms; /* vsock_dev_config.host_wait_ms (0: default) */
	struct sim_drv_config drv;
	bool no_attach; /* create both sides, do not attach */
	const char *uds_path; /* NULL: a fresh path under /tmp */
	const char *group; /* routing group; NULL: the default one */
	vsock_spawn_fn spawn; /* vsock_dev_config.spawn (NULL: pthread_create) */
	void *spawn_opaque;
};

struct fx {
	char uds[108];
	struct vsock_dev_config dcfg;
	struct vsock_dev *dev;
	struct sim_drv *drv;
	bool expect_proto_errors;
};

void fx_setup(struct fx *fx, const struct fx_opts *o);
/*
 * fx_ctl_thread() - the enum vsock_ctl_thread that SKIFF_TEST_CTL names
 * ("own", "pump0", "auto"; unset or empty: VSOCK_CTL_AUTO); another value
 * fails the test.
 */
unsigned int fx_ctl_thread(void);
/* Destroy the device then the driver; check the driver saw nothing wrong. */
void fx_teardown(struct fx *fx);
void fx_counters(struct fx *fx, struct vsock_dev_counters *c);
/*
 * fx_wait_counter() - poll (1 ms steps) until counter at @off (offsetof in
 * struct vsock_dev_counters) reaches @min. Return: its value (ck_assert'ed
 * >= @min within @timeout_ms).
 */
uint64_t fx_wait_counter(struct fx *fx, size_t off, uint64_t min, int timeout_ms);
#define FX_WAIT(fx, field, min, ms) \
	fx_wait_counter((fx), offsetof(struct vsock_dev_counters, field), (min), (ms))

/* Wait until the counter reaches @v, then check it is exactly @v. */
#define FX_WAIT_EQ(fx, field, v) ck_assert_uint_eq(FX_WAIT((fx), field, (v), FX_T), (v))

/* Open fds of this process (/proc/self/fd), or -1. */
int fx_count_fds(void);
/*
 * fx_wait_fds() - wait (1 ms steps, at most @timeout_ms) until the process
 * has @want fds open: the device closes its side asynchronously.
 * Return: the last count.
 */
int fx_wait_fds(int want, int timeout_ms);
/*
 * fx_wait_quiet() - wait until the device has no connection open and holds
 * no host fd (conns_open and host_fds both 0, ck_assert'ed within FX_T).
 */
void fx_wait_quiet(struct fx *fx);

/* Guest connects to a fresh host listener on @port: returns host fd, sets *c. */
int fx_guest_connect(struct fx *fx, uint32_t port, uint16_t type, struct sim_conn **c, int *lfd);
/* Host connects (CONNECT @port) to a guest listener: returns host fd, sets *c. */
int fx_host_connect(struct fx *fx, struct sim_listener *l, uint32_t port, struct sim_conn **c,
		    uint32_t *host_port);

/*
 * fx_close_both() - the close handshake of a connection, the host (@fd)
 * closing first (the guest gets SHUTDOWN RCV|SEND, answers RST) or the
 * guest (SHUTDOWN, the device's RST, the host reads EOF). Frees @c, closes @fd.
 */
void fx_close_both(int fd, struct sim_conn *c, bool host_first);

/* Move @len pattern bytes host->guest on (@fd, @c) and check the hash. */
void fx_xfer_h2g(int fd, struct sim_conn *c, size_t len, uint64_t seed);
/* Move @len pattern bytes guest->host and check the hash. */
void fx_xfer_g2h(int fd, struct sim_conn *c, size_t len, uint64_t seed);

/* FNV-1a hash of the first @len bytes of the hp_fill() pattern from @seed. */
uint64_t fx_pattern_hash(size_t len, uint64_t seed);

/*
 * A connection moving pattern data both ways at once, one thread per
 * direction and side (guest send, host read, host write, guest recv).
 * fx_pair_check() joins them and checks lengths and hashes. A job that
 * fails notes, at that moment, the credit state of its connection on both
 * sides (sim_conn_info(), vsock_dev_conn_dump()) for the failure message.
 */
enum fx_job_kind { FX_HOST_WRITE, FX_HOST_READ, FX_GUEST_SEND, FX_GUEST_RECV };

struct fx_job {
	enum fx_job_kind kind;
	int fd;
	struct sim_conn *c;
	size_t len;
	uint64_t seed;
	uint64_t hash;
	ssize_t rc;
	pthread_t t;
	struct vsock_dev *dev;
	char diag[768]; /* both sides' state when the job failed */
};

struct fx_pair {
	int fd;
	struct sim_conn *c;
	struct fx_job j[4];
};

void fx_pair_start(struct fx *fx, struct fx_pair *p, size_t g2h, size_t h2g, uint64_t seed);
void fx_pair_check(struct fx_pair *p, int idx);

/* Standard timeout for "eventually" in tests, ms (generous: loaded 2-core CI). */
#define FX_T 10000

/*
 * Add a test in its own TCase named after it, so that one can be run alone
 * with CK_RUN_CASE=<name> (and CK_FORK=no under a debugger).
 */
void fx_add(Suite *s, const TTest *t, int start, int end, int timeout_s);
#define FX_ADD(s, fn, timeout) fx_add((s), (fn), 0, 1, (timeout))
#define FX_ADD_LOOP(s, fn, n, timeout) fx_add((s), (fn), 0, (n), (timeout))

int fx_run_suite(Suite *s);

#endif /* SKIFF_DEVICE_FIXTURE_H */
