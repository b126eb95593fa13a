// SPDX-License-Identifier: MIT
/*
 * Tiny vsock guests on skiff's virtio-mmio transport and the real device
 * model: byte-exact data both ways, with and without MRG_RXBUF and
 * EVENT_IDX, guest-initiated (to a host listener at <uds>_<port>) and
 * host-initiated ("CONNECT <port>\n"), refused connections; and the driver
 * and the device agree on every feature bit.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "skiff/vsock_abi.h"
#include "vmm_test_util.h"

#define MEM (64ull << 20)
#define CID 42
#define PORT 1234
#define TIMEOUT_MS 90000

/* Same stream and checksum as tests/guests/lib/guest.h. */
static uint8_t pattern_byte(uint64_t i)
{
	return (uint8_t)((i * 7) ^ (i >> 8) ^ (i >> 17) ^ 0x5a);
}

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t pattern_fnv(uint64_t len)
{
	uint64_t h = 0xcbf29ce484222325ull, i;

	for (i = 0; i < len; i++) {
		uint8_t b = pattern_byte(i);

		h = fnv1a(h, &b, 1);
	}
	return h;
}

/* A host peer listening at <uds>_<port> that echoes and checks every byte. */
struct echo_peer {
	int lfd;
	pthread_t th;
	uint64_t received, bad, echoed;
	int err;
};

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	unlink(path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *echo_thread(void *arg)
{
	struct echo_peer *e = arg;
	struct pollfd p = { .fd = e->lfd, .events = POLLIN };
	static __thread uint8_t buf[65536];
	int fd;

	if (poll(&p, 1, TIMEOUT_MS) != 1) {
		e->err = -ETIMEDOUT;
		return NULL;
	}
	fd = accept4(e->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		e->err = -errno;
		return NULL;
	}
	for (;;) {
		struct pollfd q = { .fd = fd, .events = POLLIN };
		ssize_t n, i;

		if (poll(&q, 1, TIMEOUT_MS) != 1) {
			e->err = -ETIMEDOUT;
			break;
		}
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			e->bad += buf[i] != pattern_byte(e->received + (uint64_t)i);
		e->received += (uint64_t)n;
		if (write_all(fd, buf, (size_t)n))
			break;
		e->echoed += (uint64_t)n;
	}
	close(fd);
	return NULL;
}

struct vsock_run {
	char dir[64], uds[128];
	struct skiff_vm *vm;
	struct skiff_exit ex;
	struct skiff_counters c;
};

static void start_vm(struct vsock_run *r, const char *guest, const char *cmdline, bool dev_mrg)
{
	/* The control work on pump 0 (the 2-CPU default) on any machine; see below for OWN. */
	struct skiff_vsock_config vc = { .guest_cid = CID,
					 .rx_threads = 2,
					 .mrg_rxbuf = dev_mrg,
					 .ctl_thread = SKIFF_VSOCK_CTL_ON_PUMP0 };

	make_tmpdir(r->dir, sizeof(r->dir));
	ck_assert(r->dir[0]);
	snprintf(r->uds, sizeof(r->uds), "%s/v.sock", r->dir);
	vc.uds_path = r->uds;
	ck_assert_int_eq(skiff_vm_create(&r->vm), 0);
	ck_assert_int_eq(skiff_vm_set_kernel(r->vm, guest_path(guest), SKIFF_KERNEL_TINY), 0);
	ck_assert_int_eq(skiff_vm_set_cmdline(r->vm, cmdline), 0);
	ck_assert_int_eq(skiff_vm_set_memory(r->vm, MEM), 0);
	ck_assert_int_eq(skiff_vm_set_console(r->vm, SKIFF_CONSOLE_NONE, NULL, -1), 0);
	ck_assert_int_eq(skiff_vm_set_vsock(r->vm, &vc), 0);
	/* Filters on (issue 10): every transfer here proves the allowlists complete. */
	ck_assert_int_eq(skiff_vm_set_seccomp(r->vm, SKIFF_SECCOMP_KILL), 0);
}

static void finish_vm(struct vsock_run *r)
{
	int err = skiff_vm_wait(r->vm, TIMEOUT_MS, &r->ex);

	if (err == -ETIMEDOUT) {
		skiff_vm_stop(r->vm);
		skiff_vm_wait(r->vm, -1, &r->ex);
	}
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(skiff_vm_get_counters(r->vm, &r->c), 0);
}

static uint64_t report(struct vsock_run *r, unsigned int slot)
{
	uint64_t v = 0;

	ck_assert_msg(skiff_vm_get_report(r->vm, slot, &v) == 0, "guest did not report slot %u",
		      slot);
	return v;
}

static void cleanup(struct vsock_run *r)
{
	char path[160];

	skiff_vm_destroy(r->vm);
	/* The device unlinks its listener; nothing else may be left behind. */
	ck_assert_int_eq(access(r->uds, F_OK), -1);
	snprintf(path, sizeof(path), "%s_%d", r->uds, PORT);
	unlink(path);
	ck_assert_int_eq(rmdir(r->dir), 0);
}

/* Driver view (report 0), transport view and device offer all agree. */
static void check_features(struct vsock_run *r, bool want_mrg, bool want_evidx, bool dev_mrg)
{
	uint64_t drv = report(r, 0), dev = report(r, 10);
	uint64_t expect = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_VSOCK_F_STREAM);

	ck_assert(r->c.vsock_present);
	ck_assert_uint_eq(dev, r->c.vsock_device_features);
	ck_assert_uint_eq(drv, r->c.vsock_driver_features);
	ck_assert_uint_eq(drv & ~dev, 0);
	ck_assert_uint_eq(!!(dev & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)), dev_mrg);
	if (want_mrg && dev_mrg)
		expect |= 1ull << VIRTIO_VSOCK_F_MRG_RXBUF;
	if (want_evidx)
		expect |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	ck_assert_uint_eq(drv, expect);
	ck_assert_uint_eq(report(r, 1), CID);
}

