/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_capture.h
 * @brief Capture inside the stack: the RT thread mirrors every frame it
 *        hands to the socket and every frame it receives, with the stack's
 *        own stamps, into a single-producer/single-consumer ring.
 *
 * A packet tap on the device sees nothing of what AF_XDP sends and
 * receives on a real NIC; the RT thread sees all of it.  The producer (the
 * RT thread) never blocks and never allocates: a full ring costs the frame
 * and one drop count.  The consumer (the control thread) copies records
 * out.  Entries are fixed-size: a header and the first snaplen bytes.
 *
 * Times are the segment's global time (the station's local clock plus the
 * TDMA clock offset; the local clock without TDMA), each with the same
 * instant on the host's CLOCK_MONOTONIC, which a capture file converts to
 * wall-clock time.
 */
#ifndef RTN_CAPTURE_H
#define RTN_CAPTURE_H

#include <stdint.h>

#define RTN_CAP_TX 1
#define RTN_CAP_RX 2

/* rtn_cap_hdr.flags */
#define RTN_CAP_F_SCHED	    1 /* sched_ns is the slot (or cycle) time it was scheduled for */
#define RTN_CAP_F_XDP_STAMP 2 /* RX: stamp_ns came from the XDP program, not the poll time */

#define RTN_CAP_SNAP_MIN  64
#define RTN_CAP_SNAP_MAX  2048 /* a whole Ethernet frame, VLAN tag included */
#define RTN_CAP_DEPTH_MAX 65536

struct rtn_cap_hdr {
	uint32_t dir;	   /* RTN_CAP_TX or RTN_CAP_RX */
	uint32_t flags;	   /* RTN_CAP_F_* */
	uint32_t orig_len; /* the frame's length */
	uint32_t cap_len;  /* bytes kept: at most the ring's snaplen */
	int64_t sched_ns;  /* TX under TDMA: the slot occurrence (Sync: cycle) start */
	int64_t stamp_ns;  /* TX hand-over to the socket, or RX time */
	int64_t os_ns;	   /* stamp_ns's instant on CLOCK_MONOTONIC */
};

/** A record as the consumer reads it. */
struct rtn_cap_rec {
	struct rtn_cap_hdr h;
	uint8_t data[RTN_CAP_SNAP_MAX];
};

struct rtn_capture;

/**
 * A ring of @p depth (a power of two, 2..RTN_CAP_DEPTH_MAX) entries keeping
 * @p snaplen (RTN_CAP_SNAP_MIN..RTN_CAP_SNAP_MAX) bytes of each frame.
 */
int rtn_capture_create(uint32_t snaplen, uint32_t depth, struct rtn_capture **out);
/** Accepts NULL.  The producer must have let go of the ring. */
void rtn_capture_destroy(struct rtn_capture *c);

/**
 * Producer: record @p frame with the header fields of @p h (its orig_len and
 * cap_len are set here).  @p stamp_off >= 0: the socket wrote @p stamp (big
 * endian) at that offset of the frame on the wire, and so does the copy.
 * Returns 0, or -1 when the ring was full (counted as a drop).
 */
int rtn_capture_put(struct rtn_capture *c, const struct rtn_cap_hdr *h, const uint8_t *frame,
		    uint32_t len, int32_t stamp_off, uint64_t stamp);

/** Consumer: move up to @p max of the oldest records into @p out; returns how many. */
int rtn_capture_read(struct rtn_capture *c, struct rtn_cap_rec *out, uint32_t max);

/** Frames recorded and frames dropped (ring full) so far. */
void rtn_capture_counts(const struct rtn_capture *c, uint64_t *frames, uint64_t *drops);

#endif
