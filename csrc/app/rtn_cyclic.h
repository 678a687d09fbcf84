/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_cyclic.h
 * @brief Cyclic task helper: run a C function once per TDMA cycle, at a
 *        fixed offset after the cycle start, on a real-time thread.
 *
 * The deadline of cycle n is derived from the cycle start the station last
 * published (on the host clock): start_os(p) + (n - p) * cycle + offset.
 * It is recomputed from the newest publication every cycle, so the task
 * follows the master's clock and its error never accumulates.  The thread
 * is an rtn_rt thread (SCHED_FIFO, pinned, mlocked, PM QoS), and the
 * lateness of every wake-up goes into the task's histogram.
 *
 * The "standard application" mode is the baseline a benchmark compares
 * against: SCHED_OTHER, relative sleeps of whatever is left of a fixed
 * interval counted from the task's start, not aligned to the TDMA cycle.
 *
 * rtn_cyclic_publisher is a built-in task function that sends one
 * timestamped message per cycle, so Python can drive a benchmark without
 * running Python on the real-time thread.
 */
#ifndef RTN_CYCLIC_H
#define RTN_CYCLIC_H

#include <stdint.h>
#include "rtn_app.h"
#include "rtn_hist.h"
#include "rtn_lead.h"
#include "rtn_rt.h"

#define RTN_CYCLIC_MODE_RT	 0
#define RTN_CYCLIC_MODE_STANDARD 1

struct rtn_cyclic_opts {
	int64_t offset_ns; /* wake-up after the cycle start, 0 <= offset < cycle */
	uint64_t cycles;   /* runs before stopping; 0: until rtn_cyclic_stop() */
	int32_t mode;	   /* RTN_CYCLIC_MODE_* */
	int32_t pad;
	int64_t interval_ns;		/* period; 0: the channel's cycle (real-time mode: own
				 * absolute grid of this period, for NoMAC) */
	int64_t first_cycle_timeout_ns; /* wait for the first published cycle; 0: 2 s */
	struct rtn_rt_opts rt;		/* real-time mode: CPU, priority, PM QoS, fallback */
	/*
	 * Real-time mode on the TDMA cycle: hand over by this time after the cycle
	 * start (the slot the message goes in) instead of waking at offset_ns; the
	 * task wakes lead_ns before it.  -1: not used (offset_ns as above).
	 */
	int64_t handover_ns;
	int64_t lead_ns;       /* with handover_ns: > 0 fixed; 0 automatic (rtn_lead.h) */
	int64_t lead_start_ns; /* automatic: where it starts; 0: a quarter of the cycle
				 * (a task that restarts may give the lead it had learnt) */
};

/**
 * The task: called once per cycle with the cycle it runs in (extrapolated
 * to that cycle from the latest publication) and the wake-up time on the
 * host clock.  Returns 0 to go on, > 0 to stop, < 0 (errno) to fail.
 */
typedef int (*rtn_cyclic_fn)(void *arg, const struct rtn_app_waitinfo *cycle, int64_t now);

struct rtn_cyclic_stats {
	int32_t mode;
	int32_t policy; /* RTN_RT_POLICY_* actually applied */
	int32_t priority;
	int32_t cpu;
	int32_t memory_locked;
	int32_t dma_latency_held;
	int32_t running;
	int32_t rc;		  /* the loop's result once it ended */
	uint64_t runs;		  /* calls of the task function */
	uint64_t missed;	  /* deadlines skipped after a stall of a cycle or more */
	int64_t interval_ns;	  /* the period actually used */
	int64_t handover_ns;	  /* -1: the task wakes at offset_ns */
	int64_t lead_ns;	  /* the hand-over lead in force */
	int64_t lead_need_max_ns; /* the longest a run needed from wake-up to hand-over */
	int32_t lead_auto;	  /* 1: the lead adapts; 0: fixed by the user */
	int32_t pad;
	uint64_t lead_updates;
	uint64_t lead_late;   /* hand-overs after the lead in force had run out */
	uint64_t lead_beyond; /* needs above half a cycle: stalls no lead covers */
	struct rtn_hist hist; /* lateness of each wake-up, ns */
};

/**
 * State of rtn_cyclic_publisher; fill dst, payload_len and ch, zero the rest.
 * On a UDP socket (rtn_app_sendto()) fill dst_ip and dst_port instead of dst.
 */
struct rtn_cyclic_pub {
	struct rtn_app_chan *ch;
	uint8_t dst[6];
	uint8_t pad[2];
	uint32_t payload_len; /* bytes after the application header, zero-filled */
	uint32_t pad2;
	uint64_t sent;
	uint64_t refused; /* TX ring full */
	int32_t last_error;
	uint32_t last_seq;
	uint32_t dst_ip;   /* a UDP socket's destination (host order) */
	uint16_t dst_port; /* 0: an EtherType channel, to dst */
	uint16_t pad3;
};

struct rtn_cyclic;

/**
 * Defaults: offset 0, run until stopped, real-time mode with rtn_rt_opts_init(),
 * no hand-over deadline (handover_ns -1), automatic lead once one is set.
 */
void rtn_cyclic_opts_init(struct rtn_cyclic_opts *o);

/** Start the task on its own thread; returns once the thread's settings are applied. */
int rtn_cyclic_start(struct rtn_app_chan *ch, const struct rtn_cyclic_opts *o, rtn_cyclic_fn fn,
		     void *arg, struct rtn_cyclic **out);

/** Wait until the task ended by itself (cycles reached, fn stopped or failed). */
int rtn_cyclic_wait(struct rtn_cyclic *c, int64_t timeout_ns);

void rtn_cyclic_read_stats(const struct rtn_cyclic *c, struct rtn_cyclic_stats *out);

/** Stop and join the task, free @p c; returns the loop's result.  NULL is a no-op. */
int rtn_cyclic_stop(struct rtn_cyclic *c, struct rtn_cyclic_stats *final);

/** On the task's thread: the scheduled wake-up of the current run, on the host clock. */
int64_t rtn_cyclic_deadline(void);
/** The same instant in global time (host clock + the station's published offset). */
int64_t rtn_cyclic_deadline_global(void);

/** Built-in task: one message per cycle, sched_ns = the scheduled wake-up in global time. */
int rtn_cyclic_publisher(void *pub, const struct rtn_app_waitinfo *cycle, int64_t now);

/** Address of rtn_cyclic_publisher, for callers that cannot name C functions (Python). */
rtn_cyclic_fn rtn_cyclic_publisher_fn(void);

#endif
