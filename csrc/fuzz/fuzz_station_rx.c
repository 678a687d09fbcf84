// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_station_rx.c
 * @brief Fuzz target: the station's receive dispatch (rtn_station_receive_all in
 *        rtn_station_rx.c, rtn_frer_rx, rtn_chans_rx, rtn_vnic_rx): strip an R-TAG,
 *        drop duplicates, classify every received frame and hand it to TDMA,
 *        an application channel, the probe counter or the VNIC,
 *        then write what went to the VNIC to its TAP (merging TCP segments
 *        when the TAP has a vnet header).
 *
 * Input: a mode byte (discipline: TDMA slave, TDMA master, NoMAC or none;
 * VNIC on; vnet header; which EtherType the probe receiver counts), then
 * frames: u16 (bits 0-10 length, bit 11 a bad descriptor, bit 15 ends an
 * RX batch), i8 receive stamp offset (0: no stamp from the XDP program),
 * the frame bytes.  Bit 7 of the mode byte: the frames are first taken as
 * before a deadline (rtn_station_receive_for_deadline), which must take
 * those ahead of the first tunnelled frame (R-TAG or not), at most eight,
 * and no more.
 * Checked: every frame is counted once; what reaches an
 * application ring is a whole message of its EtherType, never more than
 * the ring holds; what reaches the TAP is a frame (or, with the vnet
 * header, a packet that segments again).
 */
#include "station_harness.h"

static const uint16_t probe_types[4] = { 0, 0x88B5, 0x88B7, 0x0800 };

/* Every received frame is in the capture, in order, as long and with the bytes it had. */
FUZZ_UNTRACED static void capture_check(uint32_t frames)
{
	static struct rtn_cap_rec rec[STUB_RX_MAX];
	int n = rtn_capture_read(H.cap, rec, STUB_RX_MAX);

	if (n != (int)frames)
		fuzz_fail("%u frames received, %d captured", frames, n);
	for (int i = 0; i < n; i++) {
		const struct rtn_xsk_frame *f = &stub_xsk.rx[i];

		if (rec[i].h.dir != RTN_CAP_RX || rec[i].h.orig_len != f->len ||
		    rec[i].h.cap_len != f->len ||
		    (f->len && memcmp(rec[i].data, stub_xsk.orig[i], f->len)))
			fuzz_fail("capture record %d differs from the frame received", i);
	}
}

/* Every frame is tagged, untagged or a bad tag; every tagged one went to a stream or was refused. */
FUZZ_UNTRACED static void frer_check(uint32_t frames)
{
	struct rtn_station_frer_stats f;
	struct rtn_station_frer_stream st;
	uint64_t fed;
	uint32_t i;

	rtn_station_frer_stats(H.s, &f);
	fed = f.streams_refused;
	if (f.port[0].rx_frames != frames ||
	    f.port[0].rx_tagged + f.port[0].rx_untagged + f.port[0].bad_tags != frames)
		fuzz_fail("%u frames, FRER counted %llu", frames,
			  (unsigned long long)f.port[0].rx_frames);
	for (i = 0; rtn_station_frer_stream(H.s, i, &st) == 0; i++)
		fed += st.total.passed + st.total.discarded - st.total.tagless;
	if (fed != f.port[0].rx_tagged)
		fuzz_fail("%llu tagged frames, %llu through the streams",
			  (unsigned long long)f.port[0].rx_tagged, (unsigned long long)fed);
}

/* Before a deadline: at most RX_BEFORE, and none from the first tunnelled frame on. */
#define RX_BEFORE 8
FUZZ_UNTRACED static void before_deadline_check(void)
{
	uint64_t held = H.s->st.rx_tunnel_after_send;
	uint32_t want = 0;

	while (want < stub_xsk.rx_n && want < RX_BEFORE) {
		const uint8_t *f = stub_xsk.orig[want];
		uint32_t len = stub_xsk.rx[want].len, tag = 0;

		if (f && len >= 14 && f[12] == 0xF1 && f[13] == 0xC1)
			tag = 6; /* an R-TAG ahead of the RTmac EtherType */
		if (f && len >= 18 + tag && f[12 + tag] == 0x90 && f[13 + tag] == 0x21 &&
		    (f[17 + tag] & RTMAC_FLAG_TUNNEL))
			break;
		want++;
	}
	rtn_station_receive_for_deadline(H.s, RX_BEFORE);
	if (stub_xsk.rx_pos != want || stub_xsk.peeked)
		fuzz_fail("before a deadline %u frames taken, %u ahead of a tunnel frame",
			  stub_xsk.rx_pos, want);
	if ((H.s->st.rx_tunnel_after_send != held) != (want < RX_BEFORE && want < stub_xsk.rx_n))
		fuzz_fail("a tunnel frame left until after the send, counted %llu times",
			  (unsigned long long)(H.s->st.rx_tunnel_after_send - held));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in_make(data, size);
	uint8_t b0 = fuzz_u8(&in);
	struct station_mode m = { .disc = b0 & 3,
				  .vnic_live = (b0 >> 2) & 1,
				  .vnet = (b0 >> 3) & 1,
				  .probe_rx_type = probe_types[(b0 >> 4) & 3] };
	uint32_t frames = 0, i;

	station_reset(&m);
	/* capture on (the RT thread's view of it) for inputs with bit 6 */
	H.s->cap = b0 & 0x40 ? H.cap : NULL;
	while (fuzz_more(&in) && frames < STUB_RX_MAX) {
		uint16_t w = fuzz_u16(&in);
		int8_t ts = (int8_t)fuzz_u8(&in);
		size_t got;
		const uint8_t *p = fuzz_span(&in, w & 0x7ff, &got);

		stub_rx_add(w & 0x800 ? NULL : p, (uint32_t)got,
			    ts ? fuzz_clock_ns + ts * 10000LL : 0, w >> 15);
		frames++;
	}
	if (b0 & 0x80)
		before_deadline_check();
	rtn_station_receive_all(H.s);
	if (H.s->st.rx_frames != frames)
		fuzz_fail("%u frames received, %llu counted", frames,
			  (unsigned long long)H.s->st.rx_frames);
	frer_check(frames);
	if (stub_xsk.rx_pos != stub_xsk.rx_n || stub_xsk.peeked)
		fuzz_fail("rtn_station_receive_all left %u frames in the ring",
			  stub_xsk.rx_n - stub_xsk.rx_pos);
	if (H.s->cap)
		capture_check(frames);
	if (m.vnic_live) {
		rtn_vnic_write_all(H.s->vnic_ctl);
		tap_drain_check(m.vnet);
	}
	for (i = 0; i < N_CHANS; i++)
		app_drain((int)i, 1);
	return 0;
}
