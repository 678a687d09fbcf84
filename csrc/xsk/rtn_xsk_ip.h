/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xsk_ip.h
 * @brief The XDP program's IPv4 maps (xdp_rtnet.bpf.c): which UDP ports and
 *        which address are real-time, which ICMP echo identifiers are pinged.
 */
#ifndef RTN_XSK_IP_H
#define RTN_XSK_IP_H

#include <stdint.h>
#include "rtn_xsk.h"

/** Steer UDP to @p port (host order) to the socket (@p on) or leave it to Linux. */
int rtn_xsk_udp_port(struct rtn_xsk *x, uint16_t port, int on);
/** Steer UDP to multicast @p group (host order) to the socket (@p on) or leave it to Linux. */
int rtn_xsk_ipv4_group(struct rtn_xsk *x, uint32_t group, int on);
/** The real-time IPv4 address (host order, 0: none). */
int rtn_xsk_ipv4(struct rtn_xsk *x, uint32_t ip);
/** Steer ICMP echo replies of identifier @p id (@p on) or leave them to Linux. */
int rtn_xsk_icmp_id(struct rtn_xsk *x, uint16_t id, int on);
/** Steer ARP replies from @p ip (host order; a solicit in progress) or leave them to Linux. */
int rtn_xsk_arp_solicit(struct rtn_xsk *x, uint32_t ip, int on);

#endif
