/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_flood.h
 * @brief The ceiling of the lab's path: a raw AF_XDP flood with nothing of
 *        the stack around it (no RT thread, no discipline, no link model).
 *
 * rtn_flood_tx() keeps the TX ring full with copies of one frame, @p batch
 * descriptors per submit and one sendto() per batch, and reaps the
 * completion ring; rtn_flood_rx() busy-polls the RX ring (recvfrom() when it
 * is empty, which also drives NAPI busy polling) and counts the frames of one
 * EtherType.  Both spin: run each on its own thread, and only on sockets
 * nobody else uses (they take the rings over).
 */
#ifndef RTN_FLOOD_H
#define RTN_FLOOD_H

#include <stdint.h>
#include "rtn_xsk.h"

#define RTN_FLOOD_BATCH_MAX 256

struct rtn_flood_result {
	uint64_t frames;  /* TX: completed by the kernel; RX: received of the EtherType */
	uint64_t other;	  /* RX: frames of other EtherTypes */
	uint64_t kicks;	  /* sendto() / recvfrom() calls */
	int64_t first_ns; /* TX: first submit; RX: first frame counted */
	int64_t last_ns;  /* TX: last completion; RX: last frame counted */
};

/**
 * Send copies of @p frame (14..frame size bytes) for @p duration_ns, at most
 * @p batch (1..RTN_FLOOD_BATCH_MAX) per submit and kick.  0 or -errno.
 */
int rtn_flood_tx(struct rtn_xsk *x, const uint8_t *frame, uint32_t len, uint32_t batch,
		 int64_t duration_ns, struct rtn_flood_result *out);

/**
 * Count received frames of @p ethertype until @p idle_ns pass without one
 * (after the first) or @p max_ns in all.  0 or -errno.
 */
int rtn_flood_rx(struct rtn_xsk *x, uint16_t ethertype, int64_t idle_ns, int64_t max_ns,
		 struct rtn_flood_result *out);

#endif
