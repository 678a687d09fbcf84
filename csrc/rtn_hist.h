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
#include <string.h>
#include "rtn_time.h"

#define RTN_HIST_BINS 4000 /* 1 us each: 4 ms of range above lo_ns */

struct rtn_hist {
	uint32_t seq;          /* odd while the writer is updating */
	int64_t lo_ns;         /* value at the lower edge of bin 0 */
	uint64_t count;        /* samples, including under- and overflows */
	uint64_t underflow;    /* samples below lo_ns */
	uint64_t overflow;     /* samples at or above lo_ns + RTN_HIST_BINS us */
	int64_t min_ns;
	int64_t max_ns;
	int64_t sum_ns;
	uint32_t bins[RTN_HIST_BINS];
};

void rtn_hist_init(struct rtn_hist *h, int64_t lo_ns);
/** Copy a consistent snapshot of @p h into @p out (never blocks the writer). */
void rtn_hist_read(const struct rtn_hist *h, struct rtn_hist *out);
void rtn_hist_add_sample(struct rtn_hist *h, int64_t v);

/*
 * Values may come from the wire or another process: every step below is
 * defined for any int64_t (no signed overflow, no bin outside the array).
 */
static inline void rtn_hist_add(struct rtn_hist *h, int64_t v)
{
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (v < h->lo_ns) {
		h->underflow++;
	} else {
		/* v >= lo_ns, so the unsigned difference is the true distance */
		uint64_t bin = ((uint64_t)v - (uint64_t)h->lo_ns) / RTN_NS_PER_US;

		if (bin >= RTN_HIST_BINS)
			h->overflow++;
		else
			h->bins[bin]++;
	}
	if (h->count == 0 || v < h->min_ns)
		h->min_ns = v;
	if (h->count == 0 || v > h->max_ns)
		h->max_ns = v;
	h->count++;
	h->sum_ns = rtn_sat_add(h->sum_ns, v);
	__atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);
}

#endif
