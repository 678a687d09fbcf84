// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_app_udp.c
 * @brief UDP sockets on a channel (rtn_app.h): sendto() builds the whole
 *        datagram in the TX ring slot, the destination MAC read from the
 *        neighbour table in the channel's page; received datagrams are
 *        unpacked again from shared memory, which is checked as hostile.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "rtn_app.h"
#include "rtn_app_hdr.h"
#include "rtn_app_priv.h"
#include "rtn_chan_inline.h"
#include "rtn_core.h"
#include "rtn_ipv4_inline.h"
#include "rtn_neigh.h"

static void ip_text(uint32_t ip, char *out, size_t cap)
{
	snprintf(out, cap, "%u.%u.%u.%u", ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
}

int rtn_app_sendto(struct rtn_app_chan *ch, uint32_t dst_ip, uint16_t dst_port, const void *payload,
		   uint32_t len, int64_t sched_ns, uint32_t *seq_out)
{
	struct rtn_chan_shm *shm = ch->shm;
	int stamped = ch->udp_flags & RTN_UDP_F_STAMPED, rc = 0;
	uint32_t head = stamped ? RTN_UDP_XOVERHEAD : RTN_UDP_HLEN;
	uint32_t max = __atomic_load_n(&shm->max_size, __ATOMIC_RELAXED);
	uint32_t src_ip = __atomic_load_n(&shm->udp.ip, __ATOMIC_ACQUIRE), seq = ch->next_seq;
	uint8_t mac[6];
	struct rtn_msg *m;
	int64_t handover;
	char ip[16];

	rtn_clear_error();
	if (!ch->udp_port)
		return rtn_set_error(-EINVAL, "sendto: the channel is not a UDP socket");
	if (!dst_port)
		return rtn_set_error(-EINVAL, "sendto: destination port 0");
	if (max > RTN_CHAN_MSG_MAX)
		max = RTN_CHAN_MSG_MAX;
	/* no fragmentation: what does not fit one frame of the channel is refused */
	if (len > max || head + len > max)
		return rtn_set_error(-EMSGSIZE,
				     "datagram of %u bytes: the socket sends at most %u "
				     "(no fragmentation)",
				     len, max > head ? max - head : 0);
	rc = rtn_neigh_lookup(&shm->udp.neigh, dst_ip, mac);
	if (rc < 0) {
		ip_text(dst_ip, ip, sizeof(ip));
		if (rc == -EHOSTUNREACH)
			ch->tx_unreachable++;
		return rtn_set_error(rc,
				     rc == -EHOSTUNREACH ?
					     "%s: no neighbour entry (rtroute add)" :
					     "%s: the neighbour table is being rewritten",
				     ip);
	}
	m = rtn_app_tx_slot(ch, &rc);
	if (!m)
		return rc;
	handover = rtn_app_global_now(ch);
	if (sched_ns == RTN_APP_SCHED_NOW)
		sched_ns = handover;
	if (stamped) /* the RTNX header: every offset shifted by the IP and UDP headers */
		rtn_app_hdr_put(m->frame + RTN_UDP_APP_SHIFT, seq, sched_ns, handover);
	if (len)
		memcpy(m->frame + head, payload, len);
	/* the IP identification: the socket's numbering (DF is set, RFC 6864) */
	m->len = rtn_udp_finish(m->frame, mac, shm->station_mac, src_ip, dst_ip, ch->udp_port,
				dst_port, (uint16_t)seq, head - RTN_UDP_HLEN + len);
	m->seq = seq;
	m->sched_ns = sched_ns;
	m->handover_ns = handover;
	m->pickup_ns = m->tx_ns = m->rx_ns = m->rx_rt_ns = 0;
	/* the option as it stands now goes with the datagram: the station loops it back later */
	m->flags = __atomic_load_n(&shm->udp.sockopts, __ATOMIC_RELAXED) & RTN_UDP_NO_MC_LOOP ?
			   RTN_MSG_NO_MC_LOOP :
			   0;
	rtn_app_tx_commit(ch);
	if (seq_out)
		*seq_out = seq;
	ch->next_seq++;
	return 0;
}

int rtn_app_udp_connect(struct rtn_app_chan *ch, uint32_t ip, uint16_t port)
{
	rtn_clear_error();
	if (!ch->udp_port)
		return rtn_set_error(-EINVAL, "connect: the channel is not a UDP socket");
	if (ip && !port)
		return rtn_set_error(-EINVAL, "connect: port 0");
	__atomic_store_n(&ch->shm->udp.peer, ip ? (uint64_t)ip << 16 | port : 0, __ATOMIC_RELEASE);
	return 0;
}

int rtn_app_udp_bound(struct rtn_app_chan *ch, uint32_t ip)
{
	rtn_clear_error();
	if (!ch->udp_port)
		return rtn_set_error(-EINVAL, "bind: the channel is not a UDP socket");
	__atomic_store_n(&ch->shm->udp.bound, ip, __ATOMIC_RELEASE);
	return 0;
}

int rtn_app_udp_sockopts(struct rtn_app_chan *ch, uint32_t bits)
{
	rtn_clear_error();
	if (!ch->udp_port)
		return rtn_set_error(-EINVAL, "socket options: the channel is not a UDP socket");
	if (bits & ~(uint32_t)RTN_UDP_SOCKOPTS)
		return rtn_set_error(-EINVAL, "socket options: unknown bits 0x%x", bits);
	__atomic_store_n(&ch->shm->udp.sockopts, bits, __ATOMIC_RELAXED);
	return 0;
}