static void echo_case(bool guest_mrg, bool evidx, bool dev_mrg, unsigned int mib)
{
	struct vsock_run r;
	struct echo_peer e = { 0 };
	char cmd[128], peer[160];
	uint64_t total = (uint64_t)mib << 20, fnv = pattern_fnv(total);

	snprintf(cmd, sizeof(cmd), "port=%d mib=%u mode=0 mrg=%d evidx=%d", PORT, mib, guest_mrg,
		 evidx);
	start_vm(&r, "guest_vsock_echo", cmd, dev_mrg);
	snprintf(peer, sizeof(peer), "%s_%d", r.uds, PORT);
	e.lfd = listen_unix(peer);
	ck_assert_int_eq(pthread_create(&e.th, NULL, echo_thread, &e), 0);
	ck_assert_int_eq(skiff_vm_start(r.vm), 0);
	finish_vm(&r);
	ck_assert_msg(r.ex.reason == SKIFF_EXIT_GUEST_CODE && r.ex.code == 0,
		      "guest ended %s code %llu: %s", skiff_exit_reason_name(r.ex.reason),
		      (unsigned long long)r.ex.code, r.ex.message);
	pthread_join(e.th, NULL);
	close(e.lfd);
	ck_assert_int_eq(e.err, 0);
	/* host side: every byte, in order */
	ck_assert_uint_eq(e.received, total);
	ck_assert_uint_eq(e.bad, 0);
	ck_assert_uint_eq(e.echoed, total);
	/* guest side: sent and received the same bytes, byte for byte */
	ck_assert_uint_eq(report(&r, 2), total);
	ck_assert_uint_eq(report(&r, 3), fnv);
	ck_assert_uint_eq(report(&r, 4), total);
	ck_assert_uint_eq(report(&r, 5), fnv);
	ck_assert_uint_eq(report(&r, 6), 0);
	check_features(&r, guest_mrg, evidx, dev_mrg);
	/* device counters saw the payload both ways */
	ck_assert_uint_eq(r.c.vsock_tx_bytes, total);
	ck_assert_uint_eq(r.c.vsock_rx_bytes, total);
	ck_assert_uint_eq(r.c.vsock_malformed_pkts, 0);
	ck_assert_uint_ge(r.c.vsock_conns_opened, 1);
	cleanup(&r);
}

START_TEST(echo_plain)
{
	echo_case(false, true, false, 4);
}
END_TEST

START_TEST(echo_mrg_rxbuf)
{
	echo_case(true, true, true, 4);
}
END_TEST

START_TEST(echo_mrg_offered_not_taken_no_event_idx)
{
	echo_case(false, false, true, 2);
}
END_TEST

