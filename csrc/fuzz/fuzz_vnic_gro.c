// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_vnic_gro.c
 * @brief Fuzz target: coalescing of received (decapsulated) frames into one
 *        TAP write (rtn_gro_begin/append/finish), as the station's TAP
 *        writer drives it.
 *
 * Input: records of (u16 length, frame bytes).  Checked for every write
 * (gathered: flattened here with rtn_gro_flatten): its length is the
 * header's plus the frame's; a lone frame goes out byte for byte with an
 * empty header, unless it is TCP/IPv4 with valid checksums: then it goes
 * as CHECKSUM_PARTIAL at the TCP header (NEEDS_CSUM, no GSO), and
 * completing its checksum gives back the frame that came; a merged one has
 * a consistent header (TCPV4, gso_size the first payload, CHECKSUM_PARTIAL
 * at the TCP header), only segments
 * with valid checksums (by an independent sum) and consecutive sequence
 * numbers were taken, its checksums complete to valid ones, and cutting it
 * again with rtn_gso_begin/next at its gso_size gives back the very
 * segments that went in, but for the IPv4 id and the checksums (Linux's
 * GRO does not keep the id either) and for what a merge may change: a
 * TSval no older than the first's (which the cut segments carry), and PSH
 * (on the last cut segment iff any merged one had it).
 */
#include <errno.h>
#include "rtn_tdma.h"
#include "rtn_tdma_proto.h"
#include "rtn_vnic_gso.h"
#include "fuzz_input.h"
#include "inet_check.h"

#define MAX_FRAMES 64
#define L3	   INET_ETH_HLEN
#define L4	   (INET_ETH_HLEN + 20)

struct frame {
	uint8_t *data;
	uint32_t len;
};

/* TCP/IPv4 with valid checksums: what GRO may merge (it checks more itself). */
static int valid_tcp4(const struct frame *f)
{
	const uint8_t *d = f->data;

	return f->len >= L4 + 20 && inet_be16(d + 12) == INET_P_IPV4 && d[L3] == 0x45 &&
	       d[L3 + 9] == INET_PROTO_TCP && inet_ipv4_hdr_ok(d + L3, 20) &&
	       inet_tcp_ok(d, f->len, L4, 0);
}

/* A copy of CHECKSUM_PARTIAL @p m with its TCP checksum completed, as Linux would. */
static uint8_t *complete_partial(const uint8_t *m, uint32_t len)
{
	uint8_t *full = fuzz_exact_copy(m, len);
	uint16_t c = (uint16_t)~inet_fold(inet_sum(0, full + L4, len - L4));

	full[L4 + 16] = c >> 8;
	full[L4 + 17] = c;
	return full;
}

/* Linux's timestamp layout (NOP, NOP, TS) in a TCP header of @p hdr_len bytes from L4. */
static int ts_layout(const uint8_t *f, uint32_t hdr_len)
{
	static const uint8_t layout[4] = { 1, 1, 8, 10 };

	return hdr_len == L4 + 32 && !memcmp(f + L4 + 20, layout, 4);
}

/*
 * What a merge may change in segment @p i of @p segs and cutting the write
 * again does not give back: the TSval (Linux's layout only, never older
 * than the first's; the cut segment carries the first's) and PSH (on the
 * cut's last segment iff any merged segment had it).  Checked in @p out,
 * then copied from the segment that went in.
 */
