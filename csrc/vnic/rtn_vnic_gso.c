/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_gso.c
 * @brief Software TSO/GSO (TAP -> wire) and TCP receive coalescing
 *        (wire -> TAP) for the VNIC, on plain byte buffers.
 *
 * The rules follow the kernel's own: tcp_gso_segment() for cutting (IPv4 id
 * +1 per segment, seq + i * gso_size, CWR only on the first segment, FIN
 * and PSH only on the last) and tcp_gro_receive() for merging (identical
 * headers but for seq, IP id and checksums; identical TCP options; flags
 * ACK, PSH allowed; equal payloads except a shorter last), but for two
 * boundaries.  Linux's GRO ends a packet at a PSH, so that pushed data
 * waits for no later segment, and at any change of the options, so that
 * cutting it again gives back the very segments.  A pump round has every
 * frame it merges already and writes them all at once.  So a PSH does not
 * end the packet (the merged packet carries it), and a later TSval does
 * not either (the packet keeps the first's; tcp_options_match).  Linux's
 * TCP stamps in milliseconds, so a round of 4 ms saw up to four stamps,
 * each a write of its own: at 100 Mbit/s modelled 5.5 segments a write
 * against 8 merged so, and the pump's preemptions by the receiving
 * application it wakes per write went from 0.0185 to 0.011 a packet
 * (medians of six runs each).  Merging across a new TSecr too (one write a
 * round) was measured and not kept: it thinned the ACKs the sender clocks
 * by, 56 Mbit/s against 69.  Should Linux forward a merged packet, its
 * segments leave with the first's TSval, as segments of one TSO packet do.
 *
 * Checksums are summed in host byte order: the ones' complement sum is
 * byte-order independent, so a sum of native 16-bit words, folded and
 * stored natively, gives the right bytes on the wire (RFC 1071 section 2B).
 */
#include <errno.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_csum_inline.h"
#include "rtn_tdma_proto_inline.h"
#include "rtn_vnic_gso.h"

_Static_assert(RTN_GSO_BUF == RTN_VNET_HDR_LEN + RTN_GSO_MAX + 256, "RTN_GSO_BUF");
_Static_assert(RTN_GRO_HEAD == RTN_VNET_HDR_LEN + 14 + 20 + 60, "RTN_GRO_HEAD");

#define ETH_P_IPV4   0x0800
#define ETH_P_IPV6   0x86DD
#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17
#define TCPF_FIN     0x01
#define TCPF_PSH     0x08
#define TCPF_ACK     0x10
#define TCPF_CWR     0x80

struct l4_hdrs {
	uint32_t l3, l4; /* offsets of the IP and transport headers */
	uint32_t l4_len; /* transport header + payload, from the IP header */
	int v6;
	uint8_t proto;
};

/* ---- checksums ------------------------------------------------------------------ */

static void csum_store(uint8_t *field, uint16_t v)
{
	memcpy(field, &v, 2);
}

static uint64_t pseudo_sum(const uint8_t *f, const struct l4_hdrs *h, uint32_t l4_len)
{
	uint8_t ph[40];

	if (!h->v6) {
		memcpy(ph, f + h->l3 + 12, 8); /* source, destination */
		ph[8] = 0;
		ph[9] = h->proto;
		rtn_put_be16(ph + 10, (uint16_t)l4_len);
		return rtn_csum_words(0, ph, 12);
	}
	memcpy(ph, f + h->l3 + 8, 32);
	rtn_put_be32(ph + 32, l4_len);
	ph[36] = ph[37] = ph[38] = 0;
	ph[39] = h->proto;
	return rtn_csum_words(0, ph, 40);
}

static void ipv4_csum_set(uint8_t *ip, uint32_t ihl)
{
	ip[10] = ip[11] = 0;
	csum_store(ip + 10, (uint16_t)~rtn_csum_fold16(rtn_csum_words(0, ip, ihl)));
}

static int ipv4_csum_ok(const uint8_t *ip, uint32_t ihl)
{
	return rtn_csum_fold16(rtn_csum_words(0, ip, ihl)) == 0xffff;
}

/* ---- parsing -------------------------------------------------------------------- */

/* Ethernet + IPv4 (any options) or IPv6 (no extension headers). */
static int parse_ip(const uint8_t *f, uint32_t len, struct l4_hdrs *h)
{
	uint16_t type;

	if (len < ETH_HLEN_RTN + 20)
		return -EINVAL;
	type = rtn_get_be16(f + 12);
	h->l3 = ETH_HLEN_RTN;
	if (type == ETH_P_IPV4) {
		uint32_t ihl = (f[14] & 0x0f) * 4u;
		uint32_t tot = rtn_get_be16(f + 16);

		if ((f[14] >> 4) != 4 || ihl < 20 || h->l3 + ihl > len || tot < ihl)
			return -EINVAL;
		h->v6 = 0;
		h->l4 = h->l3 + ihl;
		h->proto = f[23];
		h->l4_len = tot - ihl;
		return 0;
	}
	if (type == ETH_P_IPV6) {
		if (len < ETH_HLEN_RTN + 40 || (f[14] >> 4) != 6)
			return -EINVAL;
		h->v6 = 1;
		h->l4 = h->l3 + 40;
		h->proto = f[20];
		h->l4_len = rtn_get_be16(f + 18);
		return 0;
	}
	return -EINVAL;
}

/* ... followed by a complete TCP header; returns the length of all headers. */
static int parse_tcp(const uint8_t *f, uint32_t len, struct l4_hdrs *h)
{
	uint32_t doff;

	if (parse_ip(f, len, h) < 0 || h->proto != IPPROTO_TCP_ || h->l4 + 20 > len)
		return -EINVAL;
	doff = (f[h->l4 + 12] >> 4) * 4u;
	if (doff < 20 || h->l4 + doff > len)
		return -EINVAL;
	return (int)(h->l4 + doff);
}

int rtn_l4_csum_ok(const uint8_t *frame, uint32_t len)
{
	struct l4_hdrs h;
	uint32_t n;

	if (parse_ip(frame, len, &h) < 0)
		return 0;
	n = h.l4_len;
	if (h.l4 + n > len || (h.proto != IPPROTO_TCP_ && h.proto != IPPROTO_UDP_))
		return 0;
	if (h.proto == IPPROTO_UDP_ && !h.v6 && n >= 8 && !frame[h.l4 + 6] && !frame[h.l4 + 7])
		return 1; /* IPv4 UDP without a checksum */
	return rtn_csum_fold16(rtn_csum_words(pseudo_sum(frame, &h, n), frame + h.l4, n)) == 0xffff;
}

/* ---- Linux -> wire: segmentation ---------------------------------------------------- */

/* rtn_gso_begin() on the packet @p pkt of @p len bytes, its vnet header @p vh apart */
static int gso_begin(struct rtn_gso_seg *g, const struct rtn_vnet_hdr *v, uint8_t *pkt,
		     uint32_t len, uint32_t max_frame)
{
	struct rtn_vnet_hdr vh = *v;
	struct l4_hdrs h;
	uint8_t type;
	int hlen;

	memset(g, 0, sizeof(*g));
	if (len < ETH_HLEN_RTN)
		return -EINVAL;
	g->pkt = pkt;
	g->len = len;
	if (vh.hdr_len > g->len)
		return -EINVAL;
	type = vh.gso_type & (uint8_t)~RTN_VNET_GSO_ECN;
	if (type == RTN_VNET_GSO_NONE) {
		if (vh.gso_type & RTN_VNET_GSO_ECN)
			return -EINVAL;
		/* refused here like an oversized segment, not left for rtn_gso_next to fail */
		if (g->len > max_frame)
			return -EMSGSIZE;
		if (vh.flags & RTN_VNET_F_NEEDS_CSUM) {
			uint32_t start = vh.csum_start, field = start + vh.csum_offset;
			uint16_t c;

			if (start >= g->len || field + 2 > g->len)
				return -EINVAL;
			/* the field holds the pseudo-header sum: sum to the end, as skb_checksum_help */
			c = (uint16_t)~rtn_csum_fold16(
				rtn_csum_words(0, g->pkt + start, g->len - start));
			csum_store(g->pkt + field, c ? c : 0xffff);
		}
		g->nseg = 1;
		return 1;
	}
	if ((type != RTN_VNET_GSO_TCPV4 && type != RTN_VNET_GSO_TCPV6) || !vh.gso_size)
		return -EINVAL;
	/* the header length is parsed, not taken from hdr_len (tun reports the linear part) */
	hlen = parse_tcp(g->pkt, g->len, &h);
	if (hlen < 0 || h.v6 != (type == RTN_VNET_GSO_TCPV6) || (uint32_t)hlen >= g->len)
		return -EINVAL;
	if ((uint32_t)hlen + vh.gso_size > max_frame)
		return -EMSGSIZE;
	g->l3 = h.l3;
	g->l4 = h.l4;
	g->v6 = h.v6;
	g->hdr_len = (uint32_t)hlen;
	g->mss = vh.gso_size;
	g->off = g->hdr_len;
	g->nseg = (g->len - g->hdr_len + g->mss - 1) / g->mss;
	g->gso = 1;
	return (int)g->nseg;
}

int rtn_gso_begin(struct rtn_gso_seg *g, uint8_t *buf, uint32_t len, uint32_t max_frame)
{
	struct rtn_vnet_hdr vh;

	rtn_clear_error();
	if (len < RTN_VNET_HDR_LEN + ETH_HLEN_RTN) {
		memset(g, 0, sizeof(*g));
		return -EINVAL;
	}
	memcpy(&vh, buf, sizeof(vh));
	return gso_begin(g, &vh, buf + RTN_VNET_HDR_LEN, len - RTN_VNET_HDR_LEN, max_frame);
}

int rtn_gso_begin_scattered(struct rtn_gso_seg *g, const uint8_t *vnet, uint8_t *first,
			    uint32_t len, uint32_t max_frame, uint32_t hdr_len, uint32_t mss)
{
	uint32_t have = len < hdr_len + mss ? len : hdr_len + mss;
	struct rtn_vnet_hdr vh;
	struct l4_hdrs h;
	uint8_t type;

	rtn_clear_error();
	memset(g, 0, sizeof(*g));
	memcpy(&vh, vnet, sizeof(vh));
	type = vh.gso_type & (uint8_t)~RTN_VNET_GSO_ECN;
	if (len <= have) { /* all of it in the first frame: in place if it is one segment */
		int n = len >= ETH_HLEN_RTN ? gso_begin(g, &vh, first, len, max_frame) : 0;

		return n > 1 ? 0 : n;
	}
	/*
	 * Spread over frames: only a TCP super-packet cut as the layout was
	 * made is in place.  Its headers are all in the first frame then, the
	 * only bytes gso_begin() reads; anything else is gathered by the caller.
	 */
	if ((type != RTN_VNET_GSO_TCPV4 && type != RTN_VNET_GSO_TCPV6) || vh.gso_size != mss ||
	    parse_tcp(first, have, &h) != (int)hdr_len)
		return 0;
	return gso_begin(g, &vh, first, len, max_frame);
}

uint32_t rtn_gso_left(const struct rtn_gso_seg *g)
{
	return g->nseg - g->index;
}

/* Payload bytes of segment @p index. */
static uint32_t seg_chunk(const struct rtn_gso_seg *g, uint32_t index)
{
	uint32_t off = g->hdr_len + index * g->mss;

	return g->len - off < g->mss ? g->len - off : g->mss;
}

/*
 * Segment @p index in @p out, the first segment's headers and its @p chunk
 * bytes of payload there: headers fixed for its place in the packet,
 * checksums computed.  Returns its length.
 */
static uint32_t seg_fix(const struct rtn_gso_seg *g, uint8_t *out, uint32_t index, uint32_t chunk)
{
	struct l4_hdrs h = { .l3 = g->l3, .l4 = g->l4, .v6 = g->v6, .proto = IPPROTO_TCP_ };
	uint32_t flen = g->hdr_len + chunk, last = index + 1 == g->nseg;
	uint8_t flags;
	uint64_t sum;

	if (!g->v6) {
		uint8_t *ip = out + g->l3;

		rtn_put_be16(ip + 2, (uint16_t)(flen - g->l3));
		rtn_put_be16(ip + 4, (uint16_t)(rtn_get_be16(g->pkt + g->l3 + 4) + index));
		ipv4_csum_set(ip, g->l4 - g->l3);
	} else {
		rtn_put_be16(out + g->l3 + 4, (uint16_t)(flen - g->l4));
	}
	rtn_put_be32(out + g->l4 + 4, rtn_get_be32(g->pkt + g->l4 + 4) + index * g->mss);
	flags = out[g->l4 + 13];
	if (index)
		flags &= (uint8_t)~TCPF_CWR;
	if (!last)
		flags &= (uint8_t) ~(TCPF_FIN | TCPF_PSH);
	out[g->l4 + 13] = flags;
	out[g->l4 + 16] = out[g->l4 + 17] = 0;
	sum = rtn_csum_words(pseudo_sum(out, &h, flen - g->l4), out + g->l4, flen - g->l4);
	csum_store(out + g->l4 + 16, (uint16_t)~rtn_csum_fold16(sum));
	return flen;
}

int rtn_gso_next(struct rtn_gso_seg *g, uint8_t *out, uint32_t cap)
{
	uint32_t chunk, flen;

	rtn_clear_error();
	if (g->index >= g->nseg)
		return 0;
	if (!g->gso) {
		if (cap < g->len)
			return -ENOSPC;
		memcpy(out, g->pkt, g->len);
		g->index++;
		return (int)g->len;
	}
	chunk = seg_chunk(g, g->index);
	flen = g->hdr_len + chunk;
	if (cap < flen)
		return -ENOSPC;
	memcpy(out, g->pkt, g->hdr_len);
	memcpy(out + g->hdr_len, g->pkt + g->off, chunk);
	seg_fix(g, out, g->index, chunk);
	g->off += chunk;
	g->index++;
	return (int)flen;
}

int rtn_gso_fix_in_place(const struct rtn_gso_seg *g, uint32_t index, uint8_t *frame)
{
	if (index >= g->nseg)
		return -EINVAL;
	if (!g->gso) /* a single frame, complete where it was read */
		return frame == g->pkt ? (int)g->len : -EINVAL;
	if (frame != g->pkt) /* the first segment's headers are the template: it goes last */
		memcpy(frame, g->pkt, g->hdr_len);
	return (int)seg_fix(g, frame, index, seg_chunk(g, index));
}

/* ---- wire -> Linux: coalescing ------------------------------------------------------ */

void rtn_gro_init(struct rtn_gro *g)
{
	memset(g, 0, sizeof(*g));
}

/*
 * A segment that may be merged: TCP over IPv4 without options or
 * fragmentation, no Ethernet padding, flags ACK (PSH allowed), some payload,
 * valid IP header checksum.  Returns the header length, or -1.
 */
static int gro_candidate(const uint8_t *f, uint32_t len, struct l4_hdrs *h)
{
	int hlen = parse_tcp(f, len, h);

	if (hlen < 0 || h->v6 || h->l4 != ETH_HLEN_RTN + 20 || (uint32_t)hlen >= len)
		return -1;
	if (rtn_get_be16(f + 16) != len - ETH_HLEN_RTN || (rtn_get_be16(f + 20) & 0x3fff))
		return -1;
	if ((f[h->l4 + 13] & (uint8_t)~TCPF_PSH) != TCPF_ACK || !ipv4_csum_ok(f + h->l3, 20))
		return -1;
	return hlen;
}

static int tcp_csum_ok(const uint8_t *f, uint32_t len, const struct l4_hdrs *h)
{
	uint32_t n = len - h->l4;

	return rtn_csum_fold16(rtn_csum_words(pseudo_sum(f, h, n), f + h->l4, n)) == 0xffff;
}

int rtn_gro_begin(struct rtn_gro *g, const uint8_t *frame, uint32_t len)
{
	struct l4_hdrs h;
	int hlen;

	rtn_clear_error();
	g->nseg = 0;
	g->open = 0;
	g->csum_ok = 0;
	g->hdr_len = 0;
	if (len > RTN_GSO_BUF - RTN_VNET_HDR_LEN)
		return -EMSGSIZE;
	memset(g->head, 0, RTN_VNET_HDR_LEN);
	g->head_len = RTN_VNET_HDR_LEN;
	g->piece[0] = (struct rtn_gro_piece){ frame, len };
	g->len = len;
	g->nseg = 1;
	hlen = gro_candidate(frame, len, &h);
	if (hlen < 0 || !tcp_csum_ok(frame, len, &h))
		return 0; /* alone, untouched: Linux checks it itself */
	g->csum_ok = 1;
	g->l3 = h.l3;
	g->l4 = h.l4;
	g->hdr_len = (uint32_t)hlen;
	/* the headers are the part a merge rewrites: held here, the payload stays put */
	memcpy(g->head + RTN_VNET_HDR_LEN, frame, g->hdr_len);
	g->head_len += g->hdr_len;
	g->piece[0] = (struct rtn_gro_piece){ frame + g->hdr_len, len - g->hdr_len };
	g->mss = len - g->hdr_len;
	g->next_seq = rtn_get_be32(frame + h.l4 + 4) + g->mss;
	g->open = 1;
	return g->open;
}

/*
 * The TCP options of segment @p t against the merged packet's @p m (both
 * at their TCP header, @p thlen bytes): identical, but for a TSval no older
 * than the first segment's when the options are Linux's own layout (NOP,
 * NOP, timestamp).  The merged packet keeps the first's TSval: what a
 * receiver delaying its ACK over these segments echoes anyway (RFC 7323,
 * 4.3), and what PAWS already passed; an older one goes alone, for PAWS to
 * judge.  TSecr stays identical (the file's head says why).
 */
static int tcp_options_match(const uint8_t *t, const uint8_t *m, uint32_t thlen)
{
	static const uint8_t ts_layout[4] = { 1, 1, 8, 10 };

	/* the first 6 bytes compared cover @p t's layout: @p m's is all to check */
	if (thlen == 32 && !memcmp(m + 20, ts_layout, 4))
		return !memcmp(t + 18, m + 18, 6) && !memcmp(t + 28, m + 28, 4) &&
		       (int32_t)(rtn_get_be32(t + 24) - rtn_get_be32(m + 24)) >= 0;
	return !memcmp(t + 18, m + 18, thlen - 18);
}

int rtn_gro_append(struct rtn_gro *g, const uint8_t *f, uint32_t len)
{
	uint8_t *m = g->head + RTN_VNET_HDR_LEN;
	uint32_t l4 = g->l4, payload;
	struct l4_hdrs h;

	rtn_clear_error();
	if (!g->open || len <= g->hdr_len || g->nseg >= RTN_GRO_MAX_SEGS)
		return 0;
	payload = len - g->hdr_len;
	if (payload > g->mss || g->len + payload > RTN_GSO_BUF - RTN_VNET_HDR_LEN ||
	    g->len - ETH_HLEN_RTN + payload > 0xffff)
		return 0;
	/* same Ethernet header; IPv4 version/ihl, TOS; DF, TTL, protocol, addresses */
	if (memcmp(f, m, 16) || memcmp(f + 20, m + 20, 4) || memcmp(f + 26, m + 26, 8))
		return 0;
	/* ports; ack; data offset; window; options (the header bytes past the checksum) */
	if (memcmp(f + l4, m + l4, 4) || memcmp(f + l4 + 8, m + l4 + 8, 5) ||
	    memcmp(f + l4 + 14, m + l4 + 14, 2) ||
	    !tcp_options_match(f + l4, m + l4, g->hdr_len - l4))
		return 0;
	if (rtn_get_be32(f + l4 + 4) != g->next_seq)
		return 0;
	if (gro_candidate(f, len, &h) != (int)g->hdr_len || !tcp_csum_ok(f, len, &h))
		return 0;
	g->piece[g->nseg] = (struct rtn_gro_piece){ f + g->hdr_len, payload };
	g->len += payload;
	g->nseg++;
	g->next_seq += payload;
	m[l4 + 13] |= f[l4 + 13] & TCPF_PSH; /* a push is kept, not a boundary */
	if (payload < g->mss)
		g->open = 0;
	return 1;
}

uint32_t rtn_gro_finish(struct rtn_gro *g)
{
	uint8_t *m = g->head + RTN_VNET_HDR_LEN;
	struct l4_hdrs h = { .l3 = g->l3, .l4 = g->l4, .proto = IPPROTO_TCP_ };
	struct rtn_vnet_hdr vh = { 0 };

	if (g->nseg > 1) {
		rtn_put_be16(m + g->l3 + 2, (uint16_t)(g->len - g->l3));
		ipv4_csum_set(m + g->l3, g->l4 - g->l3);
		vh.gso_type = RTN_VNET_GSO_TCPV4;
		vh.hdr_len = (uint16_t)g->hdr_len;
		vh.gso_size = (uint16_t)g->mss;
	}
	/*
	 * Verified here (every segment, merged or lone): CHECKSUM_PARTIAL, the
	 * field holding the folded pseudo-header sum (__tcp_v4_send_check).
	 * Linux trusts that and does not sum the payload again; it ignores
	 * VIRTIO_NET_HDR_F_DATA_VALID on a TAP write (virtio_net_hdr_to_skb
	 * reads only NEEDS_CSUM), so a lone segment marked so was summed twice.
	 */
	if (g->csum_ok) {
		m[g->l4 + 16] = m[g->l4 + 17] = 0;
		csum_store(m + g->l4 + 16, rtn_csum_fold16(pseudo_sum(m, &h, g->len - g->l4)));
		vh.flags = RTN_VNET_F_NEEDS_CSUM;
		vh.csum_start = (uint16_t)g->l4;
		vh.csum_offset = 16;
	}
	memcpy(g->head, &vh, sizeof(vh));
	g->open = 0;
	return RTN_VNET_HDR_LEN + g->len;
}

uint32_t rtn_gro_flatten(const struct rtn_gro *g, uint8_t *out, uint32_t cap)
{
	uint32_t off = g->head_len, i;

	if (cap < RTN_VNET_HDR_LEN + g->len)
		return 0;
	memcpy(out, g->head, g->head_len);
	for (i = 0; i < g->nseg; i++) {
		memcpy(out + off, g->piece[i].base, g->piece[i].len);
		off += g->piece[i].len;
	}
	return off;
}
