// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_neigh.c
 * @brief The neighbour table's seqlock (rtn_neigh.h): one writer, the
 *        station's control thread; readers in any application.
 */
#include <errno.h>
#include <string.h>
#include "rtn_ipv4.h"
#include "rtn_neigh.h"

int rtn_neigh_lookup(const struct rtn_neigh_table *t, uint32_t ip, uint8_t mac[6])
{
	int tries;

	if (ip == RTN_IP_BROADCAST) {
		memset(mac, 0xff, 6);
		return 0;
	}
	if ((ip >> 28) == 0xe) { /* 224.0.0.0/4: the group's MAC (RFC 1112, 6.4) */
		mac[0] = 0x01;
		mac[1] = 0x00;
		mac[2] = 0x5e;
		mac[3] = ip >> 16 & 0x7f;
		mac[4] = ip >> 8 & 0xff;
		mac[5] = ip & 0xff;
		return 0;
	}
	for (tries = 0; tries < RTN_NEIGH_READ_TRIES; tries++) {
		uint32_t s1 = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE), s2;
		uint32_t n = __atomic_load_n(&t->n, __ATOMIC_RELAXED), i;
		int found = -1;
		uint8_t got[6];

		if (s1 & 1)
			continue;
		if (n > RTN_NEIGH_MAX)
			n = RTN_NEIGH_MAX; /* a broken count: read no further than the table */
		for (i = 0; i < n; i++)
			if (__atomic_load_n(&t->e[i].ip, __ATOMIC_RELAXED) == ip) {
				memcpy(got, (const void *)t->e[i].mac, 6);
				found = 0;
				break;
			}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&t->seq, __ATOMIC_RELAXED);
		if (s1 != s2)
			continue;
		if (found)
			return -EHOSTUNREACH;
		memcpy(mac, got, 6);
		return 0;
	}
	return -EAGAIN;
}

void rtn_neigh_publish(struct rtn_neigh_table *t, const struct rtn_neigh *e, uint32_t n)
{
	uint32_t seq = __atomic_load_n(&t->seq, __ATOMIC_RELAXED) | 1;

	__atomic_store_n(&t->seq, seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&t->n, n, __ATOMIC_RELAXED);
	memcpy(t->e, e, n * sizeof(*e));
	__atomic_store_n(&t->seq, seq + 1, __ATOMIC_RELEASE);
}
