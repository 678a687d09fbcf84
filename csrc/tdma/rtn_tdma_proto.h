/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_proto.h
 * @brief RTmac (EtherType 0x9021) and TDMA v2 frames, byte-compatible with RTnet.
 *
 * Normative sources: RTnet doc/RTmac.spec, doc/TDMA.spec (rev 2.1a) and
 * stack/include/rtmac/{rtmac_proto.h,tdma/tdma_proto.h}.  Every multi-byte
 * field is big-endian on the wire.  The structs below describe the wire
 * layout and are only ever accessed through the byte helpers
 * (rtn_tdma_proto_inline.h), so that unaligned frame buffers are fine on
 * every architecture; rtn_tdma_proto.c checks their sizes.
 *
 * Encoders and the decoder never allocate, lock or print: they run on the
 * real-time path.  The decoder returns an ::rtn_frm_result reject code
 * (<= -1000) for anything that is not a well-formed TDMA v2 frame, so it
 * can be handed arbitrary bytes of any length.  Misuse by the caller (a
 * buffer too small) is reported as a negative errno instead.
 */
#ifndef RTN_TDMA_PROTO_H
#define RTN_TDMA_PROTO_H

#include <stdint.h>

#define ETH_ALEN_RTN 6
#define ETH_HLEN_RTN 14
/* Minimum Ethernet frame without FCS; shorter frames are padded by the NIC. */
#define ETH_ZLEN_RTN 60

#define ETH_RTMAC 0x9021
#define ETH_RTCFG 0x9022

#define RTMAC_VERSION	  0x02
#define RTMAC_FLAG_TUNNEL 0x01
#define RTMAC_TYPE_NOMAC  0x0000
#define RTMAC_TYPE_TDMA	  0x0001
#define RTMAC_HLEN	  4

#define TDMA_VERSION	 0x0201
#define TDMA_FRM_SYNC	 0x0000
#define TDMA_FRM_REQ_CAL 0x0010
#define TDMA_FRM_RPL_CAL 0x0011
#define TDMA_HLEN	 4

/* Body sizes (TDMA header included) and full frame lengths before padding. */
#define TDMA_SYNC_LEN		   24
#define TDMA_REQ_CAL_LEN	   24
#define TDMA_RPL_CAL_LEN	   28
#define RTN_TDMA_SYNC_FRAME_LEN	   42
#define RTN_TDMA_REQ_CAL_FRAME_LEN 42
#define RTN_TDMA_RPL_CAL_FRAME_LEN 46

/* Frame offsets of the xmit_stamp field that the TX path patches last. */
#define RTN_TDMA_SYNC_XMIT_OFF	  26
#define RTN_TDMA_REQ_CAL_XMIT_OFF 22
#define RTN_TDMA_RPL_CAL_XMIT_OFF 38

struct rtmac_hdr {
	uint16_t type; /* discipline id, or inner EtherType if tunnelled */
	uint8_t ver;   /* RTMAC_VERSION */
	uint8_t flags; /* bit 0: RTMAC_FLAG_TUNNEL, bits 1-7 reserved */
} __attribute__((packed));

struct tdma_frm_head {
	uint16_t version; /* TDMA_VERSION */
	uint16_t id;	  /* TDMA_FRM_* */
} __attribute__((packed));

struct tdma_frm_sync {
	struct tdma_frm_head head;
	uint32_t cycle_no;
	uint64_t xmit_stamp;	   /* global clock at transmission, ns */
	uint64_t sched_xmit_stamp; /* scheduled cycle start, global clock, ns */
} __attribute__((packed));

struct tdma_frm_req_cal {
	struct tdma_frm_head head;
	uint64_t xmit_stamp; /* requester's local clock, ns */
	uint32_t reply_cycle;
	uint64_t reply_slot_offset; /* ns after cycle start */
} __attribute__((packed));

struct tdma_frm_rpl_cal {
	struct tdma_frm_head head;
	uint64_t request_xmit_stamp; /* copied from the request */
	uint64_t reception_stamp;    /* master local clock at request RX, ns */
	uint64_t xmit_stamp;	     /* master local clock at reply TX, ns */
} __attribute__((packed));

/**
 * Results of rtn_tdma_decode() and rtn_rtmac_tunnel_decap().  A frame
 * kind (the TDMA id, >= 0) on success, otherwise one reject reason each.
 * The values sit far below any errno so both can share a return value.
 */
