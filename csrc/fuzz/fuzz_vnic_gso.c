// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_vnic_gso.c
 * @brief Fuzz target: segmentation of what the VNIC reads from its TAP
 *        (virtio-net header + frame, up to a 64 KB TCP super-packet) into
 *        wire frames (rtn_gso_begin/next).
 *
 * Input: u16 frame-size selector, then the bytes of one TAP read.
 * Checked for every packet rtn_gso_begin() accepts: it yields exactly the
 * frames it announced, none longer than the limit, each refused without
 * side effects when the output buffer is one byte short; for TCP
 * super-packets every segment carries the original headers with IP length,
 * IPv4 id, sequence number and flags advanced as the kernel's
 * tcp_gso_segment() does, valid IPv4 and TCP checksums (by an independent
 * sum), and the payloads concatenate to the original payload.  A refused
 * packet leaves nothing to send.
 *
 * The same read is then scattered as the VNIC's pump reads it into its wire
 * frames (rtn_gso_begin_scattered), laid out as the packet is cut or as the
 * input's selector guesses: cut in place (rtn_gso_fix_in_place, the first
 * segment last), every frame must be byte for byte what rtn_gso_next()
 * made; a refusal must be the contiguous one's; "not as laid out" (0) is
 * always allowed, since the pump then gathers the packet.
 */
#include <errno.h>
#include "rtn_tdma.h"
#include "rtn_tdma_proto.h"
#include "rtn_vnic_gso.h"
#include "fuzz_input.h"
#include "inet_check.h"

#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_CWR 0x80

#define LAY_MAX 128 /* frames of a layout, as the pump's LAY_MAX_FRAMES */
static uint8_t want[LAY_MAX][RTN_TDMA_FRAME_MAX];
static uint32_t want_len[LAY_MAX];
static uint8_t lay[LAY_MAX][RTN_TDMA_FRAME_MAX];

/* @p read (vnet header + @p len - 10 bytes of packet) laid out as hdr + mss, cut in place. */
static void check_scattered(const uint8_t *read, uint32_t len, uint32_t max_frame, uint32_t hdr,
			    uint32_t mss, int want_n)
{
	uint32_t pkt = len - RTN_VNET_HDR_LEN, nf, i, at;
	struct rtn_gso_seg g;
	int n;

	if (len < RTN_VNET_HDR_LEN || !mss || hdr + mss > max_frame)
		return;
	nf = (RTN_GSO_MAX + mss - 1) / mss + 1;
	if (nf > LAY_MAX || pkt > hdr + mss * nf)
		return; /* the pump reads such a layout into its GSO buffer */
	read += RTN_VNET_HDR_LEN;
	at = pkt < hdr + mss ? pkt : hdr + mss;
	memcpy(lay[0], read, at);
	for (i = 1; at < pkt; i++) {
		uint32_t k = pkt - at < mss ? pkt - at : mss;

		memcpy(lay[i] + hdr, read + at, k);
		at += k;
	}
	n = rtn_gso_begin_scattered(&g, read - RTN_VNET_HDR_LEN, lay[0], pkt, max_frame, hdr, mss);
	if (n < 0 && n != want_n)
		fuzz_fail("scattered: refused with %d, contiguous %d", n, want_n);
	if (n <= 0)
		return;
	if (n != want_n)
		fuzz_fail("scattered: %d segments, contiguous %d", n, want_n);
	for (i = (uint32_t)n; i-- > 0;) {
		int k = rtn_gso_fix_in_place(&g, i, lay[i]);

		if (k != (int)want_len[i] || memcmp(lay[i], want[i], want_len[i]))
			fuzz_fail("scattered: segment %u of %d (%d bytes, want %u) differs", i, n,
				  k, want_len[i]);
	}
}

