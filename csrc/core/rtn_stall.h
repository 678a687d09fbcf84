/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_stall.h
 * @brief The stall detector: one SCHED_FIFO thread per CPU that sleeps a
 *        short period and records every wake-up later than a threshold,
 *        so that a gap of the (virtual) CPU is shown where it happened
 *        instead of being inferred from a cyclictest maximum.
 *
 * At the highest priority nothing on the CPU can delay the thread but the
 * kernel and whatever runs the CPU itself (on a VM: the hypervisor), so
 * its lateness is the CPU's unavailability.  A gap at least one period
 * long always covers a wake-up and is recorded; a shorter one only when
 * it covers one (with probability gap / period).  Cost: one timer wake-up
 * per period and CPU (cyclictest's), e.g. 2000 a second at 500 us.
 *
 * A vCPU can also run slowly rather than not at all: in spells of tens of
 * milliseconds seen on the lab VM every instruction took 10 to 30 times as
 * long, timers fired 80 us late (under the gap threshold) and the RT
 * threads' work took 20 times as long, so slots were skipped with no gap
 * on record.  After each wake-up the thread therefore times a fixed unit
 * of work (calibrated to about work_ns at start); a unit slower than
 * slow_factor times the fastest one seen, twice in a row (one interrupt
 * hits one unit, a spell many), makes a "slow" record spanning the two
 * wake-ups.  Cost: one unit (2 us by default) per period.
 *
 * Each gap also says how much of it the thread spent runnable, waiting for
 * its CPU (queued_ns, from /proc/thread-self/schedstat read after every
 * wake-up), which tells a CPU taken away from the VM from one kept busy by
 * the machine's own work.  Cost: one pread() per period.
 */
#ifndef RTN_STALL_H
#define RTN_STALL_H

#include <stdint.h>
#include "rtn_hist.h"

#define RTN_STALL_MAX_CPUS	       64
#define RTN_STALL_RECS		       4096 /* per CPU, the newest */
#define RTN_STALL_PERIOD_DEFAULT_NS    500000LL
#define RTN_STALL_THRESHOLD_DEFAULT_NS 100000LL
#define RTN_STALL_WORK_DEFAULT_NS      2000LL
#define RTN_STALL_SLOW_FACTOR_DEFAULT  4
#define RTN_STALL_SLOW_FACTOR_MAX      1000
#define RTN_STALL_GAP		       0 /* the CPU did not run the thread from due_ns to woke_ns */
#define RTN_STALL_SLOW		       1 /* the CPU ran slowly from due_ns to woke_ns */

/**
 * One record (CLOCK_MONOTONIC): a gap, the thread was due at @p due_ns and
 * ran at @p woke_ns; or a slow spell from @p due_ns to @p woke_ns in which
 * the work unit took @p work_ns against the fastest @p base_ns.
 */
struct rtn_stall_rec {
	uint64_t no; /* record number + 1, 0 while being written */
	int32_t cpu;
	int32_t kind; /* RTN_STALL_GAP or RTN_STALL_SLOW */
	int64_t due_ns;
	int64_t woke_ns;
	int64_t work_ns; /* the unit's time at the record (a slow one: the slower of the two) */
	int64_t base_ns; /* the fastest unit so far */
	/* a gap: how much of it the thread was runnable but waiting for the CPU
	 * (its schedstat run_delay), -1 if unknown.  A timer that fired on time
	 * and a CPU busy with the machine's own work (interrupts, softirqs, a
	 * kernel section that cannot be preempted) make it about the gap; a CPU
	 * taken away (the hypervisor) delays the timer itself, so it stays small. */
	int64_t queued_ns;
};

struct rtn_stall_opts {
	int64_t period_ns;
	int64_t threshold_ns; /* wake-ups later than this are recorded */
	int priority;	      /* SCHED_FIFO 1..99 */
	int allow_fallback;   /* run SCHED_OTHER where FIFO is refused (then the gaps mean less) */
	int64_t work_ns;      /* the work unit timed after each wake-up, 100 ns .. 100 us */
	int slow_factor;      /* slower than this many times the fastest unit: slow; 0: off */
};

struct rtn_stall;

/** Defaults: 500 us period, 100 us threshold, priority 99, no fallback, 2 us unit, factor 4. */
void rtn_stall_opts_init(struct rtn_stall_opts *o);

/** Start one detector thread on each of the @p n CPUs in @p cpus. */
int rtn_stall_start(const struct rtn_stall_opts *o, const int *cpus, int n, struct rtn_stall **out);

/**
 * Copy the gaps of detector @p idx (its index in @p cpus) numbered @p first
 * onwards into @p out, at most @p n; overwritten ones are skipped.
 * @return the number copied; *next: the number to pass next time; -EINVAL
 *         for an index out of range.
 */
int rtn_stall_read(const struct rtn_stall *st, int idx, uint64_t first, struct rtn_stall_rec *out,
		   uint32_t n, uint64_t *next);

/** Wake-ups of detector @p idx and their lateness (a snapshot); -EINVAL out of range. */
int rtn_stall_hist(const struct rtn_stall *st, int idx, uint64_t *wakeups, struct rtn_hist *out);

/** Stop and join every thread, free @p st.  Accepts NULL. */
void rtn_stall_stop(struct rtn_stall *st);

#endif
