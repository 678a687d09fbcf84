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
#include <string.h>
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
 * The slot @p i places after rtn_ring_prod_slot()'s, or NULL when fewer than
 * @p i + 1 are free: a chain of messages is filled, then committed at once.
 */
static inline struct rtn_msg *rtn_ring_prod_nth(struct rtn_ring *r, struct rtn_msg *msgs,
						uint32_t depth, uint32_t i)
{
	uint32_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

	if (head - tail >= depth || i >= depth - (head - tail))
		return NULL;
	return &msgs[(head + i) & (depth - 1)];
}

/** Whether @p n more messages fit (a chain is filled only once it fits whole). */
static inline int rtn_ring_prod_room(struct rtn_ring *r, uint32_t depth, uint32_t n)
{
	uint32_t used = __atomic_load_n(&r->head, __ATOMIC_RELAXED) -
			__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

	return used <= depth && n <= depth - used;
}

static inline void rtn_ring_prod_commit_n(struct rtn_ring *r, uint32_t n)
{
	__atomic_store_n(&r->head, __atomic_load_n(&r->head, __ATOMIC_RELAXED) + n,
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

static inline void rtn_ring_cons_release_n(struct rtn_ring *r, uint32_t n)
{
	__atomic_store_n(&r->tail, __atomic_load_n(&r->tail, __ATOMIC_RELAXED) + n,
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

/**
 * The datagram at the ring's tail: how many messages it takes (1, or a
 * chain of RTN_MSG_MORE pieces, rtn_chan.h), its first in *@p first and its
 * whole frame length in *@p total (for one message rtn_msg_len()'s, which
 * may claim more than the slot holds).  0 when the ring is empty; -1 for a broken chain (a
 * piece but the last shorter than a message holds, a longer last one, more
 * than RTN_CHAN_CHAIN_MAX bytes, or a chain running past what the ring
 * holds: the station publishes a chain at once), whose first message the
 * caller drops.
 */
static inline int rtn_ring_cons_chain(struct rtn_ring *r, struct rtn_msg *msgs, uint32_t depth,
				      struct rtn_msg **first, uint32_t *total)
{
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
	uint32_t avail = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - tail, sum, i;
	struct rtn_msg *m = &msgs[tail & (depth - 1)];

	if (!avail)
		return 0;
	*first = m;
	*total = rtn_msg_len(m); /* one message: its length as rtn_msg_len() says */
	if (!(__atomic_load_n(&m->flags, __ATOMIC_RELAXED) & RTN_MSG_MORE))
		return 1;
	if (avail > depth)
		avail = depth;
	for (i = 0, sum = 0; i < avail; i++) {
		uint32_t len;
		int more;

		m = &msgs[(tail + i) & (depth - 1)];
		len = rtn_msg_len(m);
		more = (__atomic_load_n(&m->flags, __ATOMIC_RELAXED) & RTN_MSG_MORE) != 0;
		if (len > RTN_CHAN_MSG_MAX || (more && len != RTN_CHAN_MSG_MAX))
			return -1;
		sum += len;
		if (sum > RTN_CHAN_CHAIN_MAX)
			return -1;
		if (!more) {
			*total = sum;
			return (int)i + 1;
		}
	}
	return -1;
}

/*
 * rtn_ring_cons_oldest()'s chain: a broken one's first message dropped and
 * counted in *@p bad, a ring's worth at most a call.
 */
static inline struct rtn_msg *rtn_ring_cons_oldest_chain(struct rtn_ring *r, struct rtn_msg *msgs,
							 uint32_t depth, uint32_t *pieces,
							 uint32_t *len, uint64_t *bad)
{
	struct rtn_msg *m;
	uint32_t i;
	int k;

	for (i = 0; i < depth; i++) {
		k = rtn_ring_cons_chain(r, msgs, depth, &m, len);
		if (k > 0) {
			*pieces = (uint32_t)k;
			return m;
		}
		if (k == 0)
			break;
		(*bad)++;
		rtn_ring_cons_release(r);
	}
	return NULL;
}

/**
 * The oldest datagram in an RX ring: its first message, how many messages
 * it takes in *@p pieces and its frame's length in *@p len; NULL when there
 * is none.  One message is the hot path; a chain is looked at by
 * rtn_ring_cons_oldest_chain(), which drops and counts a broken one.
 */
static inline struct rtn_msg *rtn_ring_cons_oldest(struct rtn_ring *r, struct rtn_msg *msgs,
						   uint32_t depth, uint32_t *pieces, uint32_t *len,
						   uint64_t *bad)
{
	struct rtn_msg *m = rtn_ring_cons_peek(r, msgs, depth);

	if (!m)
		return NULL;
	if (__atomic_load_n(&m->flags, __ATOMIC_RELAXED) & RTN_MSG_MORE)
		return rtn_ring_cons_oldest_chain(r, msgs, depth, pieces, len, bad);
	*pieces = 1;
	*len = rtn_msg_len(m);
	return m;
}

/**
 * Copy @p n bytes from @p off of the chain at the ring's tail (its pieces'
 * frames end to end, rtn_ring_cons_chain() having said it holds
 * off + n bytes) to @p dst.  Only ever inside the pieces' message slots,
 * whatever the other side writes meanwhile.
 */
static inline void rtn_ring_chain_copy(const struct rtn_ring *r, struct rtn_msg *msgs,
				       uint32_t depth, uint32_t off, void *dst, uint32_t n)
{
	uint32_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
	uint8_t *out = dst;

	while (n) {
		uint32_t at = off % RTN_CHAN_MSG_MAX, piece = RTN_CHAN_MSG_MAX - at;
		const struct rtn_msg *m = &msgs[(tail + off / RTN_CHAN_MSG_MAX) & (depth - 1)];

		if (piece > n)
			piece = n;
		memcpy(out, m->frame + at, piece);
		out += piece;
		off += piece;
		n -= piece;
	}
}

#endif
