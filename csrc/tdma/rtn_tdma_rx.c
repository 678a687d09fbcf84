/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_rx.c
 * @brief The TDMA engine's receive side: which Sync may move the clock, and
 *        calibration (requests, replies, the median delay).
 *
 * RTnet takes every Sync, so one forged or broken frame can move a slave's
 * clock anywhere or stop its schedule.  Here every Sync is judged before it
 * is applied, in the spirit of linuxptp's servo sanity limits:
 *
 * - sane: both stamps below SYNC_STAMP_MAX, and sent within one cycle of
 *   its scheduled time (a backup master sends backup_offset into the cycle);
 * - from the master we follow: its cycle number advances by 1..SYNC_MAX_GAP,
 *   its scheduled time lies on our grid and the clock offset it implies is
 *   within sync_tol() of ours;
 * - from another station: only when it fits our grid the same way and our
 *   master has missed a cycle (a backup master taking over);
 * - a grid we do not follow is adopted when SYNC_RELOCK_COUNT Syncs of one sender,
 *   consistent with each other, arrive with nothing accepted from our grid
 *   in between: a master that restarted (while we follow a master, only its
 *   own MAC can do that; after sync loss any sender can);
 * - after sync loss, our own master is taken back at once, whatever grid it
 *   comes back with (it restarted while we were silent).
 * A station that never synchronised takes the first sane Sync, as in RTnet
 * (a slave that learns the cycle, the first two).  Everything else is
 * counted (sync_implausible, sync_foreign) and changes nothing.
 */
#include <string.h>
#include "rtn_core.h"
#include "rtn_tdma_fsm.h"
#include "rtn_tdma_state_priv.h"
#include "rtn_tdma_proto_inline.h"

#define SYNC_STAMP_MAX	   (INT64_MAX / 4) /* ~36 years of ns; later is forged */
#define SYNC_TOL_MIN_NS	   20000	   /* a Sync may move the clock by at least */
#define SYNC_TOL_MAX_NS	   200000	   /* ... and by at most (before drift) */
#define SYNC_TOL_CYCLE_DIV 20		   /* 5% of the cycle, between those */
#define SYNC_DRIFT_PPM	   200		   /* two clocks 100 ppm off each way */
#define SYNC_DRIFT_CYCLES  100		   /* drift allowance stops growing here */
#define SYNC_MAX_GAP	   (1 << 20)	   /* cycles between two Syncs of one grid */
#define SYNC_RELOCK_COUNT  3		   /* consistent Syncs that prove a new grid */
#define SYNC_CAND_GAP	   16		   /* cycles between two of them */
#define LEARN_GAP	   16		   /* cycles between the two Syncs that teach the cycle */

/*
 * The most two Syncs' stamps may disagree by before drift: SYNC_TOL_MAX_NS,
 * or half the slot guard where the guard is larger.  A guard that large says
 * this segment's stamps jitter by more (software stamps on an emulated or
 * loaded NIC: the time from a TCG guest's Sync stamp to the wire varied by
 * 1.3 ms between its 5th and 95th percentiles, by 4.4 ms to the 99th); half
 * of it is what a Sync may step the clock by, the other half is left for the
 * stations' wake-ups.  Held to 200 us there, half such a master's Syncs were
 * thrown away as implausible, five in a row often enough to lose sync every
 * few seconds.
 */
static int64_t stamp_tol_max(const struct rtn_tdma *e)
{
	int64_t half_guard = e->cfg.guard_ns / 2;

	return half_guard > SYNC_TOL_MAX_NS ? half_guard : SYNC_TOL_MAX_NS;
}

/*
 * How far a Sync may move the clock or stray from the grid, @p gap cycles
 * after the last one we took: 5% of the cycle (at least 20 us, at most 200
 * us: the jitter of a software timestamp, well under the slot guard), or
 * half the guard where that is more than 200 us (stamp_tol_max()), plus the
 * drift two 100 ppm clocks can build up in that time (counted for at most
 * 100 cycles, so a forged gap cannot buy a larger step).  A real step larger
 * than this is taken through the relock rule, three Syncs later.
 */
