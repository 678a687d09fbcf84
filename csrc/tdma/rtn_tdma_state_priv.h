/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_state_priv.h
 * @brief The TDMA engine's state, the object its parts share: rtn_tdma.c
 *        (the cycle, the slots and sending), rtn_tdma_rx.c (receiving: Sync
 *        acceptance and calibration), rtn_tdma_queue.c (the frame pool and
 *        the slots' queues) and rtn_tdma_cfg.c (the configuration's defaults
 *        and checks).  Not part of the API.
 */
#ifndef RTN_TDMA_STATE_PRIV_H
#define RTN_TDMA_STATE_PRIV_H

#include <stdint.h>
#include "rtn_hist_inline.h"
#include "rtn_tdma.h"
#include "rtn_tdma_proto_inline.h"

#define NIL 0xFFFFu /* end of a buffer list */

enum job_kind { JOB_SYNC, JOB_BACKUP, JOB_RPL_CAL, JOB_SLOT };

struct job {
	int64_t offset;
	int64_t due; /* when it may run: its offset, or earlier for a window that
				 * follows the station's previous slot without a gap */
	uint16_t kind;
	uint16_t arg; /* slot id or reply index */
};

struct buf {
	int64_t expires; /* local time: not on the wire by then, it is dropped */
	uint16_t len;
	uint16_t next;
	int16_t stamp_off;
	uint8_t data[RTN_TDMA_FRAME_MAX];
};

struct queue {
	uint16_t head[RTN_TDMA_PRIOS];
	uint16_t tail[RTN_TDMA_PRIOS];
	uint32_t nonempty; /* bit p set: sub-queue p has frames */
	uint32_t depth;
};

/*
 * Syncs that do not fit the grid we follow, all from one sender and
 * consistent with each other: enough of them in a row, with nothing heard
 * from our grid meanwhile, prove a master that restarted.
 */
struct sync_candidate {
	uint32_t count;
	uint8_t src[6];
	uint32_t cycle_no;
	int64_t sched;
	int64_t offset;
};

struct cal_reply {
	uint8_t used;
	uint8_t dst[6];
	uint32_t reply_cycle;
	int64_t offset;
	uint64_t req_xmit;
	int64_t rx_local;
};

struct rtn_tdma {
	uint8_t mac[6];
	struct rtn_tdma_port port;

	struct rtn_tdma_cfg cfg;
	struct rtn_tdma_cfg staging;
	int pending; /* staging waits for a cycle start */

	/* slot id -> index in cfg.slots, or -1 */
	int16_t slot_idx[RTN_TDMA_MAX_SLOTS];
	int16_t queue_of[RTN_TDMA_MAX_SLOTS]; /* effective queue per id, or -1 */
	int16_t cal_slot;		      /* slot used for calibration requests */

	struct queue q[RTN_TDMA_MAX_SLOTS];
	struct buf pool[RTN_TDMA_POOL];
	uint16_t free_head;

	/* grid and cursor */
	int grid_valid;
	uint32_t base_no;
	int64_t base_start;
	int64_t cycle_ns;
	uint32_t cur_no;
	int begun;	/* cycle cur_no has been started */
	int lazy_begin; /* start a cycle at its first job */
	struct job jobs[RTN_TDMA_MAX_SLOTS + 2 + RTN_TDMA_MAX_CAL];
	int n_jobs;
	int next_job;

	/* slot occurrence in progress (paced) */
	int in_slot;
	int64_t slot_start, slot_end, resume_at;
	uint32_t sent_in_occ;
	int64_t wire_free_at;
	uint32_t sent_in_run; /* frames handed over in this rtn_tdma_run(): one kick */
	uint64_t slot0_sent;  /* slot 0 occurrences that sent ... */
	int64_t slot0_late;   /* ... and the latest one's lateness */

	/* synchronisation */
	int64_t listen_until;
	int heard_sync;
	uint32_t last_sync_no; /* cycle of the last Sync taken */
	uint32_t heard_no;     /* ... or heard from our master, off the grid */
	int have_sync;
	uint8_t sync_src[6];
	int64_t prev_sched; /* last sane Sync while learning the cycle */
	uint32_t prev_sched_no;
	int64_t prev_rx;
	uint8_t prev_src[6];
	int have_prev_sched;
	struct sync_candidate cand; /* Syncs of a grid we do not follow (yet) */

	/* calibration (requester side) */
	int calibrated;
	int req_outstanding;
	uint64_t req_xmit;
	uint32_t req_reply_cycle;
	int64_t cal_samples[RTN_TDMA_CAL_KEEP]; /* the last rounds' delays */

	/* calibration (master side) */
	struct cal_reply replies[RTN_TDMA_MAX_CAL];
	/* how many of them are used: the loops over them stop there (a slave has none) */
	uint32_t n_replies;

