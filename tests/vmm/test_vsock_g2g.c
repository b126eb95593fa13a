// SPDX-License-Identifier: MIT
/*
 * Guest-to-guest vsock between two tiny guests in one process (libskiff):
 * guest A (CID 42, guest_vsock_echo cid=43) connects to port 5000 of guest
 * B (CID 43, guest_vsock_listen), sends 2 MiB of the test pattern and reads
 * the echo back; both sides check every byte (FNV-1a and a byte compare),
 * with MRG_RXBUF on one side only, each way round. In different routing
 * groups the connection is refused (RST) and B sees nothing.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "skiff/vsock_abi.h"
#include "vmm_test_util.h"

#define MEM (64ull << 20)
#define CID_A 42
#define CID_B 43
#define PORT 5000
#define TIMEOUT_MS 90000

/* Same stream and checksum as tests/guests/lib/guest.h. */
static uint8_t pattern_byte(uint64_t i)
{
	return (uint8_t)((i * 7) ^ (i >> 8) ^ (i >> 17) ^ 0x5a);
}

static uint64_t pattern_fnv(uint64_t len)
{
	uint64_t h = 0xcbf29ce484222325ull, i;

	for (i = 0; i < len; i++) {
		h ^= pattern_byte(i);
		h *= 0x100000001b3ull;
	}
	return h;
}

struct vm_run {
	char dir[64], uds[128];
	struct skiff_vm *vm;
	struct skiff_exit ex;
};

static void vm_setup(struct vm_run *r, const char *guest, const char *cmdline, uint64_t cid,
		     const char *group)
{
	struct skiff_vsock_config vc = {
		.guest_cid = cid, .rx_threads = 1, .mrg_rxbuf = true, .group = group
	};

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
}

/* Poll (1 ms steps) until the guest's driver set DRIVER_OK: its device is reachable. */
static void wait_driver_ok(struct vm_run *r)
{
	struct skiff_counters c;
	int i;

	for (i = 0; i < TIMEOUT_MS; i++) {
		ck_assert_int_eq(skiff_vm_get_counters(r->vm, &c), 0);
		if (c.vsock_status & 4u)
			return;
		usleep(1000);
	}
	ck_abort_msg("guest never set DRIVER_OK");
}

static void vm_wait(struct vm_run *r)
{
	int err = skiff_vm_wait(r->vm, TIMEOUT_MS, &r->ex);

	if (err == -ETIMEDOUT) {
		skiff_vm_stop(r->vm);
		skiff_vm_wait(r->vm, -1, &r->ex);
	}
	ck_assert_int_eq(err, 0);
}

static uint64_t report(struct vm_run *r, unsigned int slot)
{
	uint64_t v = 0;

	ck_assert_msg(skiff_vm_get_report(r->vm, slot, &v) == 0, "guest did not report slot %u",
		      slot);
	return v;
}

static void vm_cleanup(struct vm_run *r)
{
	skiff_vm_destroy(r->vm);
	ck_assert_int_eq(access(r->uds, F_OK), -1);
	ck_assert_int_eq(rmdir(r->dir), 0);
}

