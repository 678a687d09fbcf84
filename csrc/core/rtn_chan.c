/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_chan.c
 * @brief The defaults of a channel's options (see rtn_chan.h), one place for
 *        the application library and the station.
 */
#include "rtn_chan.h"

void rtn_chan_opts_init(struct rtn_chan_opts *o)
{
	*o = (struct rtn_chan_opts){ .slot = 0, .prio = 15, .max_size = 1514, .depth = 256 };
}
