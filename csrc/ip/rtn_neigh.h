/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_neigh.h
 * @brief The static neighbour table (RTnet's rtroute): IPv4 address to MAC,
 *        as the application library reads it without a system call.
 *
 * Why in the channel's shared memory: a UDP sendto() needs the destination
 * MAC at once (-EHOSTUNREACH for an unknown one, as RTnet), and the hot path
 * makes no system call.  Resolving in the station's RT thread would leave
 * the error to be discovered after the send returned.  So the station
 * publishes the whole table into every UDP channel's page, a seqlock around
 * it: the writer (the station's control thread) makes seq odd, writes,
 * makes it even; a reader retries while it is odd or changed.  The page is
 * the station's to write; a reader that sees nonsense (an entry count above
 * RTN_NEIGH_MAX, a writer that never finishes) gets an error, not a crash
 * or a spin.
 */
#ifndef RTN_NEIGH_H
#define RTN_NEIGH_H

#include <stdint.h>

#define RTN_NEIGH_MAX	     64
#define RTN_NEIGH_READ_TRIES 1000 /* a reader gives up after this many torn reads */

struct rtn_neigh {
	uint32_t ip; /* host order */
	uint8_t mac[6];
	uint16_t pad;
};

struct rtn_neigh_table {
	uint32_t seq; /* odd while being written */
	uint32_t n;
	struct rtn_neigh e[RTN_NEIGH_MAX];
};

/**
 * The MAC of @p ip (host order): 0 and @p mac; the limited broadcast
 * 255.255.255.255 is ff:ff:ff:ff:ff:ff without an entry.
 * @return 0, -EHOSTUNREACH when there is no entry, -EAGAIN when no
 *         consistent read succeeded within RTN_NEIGH_READ_TRIES.
 */
int rtn_neigh_lookup(const struct rtn_neigh_table *t, uint32_t ip, uint8_t mac[6]);

/** Replace the whole table with @p n entries (@p n <= RTN_NEIGH_MAX, the caller checked). */
void rtn_neigh_publish(struct rtn_neigh_table *t, const struct rtn_neigh *e, uint32_t n);

#endif
