/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_state_priv.h
 * @brief The VNIC object its three files share: rtn_vnic_pump.c (the pump
 *        thread, attach and detach), rtn_vnic_tx.c (Linux -> wire) and
 *        rtn_vnic_rx.c (wire -> Linux).  Its rings, its counters, the TAP's
 *        state and how the two threads wake each other.  Not part of the API.
 */
#ifndef RTN_VNIC_STATE_PRIV_H
#define RTN_VNIC_STATE_PRIV_H

#include <pthread.h>
#include <stdint.h>
#include "rtn_core.h"
#include "rtn_station_priv.h"
#include "rtn_vnic_gso.h"
#include "rtn_vnic_priv.h"
#include "rtn_vnic_wire_priv.h"

#define VNIC_PRIO 31 /* RTnet: NRT traffic is the lowest priority */
/*
 * Batched under a flow: the pump's period, and the frames a period takes to
 * make a flow.  The period is a trade between the pump's wake-ups and the
 * delay TCP sees: measured with one TCP flow through a 1 ms TDMA cycle at
 * 100 Mbit/s modelled (74.3 Mbit/s of TCP capacity), 4 ms carried 68.9
 * Mbit/s at about 250 pump wake-ups per second per station; 8 ms 57.8
 * Mbit/s, 16 ms 22.3 Mbit/s.  A period that adapts, growing towards 128
 * frames a round (up to 32 ms) as the flow's rate rose, carried 27 Mbit/s.
 * Those senders ran BBR, this machine's default: BBR sizes its window from
 * the bandwidth and the lowest round trip it saw, over ten seconds (at 16
 * ms: a window of 38 segments, 12.6 Mbit/s, minimum RTT 1.9 ms against 36
 * ms typical).  That low point is the light traffic's: the handshake and
 * the first round trips go while the pump is still event-driven, at once.
 * A pump kept on its 16 ms period whatever the traffic carried 65 Mbit/s
 * (20 s, window some 600 KB; 0.011 pump wake-ups per packet), but every
 * packet then waits up to a period at each end, and BBR's window of twice
 * that round trip overran the queue limit below (1,481 retransmissions; at
 * 40 ms 6,429).  Not kept: light traffic goes at once.
 * CUBIC (iperf3 -C cubic) keeps its rate at 16 ms (61 Mbit/s over 10 s, 70
 * once grown), but at any period it filled the ring and the TAP's queue
 * until the round trip was some 300 ms (cwnd 2.8 MB, no loss), which
 * VNIC_QUEUE_MAX_NS below now stops.  What preempts the pump under a
 * flow is the application its TAP write woke (532 of 611 involuntary
 * switches in a 5 s run, the rest RT threads).  A pump at SCHED_FIFO
 * priority 1 (below the RT thread, as RTnet's proxy task) is not preempted
 * by it: at 100 Mbit/s 0.042 switches per packet against 0.060 to 0.062,
 * and 12.5 to 13.2 CPU s/GB against 13.7 to 14.1; but at 1000 Mbit/s the
 * pump then keeps the application off its CPU: 644 Mbit/s against 804,
 * 33 RT slots missed against 12 (one run each).  With the RT threads
 * pinned apart (vnic bench --rt-cpu auto), the pump and the application
 * sharing the other CPU, it lost at 100 Mbit/s too: 56.6 and 57.5 Mbit/s
 * against 65.8 and 68.0 (two pairs of runs).  Not kept: an ordinary
 * thread.  Nor a shorter EEVDF slice for it (sched_setattr, sched_runtime
 * 100 us): at 100 Mbit/s its involuntary switches stayed 0.023 per packet
 * against 0.024 without (one 10 s run each).  Nor nice -10: the application
 * then no longer preempts it (involuntary switches 0.001 per packet against
 * 0.016 to 0.019, two alternating pairs of 5 s runs at 100 Mbit/s), but TCP
 * lost a sixth: 58.0 and 56.7 Mbit/s against 68.8 and 68.8.  The preemption
 * is what lets the application answer within the pump's round: woken by the
 * pump's TAP write (ACKs, data), it runs at once, and its new segments are in
 * the TAP when the round reads it, not a period later.
 */
#define VNIC_PUMP_PERIOD_NS 4000000
/*
 * The longest a frame may wait in the ring to the wire before the pump
 * drops one of the TAP's packets a round instead of queueing it
 * (rtn_vnic_tx.c, drop_at_the_tap).  The TAP gives Linux's qdisc no
 * backpressure (tun orphans the skb and drops only when its own ring of
 * packets is full), so without it a CUBIC flow filled the ring and the
 * TAP's queue: at 100 Mbit/s modelled a round trip of 313 ms, 15.5 CPU
 * s/GB.  With 20 ms, one 10 s flow each: CUBIC 69.1 Mbit/s at a round trip
 * of 17 to 21 ms and 12.7 CPU s/GB; BBR unchanged (68.9 Mbit/s, no
 * retransmission: it keeps its own queue short).  A first rule dropped
 * every packet while the oldest frame was that old: it emptied the ring
 * under a UDP flood (68.5 Mbit/s delivered against 72.9), and at 10 ms it
 * dropped BBR's packets too (179 retransmissions in 10 s).  At 1 Gbit/s
 * the ring (1,024 frames, some 15 ms) fills first: backpressure, as
 * before.
 */
