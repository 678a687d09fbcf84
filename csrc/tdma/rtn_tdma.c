/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma.c
 * @brief TDMA engine: the cycle grid, Sync, calibration, backup master,
 *        slots with priority queues and the wire-time budget.
 *
 * Every station keeps a grid: cycle n starts at local time
 * base_start + (n - base_no) * cycle.  A master owns its grid; slaves and
 * backup masters move theirs on every accepted Sync with RTnet's formula
 * (offset = xmit + delay - rx; start = sched - offset), and keep running it
 * between Syncs, which is what lets them ride through a failover or stop
 * cleanly after sync_loss_cycles.
 *
 * Inside a cycle the engine walks a job list sorted by offset (Sync, backup
 * check, calibration replies, slots).  A slot sends as many queued frames as
 * fit before its end at the modelled link rate; frames are serialised by
 * wire_free_at, so pacing is just another deadline.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_tdma.h"
#include "rtn_tdma_fsm.h"
#include "rtn_tdma_state_priv.h"
#include "rtn_tdma_proto_inline.h"
#include "rtn_wire_inline.h"

#define UNPACED_BURST 64    /* frames per occurrence when the NIC paces */
#define PACE_AHEAD_NS 30000 /* see rtn_station.c: the virtual wire may lead the clock */

/* ---- helpers ------------------------------------------------------------ */

int64_t rtn_tdma_cycle_start(const struct rtn_tdma *e, uint32_t n)
{
	return e->grid_valid ? cycle_start(e, n) : 0;
}

int rtn_tdma_can_send(const struct rtn_tdma *e)
{
	switch (e->st.state) {
	case RTN_TDMA_ST_MASTER:
	case RTN_TDMA_ST_BACKUP_ACTIVE:
	case RTN_TDMA_ST_BACKUP_STANDBY:
	case RTN_TDMA_ST_SYNCED:
		return 1;
	default:
		return 0;
	}
}

static int slot_active(const struct rtn_tdma_slot_cfg *s, uint32_t cycle_no)
{
	return s->period <= 1 || cycle_no % s->period == s->phasing - 1;
}

/* ---- life cycle --------------------------------------------------------- */

int rtn_tdma_create(const uint8_t *mac, const struct rtn_tdma_port *port, struct rtn_tdma **out)
{
	struct rtn_tdma *e;

	if (!port || !port->send)
		return rtn_set_error(-EINVAL, "tdma: a port with a send function is required");
	e = calloc(1, sizeof(*e));
	if (!e)
		return rtn_set_error(-ENOMEM, "tdma: out of memory");
	memcpy(e->mac, mac, 6);
	e->port = *port;
	rtn_tdma_pool_init(e);
	rtn_hist_init(&e->st.slot_lateness, 0);
	rtn_hist_init(&e->st.slot0_lateness, 0);
	rtn_hist_init(&e->st.sync_error, RTN_TDMA_SYNC_HIST_LO_NS);
	rtn_hist_init(&e->st.sync_delay, 0);
	rtn_tdma_index_slots(e);
	*out = e;
	return 0;
}

void rtn_tdma_destroy(struct rtn_tdma *e)
{
	free(e);
}

int rtn_tdma_start(struct rtn_tdma *e, const struct rtn_tdma_cfg *c, int64_t now)
{
	int rc = rtn_tdma_cfg_check(c);

	if (rc)
		return rc;
	stats_begin(e);
	e->cfg = *c;
	e->pending = 0;
	rtn_tdma_index_slots(e);
	e->st.role = c->role;
	e->st.backup = c->role == RTN_TDMA_ROLE_MASTER && c->backup_offset_ns >= 0;
	e->st.cal_rounds = c->cal_rounds;
	e->cycle_ns = c->cycle_ns;
	e->grid_valid = 0;
	e->begun = 0;
	e->n_jobs = e->next_job = 0;
	e->in_slot = 0;
	e->heard_sync = 0;
	e->have_sync = 0;
	rtn_tdma_rx_reset(e);
	e->calibrated = c->cal_rounds == 0;
	e->req_outstanding = 0;
	e->st.cal_rounds_done = 0;
	e->st.master_delay_ns = 0;
	e->st.clock_offset = 0;
	memset(e->replies, 0, sizeof(e->replies));
	e->n_replies = 0;
	if (c->role == RTN_TDMA_ROLE_MASTER) {
		/* RTnet listens 3 cycles for an active master before sending Sync */
		e->listen_until = now + (int64_t)c->listen_cycles * c->cycle_ns;
	}
	raise_event(e, RTN_TDMA_EV_ATTACH);
	stats_end(e);
	return 0;
}

