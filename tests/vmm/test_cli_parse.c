// SPDX-License-Identifier: MIT
/*
 * parse_run() (vmm/cli/opts.c), the command line of `skiff run`, without
 * running skiff: one VM, several VMs separated by --vm, what belongs to
 * each VM and what to all, and the errors only several VMs can make (each
 * one line on stderr naming the VMs and the remedy).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opts.h"

static char err_text[4096]; /* what the last parse() printed on stderr */
static char arg_copy[64][128]; /* the last parse()'s argv: o points into it until the next */

/* parse_run() on "run" and the arguments up to NULL; stderr captured into err_text. */
static int parse_argv(struct run_opts *o, const char *const *args)
{
	char *argv[64];
	FILE *tmp = tmpfile();
	int argc = 0, saved, ret;
	size_t n;

	ck_assert_ptr_nonnull(tmp);
	strcpy(arg_copy[0], "run");
	argv[argc++] = arg_copy[0];
	while (*args) {
		ck_assert_int_lt(argc, 63);
		ck_assert_uint_lt(strlen(*args), sizeof(arg_copy[0]));
		strcpy(arg_copy[argc], *args++);
		argv[argc] = arg_copy[argc];
		argc++;
	}
	argv[argc] = NULL;
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	ret = parse_run(argc, argv, o);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(err_text, 1, sizeof(err_text) - 1, tmp);
	err_text[n] = '\0';
	fclose(tmp);
	return ret;
}

#define parse(o, ...) parse_argv(o, (const char *const[]){ __VA_ARGS__, NULL })

#define has(s) ck_assert_msg(strstr(err_text, s) != NULL, "expected \"%s\" in: %s", s, err_text)

/* The error is one line. */
#define one_line()                                                               \
	ck_assert_msg(strchr(err_text, '\n') == err_text + strlen(err_text) - 1, \
		      "expected one line: %s", err_text)

START_TEST(one_vm)
{
	static const struct {
		const char *arg;
		unsigned int want;
	} ctl[] = {
		{ "cid=3,uds=a.sock", SKIFF_VSOCK_CTL_AUTO },
		{ "cid=3,uds=a.sock,ctl-thread=auto", SKIFF_VSOCK_CTL_AUTO },
		{ "cid=3,uds=a.sock,ctl-thread=own", SKIFF_VSOCK_CTL_OWN },
		{ "cid=3,uds=a.sock,ctl-thread=pump0", SKIFF_VSOCK_CTL_ON_PUMP0 },
	};
	struct run_opts o;
	size_t i;

	ck_assert_int_eq(parse(&o, "--kernel", "k", "--mem", "64M", "--cpus", "2", "--vsock",
			       "cid=3,uds=a.sock,mrg-rxbuf=on", "--console", "none"),
			 0);
	ck_assert_str_eq(err_text, "");
	ck_assert_uint_eq(o.nr_vms, 1);
	ck_assert_str_eq(o.vms[0].kernel, "k");
	ck_assert_uint_eq(o.vms[0].mem, 64ull << 20);
	ck_assert_uint_eq(o.vms[0].cpus, 2);
	ck_assert(o.vms[0].vsock_set && o.vms[0].vsock.mrg_rxbuf && !o.vms[0].vsock.dgram);
	ck_assert_uint_eq(o.vms[0].vsock.cid, 3);
	ck_assert_str_eq(o.vms[0].vsock.uds, "a.sock");
	ck_assert_int_eq(o.vms[0].console, SKIFF_CONSOLE_NONE);
	ck_assert_int_eq(o.seccomp, SANDBOX_KILL);
	run_opts_free(&o);
	/* defaults */
	ck_assert_int_eq(parse(&o, "--kernel", "k"), 0);
	ck_assert_uint_eq(o.vms[0].cpus, 1);
	ck_assert(!o.vms[0].mem_set && !o.vms[0].vsock_set && !o.vms[0].tiny);
	ck_assert_int_eq(o.vms[0].console, SKIFF_CONSOLE_STDIO);
	run_opts_free(&o);
	/* a leading --vm is allowed with one VM too */
	ck_assert_int_eq(parse(&o, "--vm", "--kernel", "k"), 0);
	ck_assert_uint_eq(o.nr_vms, 1);
	run_opts_free(&o);
	/* conn-buf: a size with K/M suffixes, 4K .. 64M */
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", "cid=3,uds=a.sock,conn-buf=1M"), 0);
	ck_assert_uint_eq(o.vms[0].vsock.conn_buf, 1u << 20);
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", "cid=3,uds=a.sock"), 0);
	ck_assert_uint_eq(o.vms[0].vsock.conn_buf, 0);
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", "cid=3,uds=a.sock,conn-buf=4095"),
			 -EINVAL);
	has("bad --vsock conn-buf '4095'");
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", "cid=3,uds=a.sock,conn-buf=65M"),
			 -EINVAL);
	has("bad --vsock conn-buf '65M'");
	run_opts_free(&o);
	/* ctl-thread: left out (auto, 0), auto, own, pump0 */
	for (i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++) {
		ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", ctl[i].arg), 0);
		ck_assert_uint_eq(o.vms[0].vsock.ctl_thread, ctl[i].want);
		run_opts_free(&o);
	}
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", "cid=3,uds=a.sock,ctl-thread=pump1"),
			 -EINVAL);
	has("bad --vsock ctl-thread 'pump1'");
	has("give auto, own or pump0");
	run_opts_free(&o);
	/* datagrams: on, off, nothing else */
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", "cid=3,uds=a.sock,dgram=on"), 0);
	ck_assert(o.vms[0].vsock.dgram && !o.vms[0].vsock.mrg_rxbuf);
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", "cid=3,uds=a.sock,dgram=off"), 0);
	ck_assert(!o.vms[0].vsock.dgram);
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--vsock", "cid=3,uds=a.sock,dgram=yes"),
			 -EINVAL);
	has("bad --vsock dgram 'yes'");
	has("give on or off");
	run_opts_free(&o);
}
END_TEST

