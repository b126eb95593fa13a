// SPDX-License-Identifier: MIT
/* Checks of paths the tools will create (sockets, output files); see skiff/cli.h. */
#include "skiff/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The directory @path will be created in must exist and be writable. */
static int check_dir_of(const char *tool, const char *what, const char *opt, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;

	if (!slash) {
		strcpy(dir, ".");
	} else if (slash == path) {
		strcpy(dir, "/");
	} else {
		if ((size_t)(slash - path) >= sizeof(dir))
			return 0; /* open() or bind() will say */
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	if (stat(dir, &st)) {
		fprintf(stderr,
			"%s: cannot create the %s '%s': directory '%s' %s; create it first "
			"(mkdir -p '%s') or choose another %s\n",
			tool, what, path, dir, errno == ENOENT ? "does not exist" : strerror(errno),
			dir, opt);
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"%s: cannot create the %s '%s': '%s' is not a directory; choose another "
			"%s, inside a directory\n",
			tool, what, path, dir, opt);
		return -EINVAL;
	}
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr,
			"%s: cannot create the %s '%s': directory '%s' is not writable (%s); "
			"choose another %s in a directory this user can write (e.g. /tmp) or "
			"change its permissions\n",
			tool, what, path, dir, strerror(errno), opt);
		return -EINVAL;
	}
	return 0;
}

int cli_check_sock_path(const char *tool, const char *what, const char *opt, const char *path,
			size_t room)
{
	const size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1 - room;
	struct stat st;

	if (!*path) {
		fprintf(stderr, "%s: the %s path is empty; give %s\n", tool, what, opt);
		return -EINVAL;
	}
	if (strlen(path) > max) {
		fprintf(stderr,
			"%s: %s path '%s' is %zu bytes, too long; a Unix socket path holds %zu "
			"bytes%s, so give %s of at most %zu bytes (e.g. under /tmp)\n",
			tool, what, path, strlen(path), max + room,
			room ? " and \"_<port>\" is appended to it" : "", opt, max);
		return -EINVAL;
	}
	if (!lstat(path, &st) && !S_ISSOCK(st.st_mode)) {
		fprintf(stderr,
			"%s: cannot create the %s '%s': a file that is not a socket is there; "
			"remove it or choose another %s\n",
			tool, what, path, opt);
		return -EINVAL;
	}
	return check_dir_of(tool, what, opt, path);
}

int cli_check_out_file(const char *tool, const char *what, const char *opt, const char *path)
{
	struct stat st;

	if (!*path) {
		fprintf(stderr, "%s: the %s path is empty; give %s\n", tool, what, opt);
		return -EINVAL;
	}
	if (stat(path, &st))
		return check_dir_of(tool, what, opt, path);
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: %s '%s' is a directory; give %s naming a file\n", tool, what,
			path, opt);
		return -EINVAL;
	}
	if (access(path, W_OK)) {
		fprintf(stderr,
			"%s: %s '%s' is not writable (%s); change its permissions or choose "
			"another %s\n",
			tool, what, path, strerror(errno), opt);
		return -EINVAL;
	}
	return 0;
}
