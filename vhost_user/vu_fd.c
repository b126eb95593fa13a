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

/* What @fd is, for an error message: its /proc link, a pipe's end named. */
static void describe(int fd, const struct stat *st, int fl, char *what, size_t what_len)
{
	char link[64];
	int ret = fd_link(fd, link, sizeof(link));

	if (ret)
		snprintf(link, sizeof(link), "an fd /proc cannot name (%s)", strerror(-ret));
	if (S_ISFIFO(st->st_mode))
		snprintf(what, what_len, "a pipe's %s end (%s)",
			 (fl & O_ACCMODE) == O_RDONLY ? "read" : "write", link);
	else
		snprintf(what, what_len, "%s%s", link,
			 S_ISREG(st->st_mode) && (fl & O_ACCMODE) != O_RDWR ? ", not read-write" :
									      "");
}

/* 1 when @fd is an eventfd, 0 when not, -errno when /proc cannot tell. */
static int is_eventfd(int fd)
{
	char link[64];
	int ret = fd_link(fd, link, sizeof(link));

	if (ret)
		return ret;
	return strcmp(link, "anon_inode:[eventfd]") == 0;
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
		snprintf(what, what_len, "an fd we cannot inspect (%s)", strerror(-ret));
		return ret;
	}
	switch (use) {
	case VU_FD_MEM:
		ret = S_ISREG(st.st_mode) && (fl & O_ACCMODE) == O_RDWR ? 0 : -EINVAL;
		break;
	case VU_FD_SLAVE:
		ret = S_ISSOCK(st.st_mode) ? 0 : -EINVAL;
		break;
	case VU_FD_CALL:
		/* Written by device threads: a socket, or a pipe we may write. */
		if (S_ISSOCK(st.st_mode) ||
		    (S_ISFIFO(st.st_mode) && (fl & O_ACCMODE) != O_RDONLY)) {
			ret = set_nonblock(fd);
			break;
		}
		/* otherwise an eventfd */
		__attribute__((fallthrough));
	case VU_FD_KICK:
	case VU_FD_ERR:
		ret = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ? 0 : is_eventfd(fd);
		if (ret < 0) {
			snprintf(what, what_len, "an fd /proc cannot name (%s)", strerror(-ret));
			return ret;
		}
		ret = ret ? set_nonblock(fd) : -EINVAL;
		break;
	default:
		ret = -EINVAL;
		break;
	}
	if (ret == -EINVAL)
		describe(fd, &st, fl, what, what_len);
	return ret;
}
