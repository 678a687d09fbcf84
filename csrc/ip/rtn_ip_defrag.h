/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_ip_defrag.h
 * @brief Putting a fragmented UDP datagram together again (RFC 791 section
 *        3.2), as RTnet's stack does: a few collectors, fragments in order.
 *
 * RTnet keeps a small fixed set of collectors, starts one with a datagram's
 * first fragment and appends each next fragment whose offset is where the
 * datagram has got to; a fragment out of order is dropped.  So here: a
 * first fragment (offset 0, MF) takes a free collector (RTN_IP_COLLECTORS of
 * them, allocated once, none on the data path), a later one must continue
 * its datagram exactly, and the last (no MF) makes it whole.  A datagram a
 * fragment of which is refused is given up at once, and so is one that
 * went RTN_IP_FRAG_IDLE_NS without a fragment, when its collector is next
 * looked at.  The whole datagram is one frame again: the first fragment's
 * Ethernet and IPv4 headers, total length and checksum rewritten, no
 * fragment bits, then the data; rtn_ip_parse() then checks it as any other
 * (UDP length and checksum over the whole datagram).
 *
 * Every fragment is hostile: its header was checked by rtn_ip_parse(), and
 * here its place, length and size against the datagram's.  A collector is
 * keyed by source, destination, identification and protocol (RFC 791).
 */
#ifndef RTN_IP_DEFRAG_H
#define RTN_IP_DEFRAG_H

#include <stdint.h>
#include "rtn_ipv4.h"

#define RTN_IP_COLLECTORS 8 /* datagrams put together at once (RTnet: COLLECTOR_COUNT) */
/*
 * A datagram no fragment of which came for this long is given up.  The
 * fragments of one datagram leave one sender's slot in order, one or more a
 * cycle: this is many TDMA cycles, and far below Linux's 30 s, which a
 * real-time stack has no use for.
 */
#define RTN_IP_FRAG_IDLE_NS 250000000
#define RTN_IP_WHOLE_MAX    65549 /* a whole datagram's frame: RTN_IP_OFF + RTN_IP_MAX_LEN */

struct rtn_ip_collector {
	int64_t last_ns; /* its last fragment came then */
	uint32_t src, dst;
	uint16_t id;
	uint8_t busy;
	uint32_t next; /* bytes after the IPv4 header so far: the next fragment's offset */
	uint8_t frame[RTN_IP_WHOLE_MAX];
};

struct rtn_ip_defrag {
	struct rtn_ip_collector c[RTN_IP_COLLECTORS];
};

/**
 * Take the fragment @p frame of @p len bytes, which rtn_ip_parse() refused
 * with -RTN_IPBAD_FRAGMENT after filling in @p p, at local time @p now.
 * @return 0 when it was kept (the datagram is not whole yet); the length of
 *         the whole datagram's frame, at *@p whole until the next call, when
 *         it was the last; or -RTN_IPBAD_* when it was refused.  A datagram
 *         given up meanwhile adds one to (*@p timed_out).
 */
int rtn_ip_defrag_take(struct rtn_ip_defrag *d, const uint8_t *frame, uint32_t len,
		       const struct rtn_ip_pkt *p, int64_t now, const uint8_t **whole,
		       uint64_t *timed_out);

/** Give up every datagram being put together (the station's reset). */
void rtn_ip_defrag_clear(struct rtn_ip_defrag *d);

#endif
