// SPDX-License-Identifier: MIT
/*
 * Type and mode checks of the fds a vhost-user frontend passes (see
 * vu_fd.h). What the frontends we serve send: QEMU 7.2 event_notifier
 * eventfds for kick, call and err, a socketpair end for the slave channel,
 * memfds or files for memory; Linux 6.1 UML (arch/um/drivers/virtio_uml.c)
 * an eventfd for kick, one end of os_pipe() -- a socketpair -- for call and
 * for the slave channel, an O_TMPFILE file for memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vu_fd.h"

/* The /proc/self/fd link of @fd into @buf; 0 or -errno. */
static int fd_link(int fd, char *buf, size_t len)
{
	char path[40];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlinkat(AT_FDCWD, path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int is_eventfd(int fd, char *what, size_t what_len)
{
	char link[64];
	int ret = fd_link(fd, link, sizeof(link));

	if (ret) {
		snprintf(what, what_len, "an fd /proc cannot name (%s)", strerror(-ret));
		return ret;
	}
	if (strcmp(link, "anon_inode:[eventfd]") == 0)
		return 1;
	snprintf(what, what_len, "%s", link);
	return 0;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return -errno;
	return 0;
}

int vu_fd_check(int fd, enum vu_fd_use use, char *what, size_t what_len)
{
	struct stat st;
	int fl, ret;

	if (fstat(fd, &st) < 0 || (fl = fcntl(fd, F_GETFL)) < 0) {
		ret = -errno;
		snprintf(what, what_len, "an fd we cannot inspect");
		return ret;
	}
	switch (use) {
	case VU_FD_MEM:
		if (S_ISREG(st.st_mode) && (fl & O_ACCMODE) == O_RDWR)
			return 0;
		snprintf(what, what_len, "%s",
			 S_ISREG(st.st_mode) ? "a file not open read-write" : "not a regular file");
		return -EINVAL;
	case VU_FD_SLAVE:
		if (S_ISSOCK(st.st_mode))
			return 0;
		snprintf(what, what_len, "not a socket");
		return -EINVAL;
	case VU_FD_CALL:
		/* Written by device threads: a socket, or a pipe we may write. */
		if (S_ISSOCK(st.st_mode) || (S_ISFIFO(st.st_mode) && (fl & O_ACCMODE) != O_RDONLY))
			return set_nonblock(fd);
		if (S_ISFIFO(st.st_mode)) {
			snprintf(what, what_len, "a pipe's read end");
			return -EINVAL;
		}
		/* otherwise an eventfd */
		__attribute__((fallthrough));
	case VU_FD_KICK:
	case VU_FD_ERR:
		ret = is_eventfd(fd, what, what_len);
		if (ret < 0)
			return ret;
		if (!ret)
			return -EINVAL;
		return set_nonblock(fd);
	}
	snprintf(what, what_len, "an fd of no known use");
	return -EINVAL;
}