	struct rtn_tdma_stats st;
};

static inline int64_t cycle_start(const struct rtn_tdma *e, uint32_t n)
{
	return e->base_start + (int64_t)(int32_t)(n - e->base_no) * e->cycle_ns;
}

static inline void stats_begin(struct rtn_tdma *e)
{
	__atomic_store_n(&e->st.seq, e->st.seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void stats_end(struct rtn_tdma *e)
{
	__atomic_store_n(&e->st.seq, e->st.seq + 1, __ATOMIC_RELEASE);
}

static inline int is_master(const struct rtn_tdma *e)
{
	return e->cfg.role == RTN_TDMA_ROLE_MASTER;
}

static inline int is_backup(const struct rtn_tdma *e)
{
	return is_master(e) && e->cfg.backup_offset_ns >= 0;
}

/* Sending Sync: the primary when active, a backup while the primary is silent. */
static inline int sends_sync(const struct rtn_tdma *e)
{
	return e->st.state == RTN_TDMA_ST_MASTER || e->st.state == RTN_TDMA_ST_BACKUP_ACTIVE;
}

static inline int fsm_kind(const struct rtn_tdma *e)
{
	if (!is_master(e))
		return RTN_TDMA_FSM_SLAVE;
	return is_backup(e) ? RTN_TDMA_FSM_BACKUP : RTN_TDMA_FSM_PRIMARY;
}

/*
 * The only way the engine changes state: raise @p event and take what the
 * state machine (rtn_tdma_fsm.c) says.  Counters of a transition live here.
 */
static inline void raise_event(struct rtn_tdma *e, int event)
{
	int old = e->st.state, s = rtn_tdma_fsm(old, event, fsm_kind(e), e->calibrated);

	if (s == old)
		return;
	if (s == RTN_TDMA_ST_SYNC_LOST)
		e->st.sync_lost_events++;
	if (s == RTN_TDMA_ST_BACKUP_ACTIVE)
		e->st.backup_takeovers++;
	e->st.state = s;
}

/* ---- slots (shared with rtn_tdma_cfg.c, which validates them) ---------- */

/*
 * The wire time a slot owns from its offset.  RTnet's slot: one full frame
 * plus the guard, which is also the lateness it tolerates.  A window: its
 * length; every frame must end inside it, so a late start only leaves less
 * room, and no guard is needed at its end (the gap to the next station's
 * slot is the planner's business).
 */
static inline int64_t slot_len_ns(const struct rtn_tdma_cfg *c, const struct rtn_tdma_slot_cfg *s)
{
	if (s->window_ns > 0)
		return s->window_ns;
	return rtn_wire_time_ns(s->size + ETH_HLEN_RTN, c->link_rate_mbps) + c->guard_ns;
}

/* Window @p b starts in the guard of RTnet slot @p a, after its frame (the overlap rule). */
static inline int window_in_guard(const struct rtn_tdma_cfg *c, const struct rtn_tdma_slot_cfg *a,
				  const struct rtn_tdma_slot_cfg *b)
{
	return b->window_ns > 0 && a->window_ns == 0 &&
	       b->offset_ns >=
		       a->offset_ns + rtn_wire_time_ns(a->size + ETH_HLEN_RTN, c->link_rate_mbps);
}

/* ---- queues: popped in rtn_tdma.c's slots, filled in rtn_tdma_queue.c ---- */

static inline uint16_t q_peek(const struct queue *q)
{
	if (!q->nonempty)
		return NIL;
	return q->head[__builtin_ctz(q->nonempty)];
}

static inline void q_pop(struct rtn_tdma *e, struct queue *q)
{
	int p = __builtin_ctz(q->nonempty);
	uint16_t b = q->head[p];

	q->head[p] = e->pool[b].next;
	if (q->head[p] == NIL) {
		q->tail[p] = NIL;
		q->nonempty &= ~(1u << p);
	}
	q->depth--;
	e->pool[b].next = e->free_head;
	e->free_head = b;
}

static inline void q_purge(struct rtn_tdma *e, struct queue *q)
{
	while (q->nonempty) {
		q_pop(e, q);
		e->st.queue_drops++;
	}
}

/* rtn_tdma_queue.c */
/** Rebuild the id -> slot and id -> queue maps from e->cfg. */
void rtn_tdma_index_slots(struct rtn_tdma *e);
/** Every buffer free, every queue empty. */
void rtn_tdma_pool_init(struct rtn_tdma *e);

/* rtn_tdma_rx.c */
/** Forget what the receive side learnt about other grids (at attach). */
void rtn_tdma_rx_reset(struct rtn_tdma *e);

#endif
