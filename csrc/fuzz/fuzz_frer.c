// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_frer.c
 * @brief Fuzz target: IEEE 802.1CB R-TAG strip and insert, and the vector
 *        recovery of one stream fed with what strip found, at any times.
 *
 * Input: a header (u16 history length, folded into 2..1024; u16 reset
 * timeout in ms; u8 flags, bit 0 frerSeqRcvyTakeNoSequence), then records:
 *   u8 op      bit 0 the port, bits 1-2 what arrives: 0 a frame of the input's
 *              bytes (u8 length, then the bytes), 1 a frame tagged by insert
 *              (u16 sequence, u8 length), 2 an untagged frame (u8 length),
 *              3 nothing (the reset timer alone); bit 7 the clock goes back
 *   u16 time   the clock moves this many 100 us (forward, or back with bit 7)
 * Checked: strip accepts exactly the frames with room for what it reads,
 * removes exactly the 6 tag bytes and insert puts them back; recovery answers
 * pass or discard; every counter of the stream is the sum of its ports';
 * passed + discarded on a port is what that port fed; out of order never
 * exceeds passed nor rogue discarded; resets come one at a time; and no
 * sequence number passes twice while it is inside the history window.
 */
#include <errno.h>
#include "rtn_frer.h"
#include "fuzz_input.h"

#define SEQS	  65536
#define MAX_FRAME 256

static uint8_t delivered[SEQS / 8]; /* passed since it last entered the window */
static uint64_t fed[RTN_FRER_MAX_PORTS], fed_untagged[RTN_FRER_MAX_PORTS];

static int was_delivered(uint32_t s)
{
	return delivered[(s % SEQS) / 8] >> (s % 8) & 1;
}

static void set_delivered(uint32_t s, int on)
{
	uint8_t m = (uint8_t)(1u << (s % 8));

	if (on)
		delivered[(s % SEQS) / 8] |= m;
	else
		delivered[(s % SEQS) / 8] &= (uint8_t)~m;
}

/* Strip @p len bytes of @p frame (exactly that much heap) and check what it did. */
static int checked_strip(const uint8_t *frame, uint32_t len, int32_t *seq)
{
	uint8_t *buf = fuzz_exact_copy(frame, len), *back;
	int tagged = len >= 14 && frame[12] == 0xf1 && frame[13] == 0xc1;
	int n = rtn_rtag_strip(buf, len, seq);

	if (n < 0) {
		if (!(len < 14 && n == -EINVAL) && !(tagged && len < 20 && n == -EBADMSG))
			fuzz_fail("strip of %u bytes returned %d", len, n);
		if (*seq != RTN_RTAG_NONE)
			fuzz_fail("strip failed but reported sequence %d", *seq);
		free(buf);
		return n;
	}
	if (!tagged) {
		if ((uint32_t)n != len || *seq != RTN_RTAG_NONE || memcmp(buf, frame, len))
			fuzz_fail("strip changed an untagged frame (%d, seq %d)", n, *seq);
		free(buf);
		return n;
	}
	if ((uint32_t)n != len - RTN_RTAG_LEN || *seq != (frame[16] << 8 | frame[17]) ||
	    memcmp(buf, frame, 12) || memcmp(buf + 12, frame + 18, len - 18))
		fuzz_fail("strip of a tagged %u-byte frame gave %d bytes, seq %d", len, n, *seq);
	back = malloc(len);
	memcpy(back, buf, (size_t)n);
	if (rtn_rtag_insert(back, len, (uint32_t)n, (uint16_t)*seq) != (int)len ||
	    memcmp(back, frame, 14) || back[14] || back[15] ||
	    memcmp(back + 16, frame + 16, len - 16))
		fuzz_fail("insert(strip(frame)) is not the frame with its reserved bytes zero");
	if (rtn_rtag_insert(back, (uint32_t)n + RTN_RTAG_LEN - 1, (uint32_t)n, 0) != -ENOSPC)
		fuzz_fail("insert into a buffer one byte short was not refused");
	free(back);
	free(buf);
	return n;
}

/* A frame of @p len bytes (at least a header) to tag, or not, from a fixed pattern. */
static uint32_t make_frame(uint8_t *f, uint8_t len_in)
{
	uint32_t len = RTN_RTAG_ETH_HLEN + len_in % (MAX_FRAME - RTN_RTAG_LEN - RTN_RTAG_ETH_HLEN);
	uint32_t i;

	for (i = 0; i < len; i++)
		f[i] = (uint8_t)(i * 7 + 1);
	f[12] = 0x90; /* RTmac */
	f[13] = 0x21;
	return len;
}

