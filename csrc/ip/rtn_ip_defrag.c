// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_ip_defrag.c
 * @brief A fragmented UDP datagram put together again, fragments in order
 *        (rtn_ip_defrag.h).
 */
#include <string.h>
#include "rtn_ip_defrag.h"
#include "rtn_ipv4_inline.h"

_Static_assert(RTN_IP_WHOLE_MAX == RTN_IP_OFF + RTN_IP_MAX_LEN, "a whole datagram's frame");

/* Give up the datagrams no fragment of which came for RTN_IP_FRAG_IDLE_NS. */
static void give_up_idle(struct rtn_ip_defrag *d, int64_t now, uint64_t *timed_out)
{
	uint32_t i;

	for (i = 0; i < RTN_IP_COLLECTORS; i++)
		if (d->c[i].busy && now - d->c[i].last_ns > RTN_IP_FRAG_IDLE_NS) {
			d->c[i].busy = 0;
			(*timed_out)++;
		}
}

static struct rtn_ip_collector *collector_of(struct rtn_ip_defrag *d, const struct rtn_ip_pkt *p)
{
	uint32_t i;

	for (i = 0; i < RTN_IP_COLLECTORS; i++) {
		struct rtn_ip_collector *c = &d->c[i];

		if (c->busy && c->src == p->src && c->dst == p->dst && c->id == p->ip_id)
			return c;
	}
	return NULL;
}

static struct rtn_ip_collector *free_collector(struct rtn_ip_defrag *d)
{
	uint32_t i;

	for (i = 0; i < RTN_IP_COLLECTORS; i++)
		if (!d->c[i].busy)
			return &d->c[i];
	return NULL;
}

/* The collector's datagram, whole: its IPv4 header says so (no fragment bits, all its length). */
static uint32_t make_whole(struct rtn_ip_collector *c)
{
	uint8_t *ip = c->frame + RTN_IP_OFF;
	uint32_t tot = RTN_IP_HLEN + c->next;

	rtn_put_be16(ip + 2, (uint16_t)tot);
	rtn_put_be16(ip + 6, 0);
	rtn_put_be16(ip + 10, 0);
	rtn_put_be16(ip + 10, rtn_inet_csum(ip, RTN_IP_HLEN));
	c->busy = 0;
	return RTN_IP_OFF + tot;
}

int rtn_ip_defrag_take(struct rtn_ip_defrag *d, const uint8_t *frame, uint32_t len,
		       const struct rtn_ip_pkt *p, int64_t now, const uint8_t **whole,
		       uint64_t *timed_out)
{
	uint32_t field, off, n;
	struct rtn_ip_collector *c;
	int more;

	give_up_idle(d, now, timed_out);
	/* rtn_ip_parse() checked the header: no options, the total length inside the frame */
	if (len < RTN_L4_OFF || p->l4_off != RTN_L4_OFF || p->ip_len < RTN_IP_HLEN ||
	    RTN_IP_OFF + (uint32_t)p->ip_len > len)
		return -RTN_IPBAD_TOTLEN_LONG;
	field = rtn_get_be16(frame + RTN_IP_OFF + 6);
	off = (field & RTN_IP_OFFMASK) * 8u;
	more = (field & RTN_IP_MF) != 0;
	n = p->ip_len - RTN_IP_HLEN;
	c = collector_of(d, p);
	if (p->proto != RTN_IPPROTO_UDP)
		return -RTN_IPBAD_FRAGMENT;
	/* every fragment but the last ends on an 8-byte boundary; IPv4 ends at 65,535 */
	if ((more && (n == 0 || n % 8)) || off + n > RTN_IP_MAX_LEN - RTN_IP_HLEN) {
		if (c)
			c->busy = 0;
		return -RTN_IPBAD_FRAG_SIZE;
	}
	if (off == 0) {
		/* a datagram begun again: the one of that name so far is given up */
		if (!c)
			c = free_collector(d);
		if (!c)
			return -RTN_IPBAD_FRAG_NO_ROOM;
		memcpy(c->frame, frame, RTN_L4_OFF);
		c->src = p->src;
		c->dst = p->dst;
		c->id = p->ip_id;
		c->busy = 1;
	} else if (!c || off != c->next) {
		if (c)
			c->busy = 0; /* a hole or an overlap: RTnet takes fragments in order only */
		return -RTN_IPBAD_FRAGMENT;
	}
	memcpy(c->frame + RTN_L4_OFF + off, frame + RTN_L4_OFF, n);
	c->next = off + n;
	c->last_ns = now;
	if (more)
		return 0;
	*whole = c->frame;
	return (int)make_whole(c);
}

void rtn_ip_defrag_clear(struct rtn_ip_defrag *d)
{
	uint32_t i;

	for (i = 0; i < RTN_IP_COLLECTORS; i++)
		d->c[i].busy = 0;
}
