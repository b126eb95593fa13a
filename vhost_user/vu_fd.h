/* SPDX-License-Identifier: MIT */
/*
 * What a frontend's fds must be before the backend or the device uses them
 * (issue 22, finding 4): checked when they arrive, refused otherwise.
 */
#ifndef SKIFF_VU_FD_H
#define SKIFF_VU_FD_H

#include <stddef.h>

/* What an fd from SCM_RIGHTS is for; each use admits some fd types. */
enum vu_fd_use {
	VU_FD_KICK, /* SET_VRING_KICK: an eventfd (QEMU, UML) */
	VU_FD_CALL, /* SET_VRING_CALL: an eventfd (QEMU), a Unix socket (UML's
		     * os_pipe() is a socketpair), or a pipe's write end */
	VU_FD_ERR, /* SET_VRING_ERR: an eventfd (QEMU) */
	VU_FD_SLAVE, /* SET_SLAVE_REQ_FD: a Unix socket (QEMU, UML) */
	VU_FD_MEM, /* SET_MEM_TABLE: a regular file (memfd, tmpfs, hugetlbfs) */
};

/*
 * vu_fd_check() - check that @fd is of a type @use admits, and make kick,
 * call and err fds non-blocking (the file description is shared with the
 * frontend; O_NONBLOCK changes nothing for how it uses its end). A kick fd
 * is read and written by our threads, so it must be an eventfd: a pipe's
 * read end at EOF is always readable (a spin), its write end can block.
 * An eventfd is told from other anonymous inodes (timerfd, signalfd, epoll)
 * by its /proc/self/fd link, "anon_inode:[eventfd]".
 *
 * @what: on failure, a short description of what the fd is ("pipe:[1234]",
 * "a regular file", ...) for the error message; @what_len bytes.
 * Return: 0; -EINVAL when the type or access mode does not fit @use;
 * -errno from fstat(2), fcntl(2) or readlinkat(2) (-ENOENT: /proc is not
 * mounted, so an eventfd cannot be recognised).
 */
int vu_fd_check(int fd, enum vu_fd_use use, char *what, size_t what_len);

#endif /* SKIFF_VU_FD_H */