static int64_t sync_tol(const struct rtn_tdma *e, int64_t gap)
{
	int64_t tol = e->cycle_ns / SYNC_TOL_CYCLE_DIV;

	if (tol < SYNC_TOL_MIN_NS)
		tol = SYNC_TOL_MIN_NS;
	if (tol > SYNC_TOL_MAX_NS)
		tol = SYNC_TOL_MAX_NS;
	if (stamp_tol_max(e) > SYNC_TOL_MAX_NS)
		tol = stamp_tol_max(e);
	if (gap > SYNC_DRIFT_CYCLES)
		gap = SYNC_DRIFT_CYCLES;
	if (gap < 0)
		gap = 0;
	return tol + gap * (e->cycle_ns / 1000) * SYNC_DRIFT_PPM / 1000;
}

static int sync_sane(const struct rtn_tdma_msg *m, int64_t cycle_bound)
{
	int64_t late;

	if (m->xmit_stamp > (uint64_t)SYNC_STAMP_MAX ||
	    m->sched_xmit_stamp > (uint64_t)SYNC_STAMP_MAX)
		return 0;
	late = (int64_t)m->xmit_stamp - (int64_t)m->sched_xmit_stamp;
	return late > -SYNC_TOL_MIN_NS && late < cycle_bound;
}

/* Does the Sync lie on our grid, @p gap cycles after the last one we took? */
static int fits_grid(const struct rtn_tdma *e, const struct rtn_tdma_msg *m, int64_t offset,
		     int32_t gap)
{
	int64_t tol, predicted;

	if (!e->grid_valid || !e->cycle_ns || gap < 1 || gap > SYNC_MAX_GAP)
		return 0;
	tol = sync_tol(e, gap);
	predicted = rtn_sat_add(cycle_start(e, m->cycle_no), e->st.clock_offset);
	return rtn_dist((int64_t)m->sched_xmit_stamp, predicted) <= (uint64_t)tol &&
	       rtn_dist(offset, e->st.clock_offset) <= (uint64_t)tol;
}

/*
 * Feed a Sync that fits no grid we follow to the candidate; 1 when it is the
 * SYNC_RELOCK_COUNT-th in a row of one sender on one consistent grid.
 */
static int relock_candidate(struct rtn_tdma *e, const struct rtn_tdma_msg *m, int64_t offset)
{
	struct sync_candidate *c = &e->cand;
	int32_t dn = (int32_t)(m->cycle_no - c->cycle_no);
	int consistent = 0;

	if (c->count && e->cycle_ns && !memcmp(c->src, m->src, 6) && dn >= 1 &&
	    dn <= SYNC_CAND_GAP) {
		uint64_t tol = (uint64_t)sync_tol(e, dn);
		int64_t sched = rtn_sat_add(c->sched, dn * e->cycle_ns);

		consistent = rtn_dist((int64_t)m->sched_xmit_stamp, sched) <= tol &&
			     rtn_dist(offset, c->offset) <= tol;
	}
	c->count = consistent ? c->count + 1 : 1;
	memcpy(c->src, m->src, 6);
	c->cycle_no = m->cycle_no;
	c->sched = (int64_t)m->sched_xmit_stamp;
	c->offset = offset;
	return c->count >= SYNC_RELOCK_COUNT;
}

/*
 * A slave without a configured cycle learns it from two sane Syncs of one
 * sender, a few cycles apart, whenever it takes a new grid.  Returns 1 when
 * the cycle is known.
 */
