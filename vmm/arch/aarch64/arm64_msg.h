/* SPDX-License-Identifier: MIT */
/* Error messages of the arm64 boot code: the problem and its remedy, into a caller buffer. */
#ifndef SKIFF_ARM64_MSG_H
#define SKIFF_ARM64_MSG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/*
 * arm64_err() - format a message into @msg (@msg_len bytes, NUL-terminated,
 * truncated if longer; nothing when @msg is NULL or @msg_len 0) and return
 * @err, so that a check reads "return arm64_err(msg, len, -EINVAL, ...)".
 */
__attribute__((format(printf, 4, 5))) static inline int arm64_err(char *msg, size_t msg_len,
								  int err, const char *fmt, ...)
{
	va_list ap;

	if (msg && msg_len) {
		va_start(ap, fmt);
		vsnprintf(msg, msg_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

#endif /* SKIFF_ARM64_MSG_H */
