// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_station_ip.c
 * @brief The station's real-time IPv4 (rtn_station_ip.h): its address and
 *        neighbour table (control thread), UDP delivery by destination port
 *        and ICMP echo (RT thread), and what a UDP socket may send.
 *
 * A UDP socket is an application channel bound to a port (rtn_chan_opts
 * udp_port).  The application library builds the whole frame in its TX
 * ring slot (rtn_app_udp.c); the station checks it is the socket's own
 * datagram before it goes, and writes the RT thread's stamps into a
 * stamped one with the UDP checksum kept right (rtn_stamp_put()).  The
 * station's daemon has one more IPv4 channel, without a port: the echo
 * replies of its pings (rtnet/rtping.py) arrive there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_ip_defrag.h"
#include "rtn_ipv4_inline.h"
#include "rtn_station_priv.h"
#include "rtn_xsk_ip.h"

_Static_assert(RTN_CHAN_CHAIN_MAX == RTN_IP_WHOLE_MAX, "a whole datagram is one channel chain");

/* The station's IPv4: set by the control thread, read by the RT thread. */
struct station_ipv4 {
	uint32_t addr;		       /* host order, 0 none: atomic */
	uint32_t icmp_slot, icmp_prio; /* atomic */
	uint16_t next_id;	       /* IP identification of the echo replies (RT thread) */
	uint32_t n_neigh;
	struct rtn_neigh neigh[RTN_NEIGH_MAX];
	uint32_t groups[RTN_IP_GROUPS];	    /* joined multicast groups, 0 free: atomic */
	uint32_t group_refs[RTN_IP_GROUPS]; /* their joins (control thread, ctl_lock) */
	struct rtn_ip_stats st;		    /* RT thread */
	uint8_t reply[RTN_CHAN_MSG_MAX];    /* an echo reply being built (RT thread) */
	struct rtn_ip_defrag defrag;	    /* datagrams being put together (RT thread) */
};

int rtn_ip_create(struct rtn_station *s)
{
	s->ip = calloc(1, sizeof(*s->ip));
	return s->ip ? 0 : rtn_set_error(-ENOMEM, "station: out of memory for IPv4");
}

void rtn_ip_destroy(struct rtn_station *s)
{
	free(s->ip);
	s->ip = NULL;
}

/* For the harnesses (csrc/fuzz/): the counters and the echo replies' identification at zero. */
void rtn_ip_reset(struct rtn_station *s)
{
	memset(&s->ip->st, 0, sizeof(s->ip->st));
	s->ip->next_id = 0;
	rtn_ip_defrag_clear(&s->ip->defrag);
}

static int ip_unicast(uint32_t ip)
{
	return ip && ip != RTN_IP_BROADCAST && (ip >> 28) != 0xe; /* 224/4: multicast */
}

/* ---- control thread ------------------------------------------------------------ */

