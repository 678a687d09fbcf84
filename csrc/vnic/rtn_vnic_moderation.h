/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_moderation.h
 * @brief When the batched VNIC's pump runs on its period and when it is
 *        woken for every packet: its interrupt moderation, judged from a
 *        moving average of the frames it moved per period.
 *
 * A NIC moderates its interrupts from the traffic's recent rate, not from
 * the last interval's count.  The pump did the latter: a period of
 * VNIC_PUMP_PERIOD_NS that moved VNIC_HEAVY frames or more made the next one
 * periodic, one with fewer made it event-driven.  A TCP flow near that rate
 * (30 to 60 Mbit/s at 100 Mbit/s modelled) crossed it both ways every few
 * periods, and every event-driven period woke the pump for each receive round
 * and the RT thread for received frames: 0.185 switches a packet at 30
 * Mbit/s, 0.104 at 60; judged from this average, 0.141 and 0.063
 * (tools/bench_vnic_csw.py, three runs each, BENCHMARKS.md).  The average
 * over about four periods keeps such a flow periodic, and light traffic, a
 * few frames a period, event-driven, so it still goes at once.
 *
 * The same average sets how long a periodic round is (rtn_vnic_mod_round_ns):
 * a flow that moves many frames a period is woken twice a period, since a
 * round's delay, not the pump's wake-ups, then holds TCP back (the numbers
 * are over VNIC_BUSY in rtn_vnic_state_priv.h).
 */
#ifndef RTN_VNIC_MODERATION_H
#define RTN_VNIC_MODERATION_H

#include <stdint.h>

#define RTN_VNIC_MOD_ONE       16   /* the average is kept in sixteenths of a frame */
#define RTN_VNIC_MOD_MOVED_MAX 4096 /* frames of one period counted, at most */
#define RTN_VNIC_MOD_DECAY_MAX 16   /* more periods than this in one step: the average is 0 */

/**
 * The average after @p periods (1 or more) ended: the first of them moved
 * @p moved frames, the rest none (the pump slept through them).  Each period
 * moves the average a quarter of the way to its count; after more than
 * RTN_VNIC_MOD_DECAY_MAX periods in one step it is 0.
 */
uint32_t rtn_vnic_mod_update(uint32_t avg, uint32_t moved, int64_t periods);
/** Whether the pump runs on its period: the average is @p heavy frames or more. */
int rtn_vnic_mod_periodic(uint32_t avg, uint32_t heavy);
/**
 * How long a periodic round is: @p period_ns, or half of it while the
 * average is @p busy frames a period or more.
 */
int64_t rtn_vnic_mod_round_ns(uint32_t avg, uint32_t busy, int64_t period_ns);

#endif
