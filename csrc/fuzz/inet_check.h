/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file inet_check.h
 * @brief An independent check of IPv4 header and TCP checksums for the VNIC
 *        fuzz targets: RFC 1071 sums of big-endian words, written the plain
 *        way, so they share nothing with the optimised code they judge.
 */
#ifndef RTN_FUZZ_INET_CHECK_H
#define RTN_FUZZ_INET_CHECK_H

#include <stdint.h>
#include "fuzz_input.h"

#define INET_ETH_HLEN  14
#define INET_P_IPV4    0x0800
#define INET_P_IPV6    0x86DD
#define INET_PROTO_TCP 6

static inline uint16_t inet_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t inet_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* the judge, not the judged: not traced, or every 64 KB packet costs 32k traced compares */
FUZZ_UNTRACED static uint64_t inet_sum(uint64_t sum, const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += inet_be16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static inline uint16_t inet_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* 1 if the IPv4 header at @p ip (@p ihl bytes) has a valid checksum. */
static inline int inet_ipv4_hdr_ok(const uint8_t *ip, uint32_t ihl)
{
	return inet_fold(inet_sum(0, ip, ihl)) == 0xffff;
}

/*
 * 1 if the TCP segment at @p l4 (to the end of @p len) of an Ethernet frame
 * with its IP header at offset 14 has a valid checksum (IPv4 or IPv6).
 */
static inline int inet_tcp_ok(const uint8_t *f, uint32_t len, uint32_t l4, int v6)
{
	uint32_t tcp_len = len - l4;
	uint64_t sum;

	if (!v6) {
		sum = inet_sum(0, f + INET_ETH_HLEN + 12, 8); /* source, destination */
		sum += INET_PROTO_TCP + tcp_len;
	} else {
		sum = inet_sum(0, f + INET_ETH_HLEN + 8, 32);
		sum += (tcp_len >> 16) + (tcp_len & 0xffff) + INET_PROTO_TCP;
	}
	return inet_fold(inet_sum(sum, f + l4, tcp_len)) == 0xffff;
}

#endif