/* Each VM's options are its own; --seccomp, anywhere, is everyone's. */
START_TEST(two_vms)
{
	struct run_opts o;

	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vsock", "cid=3,uds=a.sock", "--mem", "64M",
			       "--cmdline", "one", "--vm", "--tiny-guest", "--kernel", "b",
			       "--vsock", "cid=4,uds=b.sock,mrg-rxbuf=on", "--console",
			       "file:b.log", "--cpus", "2", "--seccomp", "log", "--initrd", "i"),
			 0);
	ck_assert_str_eq(err_text, "");
	ck_assert_uint_eq(o.nr_vms, 2);
	ck_assert_str_eq(o.vms[0].kernel, "a");
	ck_assert_str_eq(o.vms[0].cmdline, "one");
	ck_assert_uint_eq(o.vms[0].mem, 64ull << 20);
	ck_assert(!o.vms[0].tiny && !o.vms[0].vsock.mrg_rxbuf && !o.vms[0].initrd);
	ck_assert_uint_eq(o.vms[0].cpus, 1);
	ck_assert_uint_eq(o.vms[0].vsock.cid, 3);
	ck_assert_int_eq(o.vms[0].console, SKIFF_CONSOLE_STDIO);
	ck_assert_str_eq(o.vms[1].kernel, "b");
	ck_assert(o.vms[1].tiny && o.vms[1].vsock.mrg_rxbuf && !o.vms[1].mem_set);
	ck_assert_ptr_null(o.vms[1].cmdline);
	ck_assert_str_eq(o.vms[1].initrd, "i");
	ck_assert_uint_eq(o.vms[1].cpus, 2);
	ck_assert_uint_eq(o.vms[1].vsock.cid, 4);
	ck_assert_str_eq(o.vms[1].vsock.uds, "b.sock");
	ck_assert_int_eq(o.vms[1].console, SKIFF_CONSOLE_FILE);
	ck_assert_str_eq(o.vms[1].console_path, "b.log");
	ck_assert_int_eq(o.seccomp, SANDBOX_LOG);
	run_opts_free(&o);
	/* three VMs, each after its own --vm; --seccomp before the first */
	ck_assert_int_eq(parse(&o, "--seccomp", "off", "--vm", "--kernel", "a", "--vm", "--kernel",
			       "b", "--console", "none", "--vm", "--kernel", "c", "--console",
			       "none"),
			 0);
	ck_assert_uint_eq(o.nr_vms, 3);
	ck_assert_str_eq(o.vms[2].kernel, "c");
	ck_assert_int_eq(o.seccomp, SANDBOX_OFF);
	run_opts_free(&o);
}
END_TEST

/* "--vm" as the value of an option is that value, not a separator. */
START_TEST(vm_as_a_value)
{
	struct run_opts o;

	ck_assert_int_eq(parse(&o, "--kernel", "k", "--cmdline", "--vm"), 0);
	ck_assert_uint_eq(o.nr_vms, 1);
	ck_assert_str_eq(o.vms[0].cmdline, "--vm");
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "k", "--cmdline=--vm"), 0);
	ck_assert_uint_eq(o.nr_vms, 1);
	run_opts_free(&o);
}
END_TEST

/* An option given once in each VM is fine; twice in one VM is not. */
START_TEST(once_per_vm)
{
	struct run_opts o;

	ck_assert_int_eq(parse(&o, "--kernel", "a", "--mem", "64M", "--console", "none", "--vm",
			       "--kernel", "b", "--mem", "128M"),
			 0);
	ck_assert_uint_eq(o.vms[1].mem, 128ull << 20);
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vm", "--kernel", "b", "--mem", "64M",
			       "--mem", "128M"),
			 -EINVAL);
	has("skiff: --mem given twice ('64M', then '128M'); give it once per VM (a --vm starts "
	    "the next VM's options)");
	one_line();
	run_opts_free(&o);
	ck_assert_int_eq(
		parse(&o, "--kernel", "a", "--vsock", "cid=3,uds=a", "--vsock", "cid=4,uds=b"),
		-EINVAL);
	has("a VM has one vsock device: give --vsock once per VM");
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--seccomp", "off", "--kernel", "a", "--console", "none", "--vm",
			       "--kernel", "b", "--seccomp", "kill"),
			 -EINVAL);
	has("skiff: --seccomp given twice ('off', then 'kill'); it applies to every VM of the "
	    "process: give it once");
	one_line();
	run_opts_free(&o);
}
END_TEST