int rtn_tdma_set_config(struct rtn_tdma *e, const struct rtn_tdma_cfg *c)
{
	int rc = rtn_tdma_cfg_check(c);

	if (rc)
		return rc;
	if (!rtn_tdma_cfg_live(&e->cfg, c))
		return rtn_set_error(-EINVAL,
				     "changing the role or the cycle needs a detach first");
	if (__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE))
		return rtn_set_error(-EBUSY, "a configuration change is still pending");
	e->staging = *c;
	__atomic_store_n(&e->pending, 1, __ATOMIC_RELEASE);
	return 0;
}

int rtn_tdma_config_pending(const struct rtn_tdma *e)
{
	return __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE);
}

/* Called at a cycle start on the RT thread: swap in a pending configuration. */
static void apply_pending(struct rtn_tdma *e)
{
	int16_t old_queue[RTN_TDMA_MAX_SLOTS];
	uint32_t i;

	if (!__atomic_load_n(&e->pending, __ATOMIC_ACQUIRE))
		return;
	memcpy(old_queue, e->queue_of, sizeof(old_queue));
	e->cfg = e->staging;
	rtn_tdma_index_slots(e);
	/* frames of a queue that no slot uses any more cannot be sent: drop them */
	for (i = 0; i < RTN_TDMA_MAX_SLOTS; i++) {
		int used = 0, j;

		if (old_queue[i] != (int16_t)i)
			continue;
		for (j = 0; j < RTN_TDMA_MAX_SLOTS; j++)
			used |= e->queue_of[j] == (int16_t)i;
		if (!used)
			q_purge(e, &e->q[i]);
	}
	if (!e->cfg.cycle_ns)
		e->cfg.cycle_ns = e->cycle_ns;
	/* a changed round count applies to the next calibration; the stats say so */
	e->st.cal_rounds = e->cfg.cal_rounds;
	e->st.config_applied++;
	/* a station configured before its first slot calibrates now */
	__atomic_store_n(&e->pending, 0, __ATOMIC_RELEASE);
}

/* ---- sending ------------------------------------------------------------ */

/*
 * Send now.  The virtual wire: the frame starts on it when the previous one
 * has finished, and not before @p model_start (a window's frames are handed
 * over ahead of their wire time, which starts at the window's start).
 */
static int xmit_from(struct rtn_tdma *e, uint8_t *frame, uint32_t len, int32_t stamp_off,
		     int64_t stamp_add, int64_t sched, int64_t model_start, int64_t deadline,
		     int64_t *tx)
{
	int rc = e->port.send(e->port.arg, frame, len, stamp_off, stamp_add, sched, deadline, tx);
	int64_t start = e->wire_free_at;

	if (rc == -ETIME)
		return rc; /* too late for its slot: the caller counts it */
	if (rc < 0) {
		e->st.tx_errors++;
		return rc;
	}
	e->sent_in_run++;
	if (*tx > start)
		start = *tx;
	if (model_start > start)
		start = model_start;
	e->wire_free_at = start + rtn_wire_ns(len, e->cfg.link_rate_mbps);
	return 0;
}

static int xmit(struct rtn_tdma *e, uint8_t *frame, uint32_t len, int32_t stamp_off,
		int64_t stamp_add, int64_t sched, int64_t *tx)
{
	return xmit_from(e, frame, len, stamp_off, stamp_add, sched, 0, INT64_MAX, tx);
}

