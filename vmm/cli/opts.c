// SPDX-License-Identifier: MIT
/* The command line of `skiff run`, one or more VMs (see opts.h). */
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skiff/cli.h"

static const struct option run_longopts[] = {
	{ "kernel", required_argument, NULL, 'k' },  { "initrd", required_argument, NULL, 'i' },
	{ "cmdline", required_argument, NULL, 'c' }, { "mem", required_argument, NULL, 'm' },
	{ "cpus", required_argument, NULL, 'n' },    { "vsock", required_argument, NULL, 'v' },
	{ "console", required_argument, NULL, 'o' }, { "tiny-guest", no_argument, NULL, 't' },
	{ "seccomp", required_argument, NULL, 'S' }, { "vm", no_argument, NULL, 'M' },
	{ "help", no_argument, NULL, 'h' },	     { NULL, 0, NULL, 0 },
};

/* Append VM nr_vms + 1 with the defaults. Return: 0; -ENOMEM after a message. */
static int add_vm(struct run_opts *o)
{
	struct vm_opts *v = realloc(o->vms, (o->nr_vms + 1) * sizeof(*v));

	if (!v) {
		fputs("skiff: out of memory\n", stderr);
		return -ENOMEM;
	}
	o->vms = v;
	v = &o->vms[o->nr_vms++];
	memset(v, 0, sizeof(*v));
	v->cpus = 1;
	v->console = SKIFF_CONSOLE_STDIO;
	return 0;
}

/* One option of a VM and its value. Return: 0; -EINVAL after a message. */
static int vm_option(int c, char *arg, struct vm_opts *o)
{
	uint64_t v;

	switch (c) {
	case 'k':
		o->kernel = arg;
		break;
	case 'i':
		o->initrd = arg;
		break;
	case 'c':
		o->cmdline = arg;
		break;
	case 't':
		o->tiny = true;
		break;
	case 'm':
		if (cli_parse_size(arg, &o->mem) || o->mem < (2u << 20) || o->mem > (3ull << 30) ||
		    o->mem % (2u << 20)) {
			cli_bad_value("skiff", "--mem", arg,
				      "give a multiple of 2M from 2M to 3G, with a K, M or G "
				      "suffix (e.g. --mem 256M)");
			return -EINVAL;
		}
		o->mem_set = true;
		break;
	case 'n':
		if (cli_parse_uint(arg, 1, SKIFF_MAX_VCPUS, &v)) {
			cli_bad_value("skiff", "--cpus", arg, "give a number of vCPUs from 1 to %d",
				      SKIFF_MAX_VCPUS);
			return -EINVAL;
		}
		o->cpus = (unsigned int)v;
		break;
	case 'v':
		o->vsock_buf = strdup(arg); /* cut up by parse_vsock(); argv stays as given */
		if (!o->vsock_buf) {
			fputs("skiff: out of memory\n", stderr);
			return -EINVAL;
		}
		if (parse_vsock(o->vsock_buf, arg, &o->vsock) ||
		    cli_check_sock_path("skiff", "vsock socket", "uds=PATH", o->vsock.uds, 11))
			return -EINVAL;
		o->vsock_set = true;
		break;
	case 'o':
		if (parse_console(arg, &o->console, &o->console_path)) {
			cli_bad_value("skiff", "--console", arg, "give stdio, none or file:PATH");
			return -EINVAL;
		}
		if (o->console_path && cli_check_out_file("skiff", "console file",
							  "--console file:PATH", o->console_path))
			return -EINVAL;
		break;
	}
	o->any = true;
	return 0;
}

/*
 * What two VMs of one process may not share: a CID (the devices route to
 * each other by CID), a uds path, a console stream. Return: 0; -EINVAL
 * after a message naming both VMs.
 */
static int check_pair(const struct vm_opts *a, unsigned int i, const struct vm_opts *b,
		      unsigned int j)
{
	if (a->vsock_set && b->vsock_set && a->vsock.cid == b->vsock.cid) {
		fprintf(stderr,
			"skiff: VM %u and VM %u both have vsock cid=%llu; the VMs of one skiff "
			"process reach each other by CID: give each its own\n",
			i, j, (unsigned long long)a->vsock.cid);
		return -EINVAL;
	}
	if (a->vsock_set && b->vsock_set && !strcmp(a->vsock.uds, b->vsock.uds)) {
		fprintf(stderr,
			"skiff: VM %u and VM %u both have vsock uds=%s; give each VM its own "
			"socket path\n",
			i, j, a->vsock.uds);
		return -EINVAL;
	}
	if (a->console == SKIFF_CONSOLE_STDIO && b->console == SKIFF_CONSOLE_STDIO) {
		fprintf(stderr,
			"skiff: VM %u and VM %u both write their console to stdio (the default), "
			"where their output would interleave; give all VMs but one --console "
			"file:PATH or --console none\n",
			i, j);
		return -EINVAL;
	}
	if (a->console == SKIFF_CONSOLE_FILE && b->console == SKIFF_CONSOLE_FILE &&
	    !strcmp(a->console_path, b->console_path)) {
		fprintf(stderr,
			"skiff: VM %u and VM %u both write their console to '%s'; give each VM "
			"its own --console file:PATH\n",
			i, j, a->console_path);
		return -EINVAL;
	}
	return 0;
}

