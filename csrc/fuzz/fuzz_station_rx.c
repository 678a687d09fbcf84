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
 * frames: u16 (bits 0-10 length, bit 11 a bad descriptor, bit 12 received
 * on the second port, bit 15 ends an RX batch), i8 receive stamp offset (0:
 * no stamp from the XDP program), the frame bytes.  A frame on the second
 * port gives the station two (IEEE 802.1CB); it then first takes up to
 * three frames as woken early (rtn_station_receive), which must be the
 * first three in the wires' order (the XDP stamps, unstamped as received
 * now, the first port's on a tie), up to a bad descriptor first in both
 * rings.  Bit 7 of the mode byte: the frames are then taken as before a
 * deadline (rtn_station_receive_for_deadline), which must take those ahead
 * of the first tunnelled frame (R-TAG or not), in the same order with two
 * ports, at most eight, and no more.
 * Checked: every frame is counted once; what reaches an
 * application ring is a whole message of its EtherType, never more than
 * the ring holds; what reaches the TAP is a frame (or, with the vnet
 * header, a packet that segments again).
 */
#include "station_harness.h"

static const uint16_t probe_types[4] = { 0, 0x88B5, 0x88B7, 0x0800 };

/*
 * Every received frame is in the capture; with one port in order, as long
 * and with the bytes it had (two ports' frames interleave in the wires'
 * order, and the copies of the two wires are alike: only counted).
 */
FUZZ_UNTRACED static void capture_check(uint32_t frames, int one_port)
{
	static struct rtn_cap_rec rec[STUB_RX_MAX];
	int n = rtn_capture_read(H.cap, rec, STUB_RX_MAX);

	if (n != (int)frames)
		fuzz_fail("%u frames received, %d captured", frames, n);
	for (int i = 0; one_port && i < n; i++) {
		const struct rtn_xsk_frame *f = &stub_xsk.rx[i];

		if (rec[i].h.dir != RTN_CAP_RX || rec[i].h.orig_len != f->len ||
		    rec[i].h.cap_len != f->len ||
		    (f->len && memcmp(rec[i].data, stub_xsk.orig[i], f->len)))
			fuzz_fail("capture record %d differs from the frame received", i);
	}
}

/*
 * Every frame of each port is tagged, untagged or a bad tag; every tagged
 * one went to a stream or was refused.
 */
FUZZ_UNTRACED static void frer_check(const uint32_t frames[2])
{
	struct rtn_station_frer_stats f;
	struct rtn_station_frer_stream st;
	uint64_t fed, tagged = 0;
	uint32_t i, p;

	rtn_station_frer_stats(H.s, &f);
	fed = f.streams_refused;
	for (p = 0; p < 2; p++) {
		const struct rtn_station_port_stats *ps = &f.port[p];

		if (ps->rx_frames != frames[p] ||
		    ps->rx_tagged + ps->rx_untagged + ps->bad_tags != frames[p])
			fuzz_fail("port %u: %u frames, FRER counted %llu", p, frames[p],
				  (unsigned long long)ps->rx_frames);
		tagged += ps->rx_tagged;
	}
	for (i = 0; rtn_station_frer_stream(H.s, i, &st) == 0; i++)
		fed += st.total.passed + st.total.discarded - st.total.tagless;
	if (fed != tagged)
		fuzz_fail("%llu tagged frames, %llu through the streams",
			  (unsigned long long)tagged, (unsigned long long)fed);
}

/* Frame @p i of @p x as received is a tunnelled one: RTmac with the tunnel flag, R-TAG or not. */
FUZZ_UNTRACED static int tunnelled(const struct rtn_xsk *x, uint32_t i)
{
	const uint8_t *f = x->orig[i];
	uint32_t len = x->rx[i].len, tag = 0;

	if (f && len >= 14 && f[12] == 0xF1 && f[13] == 0xC1)
		tag = 6; /* an R-TAG ahead of the RTmac EtherType */
	return f && len >= 18 + tag && f[12 + tag] == 0x90 && f[13 + tag] == 0x21 &&
	       (f[17 + tag] & RTMAC_FLAG_TUNNEL);
}

/*
 * Two ports: where a take of at most @p max frames in the wires' order ends
 * (@p pos, per port, from where they stand), and whether it stopped at a
 * tunnelled frame (@p tunnel_stops).  A bad descriptor first in a ring
 * counts as nothing there.
 */
