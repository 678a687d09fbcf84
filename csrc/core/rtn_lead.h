/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_lead.h
 * @brief The automatic hand-over lead of a cyclic task: how long before its
 *        slot the task must wake so that its message is handed over in time.
 *
 * Each run adds what it needed: the time from its scheduled wake-up to the
 * end of its hand-over (wake-up lateness plus its own processing), less how
 * late the station's RT thread took the message in its slot when it did
 * take it in that occurrence (rtn_cyclic.c learns a run's need a cycle
 * later, from the pick-up stamp, rtn_app_tx_pickup()): on a vCPU that slows
 * down or stalls both threads are late together, and a hand-over that came
 * before the RT thread's pick-up made its slot however late it was.  Every
 * RTN_LEAD_WINDOW runs the lead moves towards a high quantile of that need
 * plus a margin: at once when the need grew, by a quarter of the distance
 * when it shrank, so a quiet spell lowers the lead slowly.  Older samples
 * weigh less: the counts halve at each update.  A need longer than the
 * lead's maximum (half the cycle) is a stall no lead covers; it is counted,
 * not learnt.  A fixed lead (fixed_ns > 0) is reported but never moved.
 */
#ifndef RTN_LEAD_H
#define RTN_LEAD_H

#include <stdint.h>

#define RTN_LEAD_WINDOW	      1024  /* runs between two updates */
#define RTN_LEAD_BINS	      2000  /* 1 us each: needs up to 2 ms are told apart */
#define RTN_LEAD_MARGIN_NS    20000 /* above the quantile */
#define RTN_LEAD_MIN_NS	      10000
#define RTN_LEAD_QUANTILE_PPM 999000 /* p99.9 of the recent needs */

struct rtn_lead {
	int64_t lead_ns;     /* the lead in force */
	int64_t max_ns;	     /* at most this (half the cycle) */
	int64_t fixed_ns;    /* > 0: set by the user, not adapted */
	int64_t need_max_ns; /* the largest need seen */
	uint64_t samples;
	uint64_t updates; /* times the automatic lead was recomputed */
	uint64_t late;	  /* hand-overs after the lead in force had run out */
	uint64_t beyond;  /* needs above max_ns: stalls, counted, not learnt */
	uint32_t since_update;
	uint32_t pad;
	uint32_t bins[RTN_LEAD_BINS];
};

/**
 * Start at @p start_ns (clamped to RTN_LEAD_MIN_NS..@p max_ns), or keep
 * @p fixed_ns for good when it is positive.
 */
void rtn_lead_init(struct rtn_lead *l, int64_t start_ns, int64_t max_ns, int64_t fixed_ns);

/** Record one run's need (hand-over time minus scheduled wake-up), ns. */
void rtn_lead_add(struct rtn_lead *l, int64_t need_ns);

#endif