/* A --vm with nothing after it, two in a row, a VM without a kernel. */
START_TEST(vm_separator_errors)
{
	struct run_opts o;

	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vm"), -EINVAL);
	has("skiff: --vm at the end; give the next VM's options after it, or remove it");
	one_line();
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vm", "--vm", "--kernel", "b"), -EINVAL);
	has("skiff: --vm after --vm: VM 2 has no options");
	one_line();
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--console", "none", "--vm", "--mem", "64M"),
			 -EINVAL);
	has("skiff: VM 2 has no kernel; every VM needs --kernel PATH");
	one_line();
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--mem", "64M"), -EINVAL);
	has("skiff: no kernel given; pass --kernel PATH");
	run_opts_free(&o);
	/* only --seccomp before a --vm: no VM yet, so the --vm starts VM 1 */
	ck_assert_int_eq(parse(&o, "--seccomp", "off", "--vm"), -EINVAL);
	has("skiff: no kernel given");
	run_opts_free(&o);
	/* "--v" could be --vsock or --vm */
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--v", "cid=3,uds=a"), -EINVAL);
	has("option '--v' is ambiguous; it could be --vsock --vm");
	run_opts_free(&o);
	/* an argument that is no option ends the options: refused, not skipped */
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vm", "b", "--kernel", "c"), -EINVAL);
	has("skiff: unexpected argument 'b'");
	run_opts_free(&o);
}
END_TEST

/* What two VMs of one process may not share. */
START_TEST(clashes_between_vms)
{
	struct run_opts o;

	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vsock", "cid=3,uds=a", "--vm", "--kernel",
			       "b", "--console", "none", "--vsock", "cid=3,uds=b"),
			 -EINVAL);
	has("skiff: VM 1 and VM 2 both have vsock cid=3; the VMs of one skiff process reach "
	    "each other by CID: give each its own");
	one_line();
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vsock", "cid=3,uds=a", "--vm", "--kernel",
			       "b", "--console", "none", "--vsock", "cid=4,uds=a"),
			 -EINVAL);
	has("skiff: VM 1 and VM 2 both have vsock uds=a; give each VM its own socket path");
	one_line();
	run_opts_free(&o);
	/* the default console of both is stdio */
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vm", "--kernel", "b"), -EINVAL);
	has("skiff: VM 1 and VM 2 both write their console to stdio (the default)");
	has("give all VMs but one --console file:PATH or --console none");
	one_line();
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--console", "none", "--vm", "--kernel", "b",
			       "--console", "file:c.log", "--vm", "--kernel", "c", "--console",
			       "file:c.log"),
			 -EINVAL);
	has("skiff: VM 2 and VM 3 both write their console to 'c.log'");
	run_opts_free(&o);
	/* two consoles "none" and VMs without vsock are fine */
	ck_assert_int_eq(parse(&o, "--kernel", "a", "--console", "none", "--vm", "--kernel", "b",
			       "--console", "none"),
			 0);
	run_opts_free(&o);
}
END_TEST

/* -h anywhere: 1, nothing printed (the caller prints the help). */
START_TEST(help)
{
	struct run_opts o;

	ck_assert_int_eq(parse(&o, "--kernel", "a", "--vm", "-h"), 1);
	ck_assert_str_eq(err_text, "");
	run_opts_free(&o);
	ck_assert_int_eq(parse(&o, "--help"), 1);
	run_opts_free(&o);
}
END_TEST

START_TEST(run_option_names)
{
	ck_assert(is_run_option("--vm"));
	ck_assert(is_run_option("--kernel=x"));
	ck_assert(!is_run_option("--help"));
	ck_assert(!is_run_option("--vmx"));
	ck_assert(!is_run_option("vm"));
}
END_TEST

int main(void)
{
	char dir[] = "/tmp/skiff-cli-parse-XXXXXX";
	SRunner *sr;
	TCase *tc;
	Suite *s;
	int failed;

	/*
	 * The paths in the tests are relative, in a directory of our own: the
	 * parser checks them (a regular file where a socket goes is refused),
	 * so names under /tmp could meet another program's files.
	 */
	if (!mkdtemp(dir) || chdir(dir)) {
		perror("test_cli_parse: private directory");
		return 1;
	}
	s = suite_create("vmm_cli_parse");
	tc = tcase_create("parse");

	tcase_add_test(tc, one_vm);
	tcase_add_test(tc, two_vms);
	tcase_add_test(tc, vm_as_a_value);
	tcase_add_test(tc, once_per_vm);
	tcase_add_test(tc, vm_separator_errors);
	tcase_add_test(tc, clashes_between_vms);
	tcase_add_test(tc, help);
	tcase_add_test(tc, run_option_names);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rmdir(dir);
	return failed ? 1 : 0;
}
