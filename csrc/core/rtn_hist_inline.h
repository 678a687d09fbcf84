/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_hist_inline.h
 * @brief Adding a sample to a histogram (rtn_hist.h), inline for the RT threads.
 */
#ifndef RTN_HIST_INLINE_H
#define RTN_HIST_INLINE_H

#include <stdint.h>
#include "rtn_hist.h"
#include "rtn_time_inline.h"

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
