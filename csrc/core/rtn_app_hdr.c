// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_app_hdr.c
 * @brief Parse and write the application header (rtn_app_hdr.h): the one
 *        place that knows its layout, for the station and the application
 *        library alike.
 */
#include <string.h>
#include "rtn_app_hdr.h"
#include "rtn_chan.h"
#include "rtn_tdma_proto_inline.h"

int rtn_app_hdr_parse(const uint8_t *frame, uint32_t len, struct rtn_app_stamps *out)
{
	const uint8_t *h = frame + ETH_HLEN_RTN;
	uint32_t magic, hlen;

	memset(out, 0, sizeof(*out));
	out->hdr_len = ETH_HLEN_RTN;
	if (len < ETH_HLEN_RTN + 4)
		return 0;
	magic = rtn_get_be32(h);
	if (magic != RTN_APP_MAGIC && magic != RTN_APP_MAGIC_X)
		return 0;
	hlen = magic == RTN_APP_MAGIC ? RTN_APP_HDR_LEN : RTN_APP_XHDR_LEN;
	if (len < ETH_HLEN_RTN + hlen)
		return -1;
	if (magic == RTN_APP_MAGIC_X) {
		/* the sender's word for its length: within the frame, never below the form */
		hlen = rtn_get_be16(frame + RTN_APP_HLEN_OFF);
		if (hlen < RTN_APP_XHDR_LEN || ETH_HLEN_RTN + hlen > len)
			return -1;
		out->t[RTN_STAMP_HANDOVER] = (int64_t)rtn_get_be64(frame + RTN_APP_HANDOVER_OFF);
		out->t[RTN_STAMP_PICKUP] = (int64_t)rtn_get_be64(frame + RTN_APP_PICKUP_OFF);
	}
	out->seq = rtn_get_be32(h + 4);
	out->t[RTN_STAMP_SCHED] = (int64_t)rtn_get_be64(h + 8);
	out->t[RTN_STAMP_TX] = (int64_t)rtn_get_be64(frame + RTN_APP_TX_OFF);
	out->hdr_len = ETH_HLEN_RTN + hlen;
	return 1;
}

void rtn_app_hdr_put(uint8_t *frame, uint32_t seq, int64_t sched_ns, int64_t handover_ns)
{
	rtn_put_be32(frame + ETH_HLEN_RTN, RTN_APP_MAGIC_X);
	rtn_put_be32(frame + ETH_HLEN_RTN + 4, seq);
	rtn_put_be64(frame + ETH_HLEN_RTN + 8, (uint64_t)sched_ns);
	rtn_put_be64(frame + RTN_APP_TX_OFF, 0);
	rtn_put_be16(frame + RTN_APP_HLEN_OFF, RTN_APP_XHDR_LEN);
	rtn_put_be16(frame + RTN_APP_HLEN_OFF + 2, 0);
	rtn_put_be64(frame + RTN_APP_HANDOVER_OFF, (uint64_t)handover_ns);
	rtn_put_be64(frame + RTN_APP_PICKUP_OFF, 0);
}

int32_t rtn_app_hdr_tx_off(const uint8_t *frame, uint32_t len)
{
	uint32_t magic;

	if (len < RTN_APP_TX_OFF + 8)
		return -1;
	magic = rtn_get_be32(frame + ETH_HLEN_RTN);
	return magic == RTN_APP_MAGIC || magic == RTN_APP_MAGIC_X ? RTN_APP_TX_OFF : -1;
}

void rtn_app_hdr_stamp_pickup(uint8_t *frame, uint32_t len, int64_t pickup_ns)
{
	if (len >= RTN_APP_XOVERHEAD && rtn_get_be32(frame + ETH_HLEN_RTN) == RTN_APP_MAGIC_X)
		rtn_put_be64(frame + RTN_APP_PICKUP_OFF, (uint64_t)pickup_ns);
}

/* the header's offsets are written out as numbers for cffi: hold them to their sums */
_Static_assert(RTN_APP_HLEN_OFF == 14 + 24, "header length after the 24-byte base");
_Static_assert(RTN_APP_HANDOVER_OFF == 14 + 28, "hand-over stamp");
_Static_assert(RTN_APP_PICKUP_OFF == 14 + 36, "pick-up stamp");
_Static_assert(RTN_APP_XOVERHEAD == 14 + RTN_APP_XHDR_LEN, "extended overhead");
