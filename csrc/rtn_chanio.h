/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_chanio.h
 * @brief Application side of a channel's rings (rtn_chan.h) as plain calls,
 *        for the daemon's own services (the echo behind rtnetctl ping).
 */
#ifndef RTN_CHANIO_H
#define RTN_CHANIO_H

#include <stdint.h>

struct rtn_chan_shm;
struct rtn_msg;

/**
 * Queue a whole Ethernet frame on the channel's TX ring; the station sends
 * it in the channel's slot.  @kickfd is written when the station asks for it
 * (NoMAC).  Returns 0, -ENOBUFS when the ring is full, -EINVAL if too long.
 */
int rtn_chanio_send(struct rtn_chan_shm *c, const uint8_t *frame, uint32_t len,
		    uint32_t seq, int64_t sched_ns, int kickfd);

/**
 * Copy the oldest received message to @out, waiting up to @timeout_ms (futex
 * on the RX head, woken by the RT thread).  Returns 1 with a message, 0 on
 * timeout, -EPIPE when the station closed the channel.
 */
int rtn_chanio_recv(struct rtn_chan_shm *c, struct rtn_msg *out, int timeout_ms);

#endif
