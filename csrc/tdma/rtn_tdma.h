/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma.h
 * @brief The TDMA discipline (RTnet TDMA v2): master, backup master and
 *        slave, calibration, slots with per-slot priority queues, and a
 *        link-rate model, as one engine that never touches a socket or a
 *        clock itself.
 *
 * The engine works in the station's *local* time (ns).  Everything outside
 * it comes through a port: sending a frame (stamped as late as possible,
 * like RTnet's rtskb_tx_timestamp), and telling the true global time for a
 * local time (lab truth, only used to record the synchronisation error).
 * The RT thread drives it:
 *
 *     for (;;) {
 *             wait until rtn_tdma_next_event(e), or a frame arrives;
 *             for each received frame: rtn_tdma_rx(e, frame, len, rx_local);
 *             rtn_tdma_run(e, now_local);
 *     }
 *
 * Because the engine has no clock of its own, the same code runs on the RT
 * thread over AF_XDP and in the deterministic simulator (rtn_tdma_sim.h)
 * used by the unit tests.
 *
 * Only the RT thread calls rtn_tdma_run/rx/enqueue.  Other threads use
 * rtn_tdma_set_config() (applied at the next cycle start) and
 * rtn_tdma_read_stats() (a consistent snapshot through a sequence counter).
 */
#ifndef RTN_TDMA_H
#define RTN_TDMA_H

#include <stdint.h>
#include "rtn_hist.h"
#include "rtn_tdma_fsm.h"

#define RTN_TDMA_MAX_SLOTS    64	   /* slot ids 0..63 (RTnet default 0..7) */
#define RTN_TDMA_PRIOS	      32	   /* 0 = highest ... 31 = lowest, as RTnet */
#define RTN_TDMA_POOL	      1024	   /* frame buffers owned by the engine */
#define RTN_TDMA_FRAME_MAX    1536	   /* Ethernet frame without FCS, VLAN-free */
#define RTN_TDMA_QUEUE_MAX    256	   /* frames waiting per slot queue */
#define RTN_TDMA_MAX_CAL      256	   /* calibration replies a master can hold */
#define RTN_TDMA_CAL_KEEP     1024	   /* calibration rounds kept for the median */
#define RTN_TDMA_MIN_CYCLE_NS 100000LL	   /* 100 us */
#define RTN_TDMA_MAX_CYCLE_NS 1000000000LL /* 1 s */
#define RTN_TDMA_MAX_PERIOD   1024	   /* largest slot period (-p x/y: y) */

/* rtn_tdma_enqueue()'s expiry of a frame that waits as long as it takes (INT64_MAX) */
#define RTN_TDMA_NEVER 9223372036854775807LL
/*
 * The limits of the other settings: rtn_tdma_cfg_check() enforces them and
 * rtnet/options.py reads them through cffi, so each has one definition.
 */
#define RTN_TDMA_MAX_OFFSET_NS	    1000000000 /* slot offset and window: up to 1 s */
#define RTN_TDMA_MAX_GUARD_NS	    1000000000 /* guard after a slot's frame */
#define RTN_TDMA_MAX_CAL_ROUNDS	    1000000
#define RTN_TDMA_MAX_LINK_RATE_MBPS 400000  /* 400GBASE; 0 means unpaced */
#define RTN_TDMA_MAX_SYNC_LOSS	    1000000 /* cycles without Sync before going silent */
#define RTN_TDMA_MAX_LISTEN	    1000    /* cycles a master listens for another before Sync */
#define RTN_TDMA_MIN_SLOT_SIZE	    60	    /* RTnet's MIN_SLOT_SIZE */
#define RTN_TDMA_MAX_SLOT_SIZE	    1500    /* Ethernet MTU without jumbo frames */

/* Roles */
#define RTN_TDMA_ROLE_NONE   0 /* detached */
#define RTN_TDMA_ROLE_MASTER 1 /* primary master (backup_offset_ns < 0) or backup */
#define RTN_TDMA_ROLE_SLAVE  2

/* Slot lateness and sync error histograms start here (sync error is signed). */
#define RTN_TDMA_SYNC_HIST_LO_NS -2000000LL

struct rtn_tdma_slot_cfg {
	int32_t id;	   /* -1: unused entry */
	int64_t offset_ns; /* from the cycle start */
	uint32_t phasing;  /* 1..period: active when cycle_no % period == phasing - 1 */
	uint32_t period;
	uint32_t size;	   /* payload bytes (RTnet -s); frames may be size + 14 long */
	int32_t joint;	   /* share this slot's queue, -1: none */
	int64_t window_ns; /* 0: RTnet's slot (one full frame + guard); else a transmit
				 * window of this length, filled with as many frames as fit */
};

struct rtn_tdma_cfg {
	int32_t role;		  /* RTN_TDMA_ROLE_* */
	int64_t cycle_ns;	  /* master: the cycle; slave: 0 = learn it from Sync */
	int64_t backup_offset_ns; /* master: < 0 primary, >= 0 backup master */
	uint32_t cal_rounds;	  /* calibration rounds (0: calibrated at once) */
	uint32_t max_slot_id;
	uint32_t max_cal_requests;
	uint32_t link_rate_mbps;   /* 0: unpaced (real NIC paces) */
	int64_t guard_ns;	   /* slack after a full frame: the lateness a slot tolerates */
	uint32_t sync_loss_cycles; /* slave: cycles without Sync before going silent */
	uint32_t listen_cycles;	   /* master: cycles to listen before sending Sync (3) */
	uint32_t mtu;		   /* the device MTU slot sizes are checked against */
	uint32_t n_slots;
	struct rtn_tdma_slot_cfg slots[RTN_TDMA_MAX_SLOTS];
};

struct rtn_tdma_slot_stats {
	int32_t id;
	uint32_t queue_depth;
	uint64_t occurrences; /* active occurrences reached */
	uint64_t frames;
	uint64_t bytes;
	uint64_t missed;      /* occurrences skipped: woke too late to fit a frame */
	uint64_t late_starts; /* occurrences started later than guard_ns */
	uint64_t deferred;    /* frames that did not fit and waited for the next occurrence */
	uint64_t expired;     /* frames dropped: not on the wire before they expired */
};

struct rtn_tdma_stats {
	uint32_t seq;
	int32_t role;
	int32_t state;
	int32_t backup; /* configured as backup master */
	uint32_t cycle_no;
	int64_t cycle_ns;
	int64_t cycle_start;	 /* local time of the current cycle start */
	int64_t clock_offset;	 /* global = local + clock_offset */
	int64_t master_delay_ns; /* calibrated master-to-slave delay (mean) */
	int64_t cal_min_ns;
	int64_t cal_max_ns;
	uint32_t cal_rounds_done;
	uint32_t cal_rounds;
	uint8_t master_mac[6];
	uint64_t cycles; /* cycle starts executed */
	uint64_t sync_tx;
	uint64_t sync_rx;
	uint64_t sync_foreign;	   /* Sync from a station we do not follow, or while active */
	uint64_t sync_implausible; /* Sync outside the plausibility bounds: ignored */
	/* Sync of a new grid kept to learn its cycle from the next (a slave without a
	 * configured cycle needs two that agree): not followed, not ignored */
	uint64_t sync_learning;
	uint64_t sync_relocks; /* followed a master that restarted on a new grid */
	uint64_t sync_lost_events;
	uint64_t backup_takeovers;
	uint64_t cal_req_tx;
	uint64_t cal_req_rx;
	uint64_t cal_rpl_tx;
	uint64_t cal_rpl_rx;
	uint64_t cal_rpl_unexpected; /* replies to requests never sent */
	uint64_t cal_overflow;	     /* more pending requests than max_cal_requests */
	uint64_t cal_rpl_late;	     /* reply cycle already over */
	uint64_t cal_implausible;    /* request or reply with impossible stamps or cycles */
	uint64_t rx_bad;	     /* malformed / wrong version / unknown TDMA frames */
	uint64_t rx_foreign_disc;    /* RTmac frames of another discipline */
	uint64_t frames_tx;
	uint64_t bytes_tx;
	uint64_t queue_drops; /* queue full or no buffer */
	uint64_t too_big;     /* frame longer than its slot's size + 14 */
	uint64_t no_slot;     /* frame for a slot that does not exist */
	uint64_t missed_slots;
	uint64_t late_starts;
	uint64_t tx_errors; /* port refused a frame */
	uint64_t config_applied;
	uint64_t cycles_skipped; /* cycles jumped over at once after a very long stall */
	struct rtn_tdma_slot_stats slot[RTN_TDMA_MAX_SLOTS];
	struct rtn_hist slot_lateness;	/* first transmission minus scheduled slot start */
	struct rtn_hist slot0_lateness; /* the same for slot 0 only: RTnet's real-time slot */
	struct rtn_hist sync_error;	/* estimated global time minus true global time */
	/* lab truth: a followed Sync's true one-way delay (arrival in global time minus its
	 * transmit stamp); the sync error's median is the calibrated delay minus this one's */
	struct rtn_hist sync_delay;
};

/**
 * How the engine reaches the outside world.
 * send: transmit @p frame now.  If @p stamp_off >= 0, write the big-endian
 *   transmit time into the frame at that offset as late as possible: local
 *   time plus @p stamp_add (RTnet's pre-loaded offset: clock_offset for Sync,
 *   0 for calibration frames).  Returns 0 and the local transmit time in
 *   *tx_local, or a negative errno.
 * truth: the true global time at local time @p local (lab only; may be NULL).
 */
struct rtn_tdma;

struct rtn_tdma_port {
	/* @p sched: the local time the frame was scheduled for (its slot
	 * occurrence's start; a Sync's cycle start), for capture; @p deadline:
	 * the local time after which the frame must not be handed over (the
	 * last moment it still fits its slot; INT64_MAX: none): later, the
	 * port sends nothing and returns -ETIME */
	int (*send)(void *arg, uint8_t *frame, uint32_t len, int32_t stamp_off, int64_t stamp_add,
		    int64_t sched, int64_t deadline, int64_t *tx_local);
	int64_t (*truth)(void *arg, int64_t local);
	/* optional: called when a slot occurrence starts, to move frames that
	 * wait elsewhere (application rings, the probe) into the engine's queues */
	void (*before_slot)(void *arg, struct rtn_tdma *e, uint32_t slot_id, int64_t now);
	/* optional: the lowest-priority frames, sent from where they wait once
	 * the slot's queue is empty (the VNIC's ring: no copy into the pool).
	 * tail_peek: the frame slot @p slot_id may send next (*@p len bytes),
	 * or NULL; tail_taken: that frame was handed to the wire, the next */
	uint8_t *(*tail_peek)(void *arg, const struct rtn_tdma *e, uint32_t slot_id, uint32_t *len);
	void (*tail_taken)(void *arg, uint32_t len);
	/* optional: called at every cycle start (waiters on the cycle) */
	void (*on_cycle)(void *arg, uint32_t cycle_no, int64_t start_local);
	void *arg;
};

/** Fill @p c with RTnet's defaults for @p role (100 rounds, ids 0..7, 64 requests). */
void rtn_tdma_cfg_init(struct rtn_tdma_cfg *c, int32_t role);

/**
 * Check @p c: the one TDMA validator (rtmac/tdma_config.py validate() calls it
 * through cffi and raises its message, which names the setting as Python does).
 */
int rtn_tdma_cfg_check(const struct rtn_tdma_cfg *c);

/**
 * Whether a running engine configured with @p old can take @p new through
 * rtn_tdma_set_config() (staged, applied at a cycle start, no recalibration):
 * 1 if so, 0 if the change needs a detach and a new attach.  The one rule
 * for what may change live: everything but the role, the backup offset and
 * a master's cycle.
 */
int rtn_tdma_cfg_live(const struct rtn_tdma_cfg *old, const struct rtn_tdma_cfg *new_cfg);

/** Wire time of a frame of @p len bytes (no FCS) at @p mbps: preamble, FCS, IFG, padding. */
int64_t rtn_wire_time_ns(uint32_t len, uint32_t mbps);

int rtn_tdma_create(const uint8_t *mac, const struct rtn_tdma_port *port, struct rtn_tdma **out);
void rtn_tdma_destroy(struct rtn_tdma *e);

/**
 * Attach with configuration @p c at local time @p now (not running yet:
 * the calling thread owns the engine).  A running engine takes new
 * configurations through rtn_tdma_set_config().
 */
int rtn_tdma_start(struct rtn_tdma *e, const struct rtn_tdma_cfg *c, int64_t now);

/**
 * Hand a new configuration to a running engine; it is applied at the next
 * cycle start.  Returns -EBUSY while a previous one is still pending.
 */
int rtn_tdma_set_config(struct rtn_tdma *e, const struct rtn_tdma_cfg *c);
/** 1 while a configuration handed over is not yet applied. */
int rtn_tdma_config_pending(const struct rtn_tdma *e);

/** Local time of the next thing the engine has to do. */
int64_t rtn_tdma_next_event(const struct rtn_tdma *e);
/**
 * 1 if a frame may leave at rtn_tdma_next_event(): a job (Sync, calibration
 * reply, slot) or the resumption of a slot, rather than the start of a cycle
 * whose first job comes later.
 */
int rtn_tdma_next_sends(const struct rtn_tdma *e);
/** Start each cycle at its first job instead of its start (no one listens to cycle starts). */
void rtn_tdma_set_lazy_begin(struct rtn_tdma *e, int on);
/** Slot occurrences missed so far (cheap; for the owner thread). */
uint64_t rtn_tdma_missed(const struct rtn_tdma *e);
/** Slot 0 (RTnet's real-time slot) so far: what one look tells the owner thread. */
struct rtn_tdma_slot0 {
	uint64_t missed; /* occurrences missed */
	uint64_t sent;	 /* occurrences that sent ... */
	int64_t late;	 /* ... and the latest one's lateness */
};
struct rtn_tdma_slot0 rtn_tdma_slot0(const struct rtn_tdma *e);

/** Do everything due at or before local time @p now. */
void rtn_tdma_run(struct rtn_tdma *e, int64_t now);

/**
 * Process a received RTmac frame.  Anything malformed is counted and
 * dropped; it never moves the clock.
 * @return 0 if the frame was a TDMA frame (consumed), 1 if it is a tunnel
 *         frame for the VNIC (not consumed), a negative reject code otherwise.
 */
int rtn_tdma_rx(struct rtn_tdma *e, const uint8_t *frame, uint32_t len, int64_t rx_local);

/**
 * Queue a frame for slot @p slot_id at priority @p prio (0 highest .. 31).
 * Slot 1 falls back to slot 0 when it does not exist; joint slots share the
 * primary's queue.  Copies the frame.  RT thread only.
 * @param stamp_off  if >= 0, the frame offset where the global transmit time
 *                   (big-endian ns) is written at the last moment
 * @param expires    local time after which the frame must not start on the
 *                   wire: it is dropped from the queue then and counted in
 *                   the slot's `expired` (RTN_TDMA_NEVER: it waits as long
 *                   as it takes)
 * @return 0, -EMSGSIZE (larger than the slot allows), -ENOENT (no such
 *         slot), -ENOBUFS (queue or pool full); each one is counted.
 */
int rtn_tdma_enqueue(struct rtn_tdma *e, uint32_t slot_id, uint32_t prio, const uint8_t *frame,
		     uint32_t len, int32_t stamp_off, int64_t expires);

/** Frames waiting in the queue that slot @p slot_id sends from (0 if none). */
uint32_t rtn_tdma_queue_depth(const struct rtn_tdma *e, uint32_t slot_id);

/** The configured size of slot @p slot_id (after the slot 1 -> 0 fallback), 0 if none. */
uint32_t rtn_tdma_slot_size(const struct rtn_tdma *e, uint32_t slot_id);

/** 1 when slots @p a and @p b send from the same queue (joint, or the 1 -> 0 fallback). */
int rtn_tdma_shares_queue(const struct rtn_tdma *e, uint32_t a, uint32_t b);

/** Current clock offset (global = local + offset). */
int64_t rtn_tdma_clock_offset(const struct rtn_tdma *e);

/** The guard of the configuration in force (RT thread; staged changes count once applied). */
int64_t rtn_tdma_guard_ns(const struct rtn_tdma *e);

/** Consistent snapshot of the counters and histograms (any thread). */
void rtn_tdma_read_stats(const struct rtn_tdma *e, struct rtn_tdma_stats *out);

/** Local time at which cycle @p cycle_no starts on the current grid (for waiters). */
int64_t rtn_tdma_cycle_start(const struct rtn_tdma *e, uint32_t cycle_no);

/** 1 when the station may transmit (master active, or slave synced and calibrated). */
int rtn_tdma_can_send(const struct rtn_tdma *e);

#endif
