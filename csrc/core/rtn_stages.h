/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_stages.h
 * @brief Where a message's latency went: one histogram per stage (the
 *        time between two consecutive stamps, rtn_app_hdr.h), a counter
 *        of stage values over a threshold, and a record of every message
 *        over its deadline naming the stage that took the time.
 *
 * Stage k runs from stamp k to stamp k + 1.  A stage with a stamp missing
 * (0) is not counted.  The stage blamed for an over-deadline message is
 * the one furthest above its own running baseline (a moving average of
 * the on-time messages), and the record keeps that excess: the lateness
 * the stage caused.  The wire stage spans two stations' clocks (their TDMA
 * synchronisation error is in it).
 *
 * One writer (the RT thread, or the receiving application's thread); any
 * reader, without locks: histograms through their sequence counters,
 * records through their own (rtn_stages_late_read).
 */
#ifndef RTN_STAGES_H
#define RTN_STAGES_H

#include <stdint.h>
#include "rtn_app_hdr.h"
#include "rtn_hist.h"

#define RTN_STAGE_APP		       0 /* scheduled -> hand-over: the application woke late */
#define RTN_STAGE_QUEUE		       1 /* hand-over -> pick-up: waiting for the RT thread's slot */
#define RTN_STAGE_SLOT		       2 /* pick-up -> TX: in the slot's queue (skipped slots) */
#define RTN_STAGE_WIRE		       3 /* TX -> receiver's XDP stamp */
#define RTN_STAGE_RX_RT		       4 /* XDP stamp -> the receiver's RT thread */
#define RTN_STAGE_TAKE		       5 /* RT thread -> the receiving application */
#define RTN_STAGE_N		       6
#define RTN_STAGES_LATE_MAX	       1024	 /* over-deadline records kept, the newest */
#define RTN_STAGES_OUTLIER_DEFAULT_NS  200000LL	 /* a stage longer than this is an outlier */
#define RTN_STAGES_DEADLINE_DEFAULT_NS 1000000LL /* scheduled -> last stamp; one lab cycle */
#define RTN_STAGES_WIRE_LO_NS	       -500000LL /* the wire stage's histogram starts here */

/** One message over its deadline. */
struct rtn_stage_late {
	uint64_t no; /* record number + 1, 0 while being written */
	uint32_t seq;
	int32_t stage;		       /* RTN_STAGE_* that took the time */
	int64_t sched_ns;	       /* when it was meant to be sent (global time) */
	int64_t total_ns;	       /* scheduled -> last stamp */
	int64_t excess_ns;	       /* how far the blamed stage ran above its baseline */
	int64_t stage_ns[RTN_STAGE_N]; /* every stage; INT64_MIN when not stamped */
};

struct rtn_stages {
	int64_t outlier_ns; /* written by the control side, read by the writer */
	int64_t deadline_ns;
	uint64_t msgs; /* messages with at least one stage */
	uint64_t late; /* over the deadline (records made) */
	uint64_t outliers[RTN_STAGE_N];
	int64_t baseline_ns[RTN_STAGE_N];
	uint64_t baseline_n[RTN_STAGE_N];
	struct rtn_hist hist[RTN_STAGE_N];
	struct rtn_stage_late rec[RTN_STAGES_LATE_MAX];
};

/** Empty, with the default thresholds. */
void rtn_stages_init(struct rtn_stages *st);

/** Set the thresholds (> 0 each; 0 keeps the current one); -EINVAL for a negative one. */
int rtn_stages_set(struct rtn_stages *st, int64_t outlier_ns, int64_t deadline_ns);

/** Count one message from its stamps (any values: they come from the wire). */
void rtn_stages_add(struct rtn_stages *st, uint32_t seq, const int64_t t[RTN_STAMP_N]);

/**
 * Copy the over-deadline records numbered @p first onwards (0: the oldest
 * still kept) into @p out, at most @p n.  Records overwritten meanwhile
 * are skipped.  @return the number copied; *next: the number to pass next
 * time.
 */
uint32_t rtn_stages_late_read(const struct rtn_stages *st, uint64_t first,
			      struct rtn_stage_late *out, uint32_t n, uint64_t *next);

#endif
