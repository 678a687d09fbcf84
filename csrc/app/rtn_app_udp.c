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

/*
 * A datagram leaving in fragments, as its bytes follow the IPv4 header: the
 * UDP header and a stamped socket's RTNX header, then the application's
 * payload.
 */
struct dgram {
	uint8_t head[8 + RTN_APP_XHDR_LEN];
	uint32_t head_len;
	const uint8_t *payload;
};

/* @p n bytes from @p off of the datagram into @p dst. */
static void dgram_copy(const struct dgram *d, uint32_t off, uint8_t *dst, uint32_t n)
{
	if (off < d->head_len) {
		uint32_t k = d->head_len - off < n ? d->head_len - off : n;

		memcpy(dst, d->head + off, k);
		dst += k;
		off += k;
		n -= k;
	}
	if (n)
		memcpy(dst, d->payload + (off - d->head_len), n);
}

/*
 * Send the datagram whose UDP payload (@p dlen bytes, the RTNX header
 * included) does not fit one frame of @p max bytes in @p frags fragments
 * (rtn_udp_frag_count()), built in a row of TX ring slots and committed at
 * once, so that the station takes them in order.  The identification is
 * the socket's numbering here; the station gives the datagram its own
 * (rtn_station_ip.c).  Each fragment's message carries the datagram's
 * number and times.
 */
static int send_fragments(struct rtn_app_chan *ch, const struct dgram *d, const uint8_t mac[6],
			  uint32_t src_ip, uint32_t dst_ip, uint32_t dlen, uint32_t max,
			  uint32_t frags, uint32_t seq, int64_t sched_ns, int64_t handover,
			  uint32_t flags)
{
	struct rtn_chan_shm *shm = ch->shm;
	struct rtn_msg *msgs = rtn_chan_tx_msgs(shm), *m, *first;
	uint32_t i, off, n, sum = 0;
	uint16_t c;
	int rc = 0;

	first = rtn_app_tx_slots(ch, frags, &rc);
	if (!first)
		return rc;
	for (i = 0; i < frags; i++) {
		m = rtn_ring_prod_nth(&shm->tx, msgs, ch->depth, i);
		rtn_udp_frag_span(dlen, max, i, &off, &n);
		dgram_copy(d, off, m->frame + RTN_L4_OFF, n);
		m->len = rtn_ip_fragment_finish(m->frame, mac, shm->station_mac, src_ip, dst_ip,
						(uint16_t)seq, off, n, i + 1 < frags);
		m->seq = seq;
		m->sched_ns = sched_ns;
		m->handover_ns = handover;
		m->pickup_ns = m->tx_ns = m->rx_ns = m->rx_rt_ns = 0;
		m->flags = flags;
		/* each fragment's data but the last is a multiple of 8 bytes: the words line up */
		sum = rtn_csum_add(sum, m->frame + RTN_L4_OFF, n);
	}
	/* the checksum over the whole datagram, in the first fragment's UDP header */
	c = rtn_csum_fold(sum + rtn_udp_pseudo(first->frame + RTN_IP_OFF, (uint16_t)(8 + dlen)));
	rtn_put_be16(first->frame + RTN_L4_OFF + 6, c ? c : 0xffff); /* 0: "none" (RFC 768) */
	rtn_app_tx_commit_n(ch, frags);
	return 0;
}

/*
 * The largest UDP payload the socket sends, @p head bytes of headers
 * (Ethernet, IPv4, UDP, a stamped socket's RTNX) in front of it: IPv4's
 * limit, and no more fragments than its TX ring holds.
 */
static uint32_t largest_payload(const struct rtn_app_chan *ch, uint32_t head, uint32_t max)
{
	uint32_t extra = head - RTN_UDP_HLEN,
		 step = max > RTN_L4_OFF ? (max - RTN_L4_OFF) & ~7u : 0;
	uint64_t udp = (uint64_t)step * ch->depth; /* UDP bytes in a ring of fragments */

	if (max > RTN_L4_OFF && udp < max - RTN_L4_OFF)
		udp = max - RTN_L4_OFF; /* one frame: no multiple of 8 to keep to */
	if (udp > 8 + RTN_UDP_MAX_DGRAM)
		udp = 8 + RTN_UDP_MAX_DGRAM;
	return udp >= 8 + extra ? (uint32_t)(udp - 8 - extra) : 0;
}

int rtn_app_sendto(struct rtn_app_chan *ch, uint32_t dst_ip, uint16_t dst_port, const void *payload,
		   uint32_t len, int64_t sched_ns, uint32_t *seq_out)
{
	struct rtn_chan_shm *shm = ch->shm;
	int stamped = ch->udp_flags & RTN_UDP_F_STAMPED, rc = 0;
	uint32_t head = stamped ? RTN_UDP_XOVERHEAD : RTN_UDP_HLEN, frags = 0, flags;
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
	/* what does not fit one frame of the channel leaves in fragments, as RTnet's */
	if (max >= head && len <= max - head)
		frags = 1;
	else if (len <= RTN_UDP_MAX_DGRAM && max >= head)
		frags = rtn_udp_frag_count(head - RTN_UDP_HLEN + len, max);
	if (!frags || frags > ch->depth)
		return rtn_set_error(-EMSGSIZE,
				     "datagram of %u bytes: the socket sends at most %u (IPv4's "
				     "limit, in fragments of its %u-byte frames, at most its TX "
				     "ring's %u)",
				     len, largest_payload(ch, head, max), max, ch->depth);
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
	/* the option as it stands now goes with the datagram: the station loops it back later */
	flags = __atomic_load_n(&shm->udp.sockopts, __ATOMIC_RELAXED) & RTN_UDP_NO_MC_LOOP ?
			RTN_MSG_NO_MC_LOOP :
			0;
	if (frags > 1) {
		struct dgram d = { .head_len = 8 + (stamped ? RTN_APP_XHDR_LEN : 0),
				   .payload = payload };
		uint8_t x[RTN_UDP_XOVERHEAD];
		uint32_t dlen = head - RTN_UDP_HLEN + len;

		handover = rtn_app_global_now(ch);
		if (sched_ns == RTN_APP_SCHED_NOW)
			sched_ns = handover;
		rtn_put_be16(d.head, ch->udp_port);
		rtn_put_be16(d.head + 2, dst_port);
		rtn_put_be16(d.head + 4, (uint16_t)(8 + dlen));
		rtn_put_be16(d.head + 6, 0);
		if (stamped) {
			rtn_app_hdr_put(x + RTN_UDP_APP_SHIFT, seq, sched_ns, handover);
			memcpy(d.head + 8, x + RTN_UDP_HLEN, RTN_APP_XHDR_LEN);
		}
		rc = send_fragments(ch, &d, mac, src_ip, dst_ip, dlen, max, frags, seq, sched_ns,
				    handover, flags);
		if (rc < 0)
			return rc;
		if (seq_out)
			*seq_out = seq;
		ch->next_seq++;
		return 0;
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
	m->flags = flags;
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
