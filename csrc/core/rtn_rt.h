/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_rt.h
 * @brief The real-time thread: SCHED_FIFO, pinned, locked memory, PM QoS,
 *        absolute wake-ups, and a histogram of how late every wake-up was.
 *
 * rtn_rt_start() spawns the thread and returns only once the thread has
 * applied (or failed to apply) its settings, so an error comes back as a
 * return code with a message instead of a thread silently running
 * SCHED_OTHER.  The thread runs either the built-in periodic loop (body
 * NULL: the wake-up latency probe, a cyclictest equivalent) or a C body,
 * such as a TDMA engine, that schedules itself with rtn_rt_wait_until().
 *
 * What is fatal: a refused SCHED_FIFO, pinning or mlockall() (unless
 * allow_fallback, which runs SCHED_OTHER and/or unlocked and says so in the
 * stats).  What is not: /dev/cpu_dma_latency that cannot be opened (it is
 * root-only); the thread works, wakes later from deep C-states, and the
 * stats report dma_latency_held = 0 so tools can print it.
 */
#ifndef RTN_RT_H
#define RTN_RT_H

#include <stdint.h>
#include "rtn_hist.h"

#define RTN_RT_POLICY_OTHER	   0
#define RTN_RT_POLICY_FIFO	   1
#define RTN_RT_PRIO_MIN		   1
#define RTN_RT_PRIO_MAX		   99
#define RTN_RT_PERIOD_MAX_NS	   10000000000LL /* 10 s: beyond that it is not a cycle */
#define RTN_RT_PREFAULT_DEFAULT_KB 256
#define RTN_RT_PREFAULT_MAX_KB	   65536

struct rtn_rt;

/**
 * Body of the RT thread.  Runs on the configured thread after its settings
 * are applied; must return when rtn_rt_should_stop() says so.
 * @return 0 or a negative errno, reported as body_rc in the stats.
 */
typedef int (*rtn_rt_body_fn)(struct rtn_rt *rt, void *arg);

struct rtn_rt_opts {
	int cpu;		    /* -1: do not pin */
	int priority;		    /* 1..99, SCHED_FIFO */
	int64_t period_ns;	    /* built-in loop period; > 0 */
	int allow_fallback;	    /* run SCHED_OTHER if FIFO is refused */
	int hold_dma_latency;	    /* hold /dev/cpu_dma_latency at 0 */
	uint32_t prefault_stack_kb; /* 0: RTN_RT_PREFAULT_DEFAULT_KB */
};

struct rtn_rt_stats {
	int policy;   /* RTN_RT_POLICY_* actually applied */
	int priority; /* applied priority (0 under SCHED_OTHER) */
	int cpu;      /* pinned CPU, -1 if not pinned */
	int tid;      /* kernel thread id, for /proc checks */
	int64_t period_ns;
	uint64_t wakeups;     /* calls to rtn_rt_wait_until() */
	uint64_t missed;      /* periods skipped by the built-in loop */
	int fallback;	      /* FIFO was refused, running SCHED_OTHER */
	int dma_latency_held; /* /dev/cpu_dma_latency open at 0 */
	int memory_locked;    /* mlockall() succeeded */
	/* page faults the thread took once SCHED_FIFO, before its body: none
	 * expected, as memory is locked and the stack prefaulted before */
	uint64_t setup_faults;
	int running;	      /* thread has not returned yet */
	int body_rc;	      /* return code of the body */
	struct rtn_hist hist; /* lateness of each wake-up, ns */
};

/** Fill @p o with the defaults (cpu -1, priority 90, 1 ms, PM QoS held). */
void rtn_rt_opts_init(struct rtn_rt_opts *o);

/**
 * Validate @p o, start the thread and wait until it has applied its
 * settings.
 * @param body  NULL for the built-in periodic loop.
 * @return 0 and *out, or a negative errno with rtn_last_error() set
 *         (e.g. -EPERM "SCHED_FIFO priority 90 refused: ...").
 */
int rtn_rt_start(const struct rtn_rt_opts *o, rtn_rt_body_fn body, void *arg, struct rtn_rt **out);

/**
 * Sleep until the absolute time @p deadline_ns (CLOCK_MONOTONIC) and record
 * the lateness of the wake-up in the histogram.  Called only on the RT thread.
 * @return the actual wake-up time.
 */
int64_t rtn_rt_wait_until(struct rtn_rt *rt, int64_t deadline_ns);

/** Non-zero once rtn_rt_stop() has been called; bodies poll it each cycle. */
int rtn_rt_should_stop(const struct rtn_rt *rt);

/** Consistent snapshot of the stats; never blocks the RT thread. */
void rtn_rt_read_stats(const struct rtn_rt *rt, struct rtn_rt_stats *out);

/** The live wake-up histogram, for readers that snapshot it (rtn_hist_read). */
const struct rtn_hist *rtn_rt_hist(const struct rtn_rt *rt);

/**
 * Stop the thread, join it, release /dev/cpu_dma_latency and free @p rt.
 * @param final  if not NULL, receives the stats after the thread has ended.
 * @return the body's return code (0 for the built-in loop).  NULL is a no-op.
 */
int rtn_rt_stop(struct rtn_rt *rt, struct rtn_rt_stats *final);

#endif
