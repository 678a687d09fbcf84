/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_core.h
 * @brief Version and error reporting shared by every C module.
 *
 * Functions return 0 or a negative errno.  Before returning an error they
 * record a one-line, human-readable cause with rtn_set_error(); Python reads
 * it with rtn_last_error() and raises RtnetError(errno, message).  The
 * message buffer is thread-local, so the RT thread never shares it.
 *
 * Every exported function that can fail calls rtn_clear_error() first, so
 * after a failure the message is this call's (or empty when the call set
 * none), never an earlier call's.
 */
#ifndef RTN_CORE_H
#define RTN_CORE_H

const char *rtn_version(void);
const char *rtn_last_error(void);
/** Forget the last message: first thing in every exported function that can fail. */
void rtn_clear_error(void);
/** Record the cause of an error; returns @p err (a negative errno) for chaining. */
int rtn_set_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
