// SPDX-License-Identifier: MIT
/*
 * `skiff` command-line errors: each names the problem and the remedy and
 * exits with the documented status. Also --help, --version, and SIGTERM
 * stopping a running VM cleanly (status 143).
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmm_test_util.h"

static char out[16384];

static int skiff_argv(const char *env, const char *const *argv)
{
	return run_cmd(argv, env, out, sizeof(out), 60);
}

/* skiff(env, arg, ...): run SKIFF_BIN with the arguments up to the first NULL. */
#define skiff(env, ...) skiff_argv(env, (const char *const[]){ SKIFF_BIN, __VA_ARGS__, NULL })

#define has(s) ck_assert_msg(strstr(out, s) != NULL, "expected \"%s\" in: %s", s, out)

/* The output is one line (a usage error says one thing). */
#define one_line() \
	ck_assert_msg(strchr(out, '\n') == out + strlen(out) - 1, "expected one line: %s", out)

START_TEST(help_and_version)
{
	ck_assert_int_eq(skiff(NULL, "--help", NULL, NULL, NULL, NULL, NULL), 0);
	has("usage: skiff run --kernel PATH");
	has("--vsock cid=N,uds=PATH");
	has("skiff run [--vm] --kernel PATH [options] --vm --kernel PATH [options]...");
	has("67     triple fault");
	/* the ranges of --vsock's numeric keys */
	has("cid         guest CID, 3..4294967294");
	has("rx-threads  RX pump threads, 1..16");
	ck_assert_int_eq(skiff(NULL, "--version", NULL, NULL, NULL, NULL, NULL), 0);
	ck_assert_str_eq(out, "skiff " SKIFF_VERSION "\n");
	ck_assert_int_eq(skiff(NULL, "frobnicate", NULL, NULL, NULL, NULL, NULL), 64);
	has("skiff: unknown command 'frobnicate'");
	has("the commands are run and help");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--bogus", NULL, NULL, NULL, NULL), 64);
	has("skiff: unknown option '--bogus'");
	one_line();
}
END_TEST

/* -h wherever --help works; "skiff help" prints the help too. */
START_TEST(short_help)
{
	ck_assert_int_eq(skiff(NULL, "-h"), 0);
	has("usage: skiff run --kernel PATH");
	ck_assert_int_eq(skiff(NULL, "run", "-h"), 0);
	has("usage: skiff run --kernel PATH");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "-h"), 0);
	has("usage: skiff run --kernel PATH");
	ck_assert_int_eq(skiff(NULL, "help"), 0);
	has("usage: skiff run --kernel PATH");
}
END_TEST

/* An unknown command or option is named, with what is valid. */
START_TEST(unknown_names)
{
	ck_assert_int_eq(skiff(NULL, "start"), 64);
	has("skiff: unknown command 'start'; the commands are run and help");
	one_line();
	ck_assert_int_eq(skiff(NULL, NULL), 64);
	has("skiff: no command given; the commands are run and help");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "-x"), 64);
	has("skiff: unknown option '-x'");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--mem"), 64);
	has("skiff: option '--mem' needs a value");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--c", "1"), 64);
	has("skiff: option '--c' is ambiguous; it could be --cmdline --cpus --console");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--tiny-guest=yes"), 64);
	has("skiff: option '--tiny-guest' takes no value");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "extra"), 64);
	has("skiff: unexpected argument 'extra'");
	one_line();
}
END_TEST

/* An option that takes a value is given once; the message names both values. */
START_TEST(repeated_options)
{
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--mem", "64M", "--mem", "128M"), 64);
	has("skiff: --mem given twice ('64M', then '128M'); give it once");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--kernel", "j"), 64);
	has("skiff: --kernel given twice ('k', then 'j')");
	/* one vsock device per VM: a second --vsock is not a second device */
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/tmp/a.sock",
			       "--vsock", "cid=4,uds=/tmp/b.sock"),
			 64);
	has("skiff: --vsock given twice ('cid=3,uds=/tmp/a.sock', then 'cid=4,uds=/tmp/b.sock')");
	has("a VM has one vsock device");
	one_line();
}
END_TEST