static void check_merge_changes(uint8_t *out, const struct frame *segs, uint32_t i, uint32_t n,
				uint32_t hdr_len)
{
	const uint8_t *in = segs[i].data;
	int push = 0;
	uint32_t j;

	for (j = 0; j < n; j++)
		push |= segs[j].data[L4 + 13] & 0x08;
	if ((out[L4 + 13] & 0x08) != (i + 1 == n ? push : 0))
		fuzz_fail("segment %u of %u cut from a merged write has the wrong PSH", i, n);
	out[L4 + 13] = (uint8_t)((out[L4 + 13] & ~0x08) | (in[L4 + 13] & 0x08));
	if (!ts_layout(in, hdr_len) || !ts_layout(segs[0].data, hdr_len))
		return;
	if ((int32_t)(inet_be32(in + L4 + 24) - inet_be32(segs[0].data + L4 + 24)) < 0)
		fuzz_fail("segment %u merged behind a first segment with a later TSval", i);
	if (memcmp(out + L4 + 24, segs[0].data + L4 + 24, 4))
		fuzz_fail("segment %u cut from a merged write lost the first's TSval", i);
	memcpy(out + L4 + 24, in + L4 + 24, 4);
}

static void check_resegment(const uint8_t *write, uint32_t wlen, const struct frame *segs,
			    uint32_t n, uint32_t hdr_len, uint32_t mss)
{
	uint8_t *buf = fuzz_exact_copy(write, wlen), *out = malloc(hdr_len + mss);
	struct rtn_gso_seg g;
	uint32_t i;
	int k = rtn_gso_begin(&g, buf, wlen, hdr_len + mss);

	if (k != (int)n)
		fuzz_fail("a write of %u merged segments cuts into %d", n, k);
	for (i = 0; i < n; i++) {
		uint32_t len = segs[i].len;

		k = rtn_gso_next(&g, out, hdr_len + mss);
		if (k != (int)len)
			fuzz_fail("segment %u went in with %u bytes, comes out with %d", i, len, k);
		/*
		 * IPv4 id and header checksum are not kept; the TCP checksum is
		 * recomputed (valid either way, but 0x0000 and 0xffff are the same
		 * sum); everything else is the segment that went in.
		 */
		if (!inet_tcp_ok(out, len, L4, 0))
			fuzz_fail("segment %u cut from a merged write has a bad TCP checksum", i);
		memcpy(out + L3 + 4, segs[i].data + L3 + 4, 2);
		memcpy(out + L3 + 10, segs[i].data + L3 + 10, 2);
		memcpy(out + L4 + 16, segs[i].data + L4 + 16, 2);
		check_merge_changes(out, segs, i, n, hdr_len);
		if (memcmp(out, segs[i].data, len))
			fuzz_fail("segment %u of a merged write does not cut back to itself", i);
	}
	free(out);
	free(buf);
}

