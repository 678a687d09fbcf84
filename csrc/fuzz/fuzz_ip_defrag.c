// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_ip_defrag.c
 * @brief Fuzz target: a fragmented UDP datagram put together again
 *        (rtn_ip_defrag.c) from any frames at all, as the station's RT
 *        thread hands them over: what rtn_ip_parse() calls a fragment.
 *
 * Input: records, each a frame's length (16 bits), how long after the one
 * before it came (16 bits, in ms: a collector goes idle after 250), and the
 * frame's bytes (in a heap buffer of exactly its length).  Every 16th
 * record sets its frame's IPv4 header checksum right first, so that the
 * fuzzer reaches past it.  Checked besides the sanitizers: a verdict is 0,
 * a whole frame's length or a known reason; a whole datagram is at most
 * RTN_IP_WHOLE_MAX bytes, its IPv4 header sound (no options, no fragment
 * bits, its total length the frame's, its checksum right) and its data the
 * fragments' data in order; the parser never calls it a fragment; and the
 * datagrams given up never outnumber those begun.
 */
#include <stdlib.h>
#include <string.h>
#include "rtn_ip_defrag.h"
#include "rtn_ipv4.h"
#include "rtn_ipv4_inline.h"
#include "fuzz_input.h"

static void check(int ok, const char *what)
{
	if (!ok)
		fuzz_fail("%s", what);
}

/* what the datagram being followed should hold: the first fragment begun under the fuzzer's eye */
static struct {
	uint32_t src, dst, next;
	uint16_t id;
	int on;
	uint8_t data[RTN_IP_MAX_LEN];
} ref;

static void follow(const uint8_t *frame, const struct rtn_ip_pkt *p, int v)
{
	uint32_t field = rtn_get_be16(frame + RTN_IP_OFF + 6), off = (field & RTN_IP_OFFMASK) * 8;
	uint32_t n = (uint32_t)p->ip_len - RTN_IP_HLEN;

	if (v < 0) { /* a fragment of the followed datagram refused: it was given up */
		if (ref.on && ref.src == p->src && ref.dst == p->dst && ref.id == p->ip_id)
			ref.on = 0;
		return;
	}
	if (off == 0) {
		ref.src = p->src;
		ref.dst = p->dst;
		ref.id = p->ip_id;
		ref.on = 1;
	} else if (!ref.on || ref.src != p->src || ref.dst != p->dst || ref.id != p->ip_id) {
		return;
	}
	memcpy(ref.data + off, frame + RTN_L4_OFF, n);
	ref.next = off + n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rtn_ip_defrag d;
	struct fuzz_in in = fuzz_in_make(data, size);
	uint64_t timed_out = 0, begun = 0;
	int64_t now = 0;
	uint32_t rec = 0;

	rtn_ip_defrag_clear(&d);
	ref.on = 0;
	while (fuzz_more(&in) && rec < 200) {
		uint32_t len = fuzz_u16(&in) % 1600;
		uint8_t *frame = malloc(len ? len : 1);
		const uint8_t *whole = NULL;
		struct rtn_ip_pkt p, w;
		int v;

		now += (int64_t)fuzz_u16(&in) * 1000000;
		len = (uint32_t)fuzz_bytes(&in, frame, len);
		if (++rec % 16 == 0 && len >= RTN_L4_OFF) {
			frame[RTN_IP_OFF + 10] = frame[RTN_IP_OFF + 11] = 0;
			rtn_put_be16(frame + RTN_IP_OFF + 10,
				     rtn_inet_csum(frame + RTN_IP_OFF, RTN_IP_HLEN));
		}
		if (rtn_ip_parse(frame, len, &p) != -RTN_IPBAD_FRAGMENT) {
			free(frame);
			continue;
		}
		v = rtn_ip_defrag_take(&d, frame, len, &p, now, &whole, &timed_out);
		check(v >= 0 || (-v > 0 && -v < RTN_IPBAD_N),
		      "a verdict is 0, a length or a reason");
		if (v >= 0 && !(rtn_get_be16(frame + RTN_IP_OFF + 6) & RTN_IP_OFFMASK))
			begun++;
		if (ref.on && timed_out) /* a datagram given up for idling: no longer followed */
			ref.on = 0;
		follow(frame, &p, v);
		if (v > 0) {
			const uint8_t *ip = whole + RTN_IP_OFF;

			check(v <= RTN_IP_WHOLE_MAX && v >= RTN_L4_OFF, "a whole frame's length");
			check(ip[0] == 0x45 && rtn_get_be16(ip + 6) == 0 &&
				      rtn_get_be16(ip + 2) == (uint32_t)v - RTN_IP_OFF &&
				      rtn_inet_csum(ip, RTN_IP_HLEN) == 0,
			      "a whole datagram's IPv4 header is sound");
			check(rtn_ip_parse(whole, (uint32_t)v, &w) != -RTN_IPBAD_FRAGMENT,
			      "a whole datagram is no fragment");
			if (ref.on && ref.src == p.src && ref.dst == p.dst && ref.id == p.ip_id) {
				check(ref.next == (uint32_t)v - RTN_L4_OFF &&
					      !memcmp(ref.data, whole + RTN_L4_OFF, ref.next),
				      "a whole datagram holds its fragments' data in order");
				ref.on = 0;
			}
		}
		check(timed_out <= begun, "no more datagrams given up than begun");
		free(frame);
	}
	return 0;
}
