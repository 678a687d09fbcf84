// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_frer.c
 * @brief IEEE 802.1CB R-TAG, sequence generation and vector recovery (see rtn_frer.h).
 */
#include <errno.h>
#include <string.h>
#include "rtn_frer.h"

#define SEQ_SPACE    65536u
#define MAX_RESET_MS 3600000u
#define RING_MASK    (RTN_FRER_HISTORY_MAX - 1) /* RTN_FRER_HISTORY_MAX divides SEQ_SPACE */

_Static_assert((RTN_FRER_HISTORY_MAX & RING_MASK) == 0 && SEQ_SPACE % RTN_FRER_HISTORY_MAX == 0,
	       "the history ring must divide the sequence space");

void rtn_frer_seqgen_init(struct rtn_frer_seqgen *g)
{
	g->next = 0;
}

uint16_t rtn_frer_seqgen_next(struct rtn_frer_seqgen *g)
{
	uint16_t seq = (uint16_t)g->next;

	g->next = (g->next + 1) % SEQ_SPACE;
	return seq;
}

/* -- the history ring ----------------------------------------------------- */

static int seen(const struct rtn_frer_rcvy *r, uint32_t seq)
{
	uint32_t bit = seq & RING_MASK;

	return (r->history[bit / 64] >> (bit % 64)) & 1;
}

static void mark(struct rtn_frer_rcvy *r, uint32_t seq, int on)
{
	uint32_t bit = seq & RING_MASK;
	uint64_t m = (uint64_t)1 << (bit % 64);

	if (on)
		r->history[bit / 64] |= m;
	else
		r->history[bit / 64] &= ~m;
}

/*
 * ShiftSequenceHistory: RecovSeqNum moves @p delta (1..history_len - 1) ahead.
 * Each sequence number leaving the window at the old end is lost if it was
 * never seen; each one entering at the new end starts unseen.  With a full
 * ring the two share a bit, so the leaving one is read before it is cleared.
 */
static void shift_history(struct rtn_frer_rcvy *r, uint32_t delta)
{
	uint32_t k, oldest = (r->recov_seq + SEQ_SPACE - r->history_len + 1) % SEQ_SPACE;

	for (k = 0; k < delta; k++) {
		if (r->unowed)
			r->unowed--; /* from before the stream's first packet */
		else if (!seen(r, oldest + k))
			r->lost++;
		mark(r, r->recov_seq + 1 + k, 0);
	}
	r->recov_seq = (r->recov_seq + delta) % SEQ_SPACE;
}

/* -- recovery ------------------------------------------------------------- */

/* SequenceRecoveryReset (7.4.3.3); @p begin: the BEGIN event, not the timer. */
static void recovery_reset(struct rtn_frer_rcvy *r, int begin)
{
	r->take_any = 1;
	r->begin = begin;
	r->recov_seq = 0;
	r->unowed = 0;
	memset(r->history, 0, sizeof(r->history));
	r->resets++;
}

int rtn_frer_rcvy_init(struct rtn_frer_rcvy *r, uint32_t history_len, uint32_t reset_ms,
		       int take_no_sequence)
{
	if (history_len < RTN_FRER_HISTORY_MIN || history_len > RTN_FRER_HISTORY_MAX ||
	    reset_ms > MAX_RESET_MS)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->history_len = history_len;
	r->reset_ns = (uint64_t)reset_ms * 1000000u;
	r->take_no_sequence = !!take_no_sequence;
	recovery_reset(r, 1);
	return 0;
}

int rtn_frer_tick(struct rtn_frer_rcvy *r, int64_t now_ns)
{
	/* RemainingTicks counts down from the last pass; once TakeAny is set it
	 * stays at zero until a packet passes again, so a silence resets once.
	 * Unsigned arithmetic: any two int64 times, even a clock going back. */
	if (r->take_any || !r->reset_ns || now_ns <= r->last_pass_ns ||
	    (uint64_t)now_ns - (uint64_t)r->last_pass_ns < r->reset_ns)
		return 0;
	recovery_reset(r, 0);
	return 1;
}

static int pass(struct rtn_frer_rcvy *r, struct rtn_frer_port_counters *pc, int64_t now_ns)
{
	pc->passed++;
	r->total.passed++;
	r->last_pass_ns = now_ns;
	return 1;
}

static int discard(struct rtn_frer_rcvy *r, struct rtn_frer_port_counters *pc)
{
	pc->discarded++;
	r->total.discarded++;
	return 0;
}