int rtn_station_set_ipv4(struct rtn_station *s, uint32_t ip, uint32_t icmp_slot, uint32_t icmp_prio)
{
	int i, rc;

	rtn_clear_error();
	if (ip && !ip_unicast(ip))
		return rtn_set_error(-EINVAL, "%u.%u.%u.%u cannot be the station's address",
				     ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
	if (icmp_slot >= RTN_TDMA_MAX_SLOTS || icmp_prio >= RTN_TDMA_PRIOS)
		return rtn_set_error(-EINVAL,
				     "echo replies in slot %u at priority %u: outside "
				     "0..%d and 0..%d",
				     icmp_slot, icmp_prio, RTN_TDMA_MAX_SLOTS - 1,
				     RTN_TDMA_PRIOS - 1);
	pthread_mutex_lock(&s->ctl_lock);
	rc = rtn_xsk_ipv4(s->xsk, ip);
	if (rc == 0) {
		__atomic_store_n(&s->ip->icmp_slot, icmp_slot, __ATOMIC_RELAXED);
		__atomic_store_n(&s->ip->icmp_prio, icmp_prio, __ATOMIC_RELAXED);
		__atomic_store_n(&s->ip->addr, ip, __ATOMIC_RELEASE);
		for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
			if (s->chans[i].shm && s->chans[i].udp_port)
				__atomic_store_n(&s->chans[i].shm->udp.ip, ip, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_ipv4_group(struct rtn_station *s, uint32_t group, int on)
{
	int i, free_at = -1, rc = 0;

	rtn_clear_error();
	if ((group >> 28) != 0xe)
		return rtn_set_error(-EADDRNOTAVAIL, "%u.%u.%u.%u is not a multicast group",
				     group >> 24, group >> 16 & 255, group >> 8 & 255, group & 255);
	pthread_mutex_lock(&s->ctl_lock);
	for (i = 0; i < RTN_IP_GROUPS; i++) {
		if (s->ip->groups[i] == group)
			break;
		if (!s->ip->groups[i] && free_at < 0)
			free_at = i;
	}
	if (on && i < RTN_IP_GROUPS) {
		s->ip->group_refs[i]++;
	} else if (on && free_at < 0) {
		rc = rtn_set_error(-ENOBUFS, "%d multicast groups are joined already",
				   RTN_IP_GROUPS);
	} else if (on) {
		rc = rtn_xsk_ipv4_group(s->xsk, group, 1);
		if (rc == 0) {
			s->ip->group_refs[free_at] = 1;
			__atomic_store_n(&s->ip->groups[free_at], group, __ATOMIC_RELEASE);
		}
	} else if (i == RTN_IP_GROUPS) {
		rc = rtn_set_error(-EADDRNOTAVAIL, "%u.%u.%u.%u is not joined", group >> 24,
				   group >> 16 & 255, group >> 8 & 255, group & 255);
	} else if (--s->ip->group_refs[i] == 0) {
		__atomic_store_n(&s->ip->groups[i], 0, __ATOMIC_RELEASE);
		rtn_xsk_ipv4_group(s->xsk, group, 0);
	}
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

/* RT thread: whether a UDP socket of the station joined @p group. */
int rtn_ip_group_joined(const struct rtn_station *s, uint32_t group)
{
	int i;

	if ((group >> 28) != 0xe)
		return 0;
	for (i = 0; i < RTN_IP_GROUPS; i++)
		if (__atomic_load_n(&s->ip->groups[i], __ATOMIC_ACQUIRE) == group)
			return 1;
	return 0;
}

int rtn_station_neigh_set(struct rtn_station *s, const struct rtn_neigh *e, uint32_t n)
{
	uint32_t i, j;

	rtn_clear_error();
	if (n > RTN_NEIGH_MAX)
		return rtn_set_error(-EINVAL, "%u neighbours: at most %d", n, RTN_NEIGH_MAX);
	for (i = 0; i < n; i++) {
		if (!ip_unicast(e[i].ip))
			return rtn_set_error(-EINVAL, "neighbour %u: not a unicast address", i);
		if (e[i].mac[0] & 1)
			return rtn_set_error(-EINVAL, "neighbour %u: a multicast MAC", i);
		for (j = 0; j < i; j++)
			if (e[j].ip == e[i].ip)
				return rtn_set_error(-EINVAL, "neighbour %u: address given twice",
						     i);
	}
	pthread_mutex_lock(&s->ctl_lock);
	memcpy(s->ip->neigh, e, n * sizeof(*e));
	s->ip->n_neigh = n;
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (s->chans[i].shm && s->chans[i].udp_port)
			rtn_neigh_publish(&s->chans[i].shm->udp.neigh, e, n);
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

int rtn_station_icmp_id(struct rtn_station *s, uint16_t id, int on)
{
	int rc;

	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	rc = rtn_xsk_icmp_id(s->xsk, id, on);
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_arp_solicit(struct rtn_station *s, uint32_t ip, int on)
{
	int rc;

	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	rc = rtn_xsk_arp_solicit(s->xsk, ip, on);
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

void rtn_station_ip_stats(const struct rtn_station *s, struct rtn_ip_stats *out)
{
	memcpy(out, &s->ip->st, sizeof(*out)); /* counters of the RT thread: a snapshot */
}

/* Channel @p o, open, another UDP socket than @p c on @p c's port. */
static int port_holder(const struct chan *o, const struct chan *c)
{
	return o->shm && o != c && o->udp_port == c->udp_port;
}

/* What a UDP socket's application says it set now: SO_REUSEADDR, SO_REUSEPORT. */
static uint32_t udp_share(const struct chan *c)
{
	return __atomic_load_n(&c->shm->udp.sockopts, __ATOMIC_RELAXED) &
	       (RTN_UDP_SHARE_ADDR | RTN_UDP_SHARE_PORT);
}

/*
 * Linux's rule for a second socket on a UDP port: both set SO_REUSEADDR, or
 * both SO_REUSEPORT (the first may have set it after its bind).  Here they
 * also have one owner, a user (another's socket could take its datagrams
 * otherwise), and are stamped alike, since a broadcast reaches each of them
 * as one datagram.
 */
static int may_share(const struct chan *a, const struct chan *b)
{
	return (udp_share(a) & udp_share(b)) && a->udp_owner && a->udp_owner == b->udp_owner &&
	       a->udp_flags == b->udp_flags;
}

/* Under ctl_lock, from rtn_station_chan_open(): the page gets the address and the table. */
int rtn_ip_chan_open(struct rtn_station *s, struct chan *c, uint32_t share)
{
	int i, rc;

	if (!c->udp_port)
		return 0;
	if (!__atomic_load_n(&s->ip->addr, __ATOMIC_ACQUIRE))
		return rtn_set_error(-EADDRNOTAVAIL, "UDP port %u: the station has no IPv4 address",
				     c->udp_port);
	c->shm->udp.sockopts = share;
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (port_holder(&s->chans[i], c) && !may_share(&s->chans[i], c))
			return rtn_set_error(-EADDRINUSE, "UDP port %u is bound already",
					     c->udp_port);
	rc = rtn_xsk_udp_port(s->xsk, c->udp_port, 1);
	if (rc < 0)
		return rc;
	c->shm->udp.ip = s->ip->addr;
	c->shm->udp.port = c->udp_port;
	c->shm->udp.flags = c->udp_flags;
	rtn_neigh_publish(&c->shm->udp.neigh, s->ip->neigh, s->ip->n_neigh);
	return 0;
}

void rtn_ip_chan_close(struct rtn_station *s, struct chan *c)
{
	int i;

	if (!c->udp_port)
		return;
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (port_holder(&s->chans[i], c))
			return; /* another socket on the port: the XDP program still steers it */
	rtn_xsk_udp_port(s->xsk, c->udp_port, 0);
}

/* ---- what a channel's frame may be, and its stamps (RT thread) --------------------- */

/* A fragment's offset in bytes, or 0 for a datagram's first (or only) frame. */
static uint32_t frag_offset(const uint8_t *frame)
{
	return (rtn_get_be16(frame + RTN_IP_OFF + 6) & RTN_IP_OFFMASK) * 8u;
}

/*
 * An IPv4/UDP frame from a stamped socket with an RTNX header: where the
 * stamps go.  Never a fragment past the first: its bytes there are data.
 */
static int stamped_udp(const struct chan *c, const uint8_t *frame, uint32_t len)
{
	return c->udp_port && (c->udp_flags & RTN_UDP_F_STAMPED) && len >= RTN_UDP_XOVERHEAD &&
	       !frag_offset(frame) && rtn_get_be32(frame + RTN_UDP_HLEN) == RTN_APP_MAGIC_X;
}

/*
 * A fragment of a UDP socket's datagram (rtn_udp_frag_count()): the first
 * carries the socket's port, and each later one continues the datagram the
 * first began, in order, with its identification.  The station numbers the
 * datagrams it sends in fragments itself, so that two of its sockets never
 * send one identification to one receiver at once (RFC 6864): the IPv4
 * header gets the station's identification and its checksum again.
 */
static int tx_fragment_ok(struct rtn_station *s, struct chan *c, uint8_t *frame, uint32_t len,
			  struct chan_tx_undo *undo)
{
	uint8_t *ip = frame + RTN_IP_OFF;
	uint32_t off = frag_offset(frame), n = rtn_get_be16(ip + 2);
	uint16_t app_id = rtn_get_be16(ip + 4);

	if (n < RTN_IP_HLEN || RTN_IP_OFF + n > len)
		return 0;
	n -= RTN_IP_HLEN;
	if (off == 0) {
		if (len < RTN_UDP_HLEN || rtn_get_be16(frame + RTN_L4_OFF) != c->udp_port)
			return 0;
		c->frag.app_id = app_id;
		c->frag.id = s->ip->next_id++;
	} else if (!c->frag.next || off != c->frag.next || app_id != c->frag.app_id) {
		c->frag.next = 0;
		return 0;
	}
	c->frag.next = rtn_get_be16(ip + 6) & RTN_IP_MF ? off + n : 0;
	memcpy(undo->id, ip + 4, 2);
	memcpy(undo->csum, ip + 10, 2);
	undo->rewrote = 1;
	rtn_put_be16(ip + 4, c->frag.id);
	rtn_put_be16(ip + 10, 0);
	rtn_put_be16(ip + 10, rtn_inet_csum(ip, RTN_IP_HLEN));
	return 1;
}

/*
 * A UDP socket sends its own datagrams only: IPv4 without options, UDP from
 * its port and the station's address, whole or in fragments (above).  The
 * daemon's ping channel (IPv4, no port) sends echo requests it built
 * itself; an EtherType channel anything of its EtherType (as before).  A
 * refused frame is counted.
 */
int rtn_chan_tx_ok(struct rtn_station *s, struct chan *c, uint8_t *frame, uint32_t len,
		   struct chan_tx_undo *undo)
{
	undo->frag = c->frag;
	undo->rewrote = 0;
	if (!c->udp_port)
		return 1;
	/* a later fragment may be shorter than a UDP header: its data alone */
	if (len >= RTN_L4_OFF && rtn_get_be16(frame + 12) == RTN_ETH_P_IPV4 &&
	    frame[RTN_IP_OFF] == 0x45 && frame[RTN_IP_OFF + 9] == RTN_IPPROTO_UDP &&
	    rtn_get_be32(frame + RTN_IP_OFF + 12) ==
		    __atomic_load_n(&s->ip->addr, __ATOMIC_RELAXED)) {
		if (rtn_get_be16(frame + RTN_IP_OFF + 6) & (RTN_IP_MF | RTN_IP_OFFMASK)) {
			if (tx_fragment_ok(s, c, frame, len, undo))
				return 1;
		} else if (len >= RTN_UDP_HLEN && rtn_get_be16(frame + RTN_L4_OFF) == c->udp_port) {
			c->frag.next = 0; /* a datagram of one frame: none is under way */
			return 1;
		}
	}
	c->frag.next = 0;
	s->ip->st.tx_refused++;
	return 0;
}

int32_t rtn_chan_tx_off(const struct chan *c, const uint8_t *frame, uint32_t len)
{
	if (c->udp_port)
		return stamped_udp(c, frame, len) ? RTN_UDP_TX_OFF : -1;
	if (c->ethertype == RTN_ETH_P_IPV4)
		return -1; /* the ping channel's echo requests: nothing to stamp */
	return rtn_app_hdr_tx_off(frame, len);
}

void rtn_chan_stamp_pickup(const struct chan *c, uint8_t *frame, uint32_t len, int64_t t)
{
	if (c->udp_port) {
		if (stamped_udp(c, frame, len))
			rtn_stamp_put(frame, len, RTN_UDP_PICKUP_OFF, (uint64_t)t);
	} else if (c->ethertype != RTN_ETH_P_IPV4) {
		rtn_app_hdr_stamp_pickup(frame, len, t);
	}
}

void rtn_ip_chan_frame_limit(struct rtn_station *s, struct chan *c)
{
	const struct rtn_disc_ops *ops = disc_ops(s);
	uint32_t limit = c->max_size,
		 slot = ops->slot_frame ? ops->slot_frame(s->disc_priv, c->slot) : 0;

	if (slot && slot < limit)
		limit = slot;
	if (__atomic_load_n(&c->shm->max_size, __ATOMIC_RELAXED) != limit)
		__atomic_store_n(&c->shm->max_size, limit, __ATOMIC_RELAXED);
}

void rtn_chan_tx_undo(struct chan *c, uint8_t *frame, const struct chan_tx_undo *undo)
{
	c->frag = undo->frag;
	if (undo->rewrote) { /* the frame checked again later must read as its application wrote it */
		memcpy(frame + RTN_IP_OFF + 4, undo->id, 2);
		memcpy(frame + RTN_IP_OFF + 10, undo->csum, 2);
	}
}

/* ---- receiving (RT thread) ------------------------------------------------------- */

/*
 * The sockets datagram @p p goes to, into @p to; how many.  As Linux's UDP
 * chooses: a socket connected to the datagram's source before any other,
 * else the newest unconnected one (where that one set SO_REUSEPORT: one of
 * those that did, by a hash of the source); a broadcast or multicast
 * datagram (@p group) to each of them.  A socket connected elsewhere takes
 * none, nor one bound to another address than the datagram's (a socket
 * bound to the station's address takes no broadcast).  The peers and
 * addresses are the applications' word (rtn_chan_udp): any value only
 * moves datagrams among one owner's sockets.
 */
static uint32_t udp_chans(struct rtn_station *s, const struct rtn_ip_pkt *p, int group,
			  struct chan **to)
{
	uint64_t from = (uint64_t)p->src << 16 | p->sport;
	struct chan *open[RTN_STATION_MAX_CHANS], *newest = NULL;
	uint32_t i, n = 0, nopen = 0, nport = 0;

	/* an EtherType channel's udp_port is 0: no socket is bound to it */
	if (!p->dport)
		return 0;
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++) {
		struct chan *c = s->live[i];
		uint32_t bound;
		uint64_t peer;

		if (!c || c->udp_port != p->dport)
			continue;
		peer = __atomic_load_n(&c->shm->udp.peer, __ATOMIC_RELAXED);
		bound = __atomic_load_n(&c->shm->udp.bound, __ATOMIC_RELAXED);
		if ((peer && peer != from) || (bound && bound != p->dst))
			continue;
		if (group) {
			to[n++] = c;
		} else if (peer) {
			to[0] = c;
			return 1;
		} else {
			open[nopen++] = c;
			if (!newest || c->opened > newest->opened)
				newest = c;
		}
	}
	if (group || !newest)
		return n;
	if (udp_share(newest) & RTN_UDP_SHARE_PORT) {
		for (i = 0; i < nopen; i++)
			if (udp_share(open[i]) & RTN_UDP_SHARE_PORT)
				open[nport++] = open[i];
		newest = open[(uint32_t)((from * 0x9e3779b97f4a7c15ull) >> 32) % nport];
	}
	to[0] = newest;
	return 1;
}

static struct chan *ping_chan(struct rtn_station *s)
{
	uint32_t i;

	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (s->live[i] && !s->live[i]->udp_port && s->live[i]->ethertype == RTN_ETH_P_IPV4)
			return s->live[i];
	return NULL;
}

/* An echo reply leaves in the station's slot (TDMA), or in NoMAC's FIFO. */
static int queue_reply(struct rtn_station *s, const uint8_t *frame, uint32_t len)
{
	return disc_ops(s)->queue(s->disc_priv,
				  __atomic_load_n(&s->ip->icmp_slot, __ATOMIC_RELAXED),
				  __atomic_load_n(&s->ip->icmp_prio, __ATOMIC_RELAXED), frame, len);
}

static void answer_echo(struct rtn_station *s, const uint8_t *frame, const struct rtn_ip_pkt *p)
{
	uint32_t n = rtn_icmp_echo_answer(frame, p, s->ip->reply, sizeof(s->ip->reply),
					  s->ip->next_id++);

	s->ip->st.rx_echo_request++;
	if (n && queue_reply(s, s->ip->reply, n) == 0)
		s->ip->st.tx_echo_reply++;
	else
		s->ip->st.echo_reply_drops++;
}

/*
 * A fragment: kept until its datagram is whole, and then the whole one is
 * what the rest of rtn_ip_rx() parses and delivers.  The verdict on it.
 */
static int take_fragment(struct rtn_station *s, const uint8_t **frame, uint32_t *len,
			 struct rtn_ip_pkt *p, int64_t now)
{
	const uint8_t *whole = NULL;
	int v = rtn_ip_defrag_take(&s->ip->defrag, *frame, *len, p, now, &whole,
				   &s->ip->st.bad[RTN_IPBAD_FRAG_TIMEOUT]);

	if (v < 0)
		return v;
	s->ip->st.rx_fragments++;
	if (v == 0)
		return 0;
	s->ip->st.rx_reassembled++;
	*frame = whole;
	*len = (uint32_t)v;
	return rtn_ip_parse(whole, (uint32_t)v, p);
}

uint32_t rtn_ip_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx_local,
		   int64_t rt_local, struct rtn_app_stamps *st, const uint8_t **deliver,
		   uint32_t *deliver_len, int *staged, struct chan **to, int looped)
{
	int64_t off = s->tdma ? rtn_tdma_clock_offset(s->tdma) : 0;
	uint32_t own = __atomic_load_n(&s->ip->addr, __ATOMIC_ACQUIRE), n = 0;
	struct rtn_ip_pkt p;
	int v = rtn_ip_parse(frame, len, &p), hdr = 0;

	if (v == -RTN_IPBAD_FRAGMENT) {
		v = take_fragment(s, &frame, &len, &p, rt_local);
		if (v == 0)
			return 0;
	}

	if (v > 0 && (!own || !ip_unicast(p.src) ||
		      (p.dst != own && !(v == RTN_IP_UDP && (p.dst == RTN_IP_BROADCAST ||
							     rtn_ip_group_joined(s, p.dst))))))
		v = -RTN_IPBAD_NOT_OURS;
	if (v == RTN_IP_UDP && !(n = udp_chans(s, &p, p.dst != own, to)))
		v = -RTN_IPBAD_NO_PORT;
	if (v == RTN_IP_ECHO_REPLY) {
		to[0] = ping_chan(s);
		n = to[0] != NULL;
		if (!n)
			v = -RTN_IPBAD_NO_PORT;
	}
	/* the sockets of one port are stamped alike (may_share()) */
	if (v == RTN_IP_UDP && (to[0]->udp_flags & RTN_UDP_F_STAMPED)) {
		/* the RTNX header's offsets are the EtherType frame's, shifted by IP and UDP */
		hdr = rtn_app_hdr_parse(frame + RTN_UDP_APP_SHIFT,
					(uint32_t)p.data_off + p.data_len - RTN_UDP_APP_SHIFT, st);
		if (hdr < 0)
			v = -RTN_IPBAD_STAMP_HDR;
	} else {
		memset(st, 0, sizeof(*st));
		st->seq = v == RTN_IP_ECHO_REPLY ? p.dport : 0; /* the echo's sequence number */
	}
	/*
	 * Looped back: a UDP datagram only (its sender may have rewritten it
	 * since the station checked it); a group not joined here, or no socket
	 * for it, is nobody's loss.
	 */
	if (looped &&
	    (v == -RTN_IPBAD_NOT_OURS || v == -RTN_IPBAD_NO_PORT || (v > 0 && v != RTN_IP_UDP)))
		return 0;
	if (v < 0) {
		s->ip->st.bad[-v]++;
		return 0;
	}
	if (v == RTN_IP_ECHO_REQUEST) {
		answer_echo(s, frame, &p);
		return 0;
	}
	st->t[RTN_STAMP_RX_XDP] = rtn_sat_add(rx_local, off);
	st->t[RTN_STAMP_RX_RT] = rtn_sat_add(rt_local, off);
	/* what the ring keeps is the IP datagram: Ethernet padding stays behind */
	*deliver = frame;
	*deliver_len = RTN_IP_OFF + (uint32_t)p.ip_len;
	if (v == RTN_IP_UDP)
		s->ip->st.rx_udp++;
	else
		s->ip->st.rx_echo_reply++;
	*staged = hdr > 0;
	return n;
}
