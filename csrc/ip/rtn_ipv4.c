// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_ipv4.c
 * @brief Parse and build IPv4/UDP/ICMP echo frames (rtn_ipv4.h): the one
 *        place that knows their layout, for the station and the library.
 */
#include <string.h>
#include "rtn_ipv4.h"
#include "rtn_ipv4_inline.h"

#define ETH_MIN_FRAME 60 /* without FCS: shorter frames are padded to this */
#define IP_DF	      0x4000

uint16_t rtn_inet_csum(const uint8_t *p, uint32_t len)
{
	return rtn_csum_fold(rtn_csum_add(0, p, len));
}

int rtn_udp_stamp(uint8_t *frame, uint32_t len, uint32_t off, uint64_t v)
{
	if (off > len || len - off < 8)
		return -1;
	rtn_stamp_put(frame, len, off, v);
	return 0;
}

/* The checks of one UDP datagram at @p u, @p n bytes of IP payload. */
static int parse_udp(const uint8_t *frame, const uint8_t *u, uint32_t n, struct rtn_ip_pkt *out)
{
	uint32_t ulen;

	if (n < 8)
		return -RTN_IPBAD_UDP_LEN;
	ulen = rtn_get_be16(u + 4);
	if (ulen < 8 || ulen > n)
		return -RTN_IPBAD_UDP_LEN;
	out->sport = rtn_get_be16(u);
	out->dport = rtn_get_be16(u + 2);
	/* 0: the sender computed none (RFC 768) */
	if ((u[6] | u[7]) &&
	    rtn_csum_fold(rtn_csum_add(rtn_udp_pseudo(frame + RTN_IP_OFF, ulen), u, ulen)))
		return -RTN_IPBAD_UDP_CSUM;
	out->data_off = out->l4_off + 8;
	out->data_len = ulen - 8;
	return RTN_IP_UDP;
}

static int parse_icmp(const uint8_t *c, uint32_t n, struct rtn_ip_pkt *out)
{
	if (n < 8)
		return -RTN_IPBAD_ICMP_SHORT;
	if (rtn_inet_csum(c, n))
		return -RTN_IPBAD_ICMP_CSUM;
	out->icmp_type = c[0];
	/* code 0 is the only one echo has (RFC 792) */
	if ((c[0] != RTN_ICMP_ECHO_REQUEST && c[0] != RTN_ICMP_ECHO_REPLY) || c[1])
		return -RTN_IPBAD_ICMP_TYPE;
	out->sport = rtn_get_be16(c + 4);
	out->dport = rtn_get_be16(c + 6);
	out->data_off = out->l4_off + 8;
	out->data_len = n - 8;
	return c[0] == RTN_ICMP_ECHO_REQUEST ? RTN_IP_ECHO_REQUEST : RTN_IP_ECHO_REPLY;
}

int rtn_ip_parse(const uint8_t *frame, uint32_t len, struct rtn_ip_pkt *out)
{
	const uint8_t *ip = frame + RTN_IP_OFF;
	uint32_t ihl, tot, frag;

	memset(out, 0, sizeof(*out));
	if (len < RTN_IP_OFF + RTN_IP_HLEN)
		return -RTN_IPBAD_TRUNCATED;
	if (ip[0] >> 4 != 4)
		return -RTN_IPBAD_VERSION;
	ihl = (ip[0] & 0x0f) * 4u;
	if (ihl < RTN_IP_HLEN || RTN_IP_OFF + ihl > len)
		return -RTN_IPBAD_IHL;
	/* checked before the options: a header that fails it is noise, whatever it says */
	if (rtn_inet_csum(ip, ihl))
		return -RTN_IPBAD_CSUM;
	if (ihl != RTN_IP_HLEN)
		return -RTN_IPBAD_OPTIONS;
	tot = rtn_get_be16(ip + 2);
	if (RTN_IP_OFF + tot > len)
		return -RTN_IPBAD_TOTLEN_LONG;
	/* a shorter datagram is only allowed in a frame padded to the minimum size */
	if (tot < ihl || (RTN_IP_OFF + tot < len && len > ETH_MIN_FRAME))
		return -RTN_IPBAD_TOTLEN_SHORT;
	out->ip_id = rtn_get_be16(ip + 4);
	out->proto = ip[9];
	out->src = rtn_get_be32(ip + 12);
	out->dst = rtn_get_be32(ip + 16);
	out->l4_off = RTN_IP_OFF + ihl;
	out->ip_len = tot;
	frag = rtn_get_be16(ip + 6);
	if (frag & (RTN_IP_MF | RTN_IP_OFFMASK))
		return -RTN_IPBAD_FRAGMENT; /* for rtn_ip_defrag(), which reads the rest */
	switch (ip[9]) {
	case RTN_IPPROTO_UDP:
		return parse_udp(frame, ip + ihl, tot - ihl, out);
	case RTN_IPPROTO_ICMP:
		return parse_icmp(ip + ihl, tot - ihl, out);
	default:
		return -RTN_IPBAD_PROTO;
	}
}

/*
 * Ethernet and IPv4 headers (no options, TTL 64) for @p l4_len bytes of
 * @p proto; @p frag the flags and offset field (DF for a datagram of one frame).
 */
