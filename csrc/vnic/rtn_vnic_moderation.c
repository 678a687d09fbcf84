// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_vnic_moderation.c
 * @brief The batched pump's moderation (rtn_vnic_moderation.h).
 */
#include "rtn_vnic_moderation.h"

uint32_t rtn_vnic_mod_update(uint32_t avg, uint32_t moved, int64_t periods)
{
	uint64_t a = avg, m = moved < RTN_VNIC_MOD_MOVED_MAX ? moved : RTN_VNIC_MOD_MOVED_MAX;
	int64_t i;

	if (periods > RTN_VNIC_MOD_DECAY_MAX)
		return 0; /* slept that long: whatever flowed has stopped */
	/* rounded down, so that empty periods bring it to 0, not to a few sixteenths */
	a = (3 * a + m * RTN_VNIC_MOD_ONE) / 4;
	for (i = 1; i < periods && a; i++)
		a = 3 * a / 4; /* an empty period */
	return (uint32_t)a;
}

/* the average reaches @p frames a period (in 64 bits: frames in sixteenths may pass 32) */
static int reaches(uint32_t avg, uint32_t frames)
{
	return avg >= (uint64_t)frames * RTN_VNIC_MOD_ONE;
}

int rtn_vnic_mod_periodic(uint32_t avg, uint32_t heavy)
{
	return reaches(avg, heavy);
}

int64_t rtn_vnic_mod_round_ns(uint32_t avg, uint32_t busy, int64_t period_ns)
{
	return reaches(avg, busy) ? period_ns / 2 : period_ns;
}
