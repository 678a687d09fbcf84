// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_app_hdr.c
 * @brief Fuzz target: the application header parse (rtn_app_hdr_parse,
 *        rtn_app_hdr_stamp_pickup in rtn_app_hdr.c) and the stage
 *        statistics fed with what it returns (rtn_stages_add in
 *        rtn_stages.c).
 *
 * Input: a frame, as received (in a heap buffer of exactly its length, so
 * any read past it is reported), then stamps of the receiving side.
 * Checked besides the sanitizers: the parse returns -1, 0 or 1; a header
 * it accepts ends inside the frame and no shorter than its form; a refused
 * or absent one leaves every stamp 0 and the payload after the Ethernet
 * header; stamping the pick-up changes nothing but the pick-up stamp; the
 * statistics stay within their counts for any stamps.
 */
#include <stdlib.h>
#include <string.h>
#include "rtn_app_hdr.h"
#include "rtn_chan.h"
#include "rtn_stages.h"
#include "fuzz_input.h"

static struct rtn_stages stages;

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in_make(data, size);
	struct rtn_app_stamps st, again;
	uint32_t len = fuzz_u16(&in) % (RTN_CHAN_MSG_MAX + 1);
	uint8_t *frame = malloc(len ? len : 1);
	int rc, k;

	if (!frame)
		return 0;
	len = (uint32_t)fuzz_bytes(&in, frame, len);
	if (!stages.deadline_ns)
		rtn_stages_init(&stages);
	rc = rtn_app_hdr_parse(frame, len, &st);
	check(rc >= -1 && rc <= 1);
	if (rc == 1) {
		check(st.hdr_len >= 14 + RTN_APP_HDR_LEN && st.hdr_len <= len);
	} else {
		check(st.hdr_len == 14 && st.seq == 0);
		for (k = 0; k < RTN_STAMP_N; k++)
			check(st.t[k] == 0);
	}
	rtn_app_hdr_stamp_pickup(frame, len, (int64_t)fuzz_u64(&in));
	check(rtn_app_hdr_parse(frame, len, &again) == rc);
	again.t[RTN_STAMP_PICKUP] = st.t[RTN_STAMP_PICKUP];
	check(memcmp(&again, &st, sizeof(st)) == 0 || rc != 1);
	st.t[RTN_STAMP_RX_XDP] = (int64_t)fuzz_u64(&in);
	st.t[RTN_STAMP_RX_RT] = (int64_t)fuzz_u64(&in);
	st.t[RTN_STAMP_TAKE] = (int64_t)fuzz_u64(&in);
	if (fuzz_u8(&in) & 1)
		rtn_stages_set(&stages, (int64_t)fuzz_u64(&in), (int64_t)fuzz_u64(&in));
	rtn_stages_add(&stages, st.seq, st.t);
	for (k = 0; k < RTN_STAGE_N; k++)
		check(stages.hist[k].count <= stages.msgs &&
		      stages.outliers[k] <= stages.hist[k].count);
	check(stages.late <= stages.msgs);
	free(frame);
	return 0;
}