#define VNIC_QUEUE_MAX_NS 20000000
/* frames a period, averaged over about four (rtn_vnic_moderation.h), that make a flow */
#define VNIC_HEAVY 8
/*
 * ... and that make it a busy flow, woken twice a period (every 2 ms).  At
 * high rates a round's delay, not the pump's wake-ups, holds TCP back: one
 * BBR flow through a 1 ms cycle, 5 s flows on one pair of stations, the
 * RT threads on CPU 1, in turn with builds on a fixed period: at 1000
 * Mbit/s modelled 4 ms carried 667 to 708 Mbit/s (nine flows), 2 ms 803
 * to 826 (twelve), 1 ms 820 to 823 (three); at 500 Mbit/s 4 ms 372 to
 * 400, 2 ms 403 to 405.  At 4 ms the rounds were not the period's anyway:
 * the RT thread kicked the pump early, across CPUs, 572 times a second at
 * 1000 Mbit/s (VNIC_TX_LOW, VNIC_RX_KICK), against 420 at 2 ms.  At 100
 * Mbit/s a flow moves some 25 frames a period, both ways at most some 66,
 * so it keeps the whole period, and its wake-ups per packet; 500 Mbit/s
 * moved some 140, 1000 Mbit/s some 250.  With this threshold: 1000 Mbit/s
 * 759 to 819 (nine flows), 500 Mbit/s 401 to 403.
 */
#define VNIC_BUSY 96
/* ... the RT thread wakes it early for this many received frames ... */
#define VNIC_RX_KICK (VNIC_RING / 4)
/* ... or when the ring to the wire fell to this from above */
#define VNIC_TX_LOW (VNIC_RING / 4)
/*
 * A TAP write of VNIC_CLEAR_MIN_SEGS merged segments or more does not start
 * within VNIC_CLEAR_NS before an RT thread's deadline; it waits until
 * VNIC_CLEAR_AFTER_NS past it (rtn_vnic_rx.c, keep_clear_of_rt_wakeups).
 */
#define VNIC_CLEAR_NS	    60000
#define VNIC_CLEAR_AFTER_NS 5000
#define VNIC_CLEAR_MIN_SEGS 4
/* a pump with nothing to do looks again after this long (stop, a dead TAP) */
#define VNIC_PUMP_IDLE_NS 200000000
/*
 * Copies a wire frame's bytes go through between the VNIC's ring and the
 * wire in per-packet mode: the discipline's queue and the UMEM frame the
 * socket sends from.  Counted with the VNIC's own (tx_copy_bytes).  A
 * batched VNIC's frames are sent in place from the ring (rtn_vnic_wire_priv.h),
 * with no copy unless the socket lends no frames.
 */
#define VNIC_TX_COPIES_AFTER_RING 2

/* the first guess: Ethernet, IPv4 and TCP with timestamps, the rest of a frame of payload */
#define LAY_HDR_LEN 66

/* VNIC counters are bumped by the RT thread and the pump alike */
#define VSTAT_ADD(v, field, n) __atomic_fetch_add(&(v)->s->st.vnic.field, (n), __ATOMIC_RELAXED)

/*
 * A received frame lent to the pump: the inner frame, decapsulated in place
 * in its UMEM frame, which goes back to @p x's fill ring once the pump
 * wrote it (rtn_vnic_reclaim).  base NULL: the frame was copied into the
 * ring's slot instead.
 */
struct tap_loan {
	const uint8_t *base;
	struct rtn_xsk *x;
	uint64_t addr;
};

/* An SPSC ring of whole frames (RT thread -> pump). */
struct frame_ring {
	uint32_t head __attribute__((aligned(64)));
	uint32_t tail __attribute__((aligned(64)));
	struct frame_slot slot[VNIC_RING];
};

