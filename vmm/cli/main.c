// SPDX-License-Identifier: MIT
/*
 * skiff: the command-line front end of libskiff.
 *
 *   skiff run --kernel PATH [options] [--vm --kernel PATH [options]]...
 *                                         boot one or more VMs, exit with how
 *                                         they ended
 *   skiff help | --help | -h | --version | -V
 *
 * opts.c parses run's command line, run.c runs the VMs.
 *
 * Exit status: see usage() below and libskiff.h (SKIFF_STATUS_*). A command-
 * line mistake is one line naming the option, the value and what is valid
 * (helpers shared with skiff-vsock: cli_common/), then SKIFF_STATUS_USAGE.
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "libskiff.h"
#include "opts.h"
#include "run.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: skiff run --kernel PATH [options]\n"
		"       skiff run [--vm] --kernel PATH [options] --vm --kernel PATH [options]...\n"
		"       skiff help | --help | -h\n"
		"       skiff --version | -V\n"
		"\n"
		"Boot a KVM microVM with an in-process virtio-vsock device, or several in\n"
		"one process: their vsock devices reach each other by CID.\n"
		"\n"
		"options of run (each that takes a value at most once per VM):\n"
		"  --kernel PATH        Linux bzImage or ELF vmlinux (x86-64), or with\n"
		"                       --tiny-guest a static ELF entered at CPL3\n"
		"  --tiny-guest         boot --kernel as a tiny test guest (64-bit, CPL3,\n"
		"                       identity-mapped user pages; see tests/guests/)\n"
		"  --initrd PATH        initial ramdisk (Linux)\n"
		"  --cmdline STR        kernel command line (default for Linux:\n"
		"                       \"console=ttyS0 reboot=k panic=-1 no_timer_check\");\n"
		"                       with --vsock, the ACPI DSDT describes the device\n"
		"                       (LNRO0005); with acpi=off in STR,\n"
		"                       \"virtio_mmio.device=4K@0xd0000000:5\" is appended\n"
		"  --mem SIZE           guest RAM, K/M/G suffixes, multiple of 2M,\n"
		"                       2M..3G (default 128M)\n"
		"  --cpus N             vCPUs, 1..%d (default 1)\n"
		"  --vsock " VSOCK_FORM "\n"
		"                       the VM's virtio-vsock device (one per VM) on\n"
		"                       virtio-mmio; items separated by single commas,\n"
		"                       each key once:\n"
		"                         cid         guest CID, 3..4294967294\n"
		"                         uds         host-side socket path, at most 96\n"
		"                                     bytes, in an existing directory\n"
		"                         rx-threads  RX pump threads, 1..%u (default:\n"
		"                                     one per online core, at most 4)\n"
		"                         mrg-rxbuf   offer mergeable RX buffers\n"
		"                                     (default off)\n"
		"                         dgram       offer datagrams (default off);\n"
		"                                     AF_UNIX SOCK_DGRAM at PATH_dgram_P\n"
		"                                     (host port P), PATH_dgram_gQ (guest\n"
		"                                     port Q), gateway PATH_dgram; PATH\n"
		"                                     then at most 89 bytes\n"
		"                         conn-buf    buf_alloc the device advertises\n"
		"                                     per connection, 4K..64M (default\n"
		"                                     256K); the guest sends at most\n"
		"                                     min(this, its socket buffer)\n"
		"                                     unacknowledged\n"
		"                         ctl-thread  auto, own or pump0: the device's\n"
		"                                     control work on a thread of its\n"
		"                                     own or on RX pump 0's (default\n"
		"                                     auto: pump0 with 2 CPUs or fewer)\n"
		"                       host side is Firecracker-style: connect to PATH\n"
		"                       and send \"CONNECT <port>\\n\"; guest connections\n"
		"                       to port P go to PATH_P\n"
		"  --console stdio|file:PATH|none\n"
		"                       where COM1 (ttyS0) goes (default stdio; input\n"
		"                       is read from stdin when it is a terminal)\n"
		"  --seccomp kill|log|off\n"
		"                       seccomp filter per thread type (default kill: a\n"
		"                       forbidden system call ends skiff by SIGSYS with a\n"
		"                       message naming the thread and the call; log: the\n"
		"                       kernel logs it and lets it run)\n"
		"  --vm                 the options after it are another VM's (its own\n"
		"                       --kernel, --initrd, --cmdline, --mem, --cpus,\n"
		"                       --vsock, --console, --tiny-guest); --seccomp is\n"
		"                       for all VMs. VMs need distinct vsock CIDs and uds\n"
		"                       paths, and at most one console on stdio\n"
		"  -h, --help           this text\n"
		"\n"
		"several VMs: skiff waits for all of them; the first VM to end with a\n"
		"status other than 0 stops the others and its status is skiff's (each\n"
		"VM's end is named on stderr); SIGINT/SIGTERM stop all of them.\n"
		"\n"
		"exit status:\n"
		"  0      guest powered off (or a tiny guest exited with 0)\n"
		"  1-63   a tiny guest's exit code (debug device) / debug-exit port value\n"
		"  64     bad command line or configuration\n"
		"  65     guest rebooted\n"
		"  66     guest panic\n"
		"  67     triple fault\n"
		"  68     guest error (instruction KVM could not emulate, failed entry)\n"
		"  69     guest exit code above 63\n"
		"  70     VMM error (KVM, host resources)\n"
		"  130/143 stopped by SIGINT/SIGTERM\n",
		SKIFF_MAX_VCPUS, SKIFF_VSOCK_MAX_RX_THREADS);
}

static uint64_t t_main_ns; /* CLOCK_MONOTONIC at main() */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmd_run(int argc, char **argv)
{
	struct run_opts o;
	int ret, status;

	ret = parse_run(argc, argv, &o);
	if (ret == 1)
		usage(stdout);
	status = ret == 1 ? 0 : ret ? SKIFF_STATUS_USAGE : run_vms(&o, t_main_ns);
	run_opts_free(&o);
	return status;
}

int main(int argc, char **argv)
{
	const char *cmd = argc >= 2 ? argv[1] : NULL;

	t_main_ns = mono_ns();
	if (cmd && (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))) {
		usage(stdout);
		return 0;
	}
	if (cmd && (!strcmp(cmd, "--version") || !strcmp(cmd, "-V"))) {
		printf("skiff %s\n", skiff_version());
		return 0;
	}
	if (cmd && !strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (cmd && is_run_option(cmd)) {
		int i;

		/* "skiff --kernel X ...": options of run without the command. */
		fprintf(stderr,
			"skiff: '%s' is an option of the run command; did you mean: skiff run",
			cmd);
		for (i = 1; i < argc; i++)
			fprintf(stderr, " %s", argv[i]);
		fprintf(stderr, "\n");
		return SKIFF_STATUS_USAGE;
	}
	if (!cmd)
		fprintf(stderr, "skiff: no command given; ");
	else if (cmd[0] == '-')
		fprintf(stderr, "skiff: unknown option '%s'; ", cmd);
	else
		fprintf(stderr, "skiff: unknown command '%s'; ", cmd);
	fprintf(stderr, "the commands are run and help, the options --help and --version "
			"(e.g. skiff run --kernel PATH)\n");
	return SKIFF_STATUS_USAGE;
}
