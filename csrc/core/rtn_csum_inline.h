/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_csum_inline.h
 * @brief The Internet checksum's one's complement sum (RFC 1071), the one
 *        every layer uses: the VNIC's cut and merge, the real-time IPv4 path.
 */
#ifndef RTN_CSUM_INLINE_H
#define RTN_CSUM_INLINE_H

#include <stdint.h>
#include <string.h>

/*
 * Add @p len bytes at @p p; only the last piece of a sum may have an odd
 * length.  64-bit words summed into 128 bits, the high half (the carries)
 * added back at the end: 2^64 is 1 modulo 0xffff, as 2^16 is, so the folded
 * result is the sum of 16-bit words (RFC 1071 sections 2C and 2D), in the
 * machine's byte order: stored with memcpy() it is the sum's bytes in
 * network order (section 2B).  Four words a round: the VNIC sums every
 * byte it cuts or merges.
 */
static inline uint64_t rtn_csum_words(uint64_t sum, const uint8_t *p, uint32_t len)
{
	unsigned __int128 acc;
	uint64_t w0, w1, w2, w3;
	uint32_t w32;
	uint16_t h = 0;

#if defined(__x86_64__)
	/*
	 * x86-64: 64 bytes a round as one chain of add-with-carry, one
	 * instruction per word where the 128-bit sum below takes about four
	 * (half of the VNIC's instructions per KB cut or merged, bench_cost).
	 * The round's last carry goes back in with one more adc; that carries
	 * again only from an all-ones sum (leaving 0), which the second adc
	 * makes 1 with no carry left.
	 */
	while (len >= 64) {
		__asm__("addq 0(%[p]), %[s]\n\t"
			"adcq 8(%[p]), %[s]\n\t"
			"adcq 16(%[p]), %[s]\n\t"
			"adcq 24(%[p]), %[s]\n\t"
			"adcq 32(%[p]), %[s]\n\t"
			"adcq 40(%[p]), %[s]\n\t"
			"adcq 48(%[p]), %[s]\n\t"
			"adcq 56(%[p]), %[s]\n\t"
			"adcq $0, %[s]\n\t"
			"adcq $0, %[s]"
			: [s] "+r"(sum)
			: [p] "r"(p), "m"(*(const uint8_t(*)[64])p)
			: "cc");
		p += 64;
		len -= 64;
	}
#endif
	acc = sum; /* 2^64 words of carry room: add with carry, no compare */
	while (len >= 32) {
		memcpy(&w0, p, 8);
		memcpy(&w1, p + 8, 8);
		memcpy(&w2, p + 16, 8);
		memcpy(&w3, p + 24, 8);
		acc += w0;
		acc += w1;
		acc += w2;
		acc += w3;
		p += 32;
		len -= 32;
	}
	while (len >= 8) {
		memcpy(&w0, p, 8);
		acc += w0;
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		memcpy(&w32, p, 4);
		acc += w32;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&h, p, 2);
		acc += h;
		p += 2;
		len -= 2;
	}
	if (len) {
		h = 0;
		memcpy(&h, p, 1); /* padded with a zero byte */
		acc += h;
	}
	sum = (uint64_t)acc + (uint64_t)(acc >> 64);
	return sum + (sum < (uint64_t)(acc >> 64)); /* the end-around carry */
}

static inline uint16_t rtn_csum_fold16(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

#endif /* RTN_CSUM_INLINE_H */
