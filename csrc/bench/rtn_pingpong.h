/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_pingpong.h
 * @brief Busy-polling ping-pong over AF_XDP and over kernel UDP, measured alike.
 *
 * Both clients stamp rtn_now() right before handing the frame to the kernel
 * and right after the echo is seen, spin on a non-blocking receive, and
 * carry a 32-bit big-endian sequence number at the start of the payload, so
 * the AF_XDP and UDP figures differ only by the path they take.
 */
#ifndef RTN_PINGPONG_H
#define RTN_PINGPONG_H

#include <stdint.h>
#include "rtn_hist.h"
#include "rtn_xsk.h"

struct rtn_pp_result {
	uint64_t sent;
	uint64_t received; /* echoes matched to their request */
	uint64_t lost;	   /* requests without an echo within the timeout */
	uint64_t stray;	   /* frames that were not the awaited echo */
};

/**
 * Send @p count + @p warmup copies of @p tmpl (an Ethernet frame, sequence
 * number written at byte 14) and wait for each echo up to @p timeout_us.
 * RTTs of the measured rounds go to @p rtts (-1 when lost) and, if not NULL,
 * to @p hist.  Returns the number of echoes received or a negative errno.
 */
int rtn_pp_xsk_client(struct rtn_xsk *x, const uint8_t *tmpl, uint32_t len, uint32_t count,
		      uint32_t warmup, int timeout_us, int64_t *rtts, struct rtn_hist *hist,
		      struct rtn_pp_result *res);
/** Echo @p count frames with source and destination MAC swapped; stop after @p idle_us. */
int rtn_pp_xsk_responder(struct rtn_xsk *x, uint32_t count, int idle_us, struct rtn_pp_result *res);
/** The same over a connected, non-blocking UDP socket; payload of @p len bytes. */
int rtn_pp_udp_client(int fd, uint32_t len, uint32_t count, uint32_t warmup, int timeout_us,
		      int64_t *rtts, struct rtn_hist *hist, struct rtn_pp_result *res);
int rtn_pp_udp_responder(int fd, uint32_t count, int idle_us, struct rtn_pp_result *res);

#endif