static void send_sync(struct rtn_tdma *e, uint32_t n)
{
	uint8_t f[ETH_ZLEN_RTN];
	uint32_t off;
	int64_t tx;
	int len;

	len = rtn_tdma_encode_sync(f, sizeof(f), e->mac, n, 0,
				   (uint64_t)(cycle_start(e, n) + e->st.clock_offset), &off);
	if (len > 0 && xmit(e, f, len, off, e->st.clock_offset, cycle_start(e, n), &tx) == 0)
		e->st.sync_tx++;
}

static void send_req_cal(struct rtn_tdma *e, const struct rtn_tdma_slot_cfg *s)
{
	uint8_t f[ETH_ZLEN_RTN];
	uint32_t off, reply_cycle = e->cur_no + s->period;
	int64_t tx;
	int len;

	len = rtn_tdma_encode_req_cal(f, sizeof(f), e->st.master_mac, e->mac, 0, reply_cycle,
				      (uint64_t)s->offset_ns, &off);
	if (len <= 0 || xmit(e, f, len, off, 0, e->slot_start, &tx))
		return;
	e->st.cal_req_tx++;
	e->req_outstanding = 1;
	e->req_xmit = (uint64_t)tx;
	e->req_reply_cycle = reply_cycle;
}

static void send_rpl_cal(struct rtn_tdma *e, struct cal_reply *r)
{
	uint8_t f[ETH_ZLEN_RTN];
	uint32_t off;
	int64_t tx;
	int len;

	len = rtn_tdma_encode_rpl_cal(f, sizeof(f), r->dst, e->mac, r->req_xmit,
				      (uint64_t)r->rx_local, 0, &off);
	if (len > 0 && xmit(e, f, len, off, 0, cycle_start(e, e->cur_no) + r->offset, &tx) == 0)
		e->st.cal_rpl_tx++;
	r->used = 0;
	e->n_replies--;
}

/* ---- the cycle ---------------------------------------------------------- */

static void add_job(struct rtn_tdma *e, int64_t offset, uint16_t kind, uint16_t arg)
{
	struct job j = { .offset = offset, .due = offset, .kind = kind, .arg = arg };
	int i = e->n_jobs++;

	/* insertion sort: at most a few dozen jobs, kept in (offset, kind) order */
	while (i > 0 && (e->jobs[i - 1].offset > offset ||
			 (e->jobs[i - 1].offset == offset && e->jobs[i - 1].kind > kind))) {
		e->jobs[i] = e->jobs[i - 1];
		i--;
	}
	e->jobs[i] = j;
}

static const struct rtn_tdma_slot_cfg *job_slot(const struct rtn_tdma *e, const struct job *j)
{
	return j->kind == JOB_SLOT && e->slot_idx[j->arg] >= 0 ?
		       &e->cfg.slots[e->slot_idx[j->arg]] :
		       NULL;
}

/*
 * A window that starts where this station's previous slot ends, or inside its
 * guard (within the microsecond that slot offsets are rounded to), runs with
 * that slot: one wake-up serves both, the window's frames going to the ring
 * right after the slot's (their wire time still starts at the window).
 */
static void chain_windows(struct rtn_tdma *e)
{
	int i;

	for (i = 1; i < e->n_jobs; i++) {
		const struct rtn_tdma_slot_cfg *prev = job_slot(e, &e->jobs[i - 1]);
		const struct rtn_tdma_slot_cfg *s = job_slot(e, &e->jobs[i]);
		int64_t gap;

		if (!s || !prev || s->window_ns <= 0)
			continue;
		gap = s->offset_ns - (prev->offset_ns + slot_len_ns(&e->cfg, prev));
		if (gap >= 0 ? gap < 1000 : window_in_guard(&e->cfg, prev, s))
			e->jobs[i].due = e->jobs[i - 1].due;
	}
}

