// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_tunnel.c
 * @brief Fuzz target: RTmac tunnel decapsulation (the VNIC's receive side,
 *        rtn_rtmac_tunnel_decap) and encapsulation, on any bytes.
 *
 * The input is a received frame.  Checked: decap writes exactly len - 4
 * bytes into a buffer of exactly that size and agrees with the decoder on
 * what is a tunnel frame; decapsulating in place, at the frame's start or
 * RTMAC_HLEN bytes in (where only the header moves), gives the same bytes;
 * a buffer one byte short is refused; and encapsulating the result again
 * (with the frame's source as the station address) gives the frame back,
 * but for the reserved RTmac flag bits.  The input is also used as a Linux
 * frame to encapsulate, in place and not, and must decapsulate to itself.
 */
#include <errno.h>
#include "rtn_tdma_proto.h"
#include "fuzz_input.h"

#define RTMAC_OFF ETH_HLEN_RTN
#define INNER_OFF (ETH_HLEN_RTN + RTMAC_HLEN)

static int is_reject(int rc)
{
	return rc <= RTN_FRM_TRUNC_ETH && rc >= RTN_FRM_NOT_TUNNEL;
}

static void check_decap(const uint8_t *frame, uint32_t len)
{
	uint32_t cap = len >= RTMAC_HLEN ? len - RTMAC_HLEN : 0;
	uint8_t *out = malloc(cap ? cap : 1), *inplace;
	struct rtn_tdma_msg m;
	int n, kind = rtn_tdma_decode(frame, len, &m), again;

	n = rtn_rtmac_tunnel_decap(out, cap, frame, len);
	if (n < 0) {
		if (!is_reject(n))
			fuzz_fail("decap of %u bytes into %u returned %d", len, cap, n);
		if (kind == RTN_FRM_TUNNEL)
			fuzz_fail("decoder calls it a tunnel frame, decap rejects it (%d)", n);
		if (n != RTN_FRM_NOT_TUNNEL && n != kind)
			fuzz_fail("decap rejects with %d, the decoder with %d", n, kind);
		free(out);
		return;
	}
	if (kind != RTN_FRM_TUNNEL)
		fuzz_fail("decap accepted a frame the decoder classifies as %d", kind);
	if ((uint32_t)n != cap)
		fuzz_fail("decap of %u bytes returned %d", len, n);
	if (memcmp(out, frame, 12) || memcmp(out + 12, frame + RTMAC_OFF, 2) ||
	    memcmp(out + ETH_HLEN_RTN, frame + INNER_OFF, len - INNER_OFF))
		fuzz_fail("decap did not rebuild the inner frame");

	inplace = fuzz_exact_copy(frame, len);
	again = rtn_rtmac_tunnel_decap(inplace, len, inplace, len);
	if (again != n || memcmp(inplace, out, n))
		fuzz_fail("decap in place differs from decap into another buffer");
	/* in place, RTMAC_HLEN bytes in (the VNIC's lent frames): only the header is written */
	memcpy(inplace, frame, len);
	again = rtn_rtmac_tunnel_decap(inplace + RTMAC_HLEN, cap, inplace, len);
	if (again != n || memcmp(inplace + RTMAC_HLEN, out, n))
		fuzz_fail(
			"decap in place RTMAC_HLEN bytes in differs from decap into another buffer");
	free(inplace);
	if (cap && rtn_rtmac_tunnel_decap(out, cap - 1, frame, len) != -ENOSPC)
		fuzz_fail("decap into a buffer one byte short was not refused");

	/* and back: the station that sent it would have built exactly this */
	{
		uint8_t *re = malloc(len);

		if (rtn_rtmac_tunnel_encap(re, len, out, n, frame + 6) != (int)len)
			fuzz_fail("re-encapsulating a decapsulated frame failed");
		re[RTMAC_OFF + 3] = frame[RTMAC_OFF + 3];
		if (memcmp(re, frame, len))
			fuzz_fail("re-encapsulated frame differs from the received one");
		free(re);
	}
	free(out);
}

static void check_encap(const uint8_t *inner, uint32_t len, const uint8_t *mac)
{
	uint32_t cap = len + RTMAC_HLEN;
	uint8_t *out = malloc(cap), *buf, *back;
	int n = rtn_rtmac_tunnel_encap(out, cap, inner, len, mac);

	if (len < ETH_HLEN_RTN) {
		if (n != -EINVAL)
			fuzz_fail("encap of a %u-byte frame returned %d", len, n);
		free(out);
		return;
	}
	if ((uint32_t)n != cap)
		fuzz_fail("encap of %u bytes returned %d", len, n);
	if (rtn_rtmac_tunnel_encap(out, cap - 1, inner, len, mac) != -ENOSPC)
		fuzz_fail("encap into a buffer one byte short was not refused");
	n = rtn_rtmac_tunnel_encap(out, cap, inner, len, mac);
	/* in place, as the station does with headroom in front of the inner frame */
	buf = malloc(cap);
	memcpy(buf + RTMAC_HLEN, inner, len);
	if (rtn_rtmac_tunnel_encap(buf, cap, buf + RTMAC_HLEN, len, mac) != n ||
	    memcmp(buf, out, cap))
		fuzz_fail("encap in place differs from encap into another buffer");
	back = malloc(len);
	if (rtn_rtmac_tunnel_decap(back, len, out, cap) != (int)len)
		fuzz_fail("an encapsulated frame does not decapsulate");
	if (memcmp(back, inner, 6) || memcmp(back + 6, mac, 6) ||
	    memcmp(back + 12, inner + 12, len - 12))
		fuzz_fail("decap(encap(frame)) is not the frame with the station's source");
	free(back);
	free(buf);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t station[6] = { 0x02, 0x52, 0x54, 0x00, 0x00, 0x02 };
	uint32_t len = size > 2048 ? 2048 : (uint32_t)size;
	uint8_t *frame = fuzz_exact_copy(data, len);

	check_decap(frame, len);
	check_encap(frame, len, station);
	free(frame);
	return 0;
}
