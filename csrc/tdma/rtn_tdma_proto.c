// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_tdma_proto.c
 * @brief Encoders and decoder for RTmac/TDMA v2 frames and RTmac tunnels.
 *
 * Offsets follow RTnet's TDMA.spec frame tables: Ethernet header at 0,
 * RTmac header at 14, TDMA header at 18, TDMA body at 22.
 */
#include <errno.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_tdma_proto_inline.h"

/* the wire layouts rtn_tdma_proto.h describes, as the specification sizes them */
_Static_assert(sizeof(struct rtmac_hdr) == RTMAC_HLEN, "rtmac_hdr");
_Static_assert(sizeof(struct tdma_frm_sync) == TDMA_SYNC_LEN, "sync");
_Static_assert(sizeof(struct tdma_frm_req_cal) == TDMA_REQ_CAL_LEN, "req_cal");
_Static_assert(sizeof(struct tdma_frm_rpl_cal) == TDMA_RPL_CAL_LEN, "rpl_cal");

#define RTMAC_OFF ETH_HLEN_RTN
#define TDMA_OFF  (ETH_HLEN_RTN + RTMAC_HLEN)
#define BODY_OFF  (TDMA_OFF + TDMA_HLEN)

static const uint8_t broadcast[ETH_ALEN_RTN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/*
 * Common part of every TDMA frame.  The frame is padded with zeros to the
 * 60-byte Ethernet minimum here, as a NIC would do: veth and AF_XDP do not
 * pad, and an RTnet receiver must see the same bytes on every medium.
 */
static int tdma_frame_start(uint8_t *buf, uint32_t size, const uint8_t *dst, const uint8_t *src,
			    uint16_t id, const char *what)
{
	if (size < ETH_ZLEN_RTN) {
		return rtn_set_error(-ENOSPC, "%s frame needs %d bytes, buffer has %u", what,
				     ETH_ZLEN_RTN, size);
	}
	memset(buf, 0, ETH_ZLEN_RTN);
	memcpy(buf, dst, ETH_ALEN_RTN);
	memcpy(buf + ETH_ALEN_RTN, src, ETH_ALEN_RTN);
	rtn_put_be16(buf + 12, ETH_RTMAC);
	rtn_put_be16(buf + RTMAC_OFF, RTMAC_TYPE_TDMA);
	buf[RTMAC_OFF + 2] = RTMAC_VERSION;
	buf[RTMAC_OFF + 3] = 0;
	rtn_put_be16(buf + TDMA_OFF, TDMA_VERSION);
	rtn_put_be16(buf + TDMA_OFF + 2, id);
	return ETH_ZLEN_RTN;
}

int rtn_tdma_encode_sync(uint8_t *buf, uint32_t size, const uint8_t *src, uint32_t cycle_no,
			 uint64_t xmit_stamp, uint64_t sched_xmit_stamp, uint32_t *xmit_off)
{
	int len = tdma_frame_start(buf, size, broadcast, src, TDMA_FRM_SYNC, "sync");

	rtn_clear_error();
	if (len < 0) {
		return len;
	}
	rtn_put_be32(buf + BODY_OFF, cycle_no);
	rtn_put_be64(buf + RTN_TDMA_SYNC_XMIT_OFF, xmit_stamp);
	rtn_put_be64(buf + BODY_OFF + 12, sched_xmit_stamp);
	if (xmit_off) {
		*xmit_off = RTN_TDMA_SYNC_XMIT_OFF;
	}
	return len;
}

int rtn_tdma_encode_req_cal(uint8_t *buf, uint32_t size, const uint8_t *dst, const uint8_t *src,
			    uint64_t xmit_stamp, uint32_t reply_cycle, uint64_t reply_slot_offset,
			    uint32_t *xmit_off)
{
	int len = tdma_frame_start(buf, size, dst, src, TDMA_FRM_REQ_CAL, "calibration request");

	rtn_clear_error();
	if (len < 0) {
		return len;
	}
	rtn_put_be64(buf + RTN_TDMA_REQ_CAL_XMIT_OFF, xmit_stamp);
	rtn_put_be32(buf + BODY_OFF + 8, reply_cycle);
	rtn_put_be64(buf + BODY_OFF + 12, reply_slot_offset);
	if (xmit_off) {
		*xmit_off = RTN_TDMA_REQ_CAL_XMIT_OFF;
	}
	return len;
}

int rtn_tdma_encode_rpl_cal(uint8_t *buf, uint32_t size, const uint8_t *dst, const uint8_t *src,
			    uint64_t request_xmit_stamp, uint64_t reception_stamp,
			    uint64_t xmit_stamp, uint32_t *xmit_off)
{
	int len = tdma_frame_start(buf, size, dst, src, TDMA_FRM_RPL_CAL, "calibration reply");

	rtn_clear_error();
	if (len < 0) {
		return len;
	}
	rtn_put_be64(buf + BODY_OFF, request_xmit_stamp);
	rtn_put_be64(buf + BODY_OFF + 8, reception_stamp);
	rtn_put_be64(buf + RTN_TDMA_RPL_CAL_XMIT_OFF, xmit_stamp);
	if (xmit_off) {
		*xmit_off = RTN_TDMA_RPL_CAL_XMIT_OFF;
	}
	return len;
}

/*
 * Checks the Ethernet and RTmac headers shared by TDMA and tunnel frames.
 * Same order as RTnet's rtmac_proto_rx(): version first, then the tunnel
 * flag, then the discipline type.
 */
static int rtmac_check(const uint8_t *frame, uint32_t len, struct rtn_tdma_msg *out)
{
	if (len < ETH_HLEN_RTN) {
		return RTN_FRM_TRUNC_ETH;
	}
	memcpy(out->dst, frame, ETH_ALEN_RTN);
	memcpy(out->src, frame + ETH_ALEN_RTN, ETH_ALEN_RTN);
	if (rtn_get_be16(frame + 12) != ETH_RTMAC) {
		return RTN_FRM_NOT_RTMAC;
	}
	if (len < TDMA_OFF) {
		return RTN_FRM_TRUNC_RTMAC;
	}
	out->rtmac_type = rtn_get_be16(frame + RTMAC_OFF);
	out->rtmac_flags = frame[RTMAC_OFF + 3];
	if (frame[RTMAC_OFF + 2] != RTMAC_VERSION) {
		return RTN_FRM_BAD_RTMAC_VER;
	}
	/* Reserved flag bits are ignored, as RTnet does. */
	if (out->rtmac_flags & RTMAC_FLAG_TUNNEL) {
		return RTN_FRM_TUNNEL;
	}
	return 0;
}

int rtn_tdma_decode(const uint8_t *frame, uint32_t len, struct rtn_tdma_msg *out)
{
	const uint8_t *body = frame + BODY_OFF;
	uint32_t need;
	uint16_t id;
	int ret;

	rtn_clear_error();
	memset(out, 0, sizeof(*out));
	ret = rtmac_check(frame, len, out);
	if (ret < 0) {
		return ret;
	}
	if (out->rtmac_type != RTMAC_TYPE_TDMA) {
		return RTN_FRM_FOREIGN_DISC;
	}
	if (len < BODY_OFF) {
		return RTN_FRM_TRUNC_TDMA;
	}
	if (rtn_get_be16(frame + TDMA_OFF) != TDMA_VERSION) {
		return RTN_FRM_BAD_TDMA_VER;
	}
	id = rtn_get_be16(frame + TDMA_OFF + 2);
	switch (id) {
	case TDMA_FRM_SYNC:
		need = TDMA_OFF + TDMA_SYNC_LEN;
		break;
	case TDMA_FRM_REQ_CAL:
		need = TDMA_OFF + TDMA_REQ_CAL_LEN;
		break;
	case TDMA_FRM_RPL_CAL:
		need = TDMA_OFF + TDMA_RPL_CAL_LEN;
		break;
	default:
		return RTN_FRM_UNKNOWN_ID;
	}
	out->kind = id;
	if (len < need) {
		return RTN_FRM_TRUNC_BODY;
	}
	switch (id) {
	case TDMA_FRM_SYNC:
		out->cycle_no = rtn_get_be32(body);
		out->xmit_stamp = rtn_get_be64(body + 4);
		out->sched_xmit_stamp = rtn_get_be64(body + 12);
		break;
	case TDMA_FRM_REQ_CAL:
		out->xmit_stamp = rtn_get_be64(body);
		out->reply_cycle = rtn_get_be32(body + 8);
		out->reply_slot_offset = rtn_get_be64(body + 12);
		break;
	default:
		out->request_xmit_stamp = rtn_get_be64(body);
		out->reception_stamp = rtn_get_be64(body + 8);
		out->xmit_stamp = rtn_get_be64(body + 16);
		break;
	}
	return id;
}

const char *rtn_frm_reason(int code)
{
	switch (code) {
	case RTN_FRM_TRUNC_ETH:
		return "truncated Ethernet header";
	case RTN_FRM_NOT_RTMAC:
		return "not an RTmac frame (EtherType is not 0x9021)";
	case RTN_FRM_TRUNC_RTMAC:
		return "truncated RTmac header";
	case RTN_FRM_BAD_RTMAC_VER:
		return "wrong RTmac version (expected 0x02)";
	case RTN_FRM_TUNNEL:
		return "tunnelled frame (for the VNIC, not TDMA)";
	case RTN_FRM_FOREIGN_DISC:
		return "foreign RTmac discipline (not TDMA)";
	case RTN_FRM_TRUNC_TDMA:
		return "truncated TDMA header";
	case RTN_FRM_BAD_TDMA_VER:
		return "wrong TDMA version (expected 0x0201)";
	case RTN_FRM_UNKNOWN_ID:
		return "unknown TDMA frame id";
	case RTN_FRM_TRUNC_BODY:
		return "truncated TDMA frame body";
	case RTN_FRM_NOT_TUNNEL:
		return "RTmac frame without the tunnel flag";
	default:
		return "unknown reject code";
	}
}

int rtn_rtmac_tunnel_encap(uint8_t *out, uint32_t size, const uint8_t *inner, uint32_t inner_len,
			   const uint8_t *station_mac)
{
	uint32_t payload;

	rtn_clear_error();
	if (inner_len < ETH_HLEN_RTN) {
		return rtn_set_error(-EINVAL, "inner frame of %u bytes has no Ethernet header",
				     inner_len);
	}
	payload = inner_len - ETH_HLEN_RTN;
	if (size < TDMA_OFF || size - TDMA_OFF < payload) {
		return rtn_set_error(-ENOSPC, "tunnel frame needs %u bytes, buffer has %u",
				     inner_len + RTMAC_HLEN, size);
	}
	/* memmove: callers may encapsulate in place at out = inner - 4, where nothing moves */
	if (out + TDMA_OFF != inner + ETH_HLEN_RTN)
		memmove(out + TDMA_OFF, inner + ETH_HLEN_RTN, payload);
	out[RTMAC_OFF] = inner[12]; /* RTmac type = inner EtherType */
	out[RTMAC_OFF + 1] = inner[13];
	out[RTMAC_OFF + 2] = RTMAC_VERSION;
	out[RTMAC_OFF + 3] = RTMAC_FLAG_TUNNEL;
	memmove(out, inner, ETH_ALEN_RTN);
	memcpy(out + ETH_ALEN_RTN, station_mac, ETH_ALEN_RTN);
	rtn_put_be16(out + 12, ETH_RTMAC);
	return payload + TDMA_OFF;
}

int rtn_rtmac_tunnel_decap(uint8_t *out, uint32_t size, const uint8_t *frame, uint32_t len)
{
	struct rtn_tdma_msg hdr;
	uint8_t eth[ETH_HLEN_RTN];
	int ret;

	rtn_clear_error();
	memset(&hdr, 0, sizeof(hdr));
	ret = rtmac_check(frame, len, &hdr);
	if (ret == 0) {
		return RTN_FRM_NOT_TUNNEL;
	}
	if (ret != RTN_FRM_TUNNEL) {
		return ret;
	}
	if (size < len - RTMAC_HLEN) {
		return rtn_set_error(-ENOSPC, "inner frame needs %u bytes, buffer has %u",
				     len - RTMAC_HLEN, size);
	}
	/*
	 * Header copied aside first so that decapsulating in place works; at
	 * @p out = @p frame + RTMAC_HLEN the payload is already where it goes
	 * and only the header is written.
	 */
	memcpy(eth, frame, 12);
	eth[12] = frame[RTMAC_OFF];
	eth[13] = frame[RTMAC_OFF + 1];
	if (out + ETH_HLEN_RTN != frame + TDMA_OFF)
		memmove(out + ETH_HLEN_RTN, frame + TDMA_OFF, len - TDMA_OFF);
	memcpy(out, eth, ETH_HLEN_RTN);
	return len - RTMAC_HLEN;
}