static void record_sync_error(struct rtn_tdma *e, int64_t now)
{
	/* before calibration the error is just the uncompensated delay */
	if (!e->port.truth || !e->have_sync || !e->calibrated || sends_sync(e))
		return;
	rtn_hist_add(&e->st.sync_error, now + e->st.clock_offset - e->port.truth(e->port.arg, now));
}

static void begin_cycle(struct rtn_tdma *e, uint32_t n, int64_t now)
{
	uint32_t i, left;

	/*
	 * Re-anchor the grid at every cycle: cycle_start() counts cycles from
	 * base_no in 32 bits, which a master that never moves its base would
	 * overrun after 2^31 cycles (2.5 days at 100 us).
	 */
	e->base_start = cycle_start(e, n);
	e->base_no = n;
	e->cur_no = n;
	e->begun = 1;
	e->n_jobs = e->next_job = 0;
	e->in_slot = 0;
	e->st.cycle_no = n;
	e->st.cycle_start = cycle_start(e, n);
	e->st.cycle_ns = e->cycle_ns;
	e->st.cycles++;
	apply_pending(e);

	/*
	 * Free-run between Syncs, but a slave goes silent after sync_loss_cycles
	 * without.  Signed: a cycle walked after a later Sync was read (its slots
	 * were missed, rtn_tdma_run()) is before that Sync, not 2^32 after it.
	 */
	if (e->have_sync && (int32_t)(n - e->last_sync_no) > (int32_t)e->cfg.sync_loss_cycles)
		raise_event(e, RTN_TDMA_EV_SYNC_TIMEOUT);
	record_sync_error(e, now);
	if (e->port.on_cycle)
		e->port.on_cycle(e->port.arg, n, cycle_start(e, n));

	/* the whole cycle already passed (a stall): count its slots as missed */
	if (now >= cycle_start(e, n + 1)) {
		for (i = 0; i < e->cfg.n_slots; i++) {
			const struct rtn_tdma_slot_cfg *s = &e->cfg.slots[i];

			if (slot_active(s, n) && rtn_tdma_can_send(e)) {
				e->st.slot[s->id].missed++;
				e->st.missed_slots++;
			}
		}
		return;
	}
	if (e->st.state == RTN_TDMA_ST_MASTER)
		add_job(e, 0, JOB_SYNC, 0);
	if (is_backup(e) &&
	    (e->st.state == RTN_TDMA_ST_BACKUP_STANDBY || e->st.state == RTN_TDMA_ST_BACKUP_ACTIVE))
		add_job(e, e->cfg.backup_offset_ns, JOB_BACKUP, 0);
	for (i = 0, left = e->n_replies; left && i < RTN_TDMA_MAX_CAL; i++) {
		struct cal_reply *r = &e->replies[i];

		if (!r->used)
			continue;
		left--;
		if ((int32_t)(r->reply_cycle - n) < 0) {
			r->used = 0;
			e->n_replies--;
			e->st.cal_rpl_late++;
		} else if (r->reply_cycle == n) {
			add_job(e, r->offset, JOB_RPL_CAL, i);
		}
	}
	for (i = 0; i < e->cfg.n_slots; i++) {
		const struct rtn_tdma_slot_cfg *s = &e->cfg.slots[i];

		if (slot_active(s, n))
			add_job(e, s->offset_ns, JOB_SLOT, s->id);
	}
	chain_windows(e);
	/* a calibration request that got no reply is sent again */
	if (e->req_outstanding && (int32_t)(n - e->req_reply_cycle) > 2)
		e->req_outstanding = 0;
}

/*
 * A queued frame that can no longer start on the wire before it expires:
 * dropped, as the ETF qdisc's deadline mode drops a packet whose time has
 * passed, so a backlog of stale process data never delays the fresh.
 */
static void drop_expired(struct rtn_tdma *e, struct queue *q, struct rtn_tdma_slot_stats *ss)
{
	q_pop(e, q);
	ss->expired++;
}

