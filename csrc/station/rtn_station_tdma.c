// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_station_tdma.c
 * @brief The TDMA discipline of a station: the engine's port (send, lab
 *        truth, what a slot picks up) and the RT loop's operations.
 */
#include <errno.h>
#include "rtn_core.h"
#include "rtn_probe_priv.h"
#include "rtn_recring_inline.h"
#include "rtn_station_priv.h"
#include "rtn_vnic_priv.h"

static int64_t port_truth(void *arg, int64_t local)
{
	/* lab truth: global time is the host's CLOCK_MONOTONIC (master without error) */
	return os_of(arg, local);
}

/* ---- the TDMA discipline: the engine's port and the RT loop's operations ---- */

static int take_tdma(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		     uint32_t len, void *engine)
{
	/* most channels have no lifetime: no call for them */
	int64_t expires = c->lifetime_ns ? rtn_chan_expiry(c, m) : INT64_MAX;

	/* a full queue leaves the message in the channel's ring (rtn_chans_drain) */
	if (rtn_tdma_queue_depth(engine, c->slot) >= RTN_TDMA_QUEUE_MAX)
		return -ENOBUFS;
	/* only an application header has room for the TX stamp: a raw frame goes as it is */
	return rtn_tdma_enqueue(engine, c->slot, c->prio, m->frame, len,
				rtn_chan_tx_off(c, m->frame, len),
				expires == INT64_MAX ?
					RTN_TDMA_NEVER :
					rtn_sat_sub(expires, rtn_tdma_clock_offset(engine)));
}

/* for the harnesses (csrc/fuzz/), which drive the channel drain themselves */
int rtn_station_take_tdma(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
			  uint32_t len, void *engine)
{
	return take_tdma(s, c, m, len, engine);
}

static void port_before_slot(void *arg, struct rtn_tdma *e, uint32_t slot_id, int64_t now)
{
	struct rtn_station *s = arg;

	rtn_chans_drain(s, take_tdma, e, rtn_sat_add(now, rtn_tdma_clock_offset(e)));
	rtn_probe_refill(s, e, slot_id, now);
}

/* The VNIC's frames go last, from its ring (see rtn_vnic_tail_peek). */
static uint8_t *port_tail_peek(void *arg, const struct rtn_tdma *e, uint32_t slot_id, uint32_t *len)
{
	struct rtn_station *s = arg;

	return s->vnic ? rtn_vnic_tail_peek(s->vnic, e, slot_id, len) : NULL;
}

static void port_tail_taken(void *arg, uint32_t len)
{
	struct rtn_station *s = arg;

	rtn_vnic_taken(s->vnic, len, 1);
}

static int64_t tdma_next_event(void *priv)
{
	struct rtn_station *s = priv;

	return s->tdma ? rtn_tdma_next_event(s->tdma) : INT64_MAX;
}

static int tdma_next_sends(const void *priv)
{
	const struct rtn_station *s = priv;

	return s->tdma && rtn_tdma_next_sends(s->tdma);
}

static void tdma_run(void *priv, int64_t woke_late)
{
	struct rtn_station *s = priv;
	struct rtn_tdma_slot0 before, after;
	uint64_t missed;
	int64_t now;

	if (!s->tdma)
		return;
	missed = rtn_tdma_missed(s->tdma);
	before = rtn_tdma_slot0(s->tdma);
	now = rtn_now();
	rtn_tdma_run(s->tdma, local_of(s, now));
	after = rtn_tdma_slot0(s->tdma);
	if (after.sent != before.sent) {
		struct rtn_late_rec *r = &s->late[s->lates % RTN_LATE_RECS];

		rtn_recring_begin(&r->no);
		r->at_ns = now;
		r->late_ns = after.late;
		rtn_recring_commit(&r->no, s->lates);
		__atomic_store_n(&s->lates, s->lates + 1, __ATOMIC_RELEASE);
	}
	missed = rtn_tdma_missed(s->tdma) - missed;
	if (missed) {
		struct rtn_miss_rec *r = &s->miss[s->misses % RTN_MISS_RECS];

		/* why: the wake-up came later than the slot tolerates (the thread could not run) */
		if (woke_late > rtn_tdma_guard_ns(s->tdma))
			s->st.miss_late_wake += missed;
		else
			s->st.miss_other += missed;
		rtn_recring_begin(&r->no);
		r->at_ns = now;
		r->woke_late_ns = woke_late;
		r->slots = (uint32_t)missed;
		r->slot0 = (uint32_t)(after.missed - before.missed);
		rtn_recring_commit(&r->no, s->misses);
		__atomic_store_n(&s->misses, s->misses + 1, __ATOMIC_RELEASE);
	}
}