static void out_of_order(struct rtn_frer_rcvy *r, struct rtn_frer_port_counters *pc)
{
	pc->out_of_order++;
	r->total.out_of_order++;
}

/*
 * TakeAny accepts @p seq.  What came before it (see rtn_frer.h): after the
 * BEGIN event nothing of the stream was passed yet, so an older copy may
 * still pass, and what leaves the history unseen is not counted lost; after
 * the reset timer an older copy may be one that was passed before, so the
 * history counts as seen.
 */
static void take(struct rtn_frer_rcvy *r, uint32_t seq)
{
	if (r->begin) {
		memset(r->history, 0, sizeof(r->history));
		r->unowed = r->history_len - 1;
	} else {
		memset(r->history, 0xff, sizeof(r->history));
	}
	r->recov_seq = seq;
	mark(r, seq, 1);
	r->take_any = 0;
	r->begin = 0;
}

int rtn_frer_recover(struct rtn_frer_rcvy *r, uint32_t port, int32_t seq, int64_t now_ns)
{
	struct rtn_frer_port_counters *pc;
	int32_t delta;

	if (port >= RTN_FRER_MAX_PORTS || seq < RTN_RTAG_NONE || seq >= (int32_t)SEQ_SPACE)
		return -EINVAL;
	pc = &r->port[port];
	rtn_frer_tick(r, now_ns);

	if (seq == RTN_RTAG_NONE) {
		pc->tagless++;
		r->total.tagless++;
		return r->take_no_sequence ? pass(r, pc, now_ns) : discard(r, pc);
	}
	if (r->take_any) {
		take(r, (uint32_t)seq);
		return pass(r, pc, now_ns);
	}
	delta = (int16_t)(uint16_t)((uint32_t)seq - r->recov_seq);
	if (delta >= (int32_t)r->history_len || delta <= -(int32_t)r->history_len) {
		pc->rogue++;
		r->total.rogue++;
		return discard(r, pc);
	}
	if (delta <= 0) {
		if (seen(r, (uint32_t)seq))
			return discard(r, pc);
		mark(r, (uint32_t)seq, 1);
		out_of_order(r, pc);
		return pass(r, pc, now_ns);
	}
	if (delta != 1)
		out_of_order(r, pc);
	shift_history(r, (uint32_t)delta);
	mark(r, (uint32_t)seq, 1);
	return pass(r, pc, now_ns);
}

/* -- the R-TAG ------------------------------------------------------------ */

#define MACS_LEN 12 /* destination and source: the tag goes right after them */

int rtn_rtag_insert(uint8_t *frame, uint32_t cap, uint32_t len, uint16_t seq)
{
	if (len < RTN_RTAG_ETH_HLEN || len > cap)
		return -EINVAL;
	if (cap - len < RTN_RTAG_LEN)
		return -ENOSPC;
	memmove(frame + MACS_LEN + RTN_RTAG_LEN, frame + MACS_LEN, len - MACS_LEN);
	frame[MACS_LEN + 0] = RTN_RTAG_ETHERTYPE >> 8;
	frame[MACS_LEN + 1] = RTN_RTAG_ETHERTYPE & 0xff;
	frame[MACS_LEN + 2] = 0; /* reserved */
	frame[MACS_LEN + 3] = 0;
	frame[MACS_LEN + 4] = seq >> 8;
	frame[MACS_LEN + 5] = seq & 0xff;
	return (int)(len + RTN_RTAG_LEN);
}

int rtn_rtag_strip(uint8_t *frame, uint32_t len, int32_t *seq)
{
	*seq = RTN_RTAG_NONE;
	if (len < RTN_RTAG_ETH_HLEN)
		return -EINVAL;
	if ((frame[MACS_LEN] << 8 | frame[MACS_LEN + 1]) != RTN_RTAG_ETHERTYPE)
		return (int)len;
	/* the tag and the encapsulated EtherType after it */
	if (len < RTN_RTAG_ETH_HLEN + RTN_RTAG_LEN)
		return -EBADMSG;
	*seq = frame[MACS_LEN + 4] << 8 | frame[MACS_LEN + 5];
	memmove(frame + MACS_LEN, frame + MACS_LEN + RTN_RTAG_LEN, len - MACS_LEN - RTN_RTAG_LEN);
	return (int)(len - RTN_RTAG_LEN);
}
