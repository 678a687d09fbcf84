/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_ipv4.h
 * @brief IPv4, UDP and ICMP echo on the real-time path: the parser of what
 *        arrives (every byte hostile, a counter per reason) and the builders
 *        of what leaves (RFC 791, 768, 792; checksums per RFC 1071).
 *
 * What the real-time path takes: IPv4 without options (IHL 5), UDP and ICMP
 * echo request/reply.  A fragment (MF or an offset) is not parsed here:
 * rtn_ip_parse() says -RTN_IPBAD_FRAGMENT with its addresses, identification
 * and protocol filled in, and a UDP datagram's fragments are put together
 * again by rtn_ip_defrag.h, whose whole datagram is then parsed here as any
 * other.  Anything else that reaches the parser is counted by reason and
 * dropped; the XDP program leaves the rest of IPv4 with Linux in the first
 * place.  Addresses and ports are host order here.
 *
 * Frames the builders make: Ethernet, 20-byte IPv4 header (TTL 64 as RTnet's
 * stack, DF set on a datagram of one frame, TOS 0), then UDP or ICMP; a UDP
 * checksum that comes out 0 is sent as 0xffff (RFC 768).  A datagram larger
 * than its socket's frame leaves in fragments, as RTnet's stack sends it
 * (rtn_udp_frag_count()).
 */
#ifndef RTN_IPV4_H
#define RTN_IPV4_H

#include <stdint.h>

#define RTN_ETH_P_IPV4	    2048   /* 0x0800 */
#define RTN_IP_HLEN	    20	   /* what we send: no options */
#define RTN_IP_OFF	    14	   /* frame offset of the IPv4 header */
#define RTN_L4_OFF	    34	   /* 14 + 20: UDP or ICMP header of what we send */
#define RTN_UDP_HLEN	    42	   /* 14 + 20 + 8: where a UDP payload starts */
#define RTN_ICMP_HLEN	    42	   /* 14 + 20 + 8: where ICMP echo data starts */
#define RTN_UDP_MAX_PAYLOAD 1472   /* 1514 - 42: one Ethernet frame, no fragments */
#define RTN_IP_MAX_LEN	    65535  /* an IPv4 datagram's total length, at most */
#define RTN_UDP_MAX_DGRAM   65507  /* 65535 - 20 - 8: a UDP datagram's payload, at most */
#define RTN_IP_MF	    0x2000 /* more fragments */
#define RTN_IP_OFFMASK	    0x1fff /* the fragment offset, in 8-byte units */
/*
 * A stamped socket's datagram (both ends opt in) starts its UDP payload with
 * the RTNX header of rtn_app_hdr.h, so the header sits RTN_UDP_APP_SHIFT
 * bytes later than in an EtherType channel's frame: every RTN_APP_*_OFF
 * plus the shift.  The RT threads' stamps land inside the checksummed
 * datagram, so whoever writes one updates the UDP checksum (RFC 1624).
 */
#define RTN_UDP_APP_SHIFT     28 /* RTN_UDP_HLEN - 14 */
#define RTN_UDP_XOVERHEAD     86 /* RTN_UDP_HLEN + 44 (RTN_APP_XHDR_LEN) */
#define RTN_UDP_TX_OFF	      58 /* RTN_APP_TX_OFF + 28 */
#define RTN_UDP_PICKUP_OFF    78 /* RTN_APP_PICKUP_OFF + 28 */
#define RTN_IP_TTL	      64
#define RTN_IP_BROADCAST      4294967295u /* 255.255.255.255 */
#define RTN_IPPROTO_ICMP      1
#define RTN_IPPROTO_UDP	      17
#define RTN_ICMP_ECHO_REPLY   0
#define RTN_ICMP_ECHO_REQUEST 8

/* What rtn_ip_parse() found (> 0). */
#define RTN_IP_UDP	    1
#define RTN_IP_ECHO_REQUEST 2
#define RTN_IP_ECHO_REPLY   3

