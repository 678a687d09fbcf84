/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_queue.c
 * @brief The TDMA engine's slot queues: the slot id -> queue maps, the
 *        buffer pool, enqueueing (from any producer on the RT thread) and
 *        what the station asks about a slot's queue.
 */
#include <errno.h>
#include <string.h>
#include "rtn_tdma.h"
#include "rtn_tdma_state_priv.h"
#include "rtn_tdma_proto_inline.h"

/* Rebuild the id -> slot and id -> queue maps from e->cfg. */
void rtn_tdma_index_slots(struct rtn_tdma *e)
{
	uint32_t i;

	for (i = 0; i < RTN_TDMA_MAX_SLOTS; i++) {
		e->slot_idx[i] = -1;
		e->queue_of[i] = -1;
	}
	e->cal_slot = -1;
	for (i = 0; i < e->cfg.n_slots; i++) {
		const struct rtn_tdma_slot_cfg *s = &e->cfg.slots[i];

		e->slot_idx[s->id] = i;
		e->queue_of[s->id] = s->joint >= 0 ? s->joint : s->id;
		if (e->cal_slot < 0 || s->id < e->cal_slot)
			e->cal_slot = s->id;
	}
	/* RTnet: slot 1 (the NRT slot) falls back to slot 0 */
	if (e->queue_of[1] < 0 && e->queue_of[0] >= 0)
		e->queue_of[1] = e->queue_of[0];
	for (i = 0; i < RTN_TDMA_MAX_SLOTS; i++)
		e->st.slot[i].id = e->slot_idx[i] >= 0 ? (int32_t)i : -1;
}

/* ---- buffers and queues ------------------------------------------------- */

void rtn_tdma_pool_init(struct rtn_tdma *e)
{
	uint32_t i, p;

	for (i = 0; i < RTN_TDMA_POOL; i++)
		e->pool[i].next = i + 1 < RTN_TDMA_POOL ? i + 1 : NIL;
	e->free_head = 0;
	for (i = 0; i < RTN_TDMA_MAX_SLOTS; i++) {
		for (p = 0; p < RTN_TDMA_PRIOS; p++)
			e->q[i].head[p] = e->q[i].tail[p] = NIL;
		e->q[i].nonempty = 0;
		e->q[i].depth = 0;
	}
}

int rtn_tdma_enqueue(struct rtn_tdma *e, uint32_t slot_id, uint32_t prio, const uint8_t *frame,
		     uint32_t len, int32_t stamp_off, int64_t expires)
{
	struct queue *q;
	const struct rtn_tdma_slot_cfg *s;
	uint16_t b;
	int qi, si, rc = 0;

	stats_begin(e);
	if (slot_id >= RTN_TDMA_MAX_SLOTS || (qi = e->queue_of[slot_id]) < 0) {
		e->st.no_slot++;
		rc = -ENOENT;
		goto out;
	}
	si = e->slot_idx[slot_id] >= 0 ? e->slot_idx[slot_id] : e->slot_idx[qi];
	s = &e->cfg.slots[si];
	if (len > s->size + ETH_HLEN_RTN || len > RTN_TDMA_FRAME_MAX || len < ETH_HLEN_RTN) {
		e->st.too_big++;
		rc = -EMSGSIZE;
		goto out;
	}
	q = &e->q[qi];
	if (prio >= RTN_TDMA_PRIOS)
		prio = RTN_TDMA_PRIOS - 1;
	if (q->depth >= RTN_TDMA_QUEUE_MAX || e->free_head == NIL) {
		e->st.queue_drops++;
		rc = -ENOBUFS;
		goto out;
	}
	b = e->free_head;
	e->free_head = e->pool[b].next;
	memcpy(e->pool[b].data, frame, len);
	e->pool[b].len = len;
	e->pool[b].expires = expires;
	e->pool[b].next = NIL;
	e->pool[b].stamp_off = stamp_off >= 0 && stamp_off + 8 <= (int32_t)len ? stamp_off : -1;
	if (q->tail[prio] == NIL)
		q->head[prio] = b;
	else
		e->pool[q->tail[prio]].next = b;
	q->tail[prio] = b;
	q->nonempty |= 1u << prio;
	q->depth++;
out:
	stats_end(e);
	return rc;
}

uint32_t rtn_tdma_queue_depth(const struct rtn_tdma *e, uint32_t slot_id)
{
	if (slot_id >= RTN_TDMA_MAX_SLOTS || e->queue_of[slot_id] < 0)
		return 0;
	return e->q[e->queue_of[slot_id]].depth;
}

uint32_t rtn_tdma_slot_size(const struct rtn_tdma *e, uint32_t slot_id)
{
	int si;

	if (slot_id >= RTN_TDMA_MAX_SLOTS || e->queue_of[slot_id] < 0)
		return 0;
	si = e->slot_idx[slot_id] >= 0 ? e->slot_idx[slot_id] : e->slot_idx[e->queue_of[slot_id]];
	return si >= 0 ? e->cfg.slots[si].size : 0;
}

int rtn_tdma_shares_queue(const struct rtn_tdma *e, uint32_t a, uint32_t b)
{
	return a < RTN_TDMA_MAX_SLOTS && b < RTN_TDMA_MAX_SLOTS && e->queue_of[a] >= 0 &&
	       e->queue_of[a] == e->queue_of[b];
}
