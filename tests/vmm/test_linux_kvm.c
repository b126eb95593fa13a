// SPDX-License-Identifier: MIT
/*
 * Linux on skiff's own KVM (label linux-kvm, slow): boot the x86-64 guest
 * kernel of scripts/build-kernels.sh (baseline variant, ELF vmlinux), no
 * user space, and check the real Linux virtio-vsock driver against our
 * device through virtio-mmio:
 *   - the driver reached DRIVER_OK with VERSION_1 negotiated and kicked its
 *     queues (RX buffers posted);
 *   - a host "CONNECT <port>\n" to a port nobody listens on in the guest
 *     travels as a REQUEST through the RX queue into the guest's vsock
 *     core, which answers RST through the TX queue: the host connection is
 *     closed without "OK", and the device counted both packets;
 *   - the test-only boot self-test compiled into the test kernels
 *     (guest-kernel-patches/test-only/kvm-selftest-0001-*.patch), enabled
 *     with vsock_selftest.port=SELFTEST_PORT, connects from a kernel socket
 *     to the host's port: the host (vsock_selftest_peer.c, listening on
 *     "<uds>_<port>") checks its message byte for byte and answers with the
 *     payload reversed, which the guest checks; the test needs the host's
 *     verdict and "vsock_selftest: PASS" on the guest console. The host
 *     holds its reply until the CONNECT check above is done;
 *   - vsock_selftest.poweroff=1: the self-test thread then exits (its exit
 *     path runs FWAIT, which the PVM emulator rejects and skiff answers) and
 *     the guest powers off through ACPI (\_S5, PM1a_CNT): the VM must end
 *     with reason poweroff, `skiff run` status 0.
 * The VM runs with the seccomp filters on (SKIFF_SECCOMP_KILL, the `skiff
 * run` default), so every call Linux makes the vCPU and device threads do
 * (the fwait and int3 answers included) is checked against their allowlists:
 * a forbidden one ends the test process by SIGSYS, naming the thread and
 * the call (issue 22: KVM_GET_FPU was missing and nothing noticed).
 * The kernel path comes from $SKIFF_LINUX_VMLINUX or build-kernels.sh
 * --print-path; without a kernel the test builds it (cached). On the nested
 * PVM machines ring 0 is emulated: this takes minutes; on VT-x/AMD-V, seconds.
 * Without user space the kernel would panic right after DRIVER_OK ("No
 * working init found"); rootdelay=120 keeps it alive, idle, for the CONNECT
 * and the self-test.
 * pty.legacy_count=0 skips creating 256 legacy ptys, which is 57% of the
 * boot when ring 0 is emulated (initcall_debug: pty_init 38.9 s of 68 s).
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "skiff/vsock_abi.h"
#include "vmm_test_util.h"
#include "vsock_selftest_peer.h"

/* Under ctest's TIMEOUT of 540 s, with room to stop the VM and report. */
#define BOOT_BUDGET_S 500
#define SELFTEST_PORT 5151
#define STR_(x) #x
#define STR(x) STR_(x)

static const char cmdline[] =
	"console=ttyS0 quiet reboot=k panic=-1 lpj=1000000 no_timer_check tsc=reliable rootdelay=120 "
	"pty.legacy_count=0 vsock_selftest.poweroff=1 vsock_selftest.port=" STR(
		SELFTEST_PORT) " "
			       "noxsave clearcpuid=cx16,smap,smep,rdrand,rdseed,fsgsbase,pku,umip,invpcid,pcid,"
			       "avx512f,avx2,avx,popcnt,bmi1,bmi2,erms,fsrm,movbe,sse4_2,sse4_1,ssse3,aes";

static char kernel[4096];

static int find_kernel(void)
{
	char cmd[8192], out[4096];
	const char *env = getenv("SKIFF_LINUX_VMLINUX");
	FILE *p;
	int rc;

	if (env) {
		snprintf(kernel, sizeof(kernel), "%s", env);
		return access(kernel, R_OK) ? -errno : 0;
	}
	snprintf(cmd, sizeof(cmd),
		 "%s/scripts/build-kernels.sh --print-path baseline x86_64 vmlinux", SOURCE_DIR);
	p = popen(cmd, "r");
	if (!p || !fgets(out, sizeof(out), p))
		return -EIO;
	rc = pclose(p);
	out[strcspn(out, "\n")] = 0;
	snprintf(kernel, sizeof(kernel), "%s", out);
	if (rc == 0)
		return 0;
	fprintf(stderr,
		"linux-kvm: no guest kernel yet, building it (cached by build-kernels.sh)\n");
	snprintf(cmd, sizeof(cmd),
		 "%s/scripts/build-kernels.sh --variant baseline --arch x86_64 >&2", SOURCE_DIR);
	if (system(cmd))
		return -EIO;
	return access(kernel, R_OK) ? -errno : 0;
}