enum rtn_frm_result {
	RTN_FRM_TRUNC_ETH = -1000,     /* shorter than an Ethernet header */
	RTN_FRM_NOT_RTMAC = -1001,     /* EtherType is not 0x9021 */
	RTN_FRM_TRUNC_RTMAC = -1002,   /* no room for the RTmac header */
	RTN_FRM_BAD_RTMAC_VER = -1003, /* RTmac ver != 0x02 */
	RTN_FRM_TUNNEL = -1004,	       /* tunnelled (VNIC) frame, not TDMA */
	RTN_FRM_FOREIGN_DISC = -1005,  /* RTmac type is not TDMA */
	RTN_FRM_TRUNC_TDMA = -1006,    /* no room for the TDMA header */
	RTN_FRM_BAD_TDMA_VER = -1007,  /* TDMA version != 0x0201 */
	RTN_FRM_UNKNOWN_ID = -1008,    /* TDMA id not sync/req/rpl */
	RTN_FRM_TRUNC_BODY = -1009,    /* body shorter than its id needs */
	RTN_FRM_NOT_TUNNEL = -1010,    /* decap: RTmac frame without tunnel flag */
};

/** A received TDMA frame in host byte order. */
struct rtn_tdma_msg {
	uint16_t kind;	     /* TDMA_FRM_* */
	uint16_t rtmac_type; /* RTmac type as received */
	uint8_t rtmac_flags;
	uint8_t dst[6];
	uint8_t src[6];
	uint32_t cycle_no;	     /* sync */
	uint32_t reply_cycle;	     /* req_cal */
	uint64_t xmit_stamp;	     /* sync, req_cal, rpl_cal */
	uint64_t sched_xmit_stamp;   /* sync */
	uint64_t reply_slot_offset;  /* req_cal */
	uint64_t request_xmit_stamp; /* rpl_cal */
	uint64_t reception_stamp;    /* rpl_cal */
};

/**
 * Build a Sync frame (broadcast) into @p buf.
 * @param xmit_off  if not NULL, receives the frame offset of xmit_stamp
 * @return frame length (60, padded), or -ENOSPC if @p size < 60
 */
int rtn_tdma_encode_sync(uint8_t *buf, uint32_t size, const uint8_t *src, uint32_t cycle_no,
			 uint64_t xmit_stamp, uint64_t sched_xmit_stamp, uint32_t *xmit_off);

/** Build a Request Calibration frame, unicast to the master @p dst. */
int rtn_tdma_encode_req_cal(uint8_t *buf, uint32_t size, const uint8_t *dst, const uint8_t *src,
			    uint64_t xmit_stamp, uint32_t reply_cycle, uint64_t reply_slot_offset,
			    uint32_t *xmit_off);

/** Build a Reply Calibration frame, unicast to the requester @p dst. */
int rtn_tdma_encode_rpl_cal(uint8_t *buf, uint32_t size, const uint8_t *dst, const uint8_t *src,
			    uint64_t request_xmit_stamp, uint64_t reception_stamp,
			    uint64_t xmit_stamp, uint32_t *xmit_off);

/**
 * Classify a received frame.  Reads at most @p len bytes of @p frame.
 * @param out  zeroed, then filled with everything parsed (also on reject)
 * @return the TDMA id (>= 0) or an ::rtn_frm_result reject code
 */
int rtn_tdma_decode(const uint8_t *frame, uint32_t len, struct rtn_tdma_msg *out);

/** Short, static description of a reject code (never NULL). */
const char *rtn_frm_reason(int code);

/**
 * Wrap a Linux Ethernet frame into an RTmac tunnel frame (RTnet VNIC TX):
 * outer dst = inner dst, outer src = @p station_mac, RTmac type = inner
 * EtherType, ver 2, flags RTMAC_FLAG_TUNNEL, then the inner payload.
 * Not padded: the receiver could not tell padding from payload, and the
 * NIC pads short frames on real hardware anyway.
 * @return outer length (@p inner_len + 4), -EINVAL if @p inner_len < 14,
 *	   -ENOSPC if @p size is too small
 */
int rtn_rtmac_tunnel_encap(uint8_t *out, uint32_t size, const uint8_t *inner, uint32_t inner_len,
			   const uint8_t *station_mac);

/**
 * Unwrap an RTmac tunnel frame (RTnet VNIC RX): the inner Ethernet header
 * is the outer one with h_proto replaced by the RTmac type.
 * @return inner length (@p len - 4), a reject code for frames that are
 *	   not tunnel frames, or -ENOSPC if @p size is too small
 */
int rtn_rtmac_tunnel_decap(uint8_t *out, uint32_t size, const uint8_t *frame, uint32_t len);

#endif
