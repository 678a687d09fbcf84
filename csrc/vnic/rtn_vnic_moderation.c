// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_vnic_moderation.c
 * @brief The batched pump's moderation (rtn_vnic_moderation.h).
 */
#include "rtn_vnic_moderation.h"

uint32_t rtn_vnic_mod_update(uint32_t avg, uint32_t moved, int64_t periods)
{
	int64_t a = avg, m = moved < RTN_VNIC_MOD_MOVED_MAX ? moved : RTN_VNIC_MOD_MOVED_MAX;
	int64_t i;

	a += (m * RTN_VNIC_MOD_ONE - a) / 4;
	for (i = 1; i < periods && i <= RTN_VNIC_MOD_DECAY_MAX && a; i++)
		a = a * 3 / 4; /* an empty period: a quarter of the way to 0 */
	return (uint32_t)a;
}

int rtn_vnic_mod_periodic(uint32_t avg, uint32_t heavy)
{
	return avg >= (uint64_t)heavy * RTN_VNIC_MOD_ONE;
}