uint32_t rtn_station_slot0_lateness(const struct rtn_station *s, uint64_t first,
				    struct rtn_late_rec *out, uint32_t n, uint64_t *next)
{
	return rtn_recring_read(s->late, sizeof(s->late[0]), RTN_LATE_RECS,
				__atomic_load_n(&s->lates, __ATOMIC_ACQUIRE), first, out, n, next);
}

uint32_t rtn_station_misses(const struct rtn_station *s, uint64_t first, struct rtn_miss_rec *out,
			    uint32_t n, uint64_t *next)
{
	return rtn_recring_read(s->miss, sizeof(s->miss[0]), RTN_MISS_RECS,
				__atomic_load_n(&s->misses, __ATOMIC_ACQUIRE), first, out, n, next);
}

static int tdma_queue(void *priv, uint32_t slot, uint32_t prio, const uint8_t *frame, uint32_t len)
{
	struct rtn_station *s = priv;

	if (!s->tdma)
		return -ENOENT;
	return rtn_tdma_enqueue(s->tdma, slot, prio, frame, len, -1, RTN_TDMA_NEVER);
}

static int tdma_rx_rtmac(void *priv, const uint8_t *frame, uint32_t len, int64_t rx)
{
	struct rtn_station *s = priv;

	if (!s->tdma)
		return rtmac_tunnel_only(frame, len);
	return rtn_tdma_rx(s->tdma, frame, len, rx);
}

/* Frames are taken in the slots (port_before_slot), never between them. */
static int tdma_has_room(const void *priv)
{
	return 0;
}

/* A slot's size is its frames' after the Ethernet header, as RTnet's slot MTU. */
static uint32_t tdma_slot_frame(const void *priv, uint32_t slot)
{
	const struct rtn_station *s = priv;
	uint32_t size = s->tdma ? rtn_tdma_slot_size(s->tdma, slot) : 0;

	return size ? size + ETH_HLEN_RTN : 0;
}

/* The control thread prepared s->tdma and s->tdma_cfg: (re)start the engine. */
static void tdma_attach(void *priv)
{
	struct rtn_station *s = priv;

	rtn_tdma_start(s->tdma, &s->tdma_cfg, rtn_station_local_now(s));
}

static void tdma_detach(void *priv)
{
}

const struct rtn_disc_ops rtn_disc_tdma_ops = {
	.id = RTN_DISC_TDMA,
	.attach = tdma_attach,
	.detach = tdma_detach,
	.next_event = tdma_next_event,
	.next_sends = tdma_next_sends,
	.run = tdma_run,
	.queue = tdma_queue,
	.rx_rtmac = tdma_rx_rtmac,
	.has_room = tdma_has_room,
	.slot_frame = tdma_slot_frame,
	.kick_senders = 0, /* under TDMA the slot picks their messages up */
	/*
	 * Receive stamps come from the XDP program, so received frames can
	 * wait for the next scheduled wake-up (a slot, the cycle start)
	 * without losing accuracy (see rx_wakes).
	 */
	.paced_rx = 1,
	.rate_generator = 0,
};

struct rtn_tdma_port rtn_station_tdma_port(struct rtn_station *s)
{
	return (struct rtn_tdma_port){ .send = rtn_station_send,
				       .truth = port_truth,
				       .before_slot = port_before_slot,
				       .tail_peek = port_tail_peek,
				       .tail_taken = port_tail_taken,
				       .on_cycle = rtn_chans_on_cycle,
				       .arg = s };
}
