// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_app_connect.c
 * @brief The socket port of rtn_app_open() (rtn_app_open.c): the connection
 *        to the station daemon's control socket, in a file of its own so
 *        that a harness (csrc/fuzz/fuzz_app_reply.c) links its own in place
 *        of this object.
 */
#include <sys/socket.h>
#include "rtn_app_priv.h"

int rtn_app_connect(int fd, const struct sockaddr *sa, unsigned int len)
{
	return connect(fd, sa, (socklen_t)len);
}