FUZZ_UNTRACED static int two_port_walk(uint32_t pos[2], uint32_t max, int tunnel_stops)
{
	struct rtn_xsk *port[2] = { &stub_xsk, &stub_xsk_b };
	uint32_t taken, p;

	pos[0] = stub_xsk.rx_pos;
	pos[1] = stub_xsk_b.rx_pos;
	for (taken = 0; taken < max; taken++) {
		int64_t at[2];
		int has[2];

		for (p = 0; p < 2; p++) {
			has[p] = pos[p] < port[p]->rx_n && port[p]->rx[pos[p]].data;
			at[p] = has[p] && port[p]->rx[pos[p]].rx_ts ? port[p]->rx[pos[p]].rx_ts :
								      fuzz_clock_ns;
		}
		if (!has[0] && !has[1])
			return 0;
		p = !has[0] || (has[1] && at[1] < at[0]);
		if (tunnel_stops && tunnelled(port[p], pos[p]))
			return 1;
		pos[p]++;
	}
	return 0;
}

/* Both rings stand where @p want says, with no peek left open. */
FUZZ_UNTRACED static void rings_at(const uint32_t want[2], const char *when)
{
	if (stub_xsk.rx_pos != want[0] || stub_xsk_b.rx_pos != want[1] || stub_xsk.peeked ||
	    stub_xsk_b.peeked)
		fuzz_fail("%s %u and %u frames taken, %u and %u expected", when, stub_xsk.rx_pos,
			  stub_xsk_b.rx_pos, want[0], want[1]);
}

/* Woken early with two ports: exactly the first RX_EARLY frames in the wires' order. */
#define RX_EARLY 3
FUZZ_UNTRACED static void early_two_check(void)
{
	uint32_t want[2];

	two_port_walk(want, RX_EARLY, 0);
	rtn_station_receive(H.s, RX_EARLY);
	rings_at(want, "woken early, in the wires' order:");
}

/*
 * Before a deadline: at most RX_BEFORE, and none from the first tunnelled
 * frame on (with two ports, of either, in the wires' order; with one, a bad
 * descriptor is taken too: the peek counts it).
 */
#define RX_BEFORE 8
FUZZ_UNTRACED static void before_deadline_check(int two_ports)
{
	uint64_t held = H.s->st.rx_tunnel_after_send;
	uint32_t want[2] = { 0, 0 };
	int stops;

	if (two_ports) {
		stops = two_port_walk(want, RX_BEFORE, 1);
	} else {
		while (want[0] < stub_xsk.rx_n && want[0] < RX_BEFORE &&
		       !tunnelled(&stub_xsk, want[0]))
			want[0]++;
		stops = want[0] < RX_BEFORE && want[0] < stub_xsk.rx_n;
	}
	rtn_station_receive_for_deadline(H.s, RX_BEFORE);
	rings_at(want, "before a deadline, ahead of a tunnel frame:");
	if ((H.s->st.rx_tunnel_after_send != held) != stops)
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
	uint32_t frames = 0, on[2] = { 0, 0 }, i;

	station_reset(&m);
	/* capture on (the RT thread's view of it) for inputs with bit 6 */
	H.s->cap = b0 & 0x40 ? H.cap : NULL;
	while (fuzz_more(&in) && frames < STUB_RX_MAX) {
		uint16_t w = fuzz_u16(&in);
		int8_t ts = (int8_t)fuzz_u8(&in);
		size_t got;
		const uint8_t *p = fuzz_span(&in, w & 0x7ff, &got);

		int b = (w >> 12) & 1;

		stub_rx_add_to(b ? &stub_xsk_b : &stub_xsk, w & 0x800 ? NULL : p, (uint32_t)got,
			       ts ? fuzz_clock_ns + ts * 10000LL : 0, w >> 15);
		frames++;
		on[b]++;
	}
	if (on[1]) { /* a frame on the second port: the station has two */
		H.s->xsk_b = &stub_xsk_b;
		early_two_check();
	}
	if (b0 & 0x80)
		before_deadline_check(on[1] != 0);
	rtn_station_receive_all(H.s);
	if (H.s->st.rx_frames != frames)
		fuzz_fail("%u frames received, %llu counted", frames,
			  (unsigned long long)H.s->st.rx_frames);
	frer_check(on);
	if (stub_xsk.rx_pos != stub_xsk.rx_n || stub_xsk.peeked ||
	    stub_xsk_b.rx_pos != stub_xsk_b.rx_n || stub_xsk_b.peeked)
		fuzz_fail("rtn_station_receive_all left %u and %u frames in the rings",
			  stub_xsk.rx_n - stub_xsk.rx_pos, stub_xsk_b.rx_n - stub_xsk_b.rx_pos);
	if (H.s->cap)
		capture_check(frames, !on[1]);
	if (m.vnic_live) {
		rtn_vnic_write_all(H.s->vnic_ctl);
		tap_drain_check(m.vnet);
	}
	for (i = 0; i < N_CHANS; i++)
		app_drain((int)i, 1);
	return 0;
}
