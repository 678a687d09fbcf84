// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_lead.c
 * @brief The automatic hand-over lead of a cyclic task (see rtn_lead.h).
 */
#include <string.h>
#include "rtn_lead.h"

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void rtn_lead_init(struct rtn_lead *l, int64_t start_ns, int64_t max_ns, int64_t fixed_ns)
{
	memset(l, 0, sizeof(*l));
	l->max_ns = max_ns > RTN_LEAD_MIN_NS ? max_ns : RTN_LEAD_MIN_NS;
	l->fixed_ns = fixed_ns > 0 ? fixed_ns : 0;
	l->lead_ns = l->fixed_ns ? l->fixed_ns : clamp(start_ns, RTN_LEAD_MIN_NS, l->max_ns);
}

/* The need below which RTN_LEAD_QUANTILE_PPM of the (decayed) counts lie, ns. */
static int64_t quantile_ns(const struct rtn_lead *l)
{
	uint64_t total = 0, cum = 0, rank;
	int i;

	for (i = 0; i < RTN_LEAD_BINS; i++)
		total += l->bins[i];
	if (!total)
		return 0;
	rank = (total * RTN_LEAD_QUANTILE_PPM + 999999) / 1000000;
	for (i = 0; i < RTN_LEAD_BINS; i++) {
		cum += l->bins[i];
		if (cum >= rank)
			break;
	}
	return (int64_t)(i + 1) * 1000; /* the bin's upper edge: conservative */
}

static void update(struct rtn_lead *l)
{
	int64_t target = clamp(quantile_ns(l) + RTN_LEAD_MARGIN_NS, RTN_LEAD_MIN_NS, l->max_ns);
	int i;

	if (target > l->lead_ns)
		l->lead_ns = target;
	else
		l->lead_ns -= (l->lead_ns - target) / 4;
	for (i = 0; i < RTN_LEAD_BINS; i++)
		l->bins[i] >>= 1;
	l->updates++;
}

void rtn_lead_add(struct rtn_lead *l, int64_t need_ns)
{
	int64_t bin;

	l->samples++;
	if (need_ns > l->need_max_ns)
		l->need_max_ns = need_ns;
	if (need_ns > l->lead_ns)
		l->late++;
	if (need_ns > l->max_ns) {
		l->beyond++;
	} else {
		bin = need_ns < 0 ? 0 : need_ns / 1000;
		l->bins[bin < RTN_LEAD_BINS ? bin : RTN_LEAD_BINS - 1]++;
	}
	if (!l->fixed_ns && ++l->since_update >= RTN_LEAD_WINDOW) {
		l->since_update = 0;
		update(l);
	}
}
