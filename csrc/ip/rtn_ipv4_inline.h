/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_ipv4_inline.h
 * @brief The Internet checksum and the stamp writer that keeps a UDP
 *        checksum right, inline for the data path (station, socket, library).
 */
#ifndef RTN_IPV4_INLINE_H
#define RTN_IPV4_INLINE_H

#include <stdint.h>
#include <string.h>
#include "rtn_csum_inline.h"
#include "rtn_ipv4.h"
#include "rtn_tdma_proto_inline.h"

/*
 * One's complement sum of @p len bytes added to @p sum (RFC 1071), as
 * big-endian 16-bit words, folded to 16 bits but not complemented.  The
 * bytes are summed in the machine's order (rtn_csum_words) and the folded
 * sum read back in network order (RFC 1071 section 2B).
 */
static inline uint32_t rtn_csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	uint16_t native = rtn_csum_fold16(rtn_csum_words(0, p, len));
	uint8_t b[2];
	uint64_t s;

	memcpy(b, &native, 2);
	s = (uint64_t)sum + ((uint32_t)b[0] << 8 | b[1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint32_t)s;
}

static inline uint16_t rtn_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The UDP/IPv4 pseudo header's sum (RFC 768): addresses, protocol, UDP length. */
static inline uint32_t rtn_udp_pseudo(const uint8_t *ip_hdr, uint16_t udp_len)
{
	return rtn_csum_add(RTN_IPPROTO_UDP + udp_len, ip_hdr + 12, 8);
}

/*
 * Whether @p frame is one of our IPv4/UDP datagrams (no options) with its
 * checksum in use: only then does a stamp written into it move the checksum.
 */
static inline int rtn_udp_csummed(const uint8_t *frame, uint32_t len)
{
	return len >= RTN_UDP_HLEN && frame[12] == 0x08 && frame[13] == 0x00 &&
	       frame[RTN_IP_OFF] == 0x45 && frame[RTN_IP_OFF + 9] == RTN_IPPROTO_UDP &&
	       (frame[RTN_L4_OFF + 6] | frame[RTN_L4_OFF + 7]);
}

/*
 * Write the big-endian @p v at @p off of @p frame (@p len bytes, the caller
 * checked off + 8 <= len).  Inside a checksummed UDP datagram the checksum
 * follows incrementally, RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') per 16-bit
 * word, so the RT thread does not sum the whole datagram again; the stamp
 * offsets are even from the UDP header, so the words line up.
 */
static inline void rtn_stamp_put(uint8_t *frame, uint32_t len, uint32_t off, uint64_t v)
{
	if (off >= RTN_UDP_HLEN && !((off - RTN_L4_OFF) & 1) && rtn_udp_csummed(frame, len)) {
		uint8_t *c = frame + RTN_L4_OFF + 6;
		uint32_t sum = (uint16_t)~rtn_get_be16(c), i;

		for (i = 0; i < 8; i += 2) {
			sum += (uint16_t)~rtn_get_be16(frame + off + i);
			sum += (uint16_t)(v >> (48 - 8 * i));
		}
		sum = rtn_csum_fold(sum);
		rtn_put_be16(c, sum ? (uint16_t)sum : 0xffff);
	}
	rtn_put_be64(frame + off, v);
}

#endif
