// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_app_udp_rx.c
 * @brief Where a received UDP datagram's payload starts (rtn_app_priv.h):
 *        the parser rtn_app_recv() and rtn_app_recvfrom() share.  A file of
 *        its own so that rtn_app.c (the receive path) and rtn_app_udp.c
 *        (sendto, which calls into rtn_app.c) do not call each other.
 */
#include <string.h>
#include "rtn_app.h"
#include "rtn_app_hdr.h"
#include "rtn_app_priv.h"
#include "rtn_core.h"
#include "rtn_ipv4_inline.h"

int rtn_app_udp_payload(const struct rtn_app_chan *ch, const uint8_t *frame, uint32_t len,
			struct rtn_app_stamps *hdr, struct rtn_app_udp_info *udp)
{
	uint32_t end, ulen;

	memset(hdr, 0, sizeof(*hdr));
	hdr->hdr_len = RTN_APP_ETH_HLEN;
	/* the station delivers IPv4 without options only (rtn_ip_parse()) */
	if (len < RTN_UDP_HLEN || frame[RTN_IP_OFF] != 0x45 ||
	    frame[RTN_IP_OFF + 9] != RTN_IPPROTO_UDP)
		return -1;
	ulen = rtn_get_be16(frame + RTN_L4_OFF + 4);
	end = RTN_L4_OFF + ulen;
	if (ulen < 8 || end > len)
		return -1;
	if (udp) {
		udp->src_ip = rtn_get_be32(frame + RTN_IP_OFF + 12);
		udp->dst_ip = rtn_get_be32(frame + RTN_IP_OFF + 16);
		udp->src_port = rtn_get_be16(frame + RTN_L4_OFF);
		udp->dst_port = rtn_get_be16(frame + RTN_L4_OFF + 2);
	}
	if ((ch->udp_flags & RTN_UDP_F_STAMPED) &&
	    rtn_app_hdr_parse(frame + RTN_UDP_APP_SHIFT, end - RTN_UDP_APP_SHIFT, hdr) > 0) {
		hdr->hdr_len += RTN_UDP_APP_SHIFT;
		return 1;
	}
	memset(hdr, 0, sizeof(*hdr));
	hdr->hdr_len = RTN_UDP_HLEN;
	return 0;
}
