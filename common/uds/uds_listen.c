// SPDX-License-Identifier: MIT
#include "skiff/uds_listen.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int skiff_uds_addr(const char *path, struct sockaddr_un *sa)
{
	size_t n = strlen(path);

	if (!n)
		return -EINVAL;
	if (n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n + 1);
	return 0;
}

/* Is somebody at @sa (a @type socket)? 1 yes, 0 no (stale), -errno when unsure. */
static int probe_live(const struct sockaddr_un *sa, int type)
{
	int fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int ret;

	if (fd < 0)
		return -errno;
	ret = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	if (!ret || errno == EAGAIN)
		ret = 1; /* accepted, or its backlog is full: alive either way */
	else if (errno == ECONNREFUSED)
		ret = 0;
	else
		ret = -errno;
	close(fd);
	return ret;
}

int skiff_uds_clear_stale(const struct sockaddr_un *sa, int type)
{
	struct stat st;
	int ret;

	if (lstat(sa->sun_path, &st))
		return errno == ENOENT ? 0 : -errno;
	/* A regular file, directory, FIFO...: never ours to remove. */
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	ret = probe_live(sa, type);
	if (ret)
		return ret > 0 ? -EADDRINUSE : ret;
	if (unlink(sa->sun_path) && errno != ENOENT)
		return -errno;
	return 0;
}

int skiff_uds_listen(const char *path, int sock_flags, int backlog, int *out)
{
	struct sockaddr_un sa;
	int fd, ret;

	if (sock_flags & ~SOCK_NONBLOCK)
		return -EINVAL;
	ret = skiff_uds_addr(path, &sa);
	if (ret)
		return ret;
	ret = skiff_uds_clear_stale(&sa, SOCK_STREAM);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | sock_flags, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, backlog)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	*out = fd;
	return 0;
}
