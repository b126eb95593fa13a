// SPDX-License-Identifier: MIT
/* The harnesses' scratch directory for Unix sockets (see fuzz_input.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_input.h"

static char scratch[96];

static void scratch_remove(void)
{
	char path[sizeof(scratch) + 256];
	struct dirent *e;
	DIR *d = opendir(scratch);

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", scratch, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(scratch);
}

const char *fz_scratch_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (scratch[0])
		return scratch;
	/* Unix socket paths are short: fall back to /tmp for a long TMPDIR. */
	if (!tmp || strlen(tmp) > 40)
		tmp = "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/skiff-fuzz-XXXXXX", tmp);
	if (!mkdtemp(scratch)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(scratch_remove);
	return scratch;
}

unsigned int fz_count_fds(void)
{
	unsigned int n = 0;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}