/* Whole console log in @buf (NUL-terminated, truncated to @len - 1). */
static void read_console(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = 0;
}

static void dump_console(const char *path)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return;
	fprintf(stderr, "---- guest console ----\n");
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

START_TEST(linux_vsock_driver_on_skiff)
{
	struct skiff_vsock_config vc = { .guest_cid = 3, .rx_threads = 1 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[64], uds[128], con[128], buf[64], peer_path[160];
	static char log[1 << 16];
	struct selftest_peer peer;
	struct skiff_counters c;
	struct skiff_exit ex;
	struct skiff_vm *vm;
	time_t t0 = time(NULL);
	struct pollfd p;
	ssize_t n;
	long left;
	bool ended = false, checked;
	int fd, i;

	ck_assert_msg(find_kernel() == 0, "no guest kernel at '%s'", kernel);
	make_tmpdir(dir, sizeof(dir));
	snprintf(uds, sizeof(uds), "%s/v.sock", dir);
	snprintf(con, sizeof(con), "%s/console.log", dir);
	vc.uds_path = uds;
	/* Guest connections to host port P go to "<uds>_<P>": listen there first. */
	snprintf(peer_path, sizeof(peer_path), "%s_%u", uds, SELFTEST_PORT);
	ck_assert_int_eq(selftest_peer_start(&peer, peer_path, BOOT_BUDGET_S * 1000, true), 0);
	ck_assert_int_eq(skiff_vm_create(&vm), 0);
	ck_assert_int_eq(skiff_vm_set_kernel(vm, kernel, SKIFF_KERNEL_LINUX), 0);
	ck_assert_int_eq(skiff_vm_set_cmdline(vm, cmdline), 0);
	ck_assert_int_eq(skiff_vm_set_memory(vm, 64u << 20), 0);
	ck_assert_int_eq(skiff_vm_set_console(vm, SKIFF_CONSOLE_FILE, con, -1), 0);
	ck_assert_int_eq(skiff_vm_set_vsock(vm, &vc), 0);
	/* What `skiff run` does by default: a forbidden call ends this process by SIGSYS. */
	ck_assert_int_eq(skiff_vm_set_seccomp(vm, SKIFF_SECCOMP_KILL), 0);
	ck_assert_int_eq(skiff_vm_start(vm), 0);

	/* Eventually DRIVER_OK and RX buffers: poll the transport once a second. */
	for (i = 0; i < BOOT_BUDGET_S; i++) {
		ck_assert_int_eq(skiff_vm_get_counters(vm, &c), 0);
		if ((c.vsock_status & 4) && c.vsock_kicks >= 1)
			break;
		if (skiff_vm_wait(vm, 1000, &ex) == 0) {
			dump_console(con);
			ck_abort_msg("guest ended before DRIVER_OK: %s: %s",
				     skiff_exit_reason_name(ex.reason), ex.message);
		}
	}
	if (i == BOOT_BUDGET_S)
		dump_console(con);
	ck_assert_msg(i < BOOT_BUDGET_S, "no DRIVER_OK after %d s (status 0x%x)", BOOT_BUDGET_S,
		      c.vsock_status);
	fprintf(stderr, "linux-kvm: DRIVER_OK after %ld s, features 0x%llx, int3 answered %llu\n",
		(long)(time(NULL) - t0), (unsigned long long)c.vsock_driver_features,
		(unsigned long long)c.int3_injected);
	/* Linux 6.1 negotiates VERSION_1 (and SEQPACKET, EVENT_IDX...); STREAM is implied. */
	ck_assert(c.vsock_driver_features & (1ull << VIRTIO_F_VERSION_1));
	ck_assert_uint_eq(c.vsock_driver_features & ~c.vsock_device_features, 0);

	/* Host CONNECT to a guest port without a listener: REQUEST in, RST out. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memcpy(sa.sun_path, uds, strlen(uds) + 1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, "CONNECT 4242\n", 13), 13);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, BOOT_BUDGET_S * 1000), 1);
	n = read(fd, buf, sizeof(buf));
	ck_assert_msg(n <= 0, "unexpected reply from the guest: %.*s", (int)n, buf);
	close(fd);
	/*
	 * The device closes the host side when the guest answers (RST) or after
	 * its 2 s connect timeout, which a guest whose ring 0 is emulated on a
	 * loaded machine may miss: the guest's RST then comes later. Wait for it.
	 */
	for (;;) {
		ck_assert_int_eq(skiff_vm_get_counters(vm, &c), 0);
		if (c.vsock_tx_pkts >= 1 || time(NULL) - t0 >= BOOT_BUDGET_S)
			break;
		if (skiff_vm_wait(vm, 1000, &ex) == 0) {
			dump_console(con);
			ck_abort_msg("guest ended before its RST: %s: %s",
				     skiff_exit_reason_name(ex.reason), ex.message);
		}
	}
	fprintf(stderr, "linux-kvm: RST for CONNECT after %ld s; rx_pkts %llu tx_pkts %llu\n",
		(long)(time(NULL) - t0), (unsigned long long)c.vsock_rx_pkts,
		(unsigned long long)c.vsock_tx_pkts);
	ck_assert_uint_ge(c.vsock_rx_pkts, 1); /* the REQUEST went into the guest */
	ck_assert_uint_ge(c.vsock_tx_pkts, 1); /* its RST came back */
	ck_assert_uint_eq(c.vsock_malformed_pkts, 0);

	/*
	 * The guest's self-test: its message may already be here (the reply was
	 * held); let the reply go, then the guest checks it, prints PASS, its
	 * thread exits and the guest powers off. Wait for the VM to end.
	 */
	ck_assert_int_eq(selftest_peer_release(&peer), 0);
	left = BOOT_BUDGET_S - (time(NULL) - t0);
	ended = skiff_vm_wait(vm, left > 0 ? (int)left * 1000 : 1, &ex) == 0;
	read_console(con, log, sizeof(log));
	checked = selftest_peer_flag(&peer.checked);
	ck_assert_int_eq(skiff_vm_get_counters(vm, &c), 0);
	fprintf(stderr,
		"linux-kvm: after %ld s: host checked the message: %s; guest console: %s; "
		"guest closed its side: %s; VM %s%s; fwait answered %llu, int3 answered %llu\n",
		(long)(time(NULL) - t0), checked ? "yes" : "no",
		strstr(log, "vsock_selftest: PASS") ? "PASS" :
		strstr(log, "vsock_selftest: FAIL") ? "FAIL" :
						      "no verdict",
		selftest_peer_flag(&peer.guest_closed) ? "yes" : "no",
		ended ? "ended: " : "still running", ended ? skiff_exit_reason_name(ex.reason) : "",
		(unsigned long long)c.fwait_handled, (unsigned long long)c.int3_injected);
	if (!ended) {
		ck_assert_int_eq(skiff_vm_stop(vm), 0);
		ck_assert_int_eq(skiff_vm_wait(vm, 60000, &ex), 0);
	}
	selftest_peer_stop(&peer);
	if (peer.err || !strstr(log, "vsock_selftest: PASS") || !ended ||
	    ex.reason != SKIFF_EXIT_POWEROFF)
		dump_console(con);
	ck_assert_msg(checked && peer.err == 0, "host side of the self-test: %s", peer.why);
	ck_assert_msg(strstr(log, "vsock_selftest: PASS"),
		      "no 'vsock_selftest: PASS' on the console");
	ck_assert_ptr_null(strstr(log, "vsock_selftest: FAIL"));
	ck_assert_msg(ended, "the guest did not power off within %d s", BOOT_BUDGET_S);
	ck_assert_msg(strstr(log, "vsock_selftest: test thread exited, powering off"),
		      "the self-test thread did not exit before the power-off");
	ck_assert_msg(ex.reason == SKIFF_EXIT_POWEROFF, "guest ended as %s, not poweroff: %s",
		      skiff_exit_reason_name(ex.reason), ex.message);
	ck_assert_int_eq(skiff_exit_status(&ex), 0); /* what `skiff run` exits with */
	/*
	 * Where ring 0 is emulated and int3 had to be answered, the exiting
	 * thread's fwait was an emulation failure too; elsewhere it ran natively.
	 */
	if (c.int3_injected)
		ck_assert_uint_ge(c.fwait_handled, 1);
	skiff_vm_destroy(vm);
	unlink(con);
	unlink(peer_path);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("linux_kvm");
	TCase *tc = tcase_create("linux");
	SRunner *sr;
	int failed;

	if (!kvm_present())
		return SKIP_CODE;
	tcase_set_timeout(tc, 540);
	tcase_add_test(tc, linux_vsock_driver_on_skiff);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
