/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_rules.h
 * @brief Which sockets of a program run under rtnet-run go through the
 *        station's real-time path: a list of rules, first match wins.
 *
 * One rule a line (several on one line separated by ';'), '#' starts a
 * comment that runs to the line's end:
 *
 *     rt|os  udp     LOCAL REMOTE  [prio N] [slot N] [lifetime US]
 *     rt|os  packet  ETHERTYPE     [prio N] [slot N] [lifetime US]
 *
 * LOCAL and REMOTE are '*' or ADDRESS[/PREFIX][:PORT] or *:PORT (a port
 * of '*' or none is any port); ETHERTYPE is a number (0x88b5) or '*'.
 * prio is the slot priority (0 highest .. 31), slot the TDMA slot (0..63),
 * lifetime how long a datagram or frame stays worth sending, in us (1 ..
 * 10 s): one not on the wire that long after the program sent it is
 * dropped and counted (rtn_chan_opts.lifetime_ns).
 * A socket is judged when it is bound (REMOTE unknown: a rule naming a
 * remote address or port does not match then), connected or first sends
 * (UDP), or created (packet).  No rule matching means the kernel's.
 */
#ifndef RTN_RULES_H
#define RTN_RULES_H

#include <stddef.h>
#include <stdint.h>

#define RTN_RULES_MAX	64
#define RTN_RULE_RT	1
#define RTN_RULE_OS	2
#define RTN_RULE_UDP	1
#define RTN_RULE_PACKET 2

struct rtn_rule {
	uint8_t action;	 /* RTN_RULE_RT or RTN_RULE_OS */
	uint8_t proto;	 /* RTN_RULE_UDP or RTN_RULE_PACKET */
	uint32_t l_addr; /* host order, under l_mask; mask 0: any */
	uint32_t l_mask;
	int32_t l_port; /* -1: any */
	uint32_t r_addr;
	uint32_t r_mask;
	int32_t r_port;
	int32_t ethertype;   /* -1: any */
	int32_t prio;	     /* -1: the socket's own */
	int32_t slot;	     /* -1: the socket's own */
	int32_t line;	     /* where it was written, for messages */
	int64_t lifetime_ns; /* 0: none */
};

struct rtn_rules {
	int n;
	struct rtn_rule r[RTN_RULES_MAX];
};

/**
 * Parse @p text and append its rules to @p out.  On a malformed rule
 * nothing of @p text is kept, -1 is returned and @p err holds one line
 * naming @p origin and the line number; 0 on success.
 */
int rtn_rules_parse(const char *text, const char *origin, struct rtn_rules *out, char *err,
		    size_t errcap);

/**
 * The first UDP rule matching a socket bound to @p laddr:@p lport (0 for
 * any) talking to @p raddr:@p rport (@p have_remote 0: not known yet), or
 * NULL.  Addresses and ports in host order.
 */
const struct rtn_rule *rtn_rules_match_udp(const struct rtn_rules *rs, uint32_t laddr,
					   uint16_t lport, int have_remote, uint32_t raddr,
					   uint16_t rport);

/** The first packet rule matching EtherType @p ethertype, or NULL. */
const struct rtn_rule *rtn_rules_match_packet(const struct rtn_rules *rs, uint16_t ethertype);

#endif
