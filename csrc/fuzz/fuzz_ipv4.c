// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_ipv4.c
 * @brief Fuzz target: the IPv4/UDP/ICMP parser and what is built from what
 *        it accepts (rtn_ipv4.c), and the neighbour table's reader on
 *        arbitrary shared memory (rtn_neigh.c).
 *
 * Input: a frame, as received (in a heap buffer of exactly its length),
 * then a stamp offset and value, then a neighbour table's bytes.
 * Checked besides the sanitizers: a verdict is a kind or a known reason;
 * what is accepted lies inside the frame, after a 20-byte IPv4 header; a
 * stamp written into an accepted UDP datagram of an IPv4 frame leaves it
 * accepted (its checksum followed, RFC 1624); the answer to an echo request parses as
 * the echo reply with the request's identifier, sequence number and data;
 * the table lookup returns 0, -EHOSTUNREACH or -EAGAIN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_chan.h"
#include "rtn_ipv4.h"
#include "rtn_neigh.h"
#include "fuzz_input.h"

static void check(int ok, const char *what)
{
	if (!ok)
		fuzz_fail("%s", what);
}

static void check_stamp(uint8_t *frame, uint32_t len, const struct rtn_ip_pkt *p,
			struct fuzz_in *in)
{
	struct rtn_ip_pkt again;
	uint32_t end = (uint32_t)p->data_off + p->data_len, off;

	/* the parser leaves the EtherType to its caller; the stamp writer looks at it */
	if (p->data_len < 8 || frame[12] != 0x08 || frame[13] != 0x00)
		return;
	/* an even offset from the UDP header, inside the payload: where our stamps go */
	off = p->data_off + ((fuzz_u16(in) % (p->data_len - 7)) & ~1u);
	if (off + 8 > end)
		return;
	check(rtn_udp_stamp(frame, len, off, fuzz_u64(in)) == 0, "a stamp that fits is written");
	check(rtn_ip_parse(frame, len, &again) == RTN_IP_UDP, "a stamped datagram stays sound");
}

static void check_echo(const uint8_t *frame, const struct rtn_ip_pkt *p)
{
	static uint8_t out[RTN_CHAN_MSG_MAX];
	struct rtn_ip_pkt r;
	uint32_t n = rtn_icmp_echo_answer(frame, p, out, sizeof(out), 1);

	if (!n)
		return;
	check(rtn_ip_parse(out, n, &r) == RTN_IP_ECHO_REPLY, "the answer parses as a reply");
	check(r.sport == p->sport && r.dport == p->dport && r.src == p->dst && r.dst == p->src,
	      "the answer keeps identifier and sequence, addresses swapped");
	check(r.data_len == p->data_len &&
		      !memcmp(out + r.data_off, frame + p->data_off, p->data_len),
	      "the answer keeps the data");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in_make(data, size);
	uint32_t len = fuzz_u16(&in) % (RTN_CHAN_MSG_MAX + 1);
	struct rtn_neigh_table *t = malloc(sizeof(*t));
	uint8_t *frame = malloc(len ? len : 1), mac[6];
	struct rtn_ip_pkt p;
	int v, rc;

	if (!frame || !t) {
		free(frame);
		free(t);
		return 0;
	}
	len = (uint32_t)fuzz_bytes(&in, frame, len);
	v = rtn_ip_parse(frame, len, &p);
	check(v == RTN_IP_UDP || v == RTN_IP_ECHO_REQUEST || v == RTN_IP_ECHO_REPLY ||
		      (v < 0 && -v < RTN_IPBAD_N),
	      "a verdict is a kind or a reason");
	if (v > 0) {
		check(p.l4_off == 14 + RTN_IP_HLEN, "no options accepted");
		check((uint32_t)p.data_off + p.data_len <= len, "the data lies inside the frame");
	}
	if (v == RTN_IP_UDP)
		check_stamp(frame, len, &p, &in);
	if (v == RTN_IP_ECHO_REQUEST)
		check_echo(frame, &p);
	memset(t, 0, sizeof(*t));
	fuzz_bytes(&in, t, sizeof(*t));
	rc = rtn_neigh_lookup(t, fuzz_u32(&in), mac);
	check(rc == 0 || rc == -EHOSTUNREACH || rc == -EAGAIN, "a lookup's result");
	free(frame);
	free(t);
	return 0;
}