/* One slot occurrence, possibly resumed after pacing.  Returns 1 when done. */
static int run_slot(struct rtn_tdma *e, int id, int64_t now)
{
	const struct rtn_tdma_slot_cfg *s = &e->cfg.slots[e->slot_idx[id]];
	struct rtn_tdma_slot_stats *ss = &e->st.slot[id];
	struct queue *q = &e->q[e->queue_of[id]];
	int64_t min_wt = rtn_wire_ns(ETH_ZLEN_RTN, e->cfg.link_rate_mbps);

	if (!e->in_slot) {
		e->in_slot = 1;
		e->slot_start = cycle_start(e, e->cur_no) + s->offset_ns;
		/*
		 * The slot owns [offset, offset + slot_len_ns()): validation keeps
		 * the next slot out of it.  RTnet's slot: a full frame plus the guard,
		 * the lateness it tolerates, so a full-size frame still fits when the
		 * thread wakes up to guard_ns late; later than that, it waits for the
		 * next occurrence and the occurrence counts as a late start.  A
		 * window: every frame whose wire time ends inside it, all handed to
		 * the ring at once.
		 */
		e->slot_end = e->slot_start + slot_len_ns(&e->cfg, s);
		e->sent_in_occ = 0;
		e->resume_at = 0;
		ss->occurrences++;
		if (e->st.state == RTN_TDMA_ST_CALIBRATING ||
		    e->st.state == RTN_TDMA_ST_WAIT_SYNC) {
			/* the slot is lent to the master for its reply (TDMA spec) */
			if (e->st.state == RTN_TDMA_ST_CALIBRATING && id == e->cal_slot &&
			    !e->req_outstanding)
				send_req_cal(e, s);
			return 1;
		}
		if (!rtn_tdma_can_send(e))
			return 1;
		if (e->cfg.link_rate_mbps && now + min_wt > e->slot_end) {
			ss->missed++;
			e->st.missed_slots++;
			return 1;
		}
		if (now - e->slot_start > e->cfg.guard_ns) {
			ss->late_starts++;
			e->st.late_starts++;
		}
		if (e->port.before_slot)
			e->port.before_slot(e->port.arg, e, id, now);
	}
	for (;;) {
		uint16_t b = q_peek(q);
		int64_t tx, wt = 0, t = 0, deadline; /* wt: unpaced, no wire time */
		int64_t expires = RTN_TDMA_NEVER;
		uint8_t *frame;
		uint32_t len;
		int32_t stamp_off = -1;
		int rc;

		if (b != NIL) {
			frame = e->pool[b].data;
			len = e->pool[b].len;
			stamp_off = e->pool[b].stamp_off;
			expires = e->pool[b].expires;
		} else if (!e->port.tail_peek ||
			   !(frame = e->port.tail_peek(e->port.arg, e, (uint32_t)id, &len))) {
			return 1;
		}
		if (!e->cfg.link_rate_mbps) {
			if (e->sent_in_occ >= UNPACED_BURST)
				return 1;
			if (now > expires) {
				drop_expired(e, q, ss);
				continue;
			}
		} else {
			wt = rtn_wire_ns(len, e->cfg.link_rate_mbps);
			t = now > e->wire_free_at ? now : e->wire_free_at;
			if (t < e->slot_start)
				t = e->slot_start; /* a chained window, run early */
			if (t > expires) {
				drop_expired(e, q, ss);
				continue;
			}
			if (t + wt > e->slot_end) {
				if (b != NIL) /* the tail's frames wait in their own ring */
					ss->deferred++;
				return 1;
			}
			/* RTnet's slot: hand frames over up to PACE_AHEAD_NS before their wire time */
			if (!s->window_ns && t > now + PACE_AHEAD_NS) {
				e->resume_at = t - PACE_AHEAD_NS;
				return 0;
			}
		}
		/*
		 * A slot run ahead of its start behind this run's frames
		 * (slot_joins_run) is stamped from its start: the wire takes it
		 * when they have gone, not when it was handed over.
		 *
		 * Handed over at the latest when it still ends inside the slot:
		 * `now` was read before this run began, and a stall since (the
		 * VM took the CPU) must not send the frame into the next slot or
		 * the next cycle.  Too late, it stays queued for the next
		 * occurrence; if it was the first, the occurrence is missed.
		 */
		/* an expiry before the slot's end is the deadline the send checks at handover */
		deadline = e->slot_end - wt < expires ? e->slot_end - wt : expires;
		rc = xmit_from(e, frame, len, stamp_off,
			       e->st.clock_offset + (now < e->slot_start ? e->slot_start - now : 0),
			       e->slot_start, t, deadline, &tx);
		if (rc == -ETIME && deadline == expires) {
			drop_expired(e, q, ss);
			continue;
		}
		if (rc == -ETIME) {
			if (e->sent_in_occ) {
				ss->deferred += b != NIL;
			} else {
				ss->missed++;
				e->st.missed_slots++;
			}
			return 1;
		}
		if (rc)
			return 1;
		if (e->sent_in_occ++ == 0) {
			/* handed over early for a window: it was on time */
			int64_t late = tx > e->slot_start ? tx - e->slot_start : 0;

			rtn_hist_add(&e->st.slot_lateness, late);
			if (id == 0) {
				rtn_hist_add(&e->st.slot0_lateness, late);
				e->slot0_late = late;
				e->slot0_sent++;
			}
		}
		ss->frames++;
		ss->bytes += len;
		e->st.frames_tx++;
		e->st.bytes_tx += len;
		if (b != NIL)
			q_pop(e, q);
		else
			e->port.tail_taken(e->port.arg, len);
		now = tx;
	}
}

