/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rt_sched_posix.h
 * @brief Scheduling backend of the RT thread for stock Linux (POSIX).
 *
 * rtn_rt.c uses exactly three primitives from this file: make the calling
 * thread real-time, sleep until an absolute time, and read the clock.  A
 * different real-time core (for instance Xenomai 4 EVL, where the thread
 * attaches to the core with evl_attach_self() and sleeps with
 * evl_sleep_until()) would replace this one file and nothing else.
 *
 * Not named rtn_*.h on purpose: those are the public headers, which the cffi
 * build reads as declarations (csrc/build_core.py), and these static
 * functions belong to rtn_rt.c only.
 */
#ifndef RT_SCHED_POSIX_H
#define RT_SCHED_POSIX_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include "rtn_time_inline.h"

/**
 * Switch the calling thread to SCHED_FIFO at @p priority.
 * @return 0 or a negative errno (-EPERM without CAP_SYS_NICE/RLIMIT_RTPRIO).
 */
static int rt_sched_set_fifo(int priority)
{
	struct sched_param sp = { .sched_priority = priority };

	return -pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

/** The policy the calling thread really runs under (SCHED_FIFO, SCHED_OTHER...). */
static int rt_sched_get_policy(int *priority)
{
	struct sched_param sp;
	int policy;

	if (pthread_getschedparam(pthread_self(), &policy, &sp) != 0) {
		return -1;
	}
	*priority = sp.sched_priority;
	return policy;
}

/** Sleep until the absolute time @p deadline_ns on the shared clock. */
static inline void rt_sched_sleep_until(rtn_ns_t deadline_ns)
{
	rtn_sleep_until(deadline_ns);
}

static inline rtn_ns_t rt_sched_now(void)
{
	return rtn_now();
}

#endif