static FUZZ_UNTRACED void check_counters(const struct rtn_frer_rcvy *r)
{
	const struct rtn_frer_port_counters *t = &r->total, *a = &r->port[0], *b = &r->port[1];
	int p;

	if (t->passed != a->passed + b->passed || t->discarded != a->discarded + b->discarded ||
	    t->out_of_order != a->out_of_order + b->out_of_order ||
	    t->rogue != a->rogue + b->rogue || t->tagless != a->tagless + b->tagless)
		fuzz_fail("the stream's counters are not the sum of its ports'");
	for (p = 0; p < RTN_FRER_MAX_PORTS; p++) {
		const struct rtn_frer_port_counters *c = &r->port[p];

		if (c->passed + c->discarded != fed[p] || c->tagless != fed_untagged[p])
			fuzz_fail("port %d: %llu passed + %llu discarded, %llu fed (%llu untagged)",
				  p, (unsigned long long)c->passed,
				  (unsigned long long)c->discarded, (unsigned long long)fed[p],
				  (unsigned long long)fed_untagged[p]);
		if (c->out_of_order > c->passed || c->rogue > c->discarded)
			fuzz_fail("port %d: more out of order than passed or rogue than discarded",
				  p);
	}
}

/* After a pass that moved RecovSeqNum from @p from to @p to: what left the window. */
static FUZZ_UNTRACED void window_moved(uint32_t from, uint32_t to, uint32_t hist)
{
	uint32_t k, d = (to - from) % SEQS;

	for (k = 0; k < d; k++)
		set_delivered(from + SEQS - hist + 1 + k, 0);
}

static void recover(struct rtn_frer_rcvy *r, uint32_t port, int32_t seq, int64_t now)
{
	uint64_t resets = r->resets, lost = r->lost;
	uint32_t from = r->recov_seq;
	int take_any = r->take_any, rc;

	fed[port]++;
	fed_untagged[port] += seq == RTN_RTAG_NONE;
	rc = rtn_frer_recover(r, port, seq, now);
	if (rc != 0 && rc != 1)
		fuzz_fail("recover returned %d", rc);
	if (r->resets - resets > 1 || r->lost < lost || r->lost - lost >= r->history_len)
		fuzz_fail("one packet made %llu resets and %llu lost",
			  (unsigned long long)(r->resets - resets),
			  (unsigned long long)(r->lost - lost));
	if (r->resets != resets) {
		memset(delivered, 0, sizeof(delivered));
		take_any = 1;
	}
	if (rc == 1 && seq != RTN_RTAG_NONE) {
		if (was_delivered((uint32_t)seq))
			fuzz_fail("sequence %d passed twice inside the history window", seq);
		if (!take_any)
			window_moved(from, r->recov_seq, r->history_len);
		set_delivered((uint32_t)seq, 1);
	}
	check_counters(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in_make(data, size);
	struct rtn_frer_rcvy r;
	uint32_t hist = RTN_FRER_HISTORY_MIN + fuzz_u16(&in) % (RTN_FRER_HISTORY_MAX - 1);
	uint32_t reset_ms = fuzz_u16(&in);
	int take_no_seq = fuzz_u8(&in) & 1, records = 0;
	int64_t now = 0;

	memset(delivered, 0, sizeof(delivered));
	memset(fed, 0, sizeof(fed));
	memset(fed_untagged, 0, sizeof(fed_untagged));
	if (rtn_frer_rcvy_init(&r, hist, reset_ms, take_no_seq) || r.resets != 1 || !r.take_any)
		fuzz_fail("init with history %u, reset %u ms", hist, reset_ms);
	while (fuzz_more(&in) && records++ < 4096) {
		uint8_t op = fuzz_u8(&in), frame[MAX_FRAME];
		int64_t step = (int64_t)fuzz_u16(&in) * 100000;
		uint32_t port = op & 1, len;
		int32_t seq = RTN_RTAG_NONE;
		size_t got;
		const uint8_t *bytes;

		now += op & 0x80 ? -step : step;
		switch (op >> 1 & 3) {
		case 0:
			len = fuzz_u8(&in);
			bytes = fuzz_span(&in, len, &got);
			if (checked_strip(bytes, (uint32_t)got, &seq) >= 0)
				recover(&r, port, seq, now);
			break;
		case 1: {
			uint16_t s = fuzz_u16(&in);
			int n;

			len = make_frame(frame, fuzz_u8(&in));
			n = rtn_rtag_insert(frame, sizeof(frame), len, s);
			if (n != (int)(len + RTN_RTAG_LEN))
				fuzz_fail("insert into a %u-byte frame returned %d", len, n);
			if (checked_strip(frame, (uint32_t)n, &seq) != (int)len || seq != s)
				fuzz_fail("strip(insert(frame, %u)) gave sequence %d", s, seq);
			recover(&r, port, seq, now);
			break;
		}
		case 2:
			len = make_frame(frame, fuzz_u8(&in));
			if (checked_strip(frame, len, &seq) != (int)len)
				fuzz_fail("strip of an untagged frame failed");
			recover(&r, port, seq, now);
			break;
		default: {
			uint64_t resets = r.resets;

			if (rtn_frer_tick(&r, now) != (int)(r.resets - resets))
				fuzz_fail("tick's answer disagrees with the reset counter");
			if (r.resets != resets)
				memset(delivered, 0, sizeof(delivered));
		}
		}
	}
	return 0;
}