/* _i 0: A takes MRG_RXBUF, B does not; _i 1: the other way round. */
START_TEST(g2g_echo)
{
	const uint64_t total = 2u << 20;
	struct vm_run a, b;
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "port=%d mrg=%d", PORT, _i == 1);
	vm_setup(&b, "guest_vsock_listen", cmd, CID_B, NULL);
	snprintf(cmd, sizeof(cmd), "port=%d cid=%d mib=2 mode=0 mrg=%d", PORT, CID_B, _i == 0);
	vm_setup(&a, "guest_vsock_echo", cmd, CID_A, NULL);
	ck_assert_int_eq(skiff_vm_start(b.vm), 0);
	wait_driver_ok(&b);
	ck_assert_int_eq(skiff_vm_start(a.vm), 0);
	vm_wait(&a);
	vm_wait(&b);
	ck_assert_msg(a.ex.reason == SKIFF_EXIT_GUEST_CODE && a.ex.code == 0, "A: %s %d: %s",
		      skiff_exit_reason_name(a.ex.reason), (int)a.ex.code, a.ex.message);
	ck_assert_msg(b.ex.reason == SKIFF_EXIT_GUEST_CODE && b.ex.code == 0, "B: %s %d: %s",
		      skiff_exit_reason_name(b.ex.reason), (int)b.ex.code, b.ex.message);
	/* A -> B: every byte B received is the pattern */
	ck_assert_uint_eq(report(&b, 4), total);
	ck_assert_uint_eq(report(&b, 5), pattern_fnv(total));
	ck_assert_uint_eq(report(&b, 14), CID_A);
	ck_assert_uint_eq(report(&b, 13), 49152);
	/* B -> A: the echo, checked byte by byte in the guest */
	ck_assert_uint_eq(report(&a, 2), total);
	ck_assert_uint_eq(report(&a, 4), total);
	ck_assert_uint_eq(report(&a, 5), pattern_fnv(total));
	ck_assert_uint_eq(report(&a, 6), 0);
	ck_assert_uint_eq(!!(report(&a, 0) & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)), _i == 0);
	ck_assert_uint_eq(!!(report(&b, 0) & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF)), _i == 1);
	vm_cleanup(&a);
	vm_cleanup(&b);
}
END_TEST

/* A and B in different groups: A's REQUEST is answered with RST (exit 3). */
START_TEST(g2g_other_group_refused)
{
	struct skiff_counters cb;
	struct vm_run a, b;
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "port=%d", PORT);
	vm_setup(&b, "guest_vsock_listen", cmd, CID_B, "blue");
	snprintf(cmd, sizeof(cmd), "port=%d cid=%d mib=1", PORT, CID_B);
	vm_setup(&a, "guest_vsock_echo", cmd, CID_A, "red");
	ck_assert_int_eq(skiff_vm_start(b.vm), 0);
	wait_driver_ok(&b);
	ck_assert_int_eq(skiff_vm_start(a.vm), 0);
	vm_wait(&a);
	ck_assert_msg(a.ex.reason == SKIFF_EXIT_GUEST_CODE && a.ex.code == 3, "A: %s %d: %s",
		      skiff_exit_reason_name(a.ex.reason), (int)a.ex.code, a.ex.message);
	ck_assert_int_eq(skiff_vm_get_counters(b.vm, &cb), 0);
	ck_assert_uint_eq(cb.vsock_rx_pkts, 0);
	skiff_vm_stop(b.vm);
	skiff_vm_wait(b.vm, -1, &b.ex);
	vm_cleanup(&a);
	vm_cleanup(&b);
}
END_TEST

/* Two VMs with one CID in one group: the second does not start. */
START_TEST(g2g_cid_in_use)
{
	struct vm_run a, b;

	vm_setup(&a, "guest_vsock_listen", "port=1", CID_A, NULL);
	vm_setup(&b, "guest_vsock_listen", "port=1", CID_A, NULL);
	ck_assert_int_eq(skiff_vm_start(a.vm), 0);
	ck_assert_int_eq(skiff_vm_start(b.vm), -EADDRINUSE);
	skiff_vm_stop(a.vm);
	skiff_vm_wait(a.vm, -1, &a.ex);
	vm_cleanup(&a);
	vm_cleanup(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vmm_vsock_g2g");
	TCase *tc = tcase_create("g2g");
	SRunner *sr;
	int failed;

	if (!kvm_present())
		return SKIP_CODE;
	tcase_set_timeout(tc, 200);
	tcase_add_loop_test(tc, g2g_echo, 0, 2);
	tcase_add_test(tc, g2g_other_group_refused);
	tcase_add_test(tc, g2g_cid_in_use);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
