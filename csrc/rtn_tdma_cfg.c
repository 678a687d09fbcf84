/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_cfg.c
 * @brief The TDMA configuration: its defaults and its validation, rule for
 *        rule the same as rtmac/tdma_config.py's.
 */
#include <errno.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_tdma.h"
#include "rtn_tdma_priv.h"

void rtn_tdma_cfg_init(struct rtn_tdma_cfg *c, int32_t role)
{
	memset(c, 0, sizeof(*c));
	c->role = role;
	c->cycle_ns = role == RTN_TDMA_ROLE_MASTER ? 1000000 : 0;
	c->backup_offset_ns = -1;
	c->cal_rounds = 100;
	c->max_slot_id = 7;
	c->max_cal_requests = 64;
	c->link_rate_mbps = 100;
	c->guard_ns = 50000;
	c->sync_loss_cycles = 5;
	c->listen_cycles = 3;
}

int rtn_tdma_cfg_check(const struct rtn_tdma_cfg *c)
{
	rtn_clear_error();
	/*
	 * The rules of rtmac/tdma_config.py validate(), rule for rule, so that a
	 * configuration the Python side accepted never fails here at start;
	 * tests/unit/test_tdma_cross_check.py holds both sides together.
	 */
	const int64_t max_cycle_ns = RTN_TDMA_MAX_CYCLE_NS;
	const int64_t max_offset_ns = RTN_TDMA_MAX_OFFSET_NS;
	const int64_t max_guard_ns = RTN_TDMA_MAX_GUARD_NS;
	const uint32_t max_cal_rounds = RTN_TDMA_MAX_CAL_ROUNDS;
	const uint32_t max_link_rate = RTN_TDMA_MAX_LINK_RATE_MBPS;
	const uint32_t max_sync_loss = RTN_TDMA_MAX_SYNC_LOSS;
	const uint32_t max_period = RTN_TDMA_MAX_PERIOD;
	const uint32_t min_size = RTN_TDMA_MIN_SLOT_SIZE, max_size = RTN_TDMA_MAX_SLOT_SIZE;
	uint32_t i, j;

	if (c->role != RTN_TDMA_ROLE_MASTER && c->role != RTN_TDMA_ROLE_SLAVE)
		return rtn_set_error(-EINVAL, "role must be master or slave");
	if (c->role == RTN_TDMA_ROLE_MASTER && c->cycle_ns == 0)
		return rtn_set_error(-EINVAL, "a master needs a cycle period");
	/* a slave may leave the cycle at 0: it learns it from the Sync frames */
	if (c->cycle_ns != 0 && c->cycle_ns < RTN_TDMA_MIN_CYCLE_NS)
		return rtn_set_error(-EINVAL, "cycle %lld us is below the minimum of %lld us",
				     (long long)c->cycle_ns / 1000, RTN_TDMA_MIN_CYCLE_NS / 1000);
	if (c->cycle_ns > max_cycle_ns)
		return rtn_set_error(-EINVAL, "cycle %lld us is above the maximum of %lld us",
				     (long long)c->cycle_ns / 1000, (long long)max_cycle_ns / 1000);
	if (c->backup_offset_ns != -1) {
		if (c->role != RTN_TDMA_ROLE_MASTER)
			return rtn_set_error(-EINVAL, "a backup offset is only valid for a master");
		if (c->backup_offset_ns <= 0 || c->backup_offset_ns >= c->cycle_ns)
			return rtn_set_error(-EINVAL, "backup offset %lld ns outside 1 ns..the cycle "
					     "(-1: primary master)", (long long)c->backup_offset_ns);
	}
	if (c->cal_rounds > max_cal_rounds)
		return rtn_set_error(-EINVAL, "calibration rounds %u above %u", c->cal_rounds,
				     max_cal_rounds);
	if (c->max_slot_id >= RTN_TDMA_MAX_SLOTS)
		return rtn_set_error(-EINVAL, "max slot id %u above %d", c->max_slot_id,
				     RTN_TDMA_MAX_SLOTS - 1);
	if (c->max_cal_requests < 1 || c->max_cal_requests > RTN_TDMA_MAX_CAL)
		return rtn_set_error(-EINVAL, "max calibration requests must be 1..%d",
				     RTN_TDMA_MAX_CAL);
	if (c->link_rate_mbps > max_link_rate)
		return rtn_set_error(-EINVAL, "link rate %u Mbit/s above %u", c->link_rate_mbps,
				     max_link_rate);
	if (c->guard_ns < 0 || c->guard_ns > max_guard_ns)
		return rtn_set_error(-EINVAL, "guard %lld ns outside 0..%lld", (long long)c->guard_ns,
				     (long long)max_guard_ns);
	if (c->sync_loss_cycles < 1 || c->sync_loss_cycles > max_sync_loss)
		return rtn_set_error(-EINVAL, "sync loss cycles %u outside 1..%u",
				     c->sync_loss_cycles, max_sync_loss);
	if (c->n_slots > RTN_TDMA_MAX_SLOTS)
		return rtn_set_error(-EINVAL, "too many slots");
	for (i = 0; i < c->n_slots; i++) {
		const struct rtn_tdma_slot_cfg *s = &c->slots[i];

		if (s->id < 0 || (uint32_t)s->id > c->max_slot_id)
			return rtn_set_error(-EINVAL, "slot %d: id outside 0..max slot id %u",
					     s->id, c->max_slot_id);
		if (s->offset_ns < 0 || s->offset_ns > max_offset_ns)
			return rtn_set_error(-EINVAL, "slot %d: offset %lld ns outside 0..%lld",
					     s->id, (long long)s->offset_ns, (long long)max_offset_ns);
		if (s->period < 1 || s->period > max_period || s->phasing < 1 ||
		    s->phasing > s->period)
			return rtn_set_error(-EINVAL, "slot %d: phasing %u/%u needs 1 <= x <= y <= %u",
					     s->id, s->phasing, s->period, max_period);
		if (s->size < min_size || s->size > max_size)
			return rtn_set_error(-EINVAL, "slot %d: size %u outside %u..%u",
					     s->id, s->size, min_size, max_size);
		if (s->window_ns < 0 || s->window_ns > max_offset_ns)
			return rtn_set_error(-EINVAL, "slot %d: window %lld ns outside 0..%lld",
					     s->id, (long long)s->window_ns, (long long)max_offset_ns);
		if (s->window_ns &&
		    s->window_ns < rtn_wire_time_ns(s->size + ETH_HLEN_RTN, c->link_rate_mbps))
			return rtn_set_error(-EINVAL, "slot %d: window %lld ns is shorter than one "
					     "%u-byte frame (%lld ns)", s->id, (long long)s->window_ns,
					     s->size + ETH_HLEN_RTN,
					     (long long)rtn_wire_time_ns(s->size + ETH_HLEN_RTN,
									 c->link_rate_mbps));
		if (c->cycle_ns && s->offset_ns + slot_len_ns(c, s) > c->cycle_ns)
			return rtn_set_error(-EINVAL, "slot %d: runs past the cycle end", s->id);
		for (j = 0; j < i; j++)
			if (c->slots[j].id == s->id)
				return rtn_set_error(-EINVAL, "slot %d: configured twice", s->id);
	}
	for (i = 0; i < c->n_slots; i++) {
		const struct rtn_tdma_slot_cfg *s = &c->slots[i];
		int found = 0;

		if (s->joint < 0)
			continue;
		if (s->joint == s->id)
			return rtn_set_error(-EINVAL, "slot %d: cannot be joint with itself", s->id);
		/* RTnet's check: the primary's id must be below max_slot_id */
		if ((uint32_t)s->joint >= c->max_slot_id)
			return rtn_set_error(-EINVAL, "slot %d: joint slot %d must be below max slot id %u",
					     s->id, s->joint, c->max_slot_id);
		for (j = 0; j < c->n_slots; j++) {
			if (c->slots[j].id != s->joint)
				continue;
			found = 1;
			if (c->slots[j].size != s->size)
				return rtn_set_error(-EINVAL, "slot %d: joint slot %d has a different size",
						     s->id, s->joint);
			if (c->slots[j].joint >= 0)
				return rtn_set_error(-EINVAL, "slot %d: joint slot %d is itself joint",
						     s->id, s->joint);
		}
		if (!found)
			return rtn_set_error(-EINVAL, "slot %d: joint slot %d does not exist",
					     s->id, s->joint);
	}
	/* two slots overlap when their windows meet in a cycle where both are active */
	for (i = 0; i < c->n_slots; i++) {
		const struct rtn_tdma_slot_cfg *a = &c->slots[i];
		int64_t a_end = a->offset_ns + slot_len_ns(c, a);

		for (j = i + 1; j < c->n_slots; j++) {
			const struct rtn_tdma_slot_cfg *b = &c->slots[j];
			int64_t b_end = b->offset_ns + slot_len_ns(c, b);
			uint32_t g = a->period, r = b->period;

			if (a->offset_ns >= b_end || b->offset_ns >= a_end)
				continue;
			if (window_in_guard(c, a, b) || window_in_guard(c, b, a))
				continue;
			while (r) {		/* gcd of the periods */
				uint32_t t = g % r;

				g = r;
				r = t;
			}
			/* some cycle n has n % pa == xa - 1 and n % pb == xb - 1 (CRT) */
			if ((a->phasing - 1) % g == (b->phasing - 1) % g)
				return rtn_set_error(-EINVAL, "slot %d overlaps slot %d", b->id, a->id);
		}
	}
	return 0;
}

int rtn_tdma_cfg_live(const struct rtn_tdma_cfg *old, const struct rtn_tdma_cfg *new_cfg)
{
	/* the grid: a master's cycle and its Sync position define every station's time */
	if (new_cfg->role != old->role || new_cfg->backup_offset_ns != old->backup_offset_ns)
		return 0;
	return new_cfg->role != RTN_TDMA_ROLE_MASTER || new_cfg->cycle_ns == old->cycle_ns;
}