START_TEST(missing_kernel)
{
	ck_assert_int_eq(skiff(NULL, "run", NULL, NULL, NULL, NULL, NULL), 64);
	has("no kernel given; pass --kernel PATH");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "/nonexistent/bzImage", NULL, NULL, NULL),
			 64);
	has("kernel '/nonexistent/bzImage' does not exist; check the path given to --kernel");
	if (!kvm_present())
		return;
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "/tmp", NULL, NULL, NULL), 64);
	has("is not a regular file");
}
END_TEST

START_TEST(unreadable_kernel)
{
	char path[] = "/tmp/skiff-unreadable-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	chmod(path, 0);
	if (geteuid() == 0) {
		/* root reads any file: check the message through a non-root user instead */
		unlink(path);
		if (geteuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0) {
			char p2[] = "/tmp/skiff-unreadable-XXXXXX";
			const char *argv[] = { "/usr/bin/setpriv",
					       "--reuid=65534",
					       "--regid=65534",
					       "--clear-groups",
					       SKIFF_BIN,
					       "run",
					       "--kernel",
					       p2,
					       NULL };
			int rc;

			fd = mkstemp(p2);
			ck_assert_int_ge(fd, 0);
			close(fd);
			chmod(p2, 0);
			rc = run_cmd(argv, NULL, out, sizeof(out), 60);
			unlink(p2);
			ck_assert_int_eq(rc, 64);
			has("is not readable (Permission denied)");
			has("chmod a+r");
		}
		return;
	}
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", path, NULL, NULL, NULL), 64);
	has("is not readable");
	unlink(path);
}
END_TEST

START_TEST(unknown_format)
{
	char path[] = "/tmp/skiff-text-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "#!/bin/sh\necho hi\n", 18), 18);
	close(fd);
	if (kvm_present()) {
		ck_assert_int_eq(skiff(NULL, "run", "--kernel", path, NULL, NULL, NULL), 64);
		has("unknown kernel format");
		has("bzImage with a 64-bit entry");
		ck_assert_int_eq(skiff(NULL, "run", "--tiny-guest", "--kernel", path, NULL, NULL),
				 64);
		has("is not a static x86-64 ELF executable");
	}
	unlink(path);
}
END_TEST

/* An ELF that is not Linux (a tiny guest, a user program) given without --tiny-guest. */
START_TEST(elf_not_linux)
{
	if (!kvm_present())
		return;
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", guest_path("guest_exit"), NULL, NULL, NULL),
			 64);
	has("is an x86-64 ELF file but not a Linux kernel");
	has("add --tiny-guest");
	if (access("/bin/true", R_OK) == 0) {
		int st = skiff(NULL, "run", "--kernel", "/bin/true", NULL, NULL, NULL);

		ck_assert_int_eq(st, 64);
		ck_assert_msg(strstr(out, "not a Linux kernel") ||
				      strstr(out, "unknown kernel format"),
			      "%s", out);
	}
}
END_TEST

/*
 * A user-mode Linux binary (ELF, "Linux" notes, linked low) is not an x86-64
 * kernel: refused with the x86_64 hint, not booted. Uses the UML kernel of
 * scripts/build-kernels.sh when the cache has one (the guest tests build it).
 */
START_TEST(uml_binary_refused)
{
	char cmd[512], path[4096] = "";
	FILE *f;

	if (!kvm_present())
		return;
	snprintf(cmd, sizeof(cmd),
		 "%s/scripts/build-kernels.sh --print-path baseline um 2>/dev/null", SOURCE_DIR);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	if (!fgets(path, sizeof(path), f))
		path[0] = 0;
	if (pclose(f) != 0 || !path[0]) {
		printf("uml_binary_refused: no cached UML kernel, case skipped\n");
		return;
	}
	path[strcspn(path, "\n")] = 0;
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", path, "--mem", "64M", NULL), 64);
	has("not a Linux kernel");
	has("user-mode Linux");
	has("--print-path VARIANT x86_64");
}
END_TEST