static int learn_cycle(struct rtn_tdma *e, const struct rtn_tdma_msg *m, int64_t rx)
{
	int32_t dn = (int32_t)(m->cycle_no - e->prev_sched_no);
	int known = 0;

	if (e->cfg.cycle_ns) {
		e->cycle_ns = e->cfg.cycle_ns;
		return 1;
	}
	if (e->have_prev_sched && !memcmp(e->prev_src, m->src, 6) && dn >= 1 && dn <= LEARN_GAP) {
		int64_t span = (int64_t)m->sched_xmit_stamp - e->prev_sched;
		int64_t c = span / dn;

		/* the master's schedule must have advanced as our own clock did */
		if (c >= RTN_TDMA_MIN_CYCLE_NS && c <= RTN_TDMA_MAX_CYCLE_NS &&
		    rtn_dist(span, rx - e->prev_rx) <= (uint64_t)stamp_tol_max(e)) {
			e->cycle_ns = c;
			known = 1;
		}
	}
	e->prev_sched = (int64_t)m->sched_xmit_stamp;
	e->prev_sched_no = m->cycle_no;
	e->prev_rx = rx;
	memcpy(e->prev_src, m->src, 6);
	e->have_prev_sched = 1;
	return known;
}

enum sync_verdict {
	VERDICT_IGNORE,
	VERDICT_FOLLOW,	 /* on the grid we follow */
	VERDICT_ACQUIRE, /* a new grid: its cycle may still have to be learnt */
	VERDICT_RELOCK,	 /* a new grid, consistent over SYNC_RELOCK_COUNT cycles of our length */
};

static enum sync_verdict judge_sync(struct rtn_tdma *e, const struct rtn_tdma_msg *m,
				    int64_t offset)
{
	int lost = e->st.state == RTN_TDMA_ST_SYNC_LOST;
	int followed = e->have_sync && !memcmp(m->src, e->sync_src, 6);
	int32_t gap = (int32_t)(m->cycle_no - e->last_sync_no);
	int64_t bound = e->have_sync && !lost && e->cycle_ns ? e->cycle_ns :
			e->cfg.cycle_ns			     ? e->cfg.cycle_ns :
							       RTN_TDMA_MAX_CYCLE_NS;

	if (!sync_sane(m, bound)) {
		e->st.sync_implausible++;
		return VERDICT_IGNORE;
	}
	if (!e->have_sync)
		return VERDICT_ACQUIRE;
	if (fits_grid(e, m, offset, gap) && (followed || lost || gap >= 2))
		return VERDICT_FOLLOW;
	if (followed && lost)
		return VERDICT_ACQUIRE;
	if ((followed || lost) && relock_candidate(e, m, offset)) {
		e->st.sync_relocks++;
		return VERDICT_RELOCK;
	}
	if (followed) {
		/* alive, but not a clock sample: a backup master must not take over */
		if (gap >= 1 && gap <= SYNC_MAX_GAP)
			e->heard_no = m->cycle_no;
		e->st.sync_implausible++;
	} else
		e->st.sync_foreign++;
	return VERDICT_IGNORE;
}

/*
 * Take the Sync: RTnet's offset = xmit + delay - rx, cycle start = sched -
 * offset.  On the grid we follow (@p new_grid 0) that only corrects the
 * clock: the cycle we are in stays.  A Sync read late (it waited in the ring
 * while the thread ran its overdue slots) must not take us back to its
 * cycle, which would begin that cycle again (its slots counted missed again,
 * its start announced to the applications again); one read before overdue
 * slots must not jump over them, which would leave their misses uncounted:
 * rtn_tdma_run() walks to the present and counts them.
 */
static void apply_sync(struct rtn_tdma *e, const struct rtn_tdma_msg *m, int64_t offset,
		       int new_grid)
{
	e->cand.count = 0;
	e->have_prev_sched = 0; /* learning samples belong to one acquisition */
	e->st.sync_rx++;
	e->st.clock_offset = offset;
	memcpy(e->st.master_mac, m->src, 6);
	memcpy(e->sync_src, m->src, 6);
	e->last_sync_no = e->heard_no = m->cycle_no;
	e->have_sync = 1;
	e->base_no = m->cycle_no;
	e->base_start = rtn_sat_sub((int64_t)m->sched_xmit_stamp, offset);
	if (!e->grid_valid || new_grid) {
		/* the first Sync, or a new grid: go to the master's cycle */
		e->cur_no = m->cycle_no;
		e->begun = 0;
		e->in_slot = 0;
	}
	e->grid_valid = 1;
	if (e->st.state == RTN_TDMA_ST_LISTEN)
		e->heard_sync = 1;

	raise_event(e, RTN_TDMA_EV_SYNC);
}

