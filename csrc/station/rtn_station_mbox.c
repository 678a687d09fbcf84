// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_station_mbox.c
 * @brief The station's mailbox: the control thread hands the RT thread a
 *        function to run between two wake-ups and waits for it.  The
 *        commands are the callers' own functions, so this file knows none of
 *        them and every module can post without calling up.
 */
#include <poll.h>
#include "rtn_station_priv.h"

int rtn_station_running(const struct rtn_station *s)
{
	return s->rt != NULL;
}

void rtn_station_exec_cmd(struct rtn_station *s)
{
	rtn_cmd_fn fn = __atomic_load_n(&s->cmd, __ATOMIC_ACQUIRE);

	if (!fn)
		return;
	fn(s, s->cmd_arg);
	s->cmd_rc = 0;
	__atomic_store_n(&s->cmd, NULL, __ATOMIC_RELEASE);
	if (rtn_station_running(s))
		efd_signal(s->done_fd);
}

/* Control side: run @p fn on the RT thread and wait for it. */
int rtn_station_post(struct rtn_station *s, rtn_cmd_fn fn, uintptr_t arg)
{
	s->cmd_arg = arg;
	__atomic_store_n(&s->cmd, fn, __ATOMIC_RELEASE);
	if (!rtn_station_running(s)) {
		rtn_station_exec_cmd(s);
		return s->cmd_rc;
	}
	efd_signal(s->efd);
	for (;;) {
		struct pollfd p = { .fd = s->done_fd, .events = POLLIN };

		if (poll(&p, 1, 2000) == 1) {
			efd_drain(s->done_fd);
			if (!__atomic_load_n(&s->cmd, __ATOMIC_ACQUIRE))
				return s->cmd_rc;
		} else if (!rtn_station_running(s)) {
			rtn_station_exec_cmd(s);
			return s->cmd_rc;
		}
	}
}