/* "skiff --kernel X": the run command is missing; the message says the full command. */
START_TEST(no_subcommand)
{
	ck_assert_int_eq(skiff(NULL, "--kernel", "/tmp/vmlinux", "--mem", "64M", NULL, NULL), 64);
	has("'--kernel' is an option of the run command");
	has("did you mean: skiff run --kernel /tmp/vmlinux --mem 64M");
	ck_assert_int_eq(skiff(NULL, "--kernel=/tmp/vmlinux", NULL, NULL, NULL, NULL, NULL), 64);
	has("did you mean: skiff run --kernel=/tmp/vmlinux");
	ck_assert_int_eq(skiff(NULL, "--seccomp", "log"), 64);
	has("did you mean: skiff run --seccomp log");
	ck_assert_int_eq(skiff(NULL, "--frobnicate", NULL, NULL, NULL, NULL, NULL), 64);
	has("skiff: unknown option '--frobnicate'; the commands are run and help");
}
END_TEST

/* skiff-vsock uses the same usage status as skiff: 64 (EX_USAGE). */
START_TEST(vsock_backend_usage_status)
{
#ifdef SKIFF_VSOCK_BIN
	const char *a1[] = { SKIFF_VSOCK_BIN, "--bogus", NULL };
	const char *a2[] = { SKIFF_VSOCK_BIN, "--socket", "/tmp/x", NULL };
	const char *a3[] = { SKIFF_VSOCK_BIN, "--cid", "2", NULL };
	const char *a4[] = { SKIFF_VSOCK_BIN, "--help", NULL };

	ck_assert_int_eq(run_cmd(a1, NULL, out, sizeof(out), 60), 64);
	has("skiff-vsock: unknown option '--bogus'");
	ck_assert_int_eq(run_cmd(a2, NULL, out, sizeof(out), 60), 64);
	has("--socket, --cid and --uds are required");
	ck_assert_int_eq(run_cmd(a3, NULL, out, sizeof(out), 60), 64);
	has("bad --cid '2'");
	ck_assert_int_eq(run_cmd(a4, NULL, out, sizeof(out), 60), 0);
	has("64 (EX_USAGE");
#endif
}
END_TEST

START_TEST(bad_sizes_and_counts)
{
	static const char *const bad[] = { "12Q", "0", "3M", "4G", "-1M", "M", "1T", "2MiBx" };
	char want[64];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--mem", bad[i], NULL), 64);
		snprintf(want, sizeof(want), "skiff: bad --mem '%s': ", bad[i]);
		has(want);
		has("multiple of 2M from 2M to 3G");
		one_line();
	}
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--cpus", "0", NULL), 64);
	has("skiff: bad --cpus '0': give a number of vCPUs from 1 to 64");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--cpus", "65", NULL), 64);
	has("skiff: bad --cpus '65': give a number of vCPUs from 1 to 64");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--console", "tty", NULL), 64);
	has("skiff: bad --console 'tty': give stdio, none or file:PATH");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--seccomp", "strict", NULL), 64);
	has("skiff: bad --seccomp 'strict': give kill, log or off");
	one_line();
}
END_TEST

/* Files skiff creates or reads: refused before the VM is built, exit 64, with the remedy. */
START_TEST(bad_paths)
{
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--console", "file:/missing/dir/c.log"), 64);
	has("skiff: cannot create the console file '/missing/dir/c.log': directory "
	    "'/missing/dir' does not exist; create it first (mkdir -p '/missing/dir') or "
	    "choose another --console file:PATH");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--console", "file:/tmp"), 64);
	has("console file '/tmp' is a directory");
	ck_assert_int_eq(skiff(NULL, "run", "--tiny-guest", "--kernel", guest_path("guest_exit"),
			       "--initrd", "/missing/initrd"),
			 64);
	has("skiff: cannot read initrd '/missing/initrd' (No such file or directory); check the "
	    "path given to --initrd");
}
END_TEST

