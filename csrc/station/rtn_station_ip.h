/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_ip.h
 * @brief The station's real-time IPv4: its address, the neighbour table it
 *        publishes to the UDP channels, ICMP echo, and their counters.
 *
 * The station's real-time address is set by its daemon, from one source:
 * the configuration's IPADDR / station.ip, replaced when RTcfg stage 1
 * assigns one (rtnet/daemon.py).  From it the XDP program steers echo
 * requests, the RT thread answers them and UDP sockets take their source.
 */
#ifndef RTN_STATION_IP_H
#define RTN_STATION_IP_H

#include <stdint.h>
#include "rtn_ipv4.h"
#include "rtn_neigh.h"
#include "rtn_station.h"

/**
 * The station's real-time IPv4 address @p ip (host order; 0: none, echo
 * requests then go to Linux), whose echo replies leave in TDMA slot
 * @p icmp_slot at priority @p icmp_prio (under NoMAC, in its FIFO).
 * @return 0, -EINVAL for a broadcast, multicast or out-of-range value, or
 *         the XDP map's error.
 */
int rtn_station_set_ipv4(struct rtn_station *s, uint32_t ip, uint32_t icmp_slot,
			 uint32_t icmp_prio);

/**
 * Replace the neighbour table with @p n entries (all or nothing): every UDP
 * channel's page gets it.  -EINVAL for more than RTN_NEIGH_MAX, a zero,
 * broadcast or multicast address, a duplicate address or a multicast MAC.
 */
int rtn_station_neigh_set(struct rtn_station *s, const struct rtn_neigh *e, uint32_t n);

#define RTN_IP_GROUPS 32 /* multicast groups joined at once, as the XDP program's map */

/**
 * Join (@p on) or leave multicast @p group (host order) for the station's
 * UDP sockets: its datagrams to a bound port are steered to the station
 * and delivered.  Joins are counted: the group is left at its last leave.
 * @return 0; -EADDRNOTAVAIL for an address outside 224.0.0.0/4 or leaving
 *         a group not joined; -ENOBUFS with RTN_IP_GROUPS joined already;
 *         the XDP map's error.
 */
int rtn_station_ipv4_group(struct rtn_station *s, uint32_t group, int on);

/** Steer ICMP echo replies of identifier @p id to the station (@p on) or no longer. */
int rtn_station_icmp_id(struct rtn_station *s, uint16_t id, int on);

/**
 * Steer ARP replies from @p ip (host order) to the station (@p on: rtroute
 * solicit in progress; the daemon's ARP channel gets them) or no longer.
 */
int rtn_station_arp_solicit(struct rtn_station *s, uint32_t ip, int on);

void rtn_station_ip_stats(const struct rtn_station *s, struct rtn_ip_stats *out);

#endif