static void check_segment(const struct rtn_gso_seg *g, const uint8_t *orig, const uint8_t *seg,
			  uint32_t flen, uint32_t i, uint32_t *payload_off)
{
	uint32_t l3 = g->l3, l4 = g->l4, hl = g->hdr_len, chunk = flen - hl;
	uint8_t want_flags = orig[l4 + 13];

	if (flen <= hl || chunk > g->mss)
		fuzz_fail("segment %u: %u bytes for %u of headers and mss %u", i, flen, hl, g->mss);
	if (i + 1 < g->nseg && chunk != g->mss)
		fuzz_fail("segment %u of %u carries %u bytes, not the mss %u", i, g->nseg, chunk,
			  g->mss);
	if (!g->v6) {
		if (inet_be16(seg + l3 + 2) != flen - l3)
			fuzz_fail("segment %u: IPv4 total length %u, frame %u", i,
				  inet_be16(seg + l3 + 2), flen);
		if (inet_be16(seg + l3 + 4) != (uint16_t)(inet_be16(orig + l3 + 4) + i))
			fuzz_fail("segment %u: IPv4 id not advanced by one per segment", i);
		if (!inet_ipv4_hdr_ok(seg + l3, l4 - l3))
			fuzz_fail("segment %u: bad IPv4 header checksum", i);
		/* everything else in the IP header is copied */
		if (memcmp(seg + l3, orig + l3, 2) || memcmp(seg + l3 + 6, orig + l3 + 6, 4) ||
		    memcmp(seg + l3 + 12, orig + l3 + 12, l4 - l3 - 12))
			fuzz_fail("segment %u: IPv4 header fields changed", i);
	} else {
		if (inet_be16(seg + l3 + 4) != flen - l4)
			fuzz_fail("segment %u: IPv6 payload length %u, frame %u", i,
				  inet_be16(seg + l3 + 4), flen);
		if (memcmp(seg + l3, orig + l3, 4) || memcmp(seg + l3 + 6, orig + l3 + 6, 34))
			fuzz_fail("segment %u: IPv6 header fields changed", i);
	}
	if (memcmp(seg, orig, l3))
		fuzz_fail("segment %u: Ethernet header changed", i);
	if (inet_be32(seg + l4 + 4) != inet_be32(orig + l4 + 4) + i * g->mss)
		fuzz_fail("segment %u: sequence number not advanced by the payload", i);
	if (i)
		want_flags &= (uint8_t)~TCP_CWR;
	if (i + 1 < g->nseg)
		want_flags &= (uint8_t) ~(TCP_FIN | TCP_PSH);
	if (seg[l4 + 13] != want_flags)
		fuzz_fail("segment %u: TCP flags 0x%02x, expected 0x%02x", i, seg[l4 + 13],
			  want_flags);
	if (memcmp(seg + l4, orig + l4, 4) || memcmp(seg + l4 + 8, orig + l4 + 8, 5) ||
	    memcmp(seg + l4 + 14, orig + l4 + 14, 2) ||
	    memcmp(seg + l4 + 18, orig + l4 + 18, hl - l4 - 18))
		fuzz_fail("segment %u: TCP header fields changed", i);
	if (!inet_tcp_ok(seg, flen, l4, g->v6))
		fuzz_fail("segment %u: bad TCP checksum", i);
	if (memcmp(seg + hl, orig + *payload_off, chunk))
		fuzz_fail("segment %u: payload is not the next %u bytes", i, chunk);
	*payload_off += chunk;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in_make(data, size);
	uint16_t sel = fuzz_u16(&in);
	uint32_t max_frame = sel & 0x8000 ? RTN_TDMA_FRAME_MAX :
					    60 + sel % (RTN_TDMA_FRAME_MAX - 59);
	uint32_t len = in.left > RTN_GSO_BUF ? RTN_GSO_BUF : (uint32_t)in.left;
	/* what the segments are judged against; not the buffer itself, which they must not change */
	static uint8_t orig[RTN_GSO_BUF];
	uint8_t *buf = fuzz_exact_copy(in.p, len), *out = malloc(max_frame);
	struct rtn_gso_seg g;
	uint32_t i, payload_off;
	int n;

	n = rtn_gso_begin(&g, buf, len, max_frame);
	if (n < 0) {
		if (n != -EINVAL && n != -EMSGSIZE)
			fuzz_fail("rtn_gso_begin returned %d", n);
		if (rtn_gso_left(&g))
			fuzz_fail("a refused packet leaves %u frames to send", rtn_gso_left(&g));
		goto out;
	}
	if (!n || rtn_gso_left(&g) != (uint32_t)n)
		fuzz_fail("rtn_gso_begin announced %d frames, %u left", n, rtn_gso_left(&g));
	/* the packet before segmentation (checksums were fixed in place, if asked for) */
	memcpy(orig, g.pkt, g.len);
	payload_off = g.hdr_len;
	for (i = 0; i < (uint32_t)n; i++) {
		int k;

		if (g.gso && g.hdr_len + 1 <= max_frame) {
			uint32_t need = g.hdr_len + (g.len - g.off < g.mss ? g.len - g.off : g.mss);

			if (rtn_gso_next(&g, out, need - 1) != -ENOSPC || rtn_gso_left(&g) != n - i)
				fuzz_fail(
					"segment %u: a buffer one byte short was not refused cleanly",
					i);
		}
		k = rtn_gso_next(&g, out, max_frame);
		if (k <= 0 || (uint32_t)k > max_frame)
			fuzz_fail("frame %u of %d: rtn_gso_next returned %d (limit %u)", i, n, k,
				  max_frame);
		if (i < LAY_MAX) {
			memcpy(want[i], out, (uint32_t)k);
			want_len[i] = (uint32_t)k;
		}
		if (!g.gso) {
			if ((uint32_t)k != g.len || memcmp(out, orig, k))
				fuzz_fail("a single frame was not passed on as it is");
		} else {
			check_segment(&g, orig, out, (uint32_t)k, i, &payload_off);
		}
	}
	if (g.gso && payload_off != g.len)
		fuzz_fail("segments carried %u of %u payload bytes", payload_off - g.hdr_len,
			  g.len - g.hdr_len);
	if (rtn_gso_next(&g, out, max_frame) != 0 || rtn_gso_left(&g))
		fuzz_fail("frames left after the %d announced", n);
	if (n <= LAY_MAX) {
		if (g.gso) /* laid out as the last packet was cut: the pump's common case */
			check_scattered(in.p, len, max_frame, g.hdr_len, g.mss, n);
		check_scattered(in.p, len, max_frame, 54 + sel % 64, 64 + (sel >> 6) % 1500, n);
	}
out:
	if (n < 0)
		check_scattered(in.p, len, max_frame, 54 + sel % 64, 64 + (sel >> 6) % 1500, n);
	free(out);
	free(buf);
	return 0;
}
