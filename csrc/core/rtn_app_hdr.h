/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_app_hdr.h
 * @brief The application header on the wire and the stage stamps it carries.
 *
 * Two forms share their first 24 bytes (struct rtn_app_hdr, rtn_chan.h):
 * - "RTNA": magic, seq, scheduled time, TX stamp; the payload follows
 *   (the station's probes send it);
 * - "RTNX" (extended): the same 24 bytes, then the header's whole length
 *   (big-endian 16 bits, at least RTN_APP_XHDR_LEN), 16 reserved bits and
 *   the sender's stage stamps: the application's hand-over and the RT
 *   thread's pick-up.  A longer header is allowed: a receiver skips stamps
 *   it does not know, so later versions append without breaking it.
 * Every stamp is global time in ns; 0 means "not stamped".
 */
#ifndef RTN_APP_HDR_H
#define RTN_APP_HDR_H

#include <stdint.h>

#define RTN_APP_MAGIC_X	     0x52544e58u /* "RTNX" */
#define RTN_APP_XHDR_LEN     44		 /* RTNX header, Ethernet header excluded */
#define RTN_APP_HLEN_OFF     38		 /* frame offset of the header length: 14 + 24 */
#define RTN_APP_HANDOVER_OFF 42		 /* 14 + 28: the application handed the message over */
#define RTN_APP_PICKUP_OFF   50		 /* 14 + 36: the sender's RT thread picked it up */
#define RTN_APP_XOVERHEAD    58		 /* 14 + RTN_APP_XHDR_LEN */

/* The stamps of one message, in the order it passes them (RTN_STAMP_*). */
#define RTN_STAMP_SCHED	   0 /* the sender meant to send */
#define RTN_STAMP_HANDOVER 1 /* the sending application wrote it into the TX ring */
#define RTN_STAMP_PICKUP   2 /* the sender's RT thread took it at its slot */
#define RTN_STAMP_TX	   3 /* handed to the TX ring (the socket) */
#define RTN_STAMP_RX_XDP   4 /* the receiver's XDP program */
#define RTN_STAMP_RX_RT	   5 /* the receiver's RT thread */
#define RTN_STAMP_TAKE	   6 /* the receiving application took it */
#define RTN_STAMP_N	   7

/** What an application header said (all zero for a frame without one). */
struct rtn_app_stamps {
	uint32_t seq;
	uint32_t hdr_len; /* Ethernet header included: where the payload starts */
	int64_t t[RTN_STAMP_N];
};

/**
 * Parse the application header of @p frame (@p len bytes, hostile).
 * @return 1 and *out for an application header, 0 for a frame without
 *         one (payload after the Ethernet header, *out zero), -1 for a
 *         header that claims more than the frame holds or less than its
 *         form needs (*out zero: the caller counts it).
 */
int rtn_app_hdr_parse(const uint8_t *frame, uint32_t len, struct rtn_app_stamps *out);

/** Write an RTNX header (TX and pick-up stamps 0) into @p frame, whose room the caller checked. */
void rtn_app_hdr_put(uint8_t *frame, uint32_t seq, int64_t sched_ns, int64_t handover_ns);

/** Where the TX stamp goes in @p frame: RTN_APP_TX_OFF for either form, -1 for a raw frame. */
int32_t rtn_app_hdr_tx_off(const uint8_t *frame, uint32_t len);

/** The RT thread's pick-up stamp, into an RTNX header only (@p len: the frame's length). */
void rtn_app_hdr_stamp_pickup(uint8_t *frame, uint32_t len, int64_t pickup_ns);

#endif
