/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_chan_inline.h
 * @brief The channel rings' operations (rtn_chan.h), inline for both sides:
 *        the application library and the station's RT thread.
 */
#ifndef RTN_CHAN_INLINE_H
#define RTN_CHAN_INLINE_H

#include <stddef.h>
#include <stdint.h>
#include "rtn_chan.h"

static inline uint64_t rtn_chan_shm_size(uint32_t depth)
{
	return sizeof(struct rtn_chan_shm) + 2ull * depth * sizeof(struct rtn_msg);
}

static inline struct rtn_msg *rtn_chan_tx_msgs(struct rtn_chan_shm *c)
{
	return (struct rtn_msg *)(c + 1);
}

/* RX messages follow the @p depth TX messages; depth from the caller's own memory. */
static inline struct rtn_msg *rtn_chan_rx_msgs(struct rtn_chan_shm *c, uint32_t depth)
{
	return rtn_chan_tx_msgs(c) + depth;
}

/* ---- SPSC ring operations (both sides) --------------------------------- */
/*
 * The other side of a ring can write anything into the shared page.  So
 * every operation takes the ring's depth from the caller's own memory (fixed
 * when the channel was opened, never read back from the page), indexes only
 * through depth - 1, and treats indexes that claim more than depth messages
 * as a broken ring: the producer sees it full, the consumer resynchronises
 * (rtn_ring_cons_check).  A message's length is read once (rtn_msg_len).
 */

/** Slot to fill, or NULL if full (the producer then counts a drop). */
static inline struct rtn_msg *rtn_ring_prod_slot(struct rtn_ring *r, struct rtn_msg *msgs,
						 uint32_t depth)
{
	uint32_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

	if (head - tail >= depth)
		return NULL;
	return &msgs[head & (depth - 1)];
}

static inline void rtn_ring_prod_commit(struct rtn_ring *r)
{
	__atomic_store_n(&r->head, __atomic_load_n(&r->head, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
}

/**
 * Consumer side: 0 when the ring's indexes are possible, else -1 after
 * dropping everything the producer claims (tail = head).
 */
static inline int rtn_ring_cons_check(struct rtn_ring *r, uint32_t depth)
{
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
	uint32_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);

	if (head - tail <= depth)
		return 0;
	__atomic_store_n(&r->tail, head, __ATOMIC_RELEASE);
	return -1;
}

/** Oldest message, or NULL if empty. */
static inline struct rtn_msg *rtn_ring_cons_peek(struct rtn_ring *r, struct rtn_msg *msgs,
						 uint32_t depth)
{
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
	uint32_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);

	if (head == tail)
		return NULL;
	return &msgs[tail & (depth - 1)];
}

static inline void rtn_ring_cons_release(struct rtn_ring *r)
{
	__atomic_store_n(&r->tail, __atomic_load_n(&r->tail, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
}

static inline uint32_t rtn_ring_count(const struct rtn_ring *r)
{
	return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}

/**
 * A message's frame length, read once (the peer may change it meanwhile);
 * RTN_CHAN_MSG_MAX + 1 when it claims more than a message slot holds.
 */
static inline uint32_t rtn_msg_len(const struct rtn_msg *m)
{
	uint32_t len = __atomic_load_n(&m->len, __ATOMIC_RELAXED);

	return len <= RTN_CHAN_MSG_MAX ? len : RTN_CHAN_MSG_MAX + 1;
}

#endif
