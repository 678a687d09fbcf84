// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_wakeboard.c
 * @brief The process's board of RT threads' next deadlines (rtn_wakeboard.h).
 *
 * A free slot holds INT64_MIN, a claimed one its thread's next deadline
 * (INT64_MAX while it has none): either way a past time, which readers
 * skip.  Readers take every slot without a lock; a deadline read stale by
 * one wake-up only makes a helper wait once for nothing, or not at all.
 * Each slot's CPU mask is every CPU unless its thread is pinned to one below 64.
 */
#include "rtn_wakeboard.h"

static int64_t rtn_wakeboard[RTN_WAKEBOARD_SLOTS] = {
	[0 ... RTN_WAKEBOARD_SLOTS - 1] = INT64_MIN,
};

static uint64_t rtn_wakeboard_cpus[RTN_WAKEBOARD_SLOTS] = {
	[0 ... RTN_WAKEBOARD_SLOTS - 1] = RTN_WAKEBOARD_ANY_CPU,
};

int rtn_wakeboard_claim(void)
{
	int i;

	for (i = 0; i < RTN_WAKEBOARD_SLOTS; i++) {
		int64_t free_mark = INT64_MIN;

		if (__atomic_compare_exchange_n(&rtn_wakeboard[i], &free_mark, INT64_MAX, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return i;
	}
	return -1;
}

void rtn_wakeboard_post(int slot, int64_t at)
{
	if (slot >= 0 && slot < RTN_WAKEBOARD_SLOTS)
		__atomic_store_n(&rtn_wakeboard[slot], at, __ATOMIC_RELAXED);
}

uint64_t rtn_wakeboard_cpu_mask(int cpu)
{
	return cpu >= 0 && cpu < 64 ? 1ULL << cpu : RTN_WAKEBOARD_ANY_CPU;
}

void rtn_wakeboard_pin(int slot, int cpu)
{
	if (slot >= 0 && slot < RTN_WAKEBOARD_SLOTS)
		__atomic_store_n(&rtn_wakeboard_cpus[slot], rtn_wakeboard_cpu_mask(cpu),
				 __ATOMIC_RELAXED);
}

void rtn_wakeboard_release(int slot)
{
	if (slot >= 0 && slot < RTN_WAKEBOARD_SLOTS) {
		__atomic_store_n(&rtn_wakeboard_cpus[slot], RTN_WAKEBOARD_ANY_CPU,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&rtn_wakeboard[slot], INT64_MIN, __ATOMIC_RELEASE);
	}
}

int64_t rtn_wakeboard_next(int64_t now, uint64_t cpus)
{
	int64_t next = INT64_MAX;
	int i;

	for (i = 0; i < RTN_WAKEBOARD_SLOTS; i++) {
		int64_t at = __atomic_load_n(&rtn_wakeboard[i], __ATOMIC_RELAXED);

		if (at >= now && at < next &&
		    (__atomic_load_n(&rtn_wakeboard_cpus[i], __ATOMIC_RELAXED) & cpus))
			next = at;
	}
	return next;
}
