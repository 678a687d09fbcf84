/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_disc_priv.h
 * @brief A station's discipline as the station sees it: an ops table and a
 *        private pointer (rtn_station.c attaches them).  Not part of the API.
 */
#ifndef RTN_STATION_DISC_PRIV_H
#define RTN_STATION_DISC_PRIV_H

#include <stdint.h>
#include "rtn_tdma.h"
#include "rtn_tdma_proto_inline.h"

struct rtn_station;

/* ---- disciplines ---------------------------------------------------------- */

/*
 * What the station asks of the attached discipline (RTN_DISC_*), through its
 * private pointer.  The station core never branches on the discipline
 * itself: it calls these.
 */
struct rtn_disc_ops {
	int id; /* RTN_DISC_*, for the statistics */
	/* on the RT thread, when it becomes (stops being) the station's discipline */
	void (*attach)(void *priv);
	void (*detach)(void *priv);
	/* local time of the next deadline (INT64_MAX: none); NoMAC also sends what is due */
	int64_t (*next_event)(void *priv);
	/* whether a frame may leave at that deadline (wake_early serves only those); NULL: no */
	int (*next_sends)(const void *priv);
	/* the work of one wake-up, which came @p woke_late after the deadline it waited for */
	void (*run)(void *priv, int64_t woke_late);
	/* queue a frame for @p slot at @p prio (where the discipline has slots); < 0 refused */
	int (*queue)(void *priv, uint32_t slot, uint32_t prio, const uint8_t *frame, uint32_t len);
	/* a received RTmac frame: 1 a tunnel frame for the VNIC, 0 not ours, < 0 malformed */
	int (*rx_rtmac)(void *priv, const uint8_t *frame, uint32_t len, int64_t rx);
	/* whether a frame offered between wake-ups is taken at once (NoMAC's FIFO has room) */
	int (*has_room)(const void *priv);
	/* the largest frame @p slot carries (TDMA: the slot's size); NULL or 0: no limit of its own */
	uint32_t (*slot_frame)(const void *priv, uint32_t slot);
	int kick_senders;   /* senders kick the RT thread: no slot picks their messages up */
	int paced_rx;	    /* received frames may wait for the next scheduled wake-up */
	int rate_generator; /* the rate generator's frames have a way out (rtn_probe.c) */
};

extern const struct rtn_disc_ops rtn_disc_none_ops, rtn_disc_tdma_ops, rtn_disc_nomac_ops;

/* The TDMA engine's port for station @p s (rtn_station_tdma.c). */
struct rtn_tdma_port rtn_station_tdma_port(struct rtn_station *s);

static inline const struct rtn_disc_ops *disc_ops(const struct rtn_station *s)
{
	return s->ops;
}

/* An RTmac frame without a discipline that reads it: only a tunnel frame is ours. */
static inline int rtmac_tunnel_only(const uint8_t *frame, uint32_t len)
{
	return len >= 18 && (frame[17] & RTMAC_FLAG_TUNNEL) ? 1 : 0;
}

#endif