/* Why a frame was refused: rtn_ip_parse() returns the negated reason. */
#define RTN_IPBAD_TRUNCATED   1 /* shorter than an IPv4 header */
#define RTN_IPBAD_VERSION     2 /* not version 4 */
#define RTN_IPBAD_IHL	      3 /* header length below 20 bytes or beyond the frame */
#define RTN_IPBAD_OPTIONS     4 /* IP options: not on the real-time path */
#define RTN_IPBAD_TOTLEN_LONG 5 /* total length claims more than the frame holds */
#define RTN_IPBAD_TOTLEN_SHORT \
	6 /* total length below the headers, or the frame
					 * carries more than it (beyond minimum-size padding) */
#define RTN_IPBAD_FRAGMENT \
	7 /* a fragment that fits no datagram being put together: past the first
	   * with none begun, out of order (RTnet takes them in order), or not UDP */
#define RTN_IPBAD_CSUM	     8	/* IPv4 header checksum */
#define RTN_IPBAD_PROTO	     9	/* neither UDP nor ICMP */
#define RTN_IPBAD_UDP_LEN    10 /* UDP length below 8 or beyond the IP payload */
#define RTN_IPBAD_UDP_CSUM   11
#define RTN_IPBAD_ICMP_SHORT 12 /* ICMP shorter than an echo header */
#define RTN_IPBAD_ICMP_CSUM  13
#define RTN_IPBAD_ICMP_TYPE  14 /* ICMP other than echo request/reply */
#define RTN_IPBAD_NOT_OURS   15 /* to another address, or from a broadcast/zero one */
#define RTN_IPBAD_NO_PORT    16 /* UDP to a port no socket is bound to */
#define RTN_IPBAD_STAMP_HDR  17 /* a stamped socket's datagram without a sound RTNX header */
#define RTN_IPBAD_FRAG_SIZE \
	18 /* a fragment but the last whose data is not a multiple of 8 bytes, or a
	    * datagram growing past 65,535 bytes */
#define RTN_IPBAD_FRAG_NO_ROOM 19 /* a first fragment while every collector is busy */
#define RTN_IPBAD_FRAG_TIMEOUT 20 /* a datagram given up: no fragment of it came for a while */
#define RTN_IPBAD_N	       21 /* reasons 1..20; index 0 unused */

/** A parsed datagram: offsets into the frame, values in host order. */
struct rtn_ip_pkt {
	uint32_t src, dst;
	uint16_t ip_id;
	uint8_t proto;
	uint8_t icmp_type;
	uint16_t sport, dport; /* UDP ports; ICMP echo: identifier, sequence number */
	uint16_t l4_off;       /* frame offset of the UDP or ICMP header */
	uint16_t data_off;     /* frame offset of the UDP payload or the echo data */
	uint16_t data_len;
	uint16_t ip_len; /* the IPv4 total length */
};

/** The station's IPv4 counters (rtn_station_ip_stats()). */
struct rtn_ip_stats {
	uint64_t rx_udp;	   /* delivered to a UDP socket */
	uint64_t rx_echo_request;  /* answered */
	uint64_t rx_echo_reply;	   /* delivered to the ping channel */
	uint64_t tx_echo_reply;	   /* queued for the slot */
	uint64_t echo_reply_drops; /* no room in the slot's queue */
	uint64_t tx_refused;	   /* a UDP socket's frame that was not its own datagram */
	uint64_t rx_fragments;	   /* fragments taken into a datagram being put together */
	uint64_t rx_reassembled;   /* datagrams put together again from their fragments */
	uint64_t bad[RTN_IPBAD_N]; /* per reason, RTN_IPBAD_* */
};

/**
 * Parse the IPv4 frame @p frame of @p len bytes (Ethernet header included,
 * EtherType already seen to be IPv4), checking every length against the
 * frame and the IPv4, UDP (unless 0: not computed) and ICMP checksums.
 * @return RTN_IP_UDP, RTN_IP_ECHO_REQUEST or RTN_IP_ECHO_REPLY with *out,
 *         or -RTN_IPBAD_* (*out then partly filled).  -RTN_IPBAD_FRAGMENT
 *         for a fragment whose header is sound: *out has its addresses,
 *         identification, protocol, total length and l4_off.
 */