static void run_backup_check(struct rtn_tdma *e)
{
	uint32_t n = e->cur_no;

	if (e->have_sync &&
	    ((int32_t)(n - e->last_sync_no) <= 0 || (int32_t)(n - e->heard_no) <= 0)) {
		/* the primary is alive: its Sync of this cycle or a later one (a late Sync,
		 * not taken for the clock, counts too) */
		raise_event(e, RTN_TDMA_EV_PRIMARY_ALIVE);
		return;
	}
	raise_event(e, RTN_TDMA_EV_PRIMARY_SILENT);
	send_sync(e, n);
}

static void run_job(struct rtn_tdma *e, int64_t now)
{
	const struct job *j = &e->jobs[e->next_job];
	int done = 1;

	switch (j->kind) {
	case JOB_SYNC:
		if (e->st.state == RTN_TDMA_ST_MASTER)
			send_sync(e, e->cur_no);
		break;
	case JOB_BACKUP:
		run_backup_check(e);
		break;
	case JOB_RPL_CAL:
		if (e->replies[j->arg].used && e->replies[j->arg].reply_cycle == e->cur_no)
			send_rpl_cal(e, &e->replies[j->arg]);
		break;
	case JOB_SLOT:
		if (e->slot_idx[j->arg] >= 0)
			done = run_slot(e, j->arg, now);
		break;
	}
	if (done) {
		e->in_slot = 0;
		e->resume_at = 0;
		e->next_job++;
	}
}

uint64_t rtn_tdma_missed(const struct rtn_tdma *e)
{
	return e->st.missed_slots;
}

struct rtn_tdma_slot0 rtn_tdma_slot0(const struct rtn_tdma *e)
{
	return (struct rtn_tdma_slot0){ e->st.slot[0].missed, e->slot0_sent, e->slot0_late };
}

void rtn_tdma_set_lazy_begin(struct rtn_tdma *e, int on)
{
	e->lazy_begin = on;
}

/*
 * Offset of the first job begin_cycle(@p n) will add (the same rules), or
 * INT64_MAX when it adds none.
 */