START_TEST(vsock_args)
{
	char longp[200];

	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=2,uds=/tmp/v.sock", NULL), 64);
	has("skiff: bad --vsock cid '2': give a CID from 3 to 4294967294");
	one_line();
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=4294967295,uds=/tmp/v", NULL),
		64);
	has("bad --vsock cid '4294967295': give a CID from 3 to 4294967294");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=three,uds=/tmp/v"),
			 64);
	has("bad --vsock cid 'three': give a CID from 3 to 4294967294");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "uds=/tmp/v", NULL), 64);
	has("--vsock needs both cid=N and uds=PATH");
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/x,color=red", NULL), 64);
	has("skiff: --vsock: unknown key 'color'; the keys are cid, uds, rx-threads, mrg-rxbuf");
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/x,mrg-rxbuf=yes", NULL),
		64);
	has("skiff: bad --vsock mrg-rxbuf 'yes': give on or off");
	memset(longp, 'a', sizeof(longp));
	memcpy(longp, "cid=3,uds=/tmp/", 15);
	longp[15 + 100] = '\0';
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", longp, NULL), 64);
	has("is 105 bytes, too long");
	has("at most 96 bytes");
	/* the socket's directory must exist: the path and the remedy are named */
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock",
			       "cid=3,uds=/missing/dir/x.sock", NULL),
			 64);
	has("cannot create the vsock socket '/missing/dir/x.sock'");
	has("directory '/missing/dir' does not exist");
	has("mkdir -p '/missing/dir'");
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/dev/null/x.sock", NULL),
		64);
	has("'/dev/null' is not a directory");
	/* a file that is not a socket where the socket goes */
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/dev/null"), 64);
	has("cannot create the vsock socket '/dev/null': a file that is not a socket is there");
}
END_TEST

/* rx-threads: the range is said when refused (0 too: leaving it out picks the default). */
START_TEST(vsock_rx_threads_range)
{
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/tmp/v,rx-threads=999"),
		64);
	has("skiff: bad --vsock rx-threads '999': give a number of RX pump threads from 1 to 16");
	one_line();
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/tmp/v,rx-threads=0"),
		64);
	has("skiff: bad --vsock rx-threads '0': give a number of RX pump threads from 1 to 16");
	has("leave rx-threads out for the default");
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/tmp/v,rx-threads=17"),
		64);
	has("bad --vsock rx-threads '17'");
	ck_assert_int_eq(
		skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/tmp/v,rx-threads=-1"),
		64);
	has("bad --vsock rx-threads '-1'");
}
END_TEST

/* The --vsock list itself: repeated keys, empty items, trailing commas are named. */
START_TEST(vsock_list_syntax)
{
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,cid=4,uds=/tmp/v"),
			 64);
	has("skiff: --vsock: key 'cid' given twice ('3', then '4'); give each key once");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds=/tmp/v,"), 64);
	has("skiff: --vsock 'cid=3,uds=/tmp/v,' ends with a comma; remove it");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,,uds=/tmp/v"), 64);
	has("skiff: --vsock 'cid=3,,uds=/tmp/v': item 2 is empty (two commas in a row)");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", ",cid=3,uds=/tmp/v"), 64);
	has("item 1 is empty (a leading comma)");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds="), 64);
	has("skiff: --vsock key 'uds' has no value");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", "cid=3,uds"), 64);
	has("skiff: --vsock item 'uds' is not key=value");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "k", "--vsock", ""), 64);
	has("skiff: --vsock is empty");
}
END_TEST