int rtn_ip_parse(const uint8_t *frame, uint32_t len, struct rtn_ip_pkt *out);

/** The Internet checksum of @p len bytes (RFC 1071), folded and complemented. */
uint16_t rtn_inet_csum(const uint8_t *p, uint32_t len);

/**
 * Write the big-endian stamp @p v at @p off of @p frame (@p len bytes,
 * off + 8 <= len), keeping a UDP datagram's checksum right (RFC 1624):
 * rtn_stamp_put() of rtn_ipv4_inline.h, for callers outside the data path.
 * @return 0, or -1 (nothing written) when the stamp does not fit.
 */
int rtn_udp_stamp(uint8_t *frame, uint32_t len, uint32_t off, uint64_t v);

/**
 * Write Ethernet, IPv4 and UDP headers in front of the @p plen payload
 * bytes already at @p frame + RTN_UDP_HLEN, with both checksums.
 * @return the frame's length.
 */
uint32_t rtn_udp_finish(uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
			uint32_t src_ip, uint32_t dst_ip, uint16_t sport, uint16_t dport,
			uint16_t ip_id, uint32_t plen);

/**
 * The fragments of a UDP datagram whose payload does not fit one frame of
 * @p frame_max bytes (RFC 791 section 3.2): fragment @p i (from 0) of the
 * datagram whose @p plen payload bytes follow the 8-byte UDP header.
 * rtn_udp_frag_count() says how many there are (1: it fits one frame, 0: it
 * is too large for IPv4 or @p frame_max leaves no room for 8 data bytes); a
 * fragment but the last carries the largest multiple of 8 bytes that fits.
 * rtn_udp_frag_span() gives fragment @p i's place in the datagram that
 * follows the IPv4 header (the UDP header and payload): its offset in
 * *@p off and length in *@p n.  The fragment's frame is RTN_L4_OFF + n bytes.
 */
uint32_t rtn_udp_frag_count(uint32_t plen, uint32_t frame_max);
/**
 * The largest UDP payload that leaves in at most @p frags frames of
 * @p frame_max bytes (and within IPv4's limit): rtn_udp_frag_count() of it
 * is 1 to @p frags, of one byte more it is 0 or more than @p frags.
 */
uint32_t rtn_udp_frag_max_payload(uint32_t frame_max, uint32_t frags);
void rtn_udp_frag_span(uint32_t plen, uint32_t frame_max, uint32_t i, uint32_t *off, uint32_t *n);

/**
 * Write Ethernet and IPv4 headers in front of a fragment's @p n bytes
 * already at @p frame + RTN_L4_OFF, @p off bytes into its datagram (for
 * fragment 0 the UDP header, whose checksum over all the fragments' data
 * the caller writes): MF when @p more, DF clear.
 * @return the frame's length.
 */
uint32_t rtn_ip_fragment_finish(uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
				uint32_t src_ip, uint32_t dst_ip, uint16_t ip_id, uint32_t off,
				uint32_t n, int more);

/**
 * The same for an ICMP echo (@p type RTN_ICMP_ECHO_REQUEST or _REPLY) whose
 * @p dlen data bytes are already at @p frame + RTN_ICMP_HLEN.
 */
uint32_t rtn_icmp_echo_finish(uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6],
			      uint32_t src_ip, uint32_t dst_ip, uint8_t type, uint16_t id,
			      uint16_t seq, uint16_t ip_id, uint32_t dlen);

/**
 * The reply to the echo request @p req (parsed into @p p) into @p out of
 * @p cap bytes: addresses swapped, identifier, sequence and data kept.
 * @p out is another buffer than @p req.
 * @return its length, or 0 if it does not fit.
 */
uint32_t rtn_icmp_echo_answer(const uint8_t *req, const struct rtn_ip_pkt *p, uint8_t *out,
			      uint32_t cap, uint16_t ip_id);

#endif
