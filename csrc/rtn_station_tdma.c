// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_station_tdma.c
 * @brief The TDMA discipline of a station: the engine's port (send, lab
 *        truth, what a slot picks up) and the RT loop's operations.
 */
#include <errno.h>
#include "rtn_core.h"
#include "rtn_station_priv.h"

static int64_t port_truth(void *arg, int64_t local)
{
	/* lab truth: global time is the host's CLOCK_MONOTONIC (master without error) */
	return os_of(arg, local);
}

/* ---- the TDMA discipline: the engine's port and the RT loop's operations ---- */

static int take_tdma(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		     uint32_t len, void *engine)
{
	/* only an application header has room for the TX stamp: a raw frame goes as it is */
	return rtn_tdma_enqueue(engine, c->slot, c->prio, m->frame, len,
				rtn_chan_tx_off(c, m->frame, len));
}

static void port_before_slot(void *arg, struct rtn_tdma *e, uint32_t slot_id, int64_t now)
{
	struct rtn_station *s = arg;

	rtn_chans_drain(s, take_tdma, e, rtn_sat_add(now, rtn_tdma_clock_offset(e)));
	if (s->probe_slot == (int)slot_id)
		rtn_probe_refill(s, e, slot_id, now);
	if (!s->vnic_live || s->vnic_mode != RTN_VNIC_BATCHED)
		return;
	if (rtn_tdma_shares_queue(e, slot_id, s->vnic_slot))
		rtn_vnic_refill(s, e, slot_id, s->vnic_slot, now);
	else if (rtn_tdma_slot_size(e, slot_id) >= rtn_tdma_slot_size(e, s->vnic_slot))
		/* what the RT frames leave of this occurrence: VNIC frames fit it */
		rtn_vnic_refill(s, e, slot_id, slot_id, now);
}

static int64_t tdma_next_event(struct rtn_station *s)
{
	return s->tdma ? rtn_tdma_next_event(s->tdma) : INT64_MAX;
}

static void tdma_run(struct rtn_station *s, int64_t woke_late)
{
	uint64_t missed;

	if (!s->tdma)
		return;
	missed = rtn_tdma_missed(s->tdma);
	rtn_tdma_run(s->tdma, local_of(s, rtn_now()));
	missed = rtn_tdma_missed(s->tdma) - missed;
	/*
	 * Why: VNIC writes of the previous round ran past this
	 * deadline; the wake-up came later than the slot tolerates
	 * (the thread could not run); or anything else.
	 */
	if (s->vnic_overran)
		s->st.miss_vnic += missed;
	else if (woke_late > rtn_tdma_guard_ns(s->tdma))
		s->st.miss_late_wake += missed;
	else
		s->st.miss_other += missed;
	s->vnic_overran = 0;
}

static int tdma_enqueue(struct rtn_station *s, const uint8_t *frame, uint32_t len)
{
	if (!s->tdma)
		return -ENOENT;
	return rtn_tdma_enqueue(s->tdma, s->vnic_slot, VNIC_PRIO, frame, len, -1);
}

static int tdma_rx_rtmac(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx)
{
	if (!s->tdma)
		return rtmac_tunnel_only(frame, len);
	return rtn_tdma_rx(s->tdma, frame, len, rx);
}

static int64_t tdma_rt_deadline(const struct rtn_station *s)
{
	return s->tdma ? rtn_tdma_next_event(s->tdma) : INT64_MAX;
}

/* The batched VNIC's TAP is read in the slots (port_before_slot), never polled. */
static int tap_read_in_slots(const struct rtn_station *s)
{
	return 0;
}

const struct rtn_disc_ops rtn_disc_tdma_ops = {
	.next_event = tdma_next_event,
	.run = tdma_run,
	.enqueue = tdma_enqueue,
	.rx_rtmac = tdma_rx_rtmac,
	.rt_deadline = tdma_rt_deadline,
	.watch_tap = tap_read_in_slots,
	.kick_senders = 0, /* under TDMA the slot picks their messages up */
	/*
	 * Receive stamps come from the XDP program, so received frames can
	 * wait for the next scheduled wake-up (a slot, the cycle start)
	 * without losing accuracy (see rx_wakes).
	 */
	.paced_rx = 1,
};

struct rtn_tdma_port rtn_station_tdma_port(struct rtn_station *s)
{
	return (struct rtn_tdma_port){ .send = rtn_station_send,
				       .truth = port_truth,
				       .before_slot = port_before_slot,
				       .on_cycle = rtn_chans_on_cycle,
				       .arg = s };
}