static int64_t first_job_offset(const struct rtn_tdma *e, uint32_t n)
{
	int64_t first = INT64_MAX;
	uint32_t i, left;

	if (e->st.state == RTN_TDMA_ST_MASTER)
		return 0;
	if (is_backup(e) &&
	    (e->st.state == RTN_TDMA_ST_BACKUP_STANDBY || e->st.state == RTN_TDMA_ST_BACKUP_ACTIVE))
		first = e->cfg.backup_offset_ns;
	for (i = 0, left = e->n_replies; left && i < RTN_TDMA_MAX_CAL; i++) {
		if (!e->replies[i].used)
			continue;
		left--;
		if (e->replies[i].reply_cycle == n && e->replies[i].offset < first)
			first = e->replies[i].offset;
	}
	for (i = 0; i < e->cfg.n_slots; i++)
		if (slot_active(&e->cfg.slots[i], n) && e->cfg.slots[i].offset_ns < first)
			first = e->cfg.slots[i].offset_ns;
	return first;
}

/*
 * Where in cycle @p n it is started, from its start.  Normally at 0; with
 * lazy_begin (no one listens to cycle starts) at its first job, which saves
 * the station a wake-up per cycle when that job is not at offset 0 (every
 * slave).  Not while a new configuration waits: it is applied at the start,
 * and its first job may be earlier.
 */
static int64_t begin_offset(const struct rtn_tdma *e, uint32_t n)
{
	int64_t first;

	if (!e->lazy_begin || __atomic_load_n(&e->pending, __ATOMIC_ACQUIRE))
		return 0;
	first = first_job_offset(e, n);
	return first == INT64_MAX ? 0 : first;
}

/*
 * When cycle @p n is started (begin_offset).  Out of line: it is the branch
 * of rtn_tdma_next_event() taken at a cycle's edges only, and inlined there
 * it made every call save more registers (slot_run 24 instructions a frame
 * dearer, callgrind).
 */
static __attribute__((noinline)) int64_t begin_time(const struct rtn_tdma *e, uint32_t n)
{
	return cycle_start(e, n) + begin_offset(e, n);
}

int64_t rtn_tdma_next_event(const struct rtn_tdma *e)
{
	if (e->st.state == RTN_TDMA_ST_DOWN)
		return INT64_MAX;
	if (!e->grid_valid)
		return e->st.state == RTN_TDMA_ST_LISTEN ? e->listen_until : INT64_MAX;
	if (!e->begun)
		return begin_time(e, e->cur_no);
	if (e->in_slot && e->resume_at)
		return e->resume_at;
	if (e->next_job < e->n_jobs)
		return cycle_start(e, e->cur_no) + e->jobs[e->next_job].due;
	/* the cycle is over: the step to the next one is due when that one begins */
	return begin_time(e, e->cur_no + 1);
}

int rtn_tdma_next_sends(const struct rtn_tdma *e)
{
	uint32_t n = e->cur_no;
	int64_t first;

	if (e->st.state == RTN_TDMA_ST_DOWN || !e->grid_valid)
		return 0;
	if (e->begun) { /* as rtn_tdma_next_event(): a resumed slot, a job ... */
		if ((e->in_slot && e->resume_at) || e->next_job < e->n_jobs)
			return 1;
		n++; /* ... or, the cycle over, the next one's beginning */
	}
	/* the wake-up that begins a cycle sends if a job is due there */
	first = first_job_offset(e, n);
	return first != INT64_MAX && begin_offset(e, n) == first;
}

static void end_listen(struct rtn_tdma *e)
{
	/* nobody else is sending Sync: this station owns the grid */
	e->grid_valid = 1;
	e->base_no = 1; /* RTnet's first Sync carries cycle_no 1 */
	e->base_start = e->listen_until;
	e->cur_no = 1;
	e->begun = 0;
	/* a backup still has to calibrate against a primary that shows up later */
	e->calibrated = !is_backup(e) || e->cfg.cal_rounds == 0;
	e->st.clock_offset = 0;
	raise_event(e, RTN_TDMA_EV_LISTEN_DONE);
}

/*
 * After a stall of more than SKIP_AFTER cycles, jump to the cycle before the
 * current one at once instead of walking every cycle missed (each walked
 * cycle counts its slots as missed; the jump counts the cycles it skipped).
 */
#define SKIP_AFTER 1000