START_TEST(echo_mrg_wanted_not_offered)
{
	echo_case(true, false, false, 2);
}
END_TEST

static int read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, TIMEOUT_MS) != 1 || read(fd, buf + n, 1) != 1)
			return -1;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = 0;
	return 0;
}

static void listen_case(bool mrg)
{
	const uint64_t total = 1u << 20;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vsock_run r;
	char line[64], cmd[64];
	uint64_t got = 0, bad = 0, off = 0;
	unsigned int host_port;
	uint8_t *buf = malloc(total);
	int fd, con[2];

	ck_assert_ptr_nonnull(buf);
	snprintf(cmd, sizeof(cmd), "port=5000 mrg=%d", mrg);
	start_vm(&r, "guest_vsock_listen", cmd, mrg);
	/*
	 * The guest resets the device while it initialises (as Linux does), which
	 * drops CONNECTs made before: wait for its "listening" on the console.
	 */
	ck_assert_int_eq(pipe(con), 0);
	ck_assert_int_eq(skiff_vm_set_console(r.vm, SKIFF_CONSOLE_FD, NULL, con[1]), 0);
	ck_assert_int_eq(skiff_vm_start(r.vm), 0);
	ck_assert_int_eq(read_line(con[0], line, sizeof(line)), 0);
	ck_assert_str_eq(line, "listening\n");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_uint_lt(strlen(r.uds), sizeof(sa.sun_path));
	memcpy(sa.sun_path, r.uds, strlen(r.uds) + 1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write_all(fd, (const uint8_t *)"CONNECT 5000\n", 13), 0);
	ck_assert_int_eq(read_line(fd, line, sizeof(line)), 0);
	ck_assert_int_eq(sscanf(line, "OK %u\n", &host_port), 1);
	for (uint64_t i = 0; i < total; i++)
		buf[i] = pattern_byte(i);
	/* Interleave writes and reads so neither side's buffers fill up. */
	while (got < total) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (off < total ? POLLOUT : 0) };
		uint8_t in[65536];
		ssize_t n, i;

		ck_assert_int_eq(poll(&p, 1, TIMEOUT_MS), 1);
		if ((p.revents & POLLOUT) && off < total) {
			n = write(fd, buf + off, total - off > 65536 ? 65536 : total - off);
			ck_assert_int_gt(n, 0);
			off += (uint64_t)n;
			if (off == total)
				shutdown(fd, SHUT_WR);
		}
		if (p.revents & POLLIN) {
			n = read(fd, in, sizeof(in));
			ck_assert_int_gt(n, 0);
			for (i = 0; i < n; i++)
				bad += in[i] != pattern_byte(got + (uint64_t)i);
			got += (uint64_t)n;
		}
	}
	ck_assert_uint_eq(got, total);
	ck_assert_uint_eq(bad, 0);
	finish_vm(&r);
	ck_assert_msg(r.ex.reason == SKIFF_EXIT_GUEST_CODE && r.ex.code == 0,
		      "guest ended %s code %llu: %s", skiff_exit_reason_name(r.ex.reason),
		      (unsigned long long)r.ex.code, r.ex.message);
	ck_assert_uint_eq(report(&r, 4), total);
	ck_assert_uint_eq(report(&r, 2), total);
	ck_assert_uint_eq(report(&r, 5), pattern_fnv(total));
	ck_assert_uint_eq(report(&r, 13), host_port);
	ck_assert_uint_eq(report(&r, 0), r.c.vsock_driver_features);
	ck_assert_uint_eq(!!(r.c.vsock_driver_features & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)), mrg);
	/* the guest reset the connection: the host sees EOF */
	ck_assert_int_eq(read(fd, line, sizeof(line)), 0);
	close(fd);
	free(buf);
	cleanup(&r);
	close(con[0]);
	close(con[1]);
}

START_TEST(host_connect_plain)
{
	listen_case(false);
}
END_TEST

START_TEST(host_connect_mrg_rxbuf)
{
	listen_case(true);
}
END_TEST

