/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_cfg.c
 * @brief The TDMA configuration: its defaults and its validation, the one
 *        validator rtmac/tdma_config.py calls through cffi.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_tdma.h"
#include "rtn_tdma_state_priv.h"
#include "rtn_wire_inline.h"

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
	c->mtu = RTN_TDMA_MAX_SLOT_SIZE;
}

/*
 * A whole number outside lo..hi, refused with the one message the option
 * table's rule gives (rtnet/options.py Option.check): "<name>: <value> below
 * minimum <lo>" or "... above maximum <hi>".  @p name is what Python calls
 * the setting (TdmaConfig's field, prefixed "slot <id>: " for a slot's).
 */
static int out_of_range(const char *name, long long v, long long lo, long long hi)
{
	if (v < lo)
		return rtn_set_error(-EINVAL, "%s: %lld below minimum %lld", name, v, lo);
	return rtn_set_error(-EINVAL, "%s: %lld above maximum %lld", name, v, hi);
}

#define RANGE(name, v, lo, hi)                                                            \
	do {                                                                              \
		if ((long long)(v) < (long long)(lo) || (long long)(v) > (long long)(hi)) \
			return out_of_range(name, (long long)(v), (long long)(lo),        \
					    (long long)(hi));                             \
	} while (0)

/* The rules of one slot, in the order Python reported them (rtmac/tdma_config.py). */
static int slot_check(const struct rtn_tdma_cfg *c, const struct rtn_tdma_slot_cfg *s)
{
	const long long max_offset_us = RTN_TDMA_MAX_OFFSET_NS / 1000;
	uint32_t mtu = c->mtu;
	char name[48];
	uint32_t j;

	RANGE("slot id", s->id, 0, RTN_TDMA_MAX_SLOTS - 1);
	if ((uint32_t)s->id > c->max_slot_id)
		return rtn_set_error(-EINVAL, "slot %d: id above max_slot_id %u", s->id,
				     c->max_slot_id);
	snprintf(name, sizeof(name), "slot %d: offset_us", s->id);
	if (s->offset_ns < 0 || s->offset_ns > RTN_TDMA_MAX_OFFSET_NS)
		return out_of_range(name, s->offset_ns / 1000, 0, max_offset_us);
	snprintf(name, sizeof(name), "slot %d: period", s->id);
	RANGE(name, s->period, 1, RTN_TDMA_MAX_PERIOD);
	if (s->phasing < 1 || s->phasing > s->period)
		return rtn_set_error(-EINVAL, "slot %d: phasing %u/%u outside 1..%u", s->id,
				     s->phasing, s->period, s->period);
	if (s->size < RTN_TDMA_MIN_SLOT_SIZE || s->size > mtu)
		return rtn_set_error(-EINVAL, "slot %d: size %u outside %d..%u (MTU)", s->id,
				     s->size, RTN_TDMA_MIN_SLOT_SIZE, mtu);
	if (s->joint >= 0) {
		const struct rtn_tdma_slot_cfg *primary = NULL;

		snprintf(name, sizeof(name), "slot %d: joint", s->id);
		RANGE(name, s->joint, 0, RTN_TDMA_MAX_SLOTS - 1);
		for (j = 0; j < c->n_slots; j++)
			if (c->slots[j].id == s->joint)
				primary = &c->slots[j];
		if (s->joint == s->id)
			return rtn_set_error(-EINVAL, "slot %d: cannot be joint with itself",
					     s->id);
		/* RTnet's check: the primary's id must be below max_slot_id */
		if ((uint32_t)s->joint >= c->max_slot_id)
			return rtn_set_error(-EINVAL,
					     "slot %d: joint slot %d must be below max_slot_id %u",
					     s->id, s->joint, c->max_slot_id);
		if (!primary)
			return rtn_set_error(-EINVAL, "slot %d: joint slot %d does not exist",
					     s->id, s->joint);
		if (primary->size != s->size)
			return rtn_set_error(-EINVAL,
					     "slot %d: size %u differs from joint slot %d (%u)",
					     s->id, s->size, s->joint, primary->size);
		/* a queue is shared with its owner, never passed on: RTnet and the engine */
		if (primary->joint >= 0)
			return rtn_set_error(-EINVAL,
					     "slot %d: joint slot %d is itself joint with slot %d",
					     s->id, s->joint, primary->joint);
	}
	snprintf(name, sizeof(name), "slot %d: window_us", s->id);
	if (s->window_ns < 0 || s->window_ns > RTN_TDMA_MAX_OFFSET_NS)
		return out_of_range(name, s->window_ns / 1000, 0, max_offset_us);
	int64_t frame_ns = rtn_wire_ns(s->size + ETH_HLEN_RTN, c->link_rate_mbps);
	if (s->window_ns && s->window_ns < frame_ns)
		return rtn_set_error(-EINVAL,
				     "slot %d: window %lld us is shorter than one %u-byte frame "
				     "(%g us at %u Mbit/s)",
				     s->id, (long long)s->window_ns / 1000, s->size + ETH_HLEN_RTN,
				     frame_ns / 1000.0, c->link_rate_mbps);
	if (c->cycle_ns && s->offset_ns + slot_len_ns(c, s) > c->cycle_ns) {
		char what[48];

		if (s->window_ns)
			snprintf(what, sizeof(what), "a %lld us window",
				 (long long)s->window_ns / 1000);
		else
			snprintf(what, sizeof(what), "a %u-byte frame + guard",
				 s->size + ETH_HLEN_RTN);
		return rtn_set_error(-EINVAL,
				     "slot %d: offset %lld us + %s ends at %g us, past the %lld us "
				     "cycle",
				     s->id, (long long)s->offset_ns / 1000, what,
				     (s->offset_ns + slot_len_ns(c, s)) / 1000.0,
				     (long long)c->cycle_ns / 1000);
	}
	return 0;
}