/* A live listener already owns the uds path: refused with a remedy, and left alone. */
START_TEST(vsock_uds_in_use)
{
#ifdef SKIFF_HAVE_VSOCK
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[64], uds[128], vs[160];
	int fd;

	if (!kvm_present())
		return;
	make_tmpdir(dir, sizeof(dir));
	snprintf(uds, sizeof(uds), "%s/v.sock", dir);
	snprintf(vs, sizeof(vs), "cid=3,uds=%s", uds);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memcpy(sa.sun_path, uds, strlen(uds) + 1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(skiff(NULL, "run", "--tiny-guest", "--kernel", guest_path("guest_exit"),
			       "--vsock", vs),
			 64);
	has("another process listens on the vsock uds path");
	ck_assert_int_eq(access(uds, F_OK), 0);
	close(fd);
	unlink(uds);
	rmdir(dir);
#endif
}
END_TEST

START_TEST(kvm_missing)
{
	const char *k = guest_path("guest_exit");
	struct stat st;

	ck_assert_int_eq(skiff("SKIFF_KVM_PATH=/nonexistent/kvm", "run", "--tiny-guest", "--kernel",
			       k, NULL, NULL),
			 70);
	has("/nonexistent/kvm does not exist, so KVM is not available");
	has("modprobe kvm_intel or kvm_amd");
	ck_assert_int_eq(
		skiff("SKIFF_KVM_PATH=/tmp", "run", "--tiny-guest", "--kernel", k, NULL, NULL), 70);
	has("cannot use /tmp");
	/* /dev/kvm that this user may not open: run as nobody when we are root */
	if (geteuid() == 0 && stat("/dev/kvm", &st) == 0 && !(st.st_mode & 0006) &&
	    access("/usr/bin/setpriv", X_OK) == 0) {
		const char *argv[] = { "/usr/bin/setpriv",
				       "--reuid=65534",
				       "--regid=65534",
				       "--clear-groups",
				       SKIFF_BIN,
				       "run",
				       "--tiny-guest",
				       "--kernel",
				       k,
				       NULL };

		ck_assert_int_eq(run_cmd(argv, NULL, out, sizeof(out), 60), 70);
		has("/dev/kvm is not accessible (Permission denied)");
		has("usermod -aG kvm");
	}
}
END_TEST

/*
 * skiff @pid runs guest_exit with spin=1, its console in file @con: wait
 * until the guest has printed its line (28 bytes) and spins (bounded, 60 s),
 * send SIGTERM, and check that skiff exits 143.
 */
static void term_when_spinning(pid_t pid, const char *con)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int status, i;

	for (i = 0; i < 6000; i++) {
		struct stat st;

		if (stat(con, &st) == 0 && st.st_size == 28)
			break;
		nanosleep(&ts, NULL);
	}
	ck_assert_int_lt(i, 6000);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 143);
}

/*
 * SIGTERM while a guest spins (with a vsock device): the VM stops, status 143,
 * the console file is complete and the listener socket is removed.
 */