static void rx_sync(struct rtn_tdma *e, const struct rtn_tdma_msg *m, int64_t rx)
{
	enum sync_verdict verdict;
	int64_t offset;

	if (e->st.state == RTN_TDMA_ST_MASTER) {
		/* another station sends Sync while we are the active master */
		e->st.sync_foreign++;
		return;
	}
	offset = rtn_sat_sub(
		rtn_sat_add((int64_t)(m->xmit_stamp & INT64_MAX), e->st.master_delay_ns), rx);
	verdict = judge_sync(e, m, offset);
	switch (verdict) {
	case VERDICT_IGNORE:
		return;
	case VERDICT_ACQUIRE:
		if (!learn_cycle(e, m, rx)) {
			e->st.sync_learning++; /* a slave needs a second Sync to know the cycle */
			return;
		}
		break;
	case VERDICT_FOLLOW:
	case VERDICT_RELOCK:
		break;
	}
	apply_sync(e, m, offset, verdict != VERDICT_FOLLOW);
	if (e->port.truth)
		rtn_hist_add(&e->st.sync_delay,
			     e->port.truth(e->port.arg, rx) - (int64_t)(m->xmit_stamp & INT64_MAX));
}

void rtn_tdma_rx_reset(struct rtn_tdma *e)
{
	memset(&e->cand, 0, sizeof(e->cand));
	e->have_prev_sched = 0;
}

/* ---- calibration -------------------------------------------------------- */

/* The k-th smallest of @p a[0..n) (Wirth's selection; reorders @p a). */
static int64_t kth_smallest(int64_t *a, int n, int k)
{
	int l = 0, r = n - 1;

	while (l < r) {
		int64_t x = a[k];
		int i = l, j = r;

		do {
			while (a[i] < x)
				i++;
			while (x < a[j])
				j--;
			if (i <= j) {
				int64_t t = a[i];

				a[i] = a[j];
				a[j] = t;
				i++;
				j--;
			}
		} while (i <= j);
		if (j < k)
			l = i;
		if (k < i)
			r = j;
	}
	return a[k];
}

/*
 * The master-to-slave delay is the median of the rounds (the last
 * RTN_TDMA_CAL_KEEP of them), where RTnet takes the plain mean.  A round
 * can only come out too long (a stall between a stamp and the frame's
 * transmission, a reply delayed on a busy CPU), never too short, so one bad
 * round in a hundred moved the mean by microseconds and with it every slot
 * of this station; the median ignores it.
 */
static void calibration_done(struct rtn_tdma *e)
{
	int n = e->st.cal_rounds_done < RTN_TDMA_CAL_KEEP ? (int)e->st.cal_rounds_done :
							    RTN_TDMA_CAL_KEEP;

	e->calibrated = 1;
	e->st.master_delay_ns = 0;
	if (n) {
		int64_t hi = kth_smallest(e->cal_samples, n, n / 2);

		/* an even count: the mean of the two middle rounds */
		e->st.master_delay_ns =
			n & 1 ? hi : (kth_smallest(e->cal_samples, n, n / 2 - 1) + hi) / 2;
	}
	raise_event(e, RTN_TDMA_EV_CALIBRATED);
}