/* Two vsock VMs in one process at the same time, each with its own device and peer. */
START_TEST(two_vsock_vms_one_process)
{
	struct vsock_run r[2];
	struct echo_peer e[2];
	char cmd[128], peer[160];
	const uint64_t total = 2u << 20;
	unsigned int i;

	memset(e, 0, sizeof(e));
	for (i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "port=%d mib=2 mode=0 mrg=%u", PORT, i);
		start_vm(&r[i], "guest_vsock_echo", cmd, i == 1);
		if (i == 1) {
			/* CIDs are unique in a routing group (one per process by default). */
			struct skiff_vsock_config vc = { .guest_cid = CID + 1,
							 .uds_path = r[i].uds,
							 .rx_threads = 2,
							 .mrg_rxbuf = true,
							 /* and the other layout */
							 .ctl_thread = SKIFF_VSOCK_CTL_OWN };

			ck_assert_int_eq(skiff_vm_set_vsock(r[i].vm, &vc), 0);
		}
		snprintf(peer, sizeof(peer), "%s_%d", r[i].uds, PORT);
		e[i].lfd = listen_unix(peer);
		ck_assert_int_eq(pthread_create(&e[i].th, NULL, echo_thread, &e[i]), 0);
	}
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(skiff_vm_start(r[i].vm), 0);
	for (i = 0; i < 2; i++) {
		finish_vm(&r[i]);
		ck_assert_msg(r[i].ex.reason == SKIFF_EXIT_GUEST_CODE && r[i].ex.code == 0,
			      "VM %u: %s: %s", i, skiff_exit_reason_name(r[i].ex.reason),
			      r[i].ex.message);
		pthread_join(e[i].th, NULL);
		close(e[i].lfd);
		ck_assert_uint_eq(e[i].received, total);
		ck_assert_uint_eq(e[i].bad, 0);
		ck_assert_uint_eq(report(&r[i], 5), pattern_fnv(total));
		ck_assert_uint_eq(r[i].c.vsock_rx_bytes, total);
		ck_assert_uint_eq(
			!!(r[i].c.vsock_driver_features & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)), i);
	}
	for (i = 0; i < 2; i++)
		cleanup(&r[i]);
}
END_TEST

/* A driver that accepts a bit the device did not offer: FEATURES_OK stays clear. */
START_TEST(unoffered_feature_refused)
{
	struct vsock_run r;
	char cmd[128];

	/* DGRAM (bit 3) is not offered by the device */
	snprintf(cmd, sizeof(cmd), "port=%d mib=1 force=%llu", PORT, 1ull << VIRTIO_VSOCK_F_DGRAM);
	start_vm(&r, "guest_vsock_echo", cmd, false);
	ck_assert_int_eq(skiff_vm_start(r.vm), 0);
	finish_vm(&r);
	ck_assert_int_eq(r.ex.reason, SKIFF_EXIT_GUEST_CODE);
	ck_assert_uint_eq(r.ex.code, 2); /* init failed */
	ck_assert_uint_eq(report(&r, 0), (uint64_t)-4); /* at the FEATURES_OK check */
	ck_assert_uint_eq(r.c.vsock_status & 8, 0);
	ck_assert_uint_eq(r.c.vsock_device_features & (1ull << VIRTIO_VSOCK_F_DGRAM), 0);
	cleanup(&r);
}
END_TEST

/* No listener at <uds>_<port>: the guest gets a RST and says so (exit 3). */
START_TEST(connect_refused)
{
	struct vsock_run r;

	start_vm(&r, "guest_vsock_echo", "port=1234 mib=1", false);
	ck_assert_int_eq(skiff_vm_start(r.vm), 0);
	finish_vm(&r);
	ck_assert_int_eq(r.ex.reason, SKIFF_EXIT_GUEST_CODE);
	ck_assert_uint_eq(r.ex.code, 3);
	ck_assert_uint_ge(r.c.vsock_conns_refused, 1); /* a refusal, not a reset */
	ck_assert_uint_eq(r.c.vsock_conn_resets, 0);
	cleanup(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vmm_vsock");
	TCase *tc = tcase_create("vsock");
	SRunner *sr;
	int failed;

	if (!kvm_present())
		return SKIP_CODE;
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, echo_plain);
	tcase_add_test(tc, echo_mrg_rxbuf);
	tcase_add_test(tc, echo_mrg_offered_not_taken_no_event_idx);
	tcase_add_test(tc, echo_mrg_wanted_not_offered);
	tcase_add_test(tc, host_connect_plain);
	tcase_add_test(tc, host_connect_mrg_rxbuf);
	tcase_add_test(tc, two_vsock_vms_one_process);
	tcase_add_test(tc, unoffered_feature_refused);
	tcase_add_test(tc, connect_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