/* After the options: every VM complete, no clash between two. Return: 0; -EINVAL. */
static int check_vms(const struct run_opts *o)
{
	unsigned int i, j;

	if (o->nr_vms > 1 && !o->vms[o->nr_vms - 1].any) {
		fputs("skiff: --vm at the end; give the next VM's options after it, or remove "
		      "it\n",
		      stderr);
		return -EINVAL;
	}
	for (i = 0; i < o->nr_vms; i++) {
		if (o->vms[i].kernel)
			continue;
		if (o->nr_vms == 1)
			fputs("skiff: no kernel given; pass --kernel PATH (see skiff --help)\n",
			      stderr);
		else
			fprintf(stderr,
				"skiff: VM %u has no kernel; every VM needs --kernel PATH among "
				"its options (see skiff --help)\n",
				i + 1);
		return -EINVAL;
	}
	for (i = 0; i < o->nr_vms; i++)
		for (j = i + 1; j < o->nr_vms; j++)
			if (check_pair(&o->vms[i], i + 1, &o->vms[j], j + 1))
				return -EINVAL;
	return 0;
}

int parse_run(int argc, char **argv, struct run_opts *o)
{
	const char *seen[256], *seen_global[256] = { NULL }; /* cli_once(): per VM, process */
	struct vm_opts *v;
	int c, err;

	memset(o, 0, sizeof(*o));
	memset(seen, 0, sizeof(seen));
	o->seccomp = SANDBOX_KILL;
	err = add_vm(o);
	if (err)
		return err;
	opterr = 0;
	optind = 0; /* 0, not 1: glibc then also resets its scanning state */
	/* "+": stop at the first argument that is no option (it is refused below) */
	while ((c = getopt_long(argc, argv, "+:h", run_longopts, NULL)) != -1) {
		v = &o->vms[o->nr_vms - 1];
		if (c == 'h')
			return 1;
		if (c == '?' || c == ':') {
			cli_getopt_error("skiff", c, argv, run_longopts);
			return -EINVAL;
		}
		if (c == 'M') {
			if (v->any) {
				memset(seen, 0, sizeof(seen));
				err = add_vm(o);
				if (err)
					return err;
			} else if (o->nr_vms > 1) {
				fprintf(stderr,
					"skiff: --vm after --vm: VM %u has no options; give its "
					"--kernel (and the rest of its options) between the two\n",
					o->nr_vms);
				return -EINVAL;
			} /* else: a --vm before the first VM's options */
			continue;
		}
		if (c == 'S') {
			if (cli_once("skiff", run_longopts, seen_global, c, optarg,
				     "it applies to every VM of the process: give it once"))
				return -EINVAL;
			if (sandbox_parse_mode(optarg, &o->seccomp)) {
				cli_bad_value("skiff", "--seccomp", optarg,
					      "give kill, log or off");
				return -EINVAL;
			}
			continue;
		}
		if (c != 't' &&
		    cli_once("skiff", run_longopts, seen, c, optarg,
			     c == 'v' ?
				     "a VM has one vsock device: give --vsock once per VM (a "
				     "--vm starts the next VM's options)" :
				     "give it once per VM (a --vm starts the next VM's options)"))
			return -EINVAL;
		if (vm_option(c, optarg, v))
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr,
			"skiff: unexpected argument '%s'; run takes options only (see skiff "
			"--help)\n",
			argv[optind]);
		return -EINVAL;
	}
	return check_vms(o);
}

void run_opts_free(struct run_opts *o)
{
	unsigned int i;

	for (i = 0; i < o->nr_vms; i++)
		free(o->vms[i].vsock_buf);
	free(o->vms);
	o->vms = NULL;
	o->nr_vms = 0;
}

bool is_run_option(const char *arg)
{
	const struct option *o;
	size_t n;

	if (strncmp(arg, "--", 2))
		return false;
	for (o = run_longopts; o->name; o++) {
		n = strlen(o->name);
		if (o->val != 'h' && !strncmp(arg + 2, o->name, n) &&
		    (arg[n + 2] == '\0' || arg[n + 2] == '='))
			return true;
	}
	return false;
}
