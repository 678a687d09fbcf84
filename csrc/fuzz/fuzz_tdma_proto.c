// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_tdma_proto.c
 * @brief Fuzz target: the RTmac/TDMA v2 decoder (rtn_tdma_decode) on any
 *        bytes, checked against the encoders.
 *
 * Beyond "no crash, no read past the frame": every reject code has a reason
 * text, and a frame the decoder accepts re-encodes, from the decoded fields,
 * to the same bytes (but for the reserved RTmac flag bits, which the decoder
 * ignores as RTnet does, and a Sync's destination), and decodes again to
 * the same fields.  That ties the decoder's offsets to the encoders'.
 */
#include <errno.h>
#include "rtn_tdma_proto.h"
#include "fuzz_input.h"

static int encode_like(const struct rtn_tdma_msg *m, uint8_t *out, uint32_t size)
{
	switch (m->kind) {
	case TDMA_FRM_SYNC:
		return rtn_tdma_encode_sync(out, size, m->src, m->cycle_no, m->xmit_stamp,
					    m->sched_xmit_stamp, NULL);
	case TDMA_FRM_REQ_CAL:
		return rtn_tdma_encode_req_cal(out, size, m->dst, m->src, m->xmit_stamp,
					       m->reply_cycle, m->reply_slot_offset, NULL);
	default:
		return rtn_tdma_encode_rpl_cal(out, size, m->dst, m->src, m->request_xmit_stamp,
					       m->reception_stamp, m->xmit_stamp, NULL);
	}
}

static uint32_t frame_len_of(int kind)
{
	switch (kind) {
	case TDMA_FRM_SYNC:
		return RTN_TDMA_SYNC_FRAME_LEN;
	case TDMA_FRM_REQ_CAL:
		return RTN_TDMA_REQ_CAL_FRAME_LEN;
	case TDMA_FRM_RPL_CAL:
		return RTN_TDMA_RPL_CAL_FRAME_LEN;
	default:
		fuzz_fail("decoder returned unknown frame kind %d", kind);
	}
}

static void check_accepted(const uint8_t *frame, uint32_t len, const struct rtn_tdma_msg *m,
			   int kind)
{
	uint8_t enc[ETH_ZLEN_RTN];
	struct rtn_tdma_msg again;
	uint32_t need = frame_len_of(kind);
	int n;

	if (len < need)
		fuzz_fail("accepted a %u-byte frame of kind %d that needs %u", len, kind, need);
	if (m->kind != kind || m->rtmac_type != RTMAC_TYPE_TDMA ||
	    (m->rtmac_flags & RTMAC_FLAG_TUNNEL))
		fuzz_fail(
			"accepted frame decoded inconsistently (kind %u, type 0x%04x, flags 0x%02x)",
			m->kind, m->rtmac_type, m->rtmac_flags);
	n = encode_like(m, enc, sizeof(enc));
	if (n != ETH_ZLEN_RTN)
		fuzz_fail("encoder returned %d for a 60-byte buffer", n);
	/* what the decoder deliberately does not look at */
	memcpy(enc, frame, ETH_ALEN_RTN);
	enc[ETH_HLEN_RTN + 3] = frame[ETH_HLEN_RTN + 3];
	if (memcmp(enc, frame, need) != 0)
		fuzz_fail("decoded fields of a kind %d frame do not re-encode to its bytes", kind);
	if (rtn_tdma_decode(enc, (uint32_t)n, &again) != kind)
		fuzz_fail("re-encoded kind %d frame is rejected", kind);
	again.rtmac_flags = m->rtmac_flags;
	if (memcmp(&again, m, sizeof(again)) != 0)
		fuzz_fail("re-encoded kind %d frame decodes to other fields", kind);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t len = size > 4096 ? 4096 : (uint32_t)size;
	uint8_t *frame = fuzz_exact_copy(data, len);
	struct rtn_tdma_msg m;
	uint8_t small[ETH_ZLEN_RTN] = { 0 };
	int kind;

	kind = rtn_tdma_decode(frame, len, &m);
	if (kind >= 0) {
		check_accepted(frame, len, &m, kind);
	} else {
		if (kind < RTN_FRM_TRUNC_BODY || kind > RTN_FRM_TRUNC_ETH)
			fuzz_fail("decoder returned %d, not a reject code", kind);
		if (!strcmp(rtn_frm_reason(kind), rtn_frm_reason(0)))
			fuzz_fail("reject code %d has no reason text", kind);
		if (len >= ETH_HLEN_RTN && (memcmp(m.dst, frame, 6) || memcmp(m.src, frame + 6, 6)))
			fuzz_fail("reject %d did not report the addresses it read", kind);
	}
	/* encoders refuse a buffer below the Ethernet minimum instead of writing past it */
	if (len < ETH_ZLEN_RTN) {
		uint8_t *tight = malloc(len ? len : 1);

		if (rtn_tdma_encode_sync(tight, len, small, 1, 2, 3, NULL) != -ENOSPC ||
		    rtn_tdma_encode_req_cal(tight, len, small, small, 1, 2, 3, NULL) != -ENOSPC ||
		    rtn_tdma_encode_rpl_cal(tight, len, small, small, 1, 2, 3, NULL) != -ENOSPC)
			fuzz_fail("an encoder accepted a %u-byte buffer", len);
		free(tight);
	}
	free(frame);
	return 0;
}