static void skip_stalled_cycles(struct rtn_tdma *e, int64_t now)
{
	int64_t behind;

	if (!e->grid_valid || e->cycle_ns <= 0 || e->begun)
		return;
	behind = (now - cycle_start(e, e->cur_no)) / e->cycle_ns;
	if (behind <= SKIP_AFTER)
		return;
	behind -= 1;
	if (behind > INT32_MAX / 2)
		behind = INT32_MAX / 2;
	e->base_start = cycle_start(e, e->cur_no + (uint32_t)behind);
	e->base_no = e->cur_no + (uint32_t)behind;
	e->cur_no = e->base_no;
	e->st.cycles_skipped += (uint64_t)behind;
}

/*
 * Whether the next job, not due yet, is a slot of this station's that
 * begins while the modelled wire is still busy with the frames this run
 * handed over (within the microsecond slot offsets are rounded to): a
 * master's first slot right behind its Sync.  It runs in this run, and its
 * frames go to the ring behind those, in the same kick; the wire takes them
 * when it frees, at the slot's start.  Left to a run of its own, the slot
 * would wait for that kick, whose send() carries a copy-mode socket's frames
 * through the whole path inline; on a veth lab that is every receiver's
 * XDP program and copy: some 40 us of a Sync flooded to seven stations,
 * against the slot's 62 us guard (tests/netns/test_tdma_scale.py).
 */
static int slot_joins_run(const struct rtn_tdma *e, int64_t now)
{
	const struct job *j;
	int64_t due;

	if (!e->sent_in_run || !e->grid_valid || !e->begun || e->in_slot ||
	    e->next_job >= e->n_jobs)
		return 0;
	j = &e->jobs[e->next_job];
	due = cycle_start(e, e->cur_no) + j->due;
	return job_slot(e, j) && due <= e->wire_free_at + 1000 && due - now <= PACE_AHEAD_NS;
}

void rtn_tdma_run(struct rtn_tdma *e, int64_t now)
{
	int guard = 0;

	stats_begin(e);
	e->sent_in_run = 0;
	if (e->st.state == RTN_TDMA_ST_LISTEN && !e->grid_valid && now >= e->listen_until)
		end_listen(e);
	skip_stalled_cycles(e, now);
	/* the bound only protects against a grid that jumped far ahead */
	while (e->grid_valid && (rtn_tdma_next_event(e) <= now || slot_joins_run(e, now)) &&
	       guard++ < 100000) {
		if (!e->begun)
			begin_cycle(e, e->cur_no, now);
		else if (e->next_job < e->n_jobs)
			run_job(e, now);
		else {
			e->cur_no++;
			e->begun = 0;
		}
	}
	stats_end(e);
}

/* ---- statistics --------------------------------------------------------- */

void rtn_tdma_read_stats(const struct rtn_tdma *e, struct rtn_tdma_stats *out)
{
	uint32_t s1, s2;
	uint32_t i;

	do {
		s1 = __atomic_load_n(&e->st.seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		memcpy(out, &e->st, offsetof(struct rtn_tdma_stats, slot_lateness));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&e->st.seq, __ATOMIC_RELAXED);
	} while ((s1 & 1) || s1 != s2);
	rtn_hist_read(&e->st.slot_lateness, &out->slot_lateness);
	rtn_hist_read(&e->st.slot0_lateness, &out->slot0_lateness);
	rtn_hist_read(&e->st.sync_error, &out->sync_error);
	rtn_hist_read(&e->st.sync_delay, &out->sync_delay);
	for (i = 0; i < RTN_TDMA_MAX_SLOTS; i++)
		out->slot[i].queue_depth = 0;
	for (i = 0; i < RTN_TDMA_MAX_SLOTS; i++)
		if (out->slot[i].id >= 0 && e->queue_of[i] >= 0)
			out->slot[i].queue_depth = e->q[e->queue_of[i]].depth;
}

int64_t rtn_tdma_clock_offset(const struct rtn_tdma *e)
{
	return e->st.clock_offset;
}

int64_t rtn_tdma_guard_ns(const struct rtn_tdma *e)
{
	return e->cfg.guard_ns;
}