START_TEST(sigterm_stops_cleanly)
{
	char dir[64], con[128], arg[160], uds[128], vs[160];
	pid_t pid;

	if (!kvm_present())
		return;
	make_tmpdir(dir, sizeof(dir));
	snprintf(con, sizeof(con), "%s/console.log", dir);
	snprintf(arg, sizeof(arg), "file:%s", con);
	snprintf(uds, sizeof(uds), "%s/v.sock", dir);
	snprintf(vs, sizeof(vs), "cid=3,uds=%s", uds);
#ifndef SKIFF_HAVE_VSOCK
	vs[0] = '\0';
#endif
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl(SKIFF_BIN, SKIFF_BIN, "run", "--tiny-guest", "--kernel",
		      guest_path("guest_exit"), "--cmdline", "spin=1", "--console", arg,
		      vs[0] ? "--vsock" : (char *)NULL, vs, (char *)NULL);
		_exit(127);
	}
	term_when_spinning(pid, con);
	/* nothing left behind: the vsock listener path is gone */
	ck_assert_int_eq(access(uds, F_OK), -1);
	ck_assert_int_eq(unlink(con), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * Several VMs in one skiff run: all ending with 0 is 0; the first VM to end
 * otherwise (in time, not on the command line) stops the others and gives
 * its status; each VM's end is named on stderr; SKIFF_STATS has every VM's
 * counters, keys prefixed vmN.; SIGTERM stops all of them (143).
 */
START_TEST(several_vms)
{
	char dir[64], con[128], arg[160], stats[128], env[160], line[256];
	const char *k = guest_path("guest_exit");
	int vm1 = 0, vm2 = 0, bare = 0;
	FILE *f;
	pid_t pid;

	if (!kvm_present())
		return;
	make_tmpdir(dir, sizeof(dir));
	snprintf(stats, sizeof(stats), "%s/stats", dir);
	snprintf(env, sizeof(env), "SKIFF_STATS=%s", stats);
	ck_assert_int_eq(skiff(env, "run", "--tiny-guest", "--kernel", k, "--console", "none",
			       "--vm", "--tiny-guest", "--kernel", k, "--cmdline", "code=0"),
			 0);
	ck_assert_str_eq(out, "tiny guest: hello, mem=128M\n"); /* VM 2's console; no message */
	f = fopen(stats, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		vm1 += !strncmp(line, "vm1.vm_exits=", 13);
		vm2 += !strncmp(line, "vm2.vm_exits=", 13);
		bare += strncmp(line, "vm1.", 4) && strncmp(line, "vm2.", 4);
	}
	fclose(f);
	ck_assert_int_eq(vm1, 1);
	ck_assert_int_eq(vm2, 1);
	ck_assert_int_eq(bare, 0);
	ck_assert_int_eq(unlink(stats), 0);
	/* VM 1 ends with 5 while VM 2 spins: VM 2 is stopped, skiff's status is 5 */
	ck_assert_int_eq(skiff(NULL, "run", "--tiny-guest", "--kernel", k, "--cmdline", "code=5",
			       "--console", "none", "--vm", "--tiny-guest", "--kernel", k,
			       "--cmdline", "spin=1", "--console", "none"),
			 5);
	has("skiff: VM 1 ended (guest-exit): guest exit code 5");
	has("skiff: VM 2 ended (stopped): VM 1 ended first, status 5");
	/* the other way round: VM 2 ends first, with 7 */
	ck_assert_int_eq(skiff(NULL, "run", "--tiny-guest", "--kernel", k, "--cmdline", "spin=1",
			       "--console", "none", "--vm", "--tiny-guest", "--kernel", k,
			       "--cmdline", "code=7", "--console", "none"),
			 7);
	has("skiff: VM 1 ended (stopped): VM 2 ended first, status 7");
	has("skiff: VM 2 ended (guest-exit): guest exit code 7");
	/* SIGTERM while both spin */
	snprintf(con, sizeof(con), "%s/console.log", dir);
	snprintf(arg, sizeof(arg), "file:%s", con);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 2);
		execl(SKIFF_BIN, SKIFF_BIN, "run", "--tiny-guest", "--kernel", k, "--cmdline",
		      "spin=1", "--console", arg, "--vm", "--tiny-guest", "--kernel", k,
		      "--cmdline", "spin=1", "--console", "none", (char *)NULL);
		_exit(127);
	}
	term_when_spinning(pid, con);
	ck_assert_int_eq(unlink(con), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * A 5 KiB bzImage whose 64-bit entry (startup_64, protected-mode part + 0x200,
 * entered at CPL 0) runs @code (at most 64 bytes), then writes 7 to the
 * debug-exit port 0x501. Setup header of boot protocol 2.12 with
 * XLF_KERNEL_64; no real kernel.
 */
static void write_bzimage(const char *path, const uint8_t *code, size_t len)
{
	static const uint8_t exit7[] = {
		0x66, 0xba, 0x01, 0x05, /* mov $0x501, %dx */
		0xb0, 0x07, /* mov $7, %al */
		0xee, /* out %al, %dx */
		0xf4, /* hlt */
		0xeb, 0xfd, /* jmp to the hlt */
	};
	enum { SETUP_SECTS = 1, PM_LEN = 4096, LEN = (SETUP_SECTS + 1) * 512 + PM_LEN };
	static uint8_t img[LEN];
	uint8_t *pm = img + (SETUP_SECTS + 1) * 512;
	FILE *f;

	memset(img, 0, sizeof(img));
	img[0x1f1] = SETUP_SECTS;
	img[0x1fe] = 0x55;
	img[0x1ff] = 0xaa;
	img[0x200] = 0xeb; /* jmp over the header, which ends at 0x26c */
	img[0x201] = 0x6a;
	memcpy(img + 0x202, "HdrS", 4);
	img[0x206] = 0x0c; /* protocol 2.12 */
	img[0x207] = 0x02;
	img[0x230] = 0x00; /* kernel_alignment 2 MiB */
	img[0x232] = 0x20;
	img[0x236] = 0x01; /* XLF_KERNEL_64 */
	img[0x238] = 0xff; /* cmdline_size 255 */
	img[0x262] = 0x01; /* init_size 64 KiB */
	memset(pm, 0xf4, PM_LEN); /* hlt everywhere else */
	memcpy(pm + 0x200, code, len);
	memcpy(pm + 0x200 + len, exit7, sizeof(exit7));
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(img, 1, sizeof(img), f), sizeof(img));
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * The three reasons a kernel cannot be set up in the VM each get their own
 * message and exit 64 (a fresh-user trial found one message for all three,
 * which advised --mem even where memory could not help): a command line
 * longer than the kernel's cmdline_size (255 in this image), a PIE as a
 * tiny guest, and a kernel that does not fit in --mem.
 */
START_TEST(start_errors_name_their_cause)
{
	static const uint8_t hlt[] = { 0xf4 };
	char dir[64], img[128], cmd[400];

	if (!kvm_present())
		return;
	make_tmpdir(dir, sizeof(dir));
	snprintf(img, sizeof(img), "%s/small.bzImage", dir);
	write_bzimage(img, hlt, sizeof(hlt));
	memset(cmd, 'x', sizeof(cmd) - 1);
	cmd[sizeof(cmd) - 1] = 0;
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", img, "--cmdline", cmd), 64);
	has("skiff: bad --cmdline: 399 bytes, longer than the kernel takes");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", "/bin/true", "--tiny-guest"), 64);
	has("is no tiny guest image");
	has("static, non-PIE");
	one_line();
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", img, "--mem", "2M"), 64);
	has("do not fit in guest memory");
	has("--mem");
	one_line();
	ck_assert_int_eq(unlink(img), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * fwait at CPL 0 under the default --seccomp kill (issue 22, finding 2).
 * Where ring 0 is emulated (PVM), KVM cannot emulate fwait and skiff
 * answers it with KVM_GET_FPU from the vCPU thread, which its filter must
 * allow: the guest exits 7 with filters off and on. Linux runs fwait on
 * every task exit. Elsewhere fwait runs natively and both runs pass anyway.
 */
START_TEST(fwait_under_seccomp)
{
	static const uint8_t fwait[] = { 0x9b };
	char dir[64], img[128];

	if (!kvm_present())
		return;
	make_tmpdir(dir, sizeof(dir));
	snprintf(img, sizeof(img), "%s/fwait.bzImage", dir);
	write_bzimage(img, fwait, sizeof(fwait));
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", img, "--seccomp", "off", NULL), 7);
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", img, "--seccomp", "kill", NULL), 7);
	ck_assert_msg(!strstr(out, "seccomp"), "%s", out);
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", img, NULL, NULL, NULL),
			 7); /* the default */
	/* the counters file written by the filtered main thread, a character device */
	ck_assert_int_eq(skiff("SKIFF_STATS=/dev/null", "run", "--kernel", img, NULL, NULL, NULL),
			 7);
	ck_assert_int_eq(unlink(img), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * SKIFF_STATS=FILE: every counter of struct skiff_counters is written, one
 * key=value line each, under the default filter; with --vsock the device's
 * offered features are there (VIRTIO_F_VERSION_1, bit 32, at least) and the
 * connection counters read 0 for a guest that opened none.
 */
START_TEST(stats_file_has_every_counter)
{
	static const uint8_t fwait[] = { 0x9b };
	static const char *const keys[] = {
		"vm_exits=",
		"exits_mmio=",
		"vsock_device_features=0x1",
		"vsock_rx_pkts=0",
		"vsock_tx_bytes=0",
		"vsock_irqs_suppressed=",
		"vsock_conn_resets=0",
		"vsock_malformed_pkts=0",
		"vsock_conns_refused=0",
		"vsock_conns_open=0",
		"vsock_host_fds=0",
		"vsock_stray_pkts=0",
		"vsock_rx_pkt_limit_stalls=0",
		"vsock_dev_resets=",
		"vsock_dgram_tx_pkts=0",
		"vsock_dgram_rx_drop_err=0",
	};
	char dir[64], img[128], stats[128], env[160], vs[160], buf[4096];
	size_t i, n;
	FILE *f;

	if (!kvm_present())
		return;
	make_tmpdir(dir, sizeof(dir));
	snprintf(img, sizeof(img), "%s/fwait.bzImage", dir);
	snprintf(stats, sizeof(stats), "%s/stats", dir);
	snprintf(env, sizeof(env), "SKIFF_STATS=%s", stats);
	snprintf(vs, sizeof(vs), "cid=3,uds=%s/v.sock", dir);
	write_bzimage(img, fwait, sizeof(fwait));
	ck_assert_int_eq(skiff(env, "run", "--kernel", img, "--vsock", vs, NULL), 7);
	f = fopen(stats, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		ck_assert_msg(strstr(buf, keys[i]), "no '%s' in:\n%s", keys[i], buf);
	ck_assert_int_eq(unlink(stats), 0);
	ck_assert_int_eq(unlink(img), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * The other exit handlers that call KVM on the vCPU thread, under kill:
 * int3 at CPL 0 (on PVM an emulation failure that skiff answers by
 * injecting #BP: KVM_SET_REGS, KVM_GET/SET_VCPU_EVENTS) with no IDT, so
 * the guest ends in a triple fault, which is reported with its registers
 * (KVM_GET_REGS, KVM_GET_SREGS): status 67 both with filters off and on.
 */
START_TEST(int3_and_triple_fault_under_seccomp)
{
	static const uint8_t int3[] = {
		0x0f, 0x01, 0x1d, 0x03, 0x00, 0x00, 0x00, /* lidt 3(%rip): limit 0 */
		0xcc, /* int3 */
		0xeb, 0x0a, /* jmp over the IDT pointer */
		0,    0,    0,	  0,	0,    0,    0,	  0, 0, 0
	};
	char dir[64], img[128];

	if (!kvm_present())
		return;
	make_tmpdir(dir, sizeof(dir));
	snprintf(img, sizeof(img), "%s/int3.bzImage", dir);
	write_bzimage(img, int3, sizeof(int3));
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", img, "--seccomp", "off", NULL), 67);
	has("triple fault on vCPU 0 (rip=");
	ck_assert_int_eq(skiff(NULL, "run", "--kernel", img, "--seccomp", "kill", NULL), 67);
	has("triple fault on vCPU 0 (rip=");
	ck_assert_msg(!strstr(out, "seccomp"), "%s", out);
	ck_assert_int_eq(unlink(img), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vmm_cli");
	TCase *tc = tcase_create("cli");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 100);
	tcase_add_test(tc, help_and_version);
	tcase_add_test(tc, short_help);
	tcase_add_test(tc, unknown_names);
	tcase_add_test(tc, repeated_options);
	tcase_add_test(tc, missing_kernel);
	tcase_add_test(tc, unreadable_kernel);
	tcase_add_test(tc, unknown_format);
	tcase_add_test(tc, elf_not_linux);
	tcase_add_test(tc, uml_binary_refused);
	tcase_add_test(tc, no_subcommand);
	tcase_add_test(tc, vsock_backend_usage_status);
	tcase_add_test(tc, bad_sizes_and_counts);
	tcase_add_test(tc, bad_paths);
	tcase_add_test(tc, vsock_args);
	tcase_add_test(tc, vsock_rx_threads_range);
	tcase_add_test(tc, vsock_list_syntax);
	tcase_add_test(tc, vsock_uds_in_use);
	tcase_add_test(tc, kvm_missing);
	tcase_add_test(tc, sigterm_stops_cleanly);
	tcase_add_test(tc, several_vms);
	tcase_add_test(tc, fwait_under_seccomp);
	tcase_add_test(tc, stats_file_has_every_counter);
	tcase_add_test(tc, start_errors_name_their_cause);
	tcase_add_test(tc, int3_and_triple_fault_under_seccomp);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