static void put_ip(uint8_t *f, const uint8_t dst_mac[6], const uint8_t src_mac[6], uint32_t src_ip,
		   uint32_t dst_ip, uint8_t proto, uint16_t ip_id, uint32_t l4_len, uint16_t frag)
{
	uint8_t *ip = f + RTN_IP_OFF;

	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src_mac, 6);
	rtn_put_be16(f + 12, RTN_ETH_P_IPV4);
	ip[0] = 0x45;
	ip[1] = 0;
	rtn_put_be16(ip + 2, (uint16_t)(RTN_IP_HLEN + l4_len));
	rtn_put_be16(ip + 4, ip_id);
	rtn_put_be16(ip + 6, frag);
	ip[8] = RTN_IP_TTL;
	ip[9] = proto;
	rtn_put_be16(ip + 10, 0);
	rtn_put_be32(ip + 12, src_ip);
	rtn_put_be32(ip + 16, dst_ip);
	rtn_put_be16(ip + 10, rtn_inet_csum(ip, RTN_IP_HLEN));
}

uint32_t rtn_udp_finish(uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
			uint32_t src_ip, uint32_t dst_ip, uint16_t sport, uint16_t dport,
			uint16_t ip_id, uint32_t plen)
{
	uint8_t *u = frame + RTN_L4_OFF;
	uint16_t ulen = (uint16_t)(8 + plen), sum;

	put_ip(frame, dst_mac, src_mac, src_ip, dst_ip, RTN_IPPROTO_UDP, ip_id, ulen, IP_DF);
	rtn_put_be16(u, sport);
	rtn_put_be16(u + 2, dport);
	rtn_put_be16(u + 4, ulen);
	rtn_put_be16(u + 6, 0);
	sum = rtn_csum_fold(rtn_csum_add(rtn_udp_pseudo(frame + RTN_IP_OFF, ulen), u, ulen));
	rtn_put_be16(u + 6, sum ? sum : 0xffff); /* 0 would mean "no checksum" */
	return RTN_UDP_HLEN + plen;
}

/* The data bytes a fragment but the last carries in a frame of @p frame_max: a multiple of 8. */
static uint32_t frag_step(uint32_t frame_max)
{
	return frame_max > RTN_L4_OFF ? (frame_max - RTN_L4_OFF) & ~7u : 0;
}

uint32_t rtn_udp_frag_count(uint32_t plen, uint32_t frame_max)
{
	uint32_t step = frag_step(frame_max), dgram = 8 + plen;

	if (plen > RTN_UDP_MAX_DGRAM)
		return 0;
	if (frame_max >= RTN_L4_OFF && dgram <= frame_max - RTN_L4_OFF)
		return 1;
	if (step < 8)
		return 0;
	return (dgram + step - 1) / step;
}

uint32_t rtn_udp_frag_max_payload(uint32_t frame_max, uint32_t frags)
{
	uint64_t udp = (uint64_t)frag_step(frame_max) * frags; /* UDP bytes in that many */

	if (frame_max > RTN_L4_OFF && udp < frame_max - RTN_L4_OFF)
		udp = frame_max - RTN_L4_OFF; /* one frame: no multiple of 8 to keep to */
	if (udp > 8 + RTN_UDP_MAX_DGRAM)
		udp = 8 + RTN_UDP_MAX_DGRAM;
	return udp >= 8 ? (uint32_t)(udp - 8) : 0;
}

void rtn_udp_frag_span(uint32_t plen, uint32_t frame_max, uint32_t i, uint32_t *off, uint32_t *n)
{
	uint32_t step = frag_step(frame_max), dgram = 8 + plen;

	if (rtn_udp_frag_count(plen, frame_max) <= 1) {
		*off = 0;
		*n = dgram;
		return;
	}
	*off = i * step;
	*n = *off >= dgram ? 0 : dgram - *off < step ? dgram - *off : step;
}

uint32_t rtn_ip_fragment_finish(uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
				uint32_t src_ip, uint32_t dst_ip, uint16_t ip_id, uint32_t off,
				uint32_t n, int more)
{
	put_ip(frame, dst_mac, src_mac, src_ip, dst_ip, RTN_IPPROTO_UDP, ip_id, n,
	       (uint16_t)((more ? RTN_IP_MF : 0) | (off / 8 & RTN_IP_OFFMASK)));
	return RTN_L4_OFF + n;
}

uint32_t rtn_icmp_echo_finish(uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
			      uint32_t src_ip, uint32_t dst_ip, uint8_t type, uint16_t id,
			      uint16_t seq, uint16_t ip_id, uint32_t dlen)
{
	uint8_t *c = frame + RTN_L4_OFF;

	put_ip(frame, dst_mac, src_mac, src_ip, dst_ip, RTN_IPPROTO_ICMP, ip_id, 8 + dlen, IP_DF);
	c[0] = type;
	c[1] = 0;
	rtn_put_be16(c + 2, 0);
	rtn_put_be16(c + 4, id);
	rtn_put_be16(c + 6, seq);
	rtn_put_be16(c + 2, rtn_inet_csum(c, 8 + dlen));
	return RTN_ICMP_HLEN + dlen;
}

uint32_t rtn_icmp_echo_answer(const uint8_t *req, const struct rtn_ip_pkt *p, uint8_t *out,
			      uint32_t cap, uint16_t ip_id)
{
	if (p->data_len > cap || RTN_ICMP_HLEN + (uint32_t)p->data_len > cap ||
	    (uint32_t)p->data_off + p->data_len > RTN_ICMP_HLEN + RTN_UDP_MAX_PAYLOAD)
		return 0;
	memmove(out + RTN_ICMP_HLEN, req + p->data_off, p->data_len);
	return rtn_icmp_echo_finish(out, req + 6, req, p->dst, p->src, RTN_ICMP_ECHO_REPLY,
				    p->sport, p->dport, ip_id, p->data_len);
}