static void rx_req_cal(struct rtn_tdma *e, const struct rtn_tdma_msg *m, int64_t rx)
{
	uint32_t i;
	struct cal_reply *free_r = NULL;

	e->st.cal_req_rx++;
	if (!is_master(e) || !sends_sync(e))
		return;
	if ((int32_t)(m->reply_cycle - e->cur_no) <= 0) {
		e->st.cal_rpl_late++;
		return;
	}
	/* a slave asks for a reply within one slot period, inside one cycle */
	if ((int32_t)(m->reply_cycle - e->cur_no) > RTN_TDMA_MAX_PERIOD ||
	    m->reply_slot_offset >= (uint64_t)e->cycle_ns) {
		e->st.cal_implausible++;
		return;
	}
	for (i = 0; !free_r && i < RTN_TDMA_MAX_CAL; i++)
		if (!e->replies[i].used)
			free_r = &e->replies[i];
	if (e->n_replies >= e->cfg.max_cal_requests || !free_r) {
		e->st.cal_overflow++; /* RTnet: "Too many calibration requests pending!" */
		return;
	}
	free_r->used = 1;
	e->n_replies++;
	memcpy(free_r->dst, m->src, 6);
	free_r->reply_cycle = m->reply_cycle;
	free_r->offset = (int64_t)m->reply_slot_offset;
	free_r->req_xmit = m->xmit_stamp;
	free_r->rx_local = rx;
}

static void rx_rpl_cal(struct rtn_tdma *e, const struct rtn_tdma_msg *m, int64_t rx)
{
	int64_t round, delay;
	uint64_t turnaround;

	if (!e->req_outstanding || m->request_xmit_stamp != e->req_xmit || e->calibrated) {
		e->st.cal_rpl_unexpected++;
		return;
	}
	/*
	 * Our request left at req_xmit and the reply is here at rx (our clock);
	 * the master held it for xmit - reception (its clock).  The master
	 * cannot have held it longer than the whole round trip.
	 */
	round = rtn_sat_sub(rx, (int64_t)e->req_xmit);
	turnaround = m->xmit_stamp - m->reception_stamp;
	if (round < 0 || m->xmit_stamp < m->reception_stamp || turnaround > (uint64_t)round) {
		e->st.cal_implausible++;
		return;
	}
	e->st.cal_rpl_rx++;
	e->req_outstanding = 0;
	delay = ((round - (int64_t)turnaround) + 1) >> 1;
	if (e->st.cal_rounds_done == 0 || delay < e->st.cal_min_ns)
		e->st.cal_min_ns = delay;
	if (e->st.cal_rounds_done == 0 || delay > e->st.cal_max_ns)
		e->st.cal_max_ns = delay;
	e->cal_samples[e->st.cal_rounds_done % RTN_TDMA_CAL_KEEP] = delay;
	e->st.cal_rounds_done++;
	if (e->st.cal_rounds_done >= e->cfg.cal_rounds)
		calibration_done(e);
}

int rtn_tdma_rx(struct rtn_tdma *e, const uint8_t *frame, uint32_t len, int64_t rx_local)
{
	struct rtn_tdma_msg m;
	int kind = rtn_tdma_decode(frame, len, &m);

	if (kind == RTN_FRM_TUNNEL)
		return 1;
	stats_begin(e);
	if (kind < 0) {
		if (kind == RTN_FRM_FOREIGN_DISC)
			e->st.rx_foreign_disc++;
		else
			e->st.rx_bad++;
	} else if (!(m.dst[0] & 1) && memcmp(m.dst, e->mac, 6) != 0) {
		/* unicast for another station (a flooding switch): not ours to judge */
	} else if (e->st.state != RTN_TDMA_ST_DOWN) {
		switch (kind) {
		case TDMA_FRM_SYNC:
			rx_sync(e, &m, rx_local);
			break;
		case TDMA_FRM_REQ_CAL:
			rx_req_cal(e, &m, rx_local);
			break;
		case TDMA_FRM_RPL_CAL:
			rx_rpl_cal(e, &m, rx_local);
			break;
		}
	}
	stats_end(e);
	return kind < 0 ? kind : 0;
}