/* Whether some cycle has both slots active (Chinese remainder theorem). */
static int phases_meet(const struct rtn_tdma_slot_cfg *a, const struct rtn_tdma_slot_cfg *b)
{
	uint32_t g = a->period, r = b->period;

	while (r) { /* gcd of the periods */
		uint32_t t = g % r;

		g = r;
		r = t;
	}
	/* some cycle n has n % pa == xa - 1 and n % pb == xb - 1 */
	return (a->phasing - 1) % g == (b->phasing - 1) % g;
}

/* Slot @p a before @p b in the overlap scan: by offset, then by id. */
static int before(const struct rtn_tdma_slot_cfg *a, const struct rtn_tdma_slot_cfg *b)
{
	return a->offset_ns < b->offset_ns || (a->offset_ns == b->offset_ns && a->id < b->id);
}

int rtn_tdma_cfg_check(const struct rtn_tdma_cfg *c)
{
	/*
	 * The one validator: rtmac/tdma_config.py validate() calls this through
	 * cffi and raises its message, so each rule and each message is here
	 * once.  The messages name the settings as Python does (microseconds,
	 * TdmaConfig's field names); Python keeps only what C cannot see (types,
	 * names, values that do not fit a field, 0 or -1 given where C reads
	 * "none").
	 */
	const long long min_cycle_us = RTN_TDMA_MIN_CYCLE_NS / 1000;
	const long long max_cycle_us = RTN_TDMA_MAX_CYCLE_NS / 1000;
	const struct rtn_tdma_slot_cfg *order[RTN_TDMA_MAX_SLOTS];
	uint32_t i, j;
	int rc;

	rtn_clear_error();
	if (c->role != RTN_TDMA_ROLE_MASTER && c->role != RTN_TDMA_ROLE_SLAVE)
		return rtn_set_error(-EINVAL, "role must be 'master' or 'slave'");
	if (c->role == RTN_TDMA_ROLE_MASTER && c->cycle_ns == 0)
		return rtn_set_error(-EINVAL, "a master needs a cycle period");
	/* a slave may leave the cycle at 0: it learns it from the Sync frames */
	if (c->cycle_ns != 0 &&
	    (c->cycle_ns < RTN_TDMA_MIN_CYCLE_NS || c->cycle_ns > RTN_TDMA_MAX_CYCLE_NS))
		return rtn_set_error(-EINVAL,
				     "cycle_us: %lld outside the supported range %lld..%lld",
				     (long long)c->cycle_ns / 1000, min_cycle_us, max_cycle_us);
	if (c->backup_offset_ns != -1) {
		if (c->role != RTN_TDMA_ROLE_MASTER)
			return rtn_set_error(-EINVAL, "a backup offset is only valid for a master");
		if (c->backup_offset_ns <= 0)
			return out_of_range("backup_offset_us", c->backup_offset_ns / 1000, 1,
					    max_cycle_us - 1);
		if (c->backup_offset_ns >= c->cycle_ns)
			return rtn_set_error(-EINVAL,
					     "backup_offset_us: %lld is not smaller than the cycle "
					     "(%lld us)",
					     (long long)c->backup_offset_ns / 1000,
					     (long long)c->cycle_ns / 1000);
	}
	RANGE("cal_rounds", c->cal_rounds, 0, RTN_TDMA_MAX_CAL_ROUNDS);
	RANGE("max_slot_id", c->max_slot_id, 0, RTN_TDMA_MAX_SLOTS - 1);
	RANGE("max_cal_requests", c->max_cal_requests, 1, RTN_TDMA_MAX_CAL);
	RANGE("link_rate_mbps", c->link_rate_mbps, 0, RTN_TDMA_MAX_LINK_RATE_MBPS);
	RANGE("guard_ns", c->guard_ns, 0, RTN_TDMA_MAX_GUARD_NS);
	RANGE("mtu", c->mtu, RTN_TDMA_MIN_SLOT_SIZE, RTN_TDMA_MAX_SLOT_SIZE);
	RANGE("sync_loss_cycles", c->sync_loss_cycles, 1, RTN_TDMA_MAX_SYNC_LOSS);
	RANGE("listen_cycles", c->listen_cycles, 0, RTN_TDMA_MAX_LISTEN);
	if (c->n_slots > RTN_TDMA_MAX_SLOTS)
		return rtn_set_error(-EINVAL, "too many slots");
	for (i = 0; i < c->n_slots; i++) {
		for (j = 0; j < i; j++)
			if (c->slots[j].id == c->slots[i].id)
				return rtn_set_error(-EINVAL, "slot %d: configured twice",
						     c->slots[i].id);
		rc = slot_check(c, &c->slots[i]);
		if (rc)
			return rc;
	}
	/*
	 * Two slots overlap when their extents meet in a cycle where both are
	 * active; scanned by offset (then id), as Python did, so the pair named
	 * is the first one in time.  A window may start in the guard of an RTnet
	 * slot, after its frame (window_in_guard()): both are this station's,
	 * the guard is only the slot's lateness allowance, and the engine puts
	 * the window's frames on the wire after the slot's, so a late frame
	 * delays the window, never another station (the planner places a
	 * station's NRT window there).
	 */
	for (i = 0; i < c->n_slots; i++) {
		const struct rtn_tdma_slot_cfg *s = &c->slots[i];

		for (j = i; j > 0 && before(s, order[j - 1]); j--)
			order[j] = order[j - 1];
		order[j] = s;
	}
	for (i = 0; i < c->n_slots; i++) {
		const struct rtn_tdma_slot_cfg *a = order[i];
		int64_t a_end = a->offset_ns + slot_len_ns(c, a);

		for (j = i + 1; j < c->n_slots; j++) {
			const struct rtn_tdma_slot_cfg *b = order[j];

			if (b->offset_ns >= a_end)
				break;
			/* either way round: two slots at one offset sort by id, not by kind */
			if (phases_meet(a, b) &&
			    !(window_in_guard(c, a, b) || window_in_guard(c, b, a)))
				return rtn_set_error(
					-EINVAL,
					"slot %d at %lld us overlaps slot %d (%lld..%g us) "
					"in cycles where both are active",
					b->id, (long long)b->offset_ns / 1000, a->id,
					(long long)a->offset_ns / 1000, a_end / 1000.0);
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
