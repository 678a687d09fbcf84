/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_hist.h
 * @brief Latency histograms in 1 us bins, written by the RT thread without
 *        locks and read by anyone through a sequence counter.
 *
 * Writers are single (one RT thread per histogram).  A reader copies the
 * whole structure and retries while the writer was in the middle of an
 * update, so the RT thread never waits for a reader.
 */
#ifndef RTN_HIST_H
#define RTN_HIST_H

#include <stdint.h>

#define RTN_HIST_BINS 4000 /* 1 us each: 4 ms of range above lo_ns */

struct rtn_hist {
	uint32_t seq;	    /* odd while the writer is updating */
	int64_t lo_ns;	    /* value at the lower edge of bin 0 */
	uint64_t count;	    /* samples, including under- and overflows */
	uint64_t underflow; /* samples below lo_ns */
	uint64_t overflow;  /* samples at or above lo_ns + RTN_HIST_BINS us */
	int64_t min_ns;
	int64_t max_ns;
	int64_t sum_ns;
	uint32_t bins[RTN_HIST_BINS];
};

void rtn_hist_init(struct rtn_hist *h, int64_t lo_ns);
/** Copy a consistent snapshot of @p h into @p out (never blocks the writer). */
void rtn_hist_read(const struct rtn_hist *h, struct rtn_hist *out);
/** rtn_hist_add() (rtn_hist_inline.h) as a function, for callers outside C. */
void rtn_hist_add_sample(struct rtn_hist *h, int64_t v);

#endif
