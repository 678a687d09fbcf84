/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_wire_priv.h
 * @brief The VNIC's ring to the wire: the pump builds each frame in place,
 *        in a UMEM frame the station's socket lends (rtn_xsk_lent_area), and
 *        hands the RT thread a descriptor; the RT thread sends the frame
 *        where it lies and gives the slot back once the kernel is done with
 *        it.  So the frame is written once by the pump, and neither copied
 *        nor touched by the RT thread.  Not part of the API.
 *
 * Three indices, each moved by one thread: head (the pump: frames built),
 * sent (the RT thread: frames handed to the discipline) and tail (the RT
 * thread: slots given back to the pump).  A slot between tail and sent is
 * in flight when its frame went out in place: it is given back when the
 * socket counts its completion (completions come in the order the frames
 * were sent); otherwise (copied, dropped, queued by the discipline) it is
 * given back at once, in ring order.
 *
 * Where the socket lends no frames (opened without lend_frames), the frames
 * live in the VNIC's own memory and every send copies them.
 *
 * Each slot keeps when the pump queued its frame (queued_at, the pump's), so
 * the pump can see how long the oldest frame still in the ring has waited
 * (wire_oldest_wait) and stop a standing queue from growing there.
 */
#ifndef RTN_VNIC_WIRE_PRIV_H
#define RTN_VNIC_WIRE_PRIV_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "rtn_tdma.h"
#include "rtn_vnic_priv.h"
#include "rtn_xsk.h"

/* frames between the pump and the RT thread, each way: a period's at 1 Gbit/s and more */
#define VNIC_RING RTN_VNIC_TX_FRAMES
/* the bytes a frame of the ring may have: a TDMA frame's */
#define VNIC_FRAME_MAX RTN_TDMA_FRAME_MAX

struct wire_slot {
	uint32_t len;
	uint32_t in_flight; /* sent in place, not yet completed (the RT thread's) */
};

struct wire_ring {
	uint32_t head __attribute__((aligned(64)));
	uint32_t tail __attribute__((aligned(64)));
	uint32_t sent;	    /* the RT thread's */
	uint64_t lent_seen; /* the socket's in-place completions up to here are accounted for */
	uint8_t *base;	    /* slot i's frame is at base + (i % VNIC_RING) * stride */
	size_t stride;
	uint8_t *own; /* the frames, when the socket lends none */
	struct wire_slot slot[VNIC_RING];
	int64_t queued_at[VNIC_RING]; /* the pump's: when slot i's frame was queued (rtn_now) */
};

/*
 * The ring's frames in @p x's lent area when it lends VNIC_RING frames of
 * a TDMA frame's size or more, else in memory of its own.  0, or -ENOMEM.
 */
static inline int wire_ring_place(struct wire_ring *r, struct rtn_xsk *x)
{
	uint32_t n = 0;
	uint8_t *lent = x ? rtn_xsk_lent_area(x, &n) : NULL;

	if (lent && n >= VNIC_RING && rtn_xsk_frame_size(x) >= VNIC_FRAME_MAX) {
		r->base = lent;
		r->stride = rtn_xsk_frame_size(x);
		return 0;
	}
	r->own = malloc((size_t)VNIC_RING * VNIC_FRAME_MAX);
	r->base = r->own;
	r->stride = VNIC_FRAME_MAX;
	return r->own ? 0 : -ENOMEM;
}

static inline uint8_t *wire_frame(const struct wire_ring *r, uint32_t i)
{
	return r->base + (size_t)(i % VNIC_RING) * r->stride;
}

/* Empty, counting from the socket's in-place sends so far (@p lent_sent). */
static inline void wire_ring_reset(struct wire_ring *r, uint64_t lent_sent)
{
	r->head = r->tail = r->sent = 0;
	r->lent_seen = lent_sent;
}

/* Frames in the ring, in flight included, as either end sees it. */
static inline uint32_t wire_depth(struct wire_ring *r)
{
	return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}

/* ---- the pump ---- */

/* Where the next frame is built (VNIC_FRAME_MAX bytes), or NULL when the ring is full. */
static inline uint8_t *wire_prod(struct wire_ring *r)
{
	if (r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= VNIC_RING)
		return NULL;
	return wire_frame(r, r->head);
}

/* The frame at head, @p len bytes, queued at @p at (rtn_now), to the RT thread. */
static inline void wire_commit(struct wire_ring *r, uint32_t len, int64_t at)
{
	r->slot[r->head % VNIC_RING] = (struct wire_slot){ .len = len };
	r->queued_at[r->head % VNIC_RING] = at;
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
}

/*
 * How long, at @p now, the oldest frame the ring still holds has waited
 * (0 when it holds none).  The RT thread may give that slot back meanwhile:
 * the time is taken again until the tail stood still across the read.
 */
static inline int64_t wire_oldest_wait(struct wire_ring *r, int64_t now)
{
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE), again;
	int64_t at;

	for (;;) {
		if (tail == r->head)
			return 0;
		at = r->queued_at[tail % VNIC_RING];
		again = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (again == tail)
			return now - at;
		tail = again;
	}
}

/* ---- the RT thread ---- */

/* The next frame to hand over (its slot in *@p w), or NULL. */
static inline uint8_t *wire_peek(struct wire_ring *r, struct wire_slot **w)
{
	if (__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == r->sent)
		return NULL;
	*w = &r->slot[r->sent % VNIC_RING];
	return wire_frame(r, r->sent);
}

/* The frame wire_peek() gave was handed over: @p in_flight when it went out in place. */
static inline void wire_handed(struct wire_ring *r, int in_flight)
{
	r->slot[r->sent % VNIC_RING].in_flight = (uint32_t)in_flight;
	r->sent++;
}

/*
 * Give back the slots the pump may build in again: in ring order, each
 * in-flight one once the socket counted it done (@p lent_done: its
 * in-place completions so far).  Returns how many.
 */
static inline uint32_t wire_retire(struct wire_ring *r, uint64_t lent_done)
{
	int64_t done = (int64_t)(lent_done - r->lent_seen);
	uint32_t tail = r->tail, n = 0;

	for (; tail != r->sent; tail++, n++) {
		if (r->slot[tail % VNIC_RING].in_flight) {
			if (done <= 0)
				break;
			done--;
			r->lent_seen++;
		}
	}
	if (n)
		__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
	return n;
}

#endif
