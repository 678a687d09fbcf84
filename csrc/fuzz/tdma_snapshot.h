/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file tdma_snapshot.h
 * @brief Put a TDMA engine back into a saved state between fuzz inputs.
 *
 * Every input must start from the same engine state, or a crash found by
 * one input would not reproduce on its own.  Creating engines per input is
 * too slow (an engine owns 1.5 MB of frame pool; creating three costs ~4 ms
 * under AddressSanitizer), so a harness creates them once, saves each, and
 * restores it before every input: everything but the pool's frame bytes,
 * which are always written (enqueue) before they are read.  The snapshot
 * relies on the engine's internals (struct rtn_tdma in rtn_tdma_state_priv.h,
 * the free list's order), which is why it lives with the harnesses.
 */
#ifndef RTN_FUZZ_TDMA_SNAPSHOT_H
#define RTN_FUZZ_TDMA_SNAPSHOT_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_tdma_state_priv.h"
#include "fuzz_input.h"

/* A copy of @p e, which must hold no queued frames (every buffer free, as after rtn_tdma_start). */
FUZZ_UNTRACED static struct rtn_tdma *tdma_snapshot_save(const struct rtn_tdma *e)
{
	struct rtn_tdma *copy = malloc(sizeof(*copy));
	uint32_t n = 0;
	uint16_t b;

	for (b = e->free_head; b != NIL && n <= RTN_TDMA_POOL; b = e->pool[b].next)
		n++;
	if (!copy || n != RTN_TDMA_POOL)
		fuzz_fail("cannot save an engine with %u of %d buffers free", n, RTN_TDMA_POOL);
	memcpy(copy, e, sizeof(*copy));
	return copy;
}

/*
 * Buffers leave the free list at its head and go back to its head, so the
 * ones an input used are a prefix of the saved free list, each marked by a
 * length (a frame is at least 14 bytes; a never used buffer has 0): restore
 * that prefix and stop at the first untouched buffer, instead of walking
 * all 1024 buffers (a cache miss each) for every input.
 */
FUZZ_UNTRACED static void tdma_snapshot_restore(struct rtn_tdma *e, const struct rtn_tdma *saved)
{
	const size_t pool = offsetof(struct rtn_tdma, pool);
	const size_t after = pool + sizeof(e->pool);
	uint16_t b;

	memcpy(e, saved, pool);
	memcpy((uint8_t *)e + after, (const uint8_t *)saved + after, sizeof(*e) - after);
	for (b = saved->free_head; b != NIL && e->pool[b].len != saved->pool[b].len;
	     b = saved->pool[b].next) {
		e->pool[b].next = saved->pool[b].next;
		e->pool[b].len = saved->pool[b].len;
		e->pool[b].stamp_off = saved->pool[b].stamp_off;
	}
}

#endif
