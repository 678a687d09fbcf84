/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_preload_frame.h
 * @brief What a frame in a channel's RX ring holds for a program's socket:
 *        where its data is and who sent it.  A parser of shared memory, so
 *        of hostile bytes: rtn_preload_rx.c hands it a private copy, and
 *        fuzz/fuzz_preload_frame.c any bytes at all.  Inline: it runs for
 *        every datagram a program takes.
 */
#ifndef RTN_PRELOAD_FRAME_H
#define RTN_PRELOAD_FRAME_H

#include <linux/if_packet.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include "rtn_ipv4.h"

#define RP_ETH_HLEN 14

struct rp_frame_view {
	uint32_t data_off; /* where the program's data starts in the frame */
	uint32_t len;	   /* its length: the datagram's, or the frame's (from data_off) */
	/* a UDP datagram's sender, network order */
	uint32_t src_ip;
	uint16_t src_port;
	/* a packet socket's sender and PACKET_HOST, _BROADCAST or _MULTICAST */
	uint8_t src_mac[6];
	uint8_t pkttype;
};

/**
 * View @p len bytes of @p frame for a socket of @p domain (AF_INET: a UDP
 * datagram over IPv4 without options; AF_PACKET: a frame, whole for
 * SOCK_RAW, after its Ethernet header for SOCK_DGRAM).  -1 for a frame that
 * is no such thing; 0 with data_off + len within @p len and the sender's
 * fields of that kind of socket set.
 */
static inline int rp_frame_view(int domain, int type, const uint8_t *frame, uint32_t len,
				struct rp_frame_view *v)
{
	uint32_t ulen;

	if (len < RP_ETH_HLEN)
		return -1;
	if (domain == AF_PACKET) {
		memcpy(v->src_mac, frame + 6, 6);
		v->pkttype = !(frame[0] & 1)				  ? PACKET_HOST :
			     memcmp(frame, "\xff\xff\xff\xff\xff\xff", 6) ? PACKET_MULTICAST :
									    PACKET_BROADCAST;
		v->data_off = type == SOCK_RAW ? 0 : RP_ETH_HLEN;
		v->len = len - v->data_off;
		return 0;
	}
	if (len < RTN_UDP_HLEN || frame[RTN_IP_OFF] != 0x45 || frame[RTN_IP_OFF + 9] != 17)
		return -1;
	ulen = (uint32_t)frame[RTN_L4_OFF + 4] << 8 | frame[RTN_L4_OFF + 5];
	if (ulen < 8 || RTN_L4_OFF + ulen > len)
		return -1;
	memcpy(&v->src_ip, frame + RTN_IP_OFF + 12, 4);
	memcpy(&v->src_port, frame + RTN_L4_OFF, 2);
	v->data_off = RTN_UDP_HLEN;
	v->len = ulen - 8; /* not the frame's: Ethernet pads short ones */
	return 0;
}

#endif