struct rtn_vnic {
	struct rtn_station *s; /* its clock, eventfd, MAC and counters */
	int tap_fd;
	int mode;		   /* RTN_VNIC_BATCHED or RTN_VNIC_PER_PACKET */
	uint32_t slot;		   /* TDMA: the slot its frames go in */
	struct wire_ring *to_wire; /* pump -> RT: encapsulated wire frames, built in place */
	struct frame_ring *to_tap; /* RT -> pump: decapsulated received frames */
	struct tap_loan *loan;	   /* to_tap's slots: where each frame's bytes are */
	uint32_t reclaimed;	   /* RT thread: to_tap's slots up to here have no loan left */
	int pump_efd;		   /* the RT thread (or stop) wakes the pump */
	pthread_t pump;
	uint64_t pump_cpus; /* where the pump may run, a wake-board mask (rtn_wakeboard.h) */
	int pump_on;
	volatile int stop;
	int tap_dead; /* the TAP went away: stop touching it */
	/* the pump sleeps (the RT thread wakes it through pump_efd), waiting for room */
	int pump_asleep, pump_wants_room;
	/* batched: the pump runs on its period (a flow), not on events */
	int pump_heavy;
	uint32_t moved_avg;    /* frames moved per period, averaged (rtn_vnic_moderation.h) */
	int64_t period_at;     /* the pump's current period started then (CLOCK_MONOTONIC) */
	uint32_t period_moved; /* frames it moved both ways in it */
	/* the RT thread wants a kick when frames are ready (NoMAC with room) */
	int rt_wants_kick;
	uint64_t in_place_seen; /* RT thread: the socket's in-place sends counted so far */
	/*
	 * IFF_VNET_HDR: TAP reads are super-packets cut here into wire frames,
	 * TAP writes are merged segments gathered from the ring.  Both are the
	 * pump's (or a harness's that stopped it).
	 */
	int vnet;
	uint8_t *gso_buf;
	struct rtn_gso_seg gso; /* the super-packet being cut, kept across rounds */
	/* how the next super-packet is read into the ring's frames (as the last was cut) */
	uint32_t lay_hdr_len, lay_mss;
	struct rtn_gro gro;
};

/* ---- ring helpers -------------------------------------------------------- */

static inline void fr_commit(struct frame_ring *r)
{
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
}

/* The frame @p k behind the tail (the consumer looks ahead without taking), or NULL. */
static inline struct frame_slot *fr_peek_at(struct frame_ring *r, uint32_t k)
{
	if (__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - r->tail <= k)
		return NULL;
	return &r->slot[(r->tail + k) % VNIC_RING];
}

static inline struct frame_slot *fr_peek(struct frame_ring *r)
{
	return fr_peek_at(r, 0);
}

/* Give @p n frames back to the producer. */
static inline void fr_release_n(struct frame_ring *r, uint32_t n)
{
	__atomic_store_n(&r->tail, r->tail + n, __ATOMIC_RELEASE);
}

static inline void fr_release(struct frame_ring *r)
{
	fr_release_n(r, 1);
}

/* Frames in @p r, as either end sees it. */
static inline uint32_t fr_depth(struct frame_ring *r)
{
	return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}

/*
 * The TAP is gone (deleted: poll says POLLERR, reads and writes EBADFD):
 * count it once and stop touching the fd, since polling a dead TAP returns
 * POLLERR at once, which would make the pump spin.
 */
static inline void tap_gone(struct rtn_vnic *v)
{
	if (!__atomic_exchange_n(&v->tap_dead, 1, __ATOMIC_ACQ_REL))
		VSTAT_ADD(v, tap_errors, 1);
}

/*
 * A read or write that failed with @p err.  Only a TAP that is gone stops
 * the pump's use of it; one that is merely down refuses writes with EIO and
 * has nothing to read: those frames are dropped and counted by the caller,
 * and the TAP carries traffic again once it is up.
 */
static inline void tap_error(struct rtn_vnic *v, int err)
{
	if (err == EBADFD || err == EBADF || err == ENODEV || err == ENXIO)
		tap_gone(v);
}

static inline int tap_usable(const struct rtn_vnic *v)
{
	return !__atomic_load_n(&v->tap_dead, __ATOMIC_ACQUIRE);
}

/* Wake the pump if it sleeps (it looks at both rings before it sleeps again). */
static inline void pump_kick(struct rtn_vnic *v)
{
	if (__atomic_exchange_n(&v->pump_asleep, 0, __ATOMIC_SEQ_CST)) {
		efd_signal(v->pump_efd);
		VSTAT_ADD(v, pump_kicks, 1);
	}
}

/* The ring's depth at which a pump that waits for room is woken to read the TAP again. */
static inline uint32_t tx_refill_at(const struct rtn_vnic *v)
{
	return v->mode == RTN_VNIC_PER_PACKET ? 0 : VNIC_TX_LOW;
}

/* rtn_vnic_tx.c: the TAP's packets into the ring to the wire (the pump); the frames queued */
uint32_t rtn_vnic_fill(struct rtn_vnic *v, uint32_t max_reads);
/* rtn_vnic_rx.c: up to @p max received frames written to the TAP (the pump); how many taken */
uint32_t rtn_vnic_write_tap(struct rtn_vnic *v, uint32_t max);

#endif
