/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include "rtn_hist_inline.h"

void rtn_hist_init(struct rtn_hist *h, int64_t lo_ns)
{
	memset(h, 0, sizeof(*h));
	h->lo_ns = lo_ns;
}

void rtn_hist_read(const struct rtn_hist *h, struct rtn_hist *out)
{
	uint32_t s1, s2;

	do {
		s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		memcpy(out, h, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);
	} while ((s1 & 1) || s1 != s2);
}

void rtn_hist_add_sample(struct rtn_hist *h, int64_t v)
{
	rtn_hist_add(h, v);
}
