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
 * One datagram on its way out: where it goes, what it carries and what
 * each of its messages says (its number, times and flags), however many
 * frames it takes.
 */
struct udp_out {
	const uint8_t *mac; /* the next hop's, from the neighbour table */
	uint32_t src_ip, dst_ip;
	uint16_t dst_port;
	int stamped;	/* an RTNX header goes in front of the payload */
	uint32_t head;	/* bytes in front of the payload: Ethernet to UDP, RTNX */
	uint32_t max;	/* the channel's frame size */
	uint32_t frags; /* frames the datagram takes: 1, or its fragments */
	uint32_t seq, flags;
	int64_t sched_ns;
	const uint8_t *payload;
	uint32_t len;
};

/* The handover time, and the scheduled time a datagram sent "now" takes from it. */
static int64_t handover_now(struct rtn_app_chan *ch, struct udp_out *o)
{
	int64_t handover = rtn_app_global_now(ch);

	if (o->sched_ns == RTN_APP_SCHED_NOW)
		o->sched_ns = handover;
	return handover;
}

/* What each message of the datagram carries besides its frame. */
static void msg_meta(struct rtn_msg *m, const struct udp_out *o, int64_t handover)
{
	m->seq = o->seq;
	m->sched_ns = o->sched_ns;
	m->handover_ns = handover;
	m->pickup_ns = m->tx_ns = m->rx_ns = m->rx_rt_ns = 0;
	m->flags = o->flags;
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
 * Send the datagram that does not fit one frame of the channel in its
 * fragments (rtn_udp_frag_count()), built in a row of TX ring slots and
 * committed at once, so that the station takes them in order.  The
 * identification is the socket's numbering here; the station gives the
 * datagram its own (rtn_station_ip.c).  Each fragment's message carries the
 * datagram's number and times.
 */
static int send_fragments(struct rtn_app_chan *ch, struct udp_out *o)
{
	struct rtn_chan_shm *shm = ch->shm;
	struct rtn_msg *msgs = rtn_chan_tx_msgs(shm), *m, *first;
	uint32_t dlen = o->head - RTN_UDP_HLEN + o->len; /* UDP payload, RTNX included */
	struct dgram d = { .head_len = 8 + (o->stamped ? RTN_APP_XHDR_LEN : 0),
			   .payload = o->payload };
	uint8_t x[RTN_UDP_XOVERHEAD];
	int64_t handover = handover_now(ch, o);
	uint32_t i, off, n, sum = 0;
	uint16_t c;
	int rc = 0;

	rtn_put_be16(d.head, ch->udp_port);
	rtn_put_be16(d.head + 2, o->dst_port);
	rtn_put_be16(d.head + 4, (uint16_t)(8 + dlen));
	rtn_put_be16(d.head + 6, 0);
	if (o->stamped) {
		rtn_app_hdr_put(x + RTN_UDP_APP_SHIFT, o->seq, o->sched_ns, handover);
		memcpy(d.head + 8, x + RTN_UDP_HLEN, RTN_APP_XHDR_LEN);
	}
	first = rtn_app_tx_slots(ch, o->frags, &rc);
	if (!first)
		return rc;
	for (i = 0; i < o->frags; i++) {
		m = rtn_ring_prod_nth(&shm->tx, msgs, ch->depth, i);
		rtn_udp_frag_span(dlen, o->max, i, &off, &n);
		dgram_copy(&d, off, m->frame + RTN_L4_OFF, n);
		m->len = rtn_ip_fragment_finish(m->frame, o->mac, shm->station_mac, o->src_ip,
						o->dst_ip, (uint16_t)o->seq, off, n,
						i + 1 < o->frags);
		msg_meta(m, o, handover);
		/* each fragment's data but the last is a multiple of 8 bytes: the words line up */
		sum = rtn_csum_add(sum, m->frame + RTN_L4_OFF, n);
	}
	/* the checksum over the whole datagram, in the first fragment's UDP header */
	c = rtn_csum_fold(sum + rtn_udp_pseudo(first->frame + RTN_IP_OFF, (uint16_t)(8 + dlen)));
	rtn_put_be16(first->frame + RTN_L4_OFF + 6, c ? c : 0xffff); /* 0: "none" (RFC 768) */
	rtn_app_tx_commit_n(ch, o->frags);
	return 0;
}

/* Send the datagram that fits one frame, built in place in its TX ring slot. */
static int send_one_frame(struct rtn_app_chan *ch, struct udp_out *o)
{
	struct rtn_msg *m;
	int64_t handover;
	int rc = 0;

	m = rtn_app_tx_slot(ch, &rc);
	if (!m)
		return rc;
	handover = handover_now(ch, o);
	if (o->stamped) /* the RTNX header: every offset shifted by the IP and UDP headers */
		rtn_app_hdr_put(m->frame + RTN_UDP_APP_SHIFT, o->seq, o->sched_ns, handover);
	if (o->len)
		memcpy(m->frame + o->head, o->payload, o->len);
	/* the IP identification: the socket's numbering (DF is set, RFC 6864) */
	m->len = rtn_udp_finish(m->frame, o->mac, ch->shm->station_mac, o->src_ip, o->dst_ip,
				ch->udp_port, o->dst_port, (uint16_t)o->seq,
				o->head - RTN_UDP_HLEN + o->len);
	msg_meta(m, o, handover);
	rtn_app_tx_commit(ch);
	return 0;
}

int rtn_app_sendto(struct rtn_app_chan *ch, uint32_t dst_ip, uint16_t dst_port, const void *payload,
		   uint32_t len, int64_t sched_ns, uint32_t *seq_out)
{
	struct rtn_chan_shm *shm = ch->shm;
	int stamped = ch->udp_flags & RTN_UDP_F_STAMPED, rc = 0;
	uint32_t head = stamped ? RTN_UDP_XOVERHEAD : RTN_UDP_HLEN, frags = 0;
	uint32_t max = __atomic_load_n(&shm->max_size, __ATOMIC_RELAXED);
	uint8_t mac[6];
	struct udp_out o;
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
	if (!frags || frags > ch->depth) {
		uint32_t most = rtn_udp_frag_max_payload(max, ch->depth);

		return rtn_set_error(-EMSGSIZE,
				     "datagram of %u bytes: the socket sends at most %u (IPv4's "
				     "limit, in fragments of its %u-byte frames, at most its TX "
				     "ring's %u)",
				     len,
				     most > head - RTN_UDP_HLEN ? most - (head - RTN_UDP_HLEN) : 0,
				     max, ch->depth);
	}
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
	o = (struct udp_out){
		.mac = mac,
		.src_ip = __atomic_load_n(&shm->udp.ip, __ATOMIC_ACQUIRE),
		.dst_ip = dst_ip,
		.dst_port = dst_port,
		.stamped = stamped,
		.head = head,
		.max = max,
		.frags = frags,
		.seq = ch->next_seq,
		/* the option as it stands now goes with the datagram: the station loops it back later */
		.flags = __atomic_load_n(&shm->udp.sockopts, __ATOMIC_RELAXED) &
					 RTN_UDP_NO_MC_LOOP ?
				 RTN_MSG_NO_MC_LOOP :
				 0,
		.sched_ns = sched_ns,
		.payload = payload,
		.len = len,
	};
	rc = frags > 1 ? send_fragments(ch, &o) : send_one_frame(ch, &o);
	if (rc < 0)
		return rc;
	if (seq_out)
		*seq_out = o.seq;
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
