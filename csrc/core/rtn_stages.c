// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_stages.c
 * @brief Stage histograms, outlier counters and over-deadline records
 *        (rtn_stages.h).
 */
#include <errno.h>
#include <string.h>
#include "rtn_hist_inline.h"
#include "rtn_recring_inline.h"
#include "rtn_stages.h"

/* the baseline: a moving average over about this many on-time messages */
#define BASELINE_WEIGHT 16

void rtn_stages_init(struct rtn_stages *st)
{
	int k;

	memset(st, 0, sizeof(*st));
	st->outlier_ns = RTN_STAGES_OUTLIER_DEFAULT_NS;
	st->deadline_ns = RTN_STAGES_DEADLINE_DEFAULT_NS;
	for (k = 0; k < RTN_STAGE_N; k++)
		rtn_hist_init(&st->hist[k], k == RTN_STAGE_WIRE ? RTN_STAGES_WIRE_LO_NS : 0);
}

int rtn_stages_set(struct rtn_stages *st, int64_t outlier_ns, int64_t deadline_ns)
{
	if (outlier_ns < 0 || deadline_ns < 0)
		return -EINVAL;
	if (outlier_ns)
		__atomic_store_n(&st->outlier_ns, outlier_ns, __ATOMIC_RELAXED);
	if (deadline_ns)
		__atomic_store_n(&st->deadline_ns, deadline_ns, __ATOMIC_RELAXED);
	return 0;
}

static void baseline_add(struct rtn_stages *st, int k, int64_t v)
{
	if (st->baseline_n[k]++ == 0)
		st->baseline_ns[k] = v;
	else
		st->baseline_ns[k] = rtn_sat_add(
			st->baseline_ns[k], rtn_sat_sub(v, st->baseline_ns[k]) / BASELINE_WEIGHT);
}

static void record_late(struct rtn_stages *st, uint32_t seq, int64_t sched, int64_t total,
			const int64_t d[RTN_STAGE_N])
{
	struct rtn_stage_late *r = &st->rec[st->late % RTN_STAGES_LATE_MAX];
	int64_t worst = INT64_MIN;
	int k, blamed = -1;

	for (k = 0; k < RTN_STAGE_N; k++) {
		int64_t ex;

		if (d[k] == INT64_MIN)
			continue;
		ex = rtn_sat_sub(d[k], st->baseline_n[k] ? st->baseline_ns[k] : 0);
		if (ex > worst) {
			worst = ex;
			blamed = k;
		}
	}
	rtn_recring_begin(&r->no);
	r->seq = seq;
	r->stage = blamed;
	r->sched_ns = sched;
	r->total_ns = total;
	r->excess_ns = worst;
	memcpy(r->stage_ns, d, sizeof(r->stage_ns));
	rtn_recring_commit(&r->no, st->late);
	__atomic_store_n(&st->late, st->late + 1, __ATOMIC_RELEASE);
}

void rtn_stages_add(struct rtn_stages *st, uint32_t seq, const int64_t t[RTN_STAMP_N])
{
	int64_t d[RTN_STAGE_N], outlier = __atomic_load_n(&st->outlier_ns, __ATOMIC_RELAXED);
	int64_t deadline = __atomic_load_n(&st->deadline_ns, __ATOMIC_RELAXED);
	int64_t total, last = 0;
	int k, any = 0;

	for (k = 0; k < RTN_STAGE_N; k++) {
		d[k] = INT64_MIN;
		if (!t[k] || !t[k + 1])
			continue;
		d[k] = rtn_sat_sub(t[k + 1], t[k]);
		any = 1;
		rtn_hist_add(&st->hist[k], d[k]);
		if (d[k] > outlier)
			st->outliers[k]++;
	}
	if (!any)
		return;
	st->msgs++;
	for (k = RTN_STAMP_N - 1; k > 0 && !last; k--)
		last = t[k];
	total = t[RTN_STAMP_SCHED] && last ? rtn_sat_sub(last, t[RTN_STAMP_SCHED]) : 0;
	if (total > deadline) {
		record_late(st, seq, t[RTN_STAMP_SCHED], total, d);
		return;
	}
	/* only on-time messages move the baselines: a late one is measured against them */
	for (k = 0; k < RTN_STAGE_N; k++)
		if (d[k] != INT64_MIN)
			baseline_add(st, k, d[k]);
}

uint32_t rtn_stages_late_read(const struct rtn_stages *st, uint64_t first,
			      struct rtn_stage_late *out, uint32_t n, uint64_t *next)
{
	return rtn_recring_read(st->rec, sizeof(st->rec[0]), RTN_STAGES_LATE_MAX,
				__atomic_load_n(&st->late, __ATOMIC_ACQUIRE), first, out, n, next);
}
