/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_frer.h
 * @brief IEEE 802.1CB-2017 frame replication and elimination (FRER): the
 *        R-TAG, sequence generation and the vector recovery algorithm.
 *
 * R-TAG (802.1CB 7.8, as Wireshark's "ieee8021cb" dissector reads it): after
 * the two MAC addresses, EtherType 0xF1C1, 2 bytes reserved (sent as 0,
 * ignored on receive), the 16-bit sequence number, then the EtherType of
 * what the tag encapsulates.  Inserting a tag therefore pushes 6 bytes at
 * offset 12; the frame's own EtherType becomes the encapsulated one.  Tags
 * behind a VLAN tag are not looked for: our frames carry none.
 *
 * Sequence generation (7.4.1): a per-stream counter GenSeqNum, taken and
 * incremented modulo the sequence space (65536 for the R-TAG).
 *
 * Sequence recovery (7.4.3), vector algorithm (7.4.3.4), per stream:
 *   delta = sequence - RecovSeqNum, taken modulo 65536 into -32768..32767.
 *   TakeAny:                       pass, RecovSeqNum = sequence, TakeAny off.
 *   |delta| >= HistoryLength:      rogue: RoguePackets++, discard.
 *   delta <= 0, not in history:    mark it, OutOfOrderPackets++, pass.
 *   delta <= 0, in history:        a duplicate: discard.
 *   delta > 0:                     OutOfOrderPackets++ unless delta == 1;
 *                                  shift the history by delta, counting
 *                                  LostPackets for every sequence number
 *                                  that leaves it unseen; mark it; pass.
 *   every discard:                 DiscardedPackets++; every pass:
 *                                  PassedPackets++ and the reset timer
 *                                  (RemainingTicks) restarts.
 *   no tag:                        TaglessPackets++, passed only if
 *                                  frerSeqRcvyTakeNoSequence, else discarded.
 * SequenceRecoveryReset (7.4.3.3) runs at BEGIN (init) and when the reset
 * timer runs out, frerSeqRcvyResetMSec after the last passed packet: it sets
 * TakeAny and counts SeqRecoveryResets, so a fresh stream shows one reset.
 * Rogue packets do not restart the timer: a sender that restarted its
 * sequence is taken again once the timer runs out.
 *
 * One choice beyond the 2017 text, for the older part of the history when
 * TakeAny accepts a packet.  The 2017 text leaves it zero, so the first
 * shifts count every sequence number before the first accepted one as lost,
 * a known defect of the standard (IEEE 802.1 maintenance item 486).  Here,
 * after the BEGIN event (nothing of the stream was passed yet), those
 * sequence numbers are unseen but owed nothing: a copy of one still passes
 * (out of order), as when wire A lost a stream's first frame and wire B's
 * copy follows A's second, and leaving the history unseen they are not lost.
 * After the reset timer ran out they count as seen instead: such a copy may
 * be one whose twin passed before the silence, and it is discarded, so that
 * no duplicate is ever passed.
 *
 * Counters are kept per stream and, for what an arriving packet causes
 * (passed, discarded, out of order, rogue, tagless), per receiving port, so
 * a lossy wire shows in its port's counters.  Lost packets and resets belong
 * to the stream only.  Time is the caller's (ns, any monotonic clock), which
 * makes every decision deterministic; nothing allocates.
 */
#ifndef RTN_FRER_H
#define RTN_FRER_H

#include <stdint.h>

#define RTN_RTAG_ETHERTYPE	  0xF1C1
#define RTN_RTAG_LEN		  6    /* pushed after the MAC addresses */
#define RTN_RTAG_ETH_HLEN	  14   /* an Ethernet header: what a frame must at least have */
#define RTN_RTAG_NONE		  -1   /* the sequence of a frame without an R-TAG */
#define RTN_FRER_HISTORY_MIN	  2    /* frerSeqRcvyHistoryLength: 2 (the default) .. */
#define RTN_FRER_HISTORY_MAX	  1024 /* .. this */
#define RTN_FRER_DEFAULT_HISTORY  2    /* 802.1CB: the minimum and the default */
#define RTN_FRER_DEFAULT_RESET_MS 2000
#define RTN_FRER_MAX_PORTS	  2

/** What arriving packets did, on one port or on the whole stream (frerCpsSeqRcvy*). */
struct rtn_frer_port_counters {
	uint64_t passed;
	uint64_t discarded;
	uint64_t out_of_order;
	uint64_t rogue;
	uint64_t tagless;
};

struct rtn_frer_rcvy {
	/* configuration */
	uint32_t history_len;	   /* frerSeqRcvyHistoryLength */
	uint32_t take_no_sequence; /* frerSeqRcvyTakeNoSequence: pass untagged packets */
	uint64_t reset_ns;	   /* frerSeqRcvyResetMSec in ns; 0: no reset timer */
	/* state */
	int64_t last_pass_ns; /* the reset timer restarted here */
	uint32_t take_any;    /* TakeAny */
	uint32_t begin;	      /* TakeAny since the BEGIN event: nothing passed yet */
	uint32_t unowed;      /* the oldest this many in the history predate the stream */
	uint32_t recov_seq;   /* RecovSeqNum */
	/* SequenceHistory as a ring: bit (s % RTN_FRER_HISTORY_MAX) is sequence s,
	 * meaningful for RecovSeqNum - history_len < s <= RecovSeqNum */
	uint64_t history[RTN_FRER_HISTORY_MAX / 64];
	/* counters */
	struct rtn_frer_port_counters total;
	struct rtn_frer_port_counters port[RTN_FRER_MAX_PORTS];
	uint64_t lost;	 /* frerCpsSeqRcvyLostPackets */
	uint64_t resets; /* frerCpsSeqRcvyResets */
};

/** The sequence generation function of one stream (GenSeqNum). */
struct rtn_frer_seqgen {
	uint32_t next;
};

void rtn_frer_seqgen_init(struct rtn_frer_seqgen *g);
/** The sequence number for the next packet of the stream; wraps 65535 -> 0. */
uint16_t rtn_frer_seqgen_next(struct rtn_frer_seqgen *g);

/**
 * Configure and reset a stream's recovery: @p history_len
 * RTN_FRER_HISTORY_MIN..RTN_FRER_HISTORY_MAX, @p reset_ms 0 (no timer) .. 3600000.
 * Returns 0, or -EINVAL (nothing changed).
 */
int rtn_frer_rcvy_init(struct rtn_frer_rcvy *r, uint32_t history_len, uint32_t reset_ms,
		       int take_no_sequence);

/**
 * One packet of the stream arrived on @p port with sequence @p seq (0..65535,
 * or RTN_RTAG_NONE without a tag) at @p now_ns.  Runs the reset timer first.
 * Returns 1: pass it on, 0: discard it, -EINVAL: a bad port or sequence
 * (nothing counted).
 */
int rtn_frer_recover(struct rtn_frer_rcvy *r, uint32_t port, int32_t seq, int64_t now_ns);

/** The reset timer without a packet: returns 1 if it ran out now (the stream was reset). */
int rtn_frer_tick(struct rtn_frer_rcvy *r, int64_t now_ns);

/**
 * Push an R-TAG with @p seq after the MAC addresses of the @p len -byte frame
 * in @p frame, whose buffer holds @p cap bytes.  Returns the new length,
 * -EINVAL for a frame shorter than an Ethernet header, -ENOSPC without room.
 */
int rtn_rtag_insert(uint8_t *frame, uint32_t cap, uint32_t len, uint16_t seq);

/**
 * Remove the R-TAG of the @p len -byte frame in @p frame, if it has one.
 * Returns the new length and sets *@p seq to the tag's sequence number, or
 * to RTN_RTAG_NONE (frame unchanged) when there is no tag; -EINVAL for a
 * frame shorter than an Ethernet header, -EBADMSG for a truncated tag.
 */
int rtn_rtag_strip(uint8_t *frame, uint32_t len, int32_t *seq);

#endif