static void check_write(const struct rtn_gro *g, uint32_t wlen, const uint8_t *out, uint32_t flat,
			const struct frame *segs, uint32_t n)
{
	const uint8_t *m = out + RTN_VNET_HDR_LEN;
	struct rtn_vnet_hdr vh;
	uint32_t i, off, seq;
	uint8_t *full;

	if (wlen != RTN_VNET_HDR_LEN + g->len || flat != wlen)
		fuzz_fail("write of %u bytes (%u gathered) for a %u-byte frame", wlen, flat,
			  g->len);
	if (g->nseg != n)
		fuzz_fail("%u frames taken, the write says %u segments", n, g->nseg);
	memcpy(&vh, out, sizeof(vh));
	if (n == 1) {
		struct rtn_vnet_hdr lone = { 0 };

		if (g->len != segs[0].len)
			fuzz_fail("a lone frame of %u bytes was written with %u", segs[0].len,
				  g->len);
		if (!vh.flags) {
			/* not verified here: as it came, for Linux to check */
			if (memcmp(&vh, &lone, sizeof(vh)) || memcmp(m, segs[0].data, g->len))
				fuzz_fail("an unverified lone frame was not written as it came");
			return;
		}
		/* CHECKSUM_PARTIAL only for what GRO itself would have taken: checked TCP/IPv4 */
		if (!valid_tcp4(&segs[0]))
			fuzz_fail("a lone frame with bad checksums marked CHECKSUM_PARTIAL");
		lone.flags = RTN_VNET_F_NEEDS_CSUM;
		lone.csum_start = L4;
		lone.csum_offset = 16;
		full = complete_partial(m, g->len);
		if (memcmp(&vh, &lone, sizeof(vh)) || !inet_tcp_ok(full, g->len, L4, 0))
			fuzz_fail("a verified lone frame's CHECKSUM_PARTIAL is inconsistent");
		/* its sum completes to a valid one; the rest is the frame that came */
		memcpy(full + L4 + 16, segs[0].data + L4 + 16, 2);
		if (memcmp(full, segs[0].data, g->len))
			fuzz_fail("a verified lone frame was not written as it came");
		free(full);
		return;
	}
	if (vh.flags != RTN_VNET_F_NEEDS_CSUM || vh.gso_type != RTN_VNET_GSO_TCPV4 ||
	    vh.hdr_len != g->hdr_len || vh.gso_size != segs[0].len - g->hdr_len ||
	    vh.csum_start != L4 || vh.csum_offset != 16)
		fuzz_fail("merged write has an inconsistent virtio-net header");
	seq = inet_be32(segs[0].data + L4 + 4);
	off = g->hdr_len;
	for (i = 0; i < n; i++) {
		uint32_t pl = segs[i].len - g->hdr_len;

		if (!valid_tcp4(&segs[i]))
			fuzz_fail("segment %u merged without valid TCP/IPv4 checksums", i);
		if (inet_be32(segs[i].data + L4 + 4) != seq)
			fuzz_fail("segment %u merged out of sequence", i);
		if (pl > vh.gso_size || (i + 1 < n && pl != vh.gso_size))
			fuzz_fail("segment %u of %u carries %u bytes, gso_size %u", i, n, pl,
				  vh.gso_size);
		if (memcmp(m + off, segs[i].data + g->hdr_len, pl))
			fuzz_fail("segment %u payload not where it belongs", i);
		seq += pl;
		off += pl;
	}
	if (off != g->len || inet_be16(m + L3 + 2) != g->len - L3 || !inet_ipv4_hdr_ok(m + L3, 20))
		fuzz_fail("merged IPv4 header does not describe the merged frame");
	/* CHECKSUM_PARTIAL: complete the sum as Linux would, then it must be valid */
	full = complete_partial(m, g->len);
	if (!inet_tcp_ok(full, g->len, L4, 0))
		fuzz_fail("merged TCP checksum does not complete to a valid one");
	free(full);
	check_resegment(out, wlen, segs, n, g->hdr_len, vh.gso_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *gro_buf;
	struct fuzz_in in = fuzz_in_make(data, size);
	struct frame f[MAX_FRAMES];
	struct rtn_gro g;
	uint32_t n = 0, i, j;

	if (!gro_buf)
		gro_buf = malloc(RTN_GSO_BUF);
	while (fuzz_more(&in) && n < MAX_FRAMES) {
		size_t got;
		uint32_t want = fuzz_u16(&in) % (RTN_TDMA_FRAME_MAX + 1);
		const uint8_t *p = fuzz_span(&in, want, &got);

		f[n].data = fuzz_exact_copy(p, got);
		f[n].len = (uint32_t)got;
		n++;
	}
	rtn_gro_init(&g);
	for (i = 0; i < n;) {
		int open = rtn_gro_begin(&g, f[i].data, f[i].len);
		uint32_t first = i++;

		if (open < 0) {
			if (open != -EMSGSIZE || f[first].len <= RTN_GSO_BUF - RTN_VNET_HDR_LEN)
				fuzz_fail("rtn_gro_begin refused a %u-byte frame with %d",
					  f[first].len, open);
			continue;
		}
		while (open > 0 && i < n && rtn_gro_append(&g, f[i].data, f[i].len))
			i++;
		{
			uint32_t wlen = rtn_gro_finish(&g);

			check_write(&g, wlen, gro_buf, rtn_gro_flatten(&g, gro_buf, RTN_GSO_BUF),
				    &f[first], i - first);
		}
	}
	for (j = 0; j < n; j++)
		free(f[j].data);
	return 0;
}
