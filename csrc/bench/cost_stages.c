// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file cost_stages.c
 * @brief The cost harness: each stage of the real-time path run on its
 *        own, on fixed frames and a fixed count, for valgrind's callgrind
 *        to count its instructions (tools/bench_cost.py).
 *
 * Usage: cost_stages STAGE COUNT.  The station is the one of the station
 * fuzz targets (../fuzz/station_harness.h): no NIC, no real-time thread, a
 * virtual clock, an AF_XDP socket stub that copies what it is given and
 * returns the frames the harness queued.  The application library is
 * rtn_app.c on a virtual clock (cost_app.c) attached to the same channel
 * memory, so both ends of a channel run in this one process.
 *
 * Each measured step is bracketed by CALLGRIND_TOGGLE_COLLECT (run under
 * callgrind with --collect-atstart=no); everything else (building frames,
 * emptying rings, moving the virtual clock) runs outside the count.  A few
 * warm-up rounds run uncounted first, so that no one-time work (first
 * touches of the rings, the engine's first cycle) lands in the figure.
 * The "empty" stage measures the bracket alone; the tool subtracts it.
 * Outside valgrind the brackets do nothing and the harness simply runs.
 *
 * Prints one JSON line: the stage, how many units (frames, copies or KB)
 * the count covers, how many brackets it used, and the stack's own counters
 * read after the run (kicks, frames sent, wake-ups of the RT loop).
 */
#include "cost_station.h"

#define FRAME_LEN   64 /* as handed to the socket; the FCS is the NIC's */
#define PAYLOAD_LEN (FRAME_LEN - RTN_APP_OVERHEAD)
#define CHAN	    0 /* EtherType 0x88B5, slot 0, depth 4 */
#define GSO_PAYLOAD 64000
#define GSO_MSS	    1448
#define GSO_HDRS    (14 + 20 + 20)

static struct rtn_app_chan *app;
static const uint8_t peer_mac[6] = { 0x02, 0x52, 0x54, 0x00, 0x00, 0x03 };
static const uint8_t payload[PAYLOAD_LEN] = { 0x52, 0x54, 0x4e, 0x45, 0x54, 0x21 };
static uint8_t rx_frame[FRAME_LEN]; /* a frame of the channel, as a peer would send it */

/* The station with one channel open (the harness opens four). */
static void setup(void)
{
	struct chan *c;
	int i;

	cost_station_master();
	for (i = 0; i < N_CHANS; i++)
		if (i != CHAN)
			H.s->live[i] = NULL;
	c = &H.s->chans[CHAN];
	app = cost_app_attach(c->shm, c->size);
}

/* The application's message, unmeasured, and what the station made of it. */
static void app_put(void)
{
	if (rtn_app_send(app, peer_mac, payload, PAYLOAD_LEN, RTN_APP_SCHED_NOW, NULL))
		die("rtn_app_send refused a message");
}

static void tx_ring_empty(void)
{
	struct rtn_chan_shm *shm = H.s->chans[CHAN].shm;

	shm->tx.tail = shm->tx.head;
}

static void rx_ring_empty(void)
{
	struct rtn_chan_shm *shm = H.s->chans[CHAN].shm;

	shm->rx.tail = shm->rx.head;
}

/* What a peer station sends for the channel: the frame an application send builds. */
static void make_rx_frame(void)
{
	struct rtn_chan_shm *shm = H.s->chans[CHAN].shm;
	const struct rtn_msg *m = &rtn_chan_tx_msgs(shm)[shm->tx.head & (shm->depth - 1)];

	app_put();
	if (m->len != FRAME_LEN)
		die("the application built a frame of another length");
	memcpy(rx_frame, m->frame, FRAME_LEN);
	memcpy(rx_frame, H.s->o.mac, 6);
	memcpy(rx_frame + 6, peer_mac, 6);
	tx_ring_empty();
}

static int accept_all(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		      uint32_t len, void *arg)
{
	return 0;
}

/* ---- the stages ---------------------------------------------------------- */

static void stage_empty(uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		MEASURE((void)0);
}

static void stage_app_send(uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		int rc;

		MEASURE(rc = rtn_app_send(app, peer_mac, payload, PAYLOAD_LEN, RTN_APP_SCHED_NOW,
					  NULL));
		if (rc)
			die("rtn_app_send refused a message");
		tx_ring_empty();
		cost_app_clock_ns += 1000000;
	}
}

static void stage_app_recv(uint32_t n)
{
	uint8_t buf[2048];
	struct rtn_app_msg_info info;
	uint32_t i;

	for (i = 0; i < n; i++) {
		int rc;

		rtn_chans_rx(H.s, 0x88B5, rx_frame, FRAME_LEN, fuzz_clock_ns, fuzz_clock_ns);
		MEASURE(rc = rtn_app_recv(app, buf, sizeof(buf), &info, 0));
		if (rc != PAYLOAD_LEN)
			die("rtn_app_recv did not return the message");
	}
}

static void stage_chan_drain(uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		app_put();
		MEASURE(rtn_chans_drain(H.s, accept_all, NULL, fuzz_clock_ns));
	}
}

static void stage_chan_deliver(uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		MEASURE(rtn_chans_rx(H.s, 0x88B5, rx_frame, FRAME_LEN, fuzz_clock_ns,
				     fuzz_clock_ns));
		rx_ring_empty();
	}
}

/*
 * One 1 ms master cycle per frame: the application's message is in the
 * ring at the cycle's start; every wake-up of the RT loop in the cycle
 * (the engine's next event: Sync, each slot) is one run of the discipline
 * and the flush after it, as the RT thread does.  The engine sends the
 * Sync and, in slot 0, the message.
 */
static uint64_t wakeups;

/* Every wake-up of the RT loop in one cycle, each measured (and counted). */
static void run_cycle(void)
{
	int64_t end = fuzz_clock_ns + H.s->tdma_cfg.cycle_ns;

	for (;;) {
		int64_t t = rtn_tdma_next_event(H.s->tdma);

		if (t >= end)
			break;
		if (t > fuzz_clock_ns)
			fuzz_clock_ns = t;
		MEASURE(rtn_disc_tdma_ops.run(H.s, 0); station_flush(H.s));
		wakeups += counting;
	}
	fuzz_clock_ns = end;
}

static void slot_cycle(void)
{
	app_put();
	run_cycle();
}

static void stage_slot_run(uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		slot_cycle();
}

static void stage_rx_dispatch(uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		stub_rx_clear();
		stub_rx_add(rx_frame, FRAME_LEN, fuzz_clock_ns, 1);
		MEASURE(rtn_station_receive_all(H.s));
		rx_ring_empty();
	}
}

/* What the socket stub itself costs inside the slot run and the RX dispatch. */
static void stage_stub_send(uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		MEASURE(rtn_xsk_send_by(&stub_xsk, rx_frame, FRAME_LEN, -1, 0, INT64_MAX, NULL));
}

static void stage_stub_rx(uint32_t n)
{
	struct rtn_xsk_frame fr[8];
	int64_t ts;
	uint32_t i;

	for (i = 0; i < n; i++) {
		stub_rx_clear();
		stub_rx_add(rx_frame, FRAME_LEN, fuzz_clock_ns, 1);
		MEASURE(rtn_xsk_rx_peek(&stub_xsk, fr, 8, &ts); rtn_xsk_rx_release(&stub_xsk);
			rtn_xsk_rx_peek(&stub_xsk, fr, 8, &ts));
	}
}

/* 802.1CB: both copies of each frame tagged (one sequence number per frame). */
static void stage_frer_send(uint32_t n)
{
	uint8_t a[FRAME_LEN + RTN_RTAG_LEN], b[FRAME_LEN + RTN_RTAG_LEN];
	struct rtn_frer_seqgen g;
	uint32_t i;

	rtn_frer_seqgen_init(&g);
	for (i = 0; i < n; i++) {
		int la, lb;

		memcpy(a, rx_frame, FRAME_LEN);
		memcpy(b, rx_frame, FRAME_LEN);
		MEASURE(uint16_t seq = rtn_frer_seqgen_next(&g);
			la = rtn_rtag_insert(a, sizeof(a), FRAME_LEN, seq);
			lb = rtn_rtag_insert(b, sizeof(b), FRAME_LEN, seq));
		if (la != FRAME_LEN + RTN_RTAG_LEN || lb != la)
			die("rtn_rtag_insert failed");
	}
}

/* 802.1CB: both copies of each frame arrive (port 0 first): one passes, one is discarded. */
static struct rtn_frer_rcvy rcvy;

static void stage_frer_recover(uint32_t n)
{
	uint8_t a[FRAME_LEN + RTN_RTAG_LEN], b[FRAME_LEN + RTN_RTAG_LEN];
	uint32_t i;

	if (rtn_frer_rcvy_init(&rcvy, 16, 0, 0))
		die("rtn_frer_rcvy_init failed");
	for (i = 0; i < n; i++) {
		int32_t sa, sb;

		memcpy(a, rx_frame, FRAME_LEN);
		rtn_rtag_insert(a, sizeof(a), FRAME_LEN, (uint16_t)i);
		memcpy(b, a, sizeof(b));
		MEASURE(rtn_rtag_strip(a, sizeof(a), &sa); rtn_frer_recover(&rcvy, 0, sa, 0);
			rtn_rtag_strip(b, sizeof(b), &sb); rtn_frer_recover(&rcvy, 1, sb, 0));
	}
}

/*
 * The VNIC: a 64,000-byte TCP/IPv4 super-packet as the TAP hands it over
 * (virtio-net header, GSO TCPV4, checksum left to us), cut into MSS-sized
 * frames; and those frames merged back into one packet for a TAP write.
 */
static uint8_t gso_pkt[RTN_VNET_HDR_LEN + GSO_HDRS + GSO_PAYLOAD];
static uint8_t gso_saved[sizeof(gso_pkt)];
static uint8_t segs[(GSO_PAYLOAD + GSO_MSS - 1) / GSO_MSS][1514];
static int seg_len[sizeof(segs) / sizeof(segs[0])];

static void make_gso_packet(void)
{
	struct rtn_vnet_hdr vh = { .flags = RTN_VNET_F_NEEDS_CSUM,
				   .gso_type = RTN_VNET_GSO_TCPV4,
				   .hdr_len = GSO_HDRS,
				   .gso_size = GSO_MSS,
				   .csum_start = 14 + 20,
				   .csum_offset = 16 };
	uint8_t *f = gso_pkt + RTN_VNET_HDR_LEN, *ip = f + 14, *tcp = ip + 20;
	uint32_t i;

	memcpy(gso_pkt, &vh, sizeof(vh));
	memcpy(f, H.s->o.mac, 6);
	memcpy(f + 6, peer_mac, 6);
	rtn_put_be16(f + 12, 0x0800);
	ip[0] = 0x45;
	rtn_put_be16(ip + 2, 20 + 20 + GSO_PAYLOAD);
	ip[8] = 64;
	ip[9] = 6;
	rtn_put_be32(ip + 12, 0xc6130001); /* 198.19.0.1 -> 198.19.0.2 */
	rtn_put_be32(ip + 16, 0xc6130002);
	rtn_put_be16(tcp, 40000);
	rtn_put_be16(tcp + 2, 5001);
	rtn_put_be32(tcp + 4, 1000);
	rtn_put_be32(tcp + 8, 1);
	tcp[12] = 5 << 4;
	tcp[13] = 0x18; /* PSH, ACK */
	rtn_put_be16(tcp + 14, 65535);
	for (i = 0; i < GSO_PAYLOAD; i++)
		tcp[20 + i] = (uint8_t)(i * 7 + 3);
	memcpy(gso_saved, gso_pkt, sizeof(gso_pkt));
}

static int gso_all(uint8_t (*out)[1514], int *lens)
{
	struct rtn_gso_seg g;
	int k = 0, len;

	if (rtn_gso_begin(&g, gso_pkt, sizeof(gso_pkt), 1514) < 1)
		return -1;
	while ((len = rtn_gso_next(&g, out[k], sizeof(out[k]))) > 0) {
		lens[k] = len;
		k++;
	}
	return len < 0 ? -1 : k;
}

static void stage_vnic_gso(uint32_t n)
{
	uint32_t i;
	int k;

	for (i = 0; i < n; i++) {
		memcpy(gso_pkt, gso_saved, sizeof(gso_pkt));
		MEASURE(k = gso_all(segs, seg_len));
		if (k != (int)(sizeof(segs) / sizeof(segs[0])))
			die("segmentation did not yield the expected frames");
	}
}

/*
 * The same super-packet as the pump's TAP read scatters it into the frames
 * its segments leave from (laid out as the flow's packets are cut), cut
 * where it lies: no payload copied, only the headers and the checksums.
 */
#define LAY_FRAMES ((GSO_PAYLOAD + GSO_MSS - 1) / GSO_MSS)
static uint8_t lay_saved[LAY_FRAMES][1514], lay[LAY_FRAMES][1514];

static void lay_out(void)
{
	const uint8_t *p = gso_saved + RTN_VNET_HDR_LEN;
	uint32_t k, at = GSO_HDRS;

	memcpy(lay_saved[0], p, GSO_HDRS);
	for (k = 0; k < LAY_FRAMES; k++) {
		uint32_t chunk = GSO_PAYLOAD - (at - GSO_HDRS);

		chunk = chunk < GSO_MSS ? chunk : GSO_MSS;
		memcpy(lay_saved[k] + GSO_HDRS, p + at, chunk);
		at += chunk;
	}
}

static void stage_vnic_gso_in_place(uint32_t n)
{
	struct rtn_gso_seg g;
	uint32_t i, k;
	int nseg, bad;

	lay_out();
	for (i = 0; i < n; i++) {
		memcpy(lay, lay_saved, sizeof(lay));
		bad = 0;
		MEASURE(nseg = rtn_gso_begin_scattered(&g, gso_saved, lay[0],
						       sizeof(gso_saved) - RTN_VNET_HDR_LEN, 1514,
						       GSO_HDRS, GSO_MSS);
			for (k = nseg > 0 ? (uint32_t)nseg : 0; k-- > 0;)
				bad |= rtn_gso_fix_in_place(&g, k, lay[k]) <= 0);
		if (nseg != LAY_FRAMES || bad)
			die("the super-packet was not cut in place");
	}
}

static uint32_t gro_merge(int nseg)
{
	struct rtn_gro g;
	int k;

	rtn_gro_init(&g);
	if (rtn_gro_begin(&g, segs[0], (uint32_t)seg_len[0]) != 1)
		return 0;
	for (k = 1; k < nseg; k++)
		if (rtn_gro_append(&g, segs[k], (uint32_t)seg_len[k]) != 1)
			return 0;
	return rtn_gro_finish(&g);
}

static void stage_vnic_gro(uint32_t n)
{
	int nseg = gso_all(segs, seg_len);
	uint32_t i, len;

	if (nseg < 2)
		die("cannot make the segments to merge");
	for (i = 0; i < n; i++) {
		MEASURE(len = gro_merge(nseg));
		if (len != sizeof(gso_pkt))
			die("the segments did not merge into one packet");
	}
}

/*
 * The VNIC's work on the RT thread, per KB of full-size TCP frames (the
 * pump's is vnic_gso and vnic_gro): its frames sent from the ring in a
 * transmit window, and received tunnel frames handed to the pump.  The
 * master runs a 1 ms cycle at 1000 Mbit/s modelled with the VNIC's slot a
 * 900 us window, so the cycle's Sync is shared by VNIC_FRAMES frames; the
 * VNIC's frames are sent in place from the frames the socket stub lends,
 * as from the real socket's UMEM.  The pump's side (the TAP read into the
 * ring, the TAP write) runs unmeasured between the rounds.
 */
#define VNIC_FRAMES 64
#define VNIC_FRAME  (14 + 1500 - RTMAC_HLEN) /* the largest a 1500-byte slot carries tunnelled */

static uint8_t tcp_frame[VNIC_FRAME]; /* what Linux hands the TAP */

static void vnic_setup(void)
{
	struct rtn_tdma_cfg cfg;
	uint8_t *ip = tcp_frame + 14;
	uint32_t i;

	rtn_tdma_cfg_init(&cfg, RTN_TDMA_ROLE_MASTER);
	cfg.listen_cycles = 0;
	cfg.link_rate_mbps = 1000;
	harness_slot(&cfg, 1, 50000, 1500, 900000);
	rtn_tdma_destroy(H.s->tdma); /* cost_station_master's */
	cost_station_engine(&cfg);
	if (rtn_vnic_reset(H.s->vnic_ctl, RTN_VNIC_BATCHED, 1, 0))
		die("cannot reset the VNIC");
	H.s->vnic = H.s->vnic_ctl;
	stub_keep_all = 1;
	memcpy(tcp_frame, peer_mac, 6);
	memcpy(tcp_frame + 6, H.s->o.mac, 6);
	rtn_put_be16(tcp_frame + 12, 0x0800);
	ip[0] = 0x45;
	rtn_put_be16(ip + 2, VNIC_FRAME - 14);
	ip[8] = 64;
	ip[9] = 6;
	for (i = 14 + 20; i < VNIC_FRAME; i++)
		tcp_frame[i] = (uint8_t)i;
}

static void stage_vnic_rt_tx(uint32_t n)
{
	uint32_t i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < VNIC_FRAMES; k++)
			if (send(H.tap_peer, tcp_frame, sizeof(tcp_frame), 0) != sizeof(tcp_frame))
				die("cannot hand the VNIC a frame");
		rtn_vnic_pump_once(H.s->vnic_ctl);
		run_cycle();
	}
}

static void stage_vnic_rt_rx(uint32_t n)
{
	static uint8_t tunnel[VNIC_FRAME + RTMAC_HLEN];
	uint32_t i, k;
	int len = rtn_rtmac_tunnel_encap(tunnel, sizeof(tunnel), tcp_frame, VNIC_FRAME, peer_mac);

	if (len != (int)sizeof(tunnel))
		die("cannot build the tunnel frame");
	memcpy(tunnel, H.s->o.mac, 6);
	for (i = 0; i < n; i++) {
		stub_rx_clear();
		for (k = 0; k < VNIC_FRAMES; k++)
			stub_rx_add(tunnel, sizeof(tunnel), fuzz_clock_ns, 0);
		MEASURE(rtn_station_receive_all(H.s));
		rtn_vnic_write_all(H.s->vnic_ctl);
		drain_socket(H.tap_peer);
	}
}

/* ---- main ------------------------------------------------------------------ */

static const struct stage stages[] = {
	{ "empty", stage_empty, "region", 1 },
	{ "app_send", stage_app_send, "frame", 1 },
	{ "app_recv", stage_app_recv, "frame", 1 },
	{ "chan_drain", stage_chan_drain, "frame", 1 },
	{ "chan_deliver", stage_chan_deliver, "frame", 1 },
	{ "slot_run", stage_slot_run, "frame", 1 },
	{ "rx_dispatch", stage_rx_dispatch, "frame", 1 },
	{ "stub_send", stage_stub_send, "frame", 1 },
	{ "stub_rx", stage_stub_rx, "frame", 1 },
	{ "frer_send", stage_frer_send, "copy", 2 },
	{ "frer_recover", stage_frer_recover, "copy", 2 },
	{ "vnic_gso", stage_vnic_gso, "KB", GSO_PAYLOAD / 1024.0 },
	{ "vnic_gso_in_place", stage_vnic_gso_in_place, "KB", GSO_PAYLOAD / 1024.0 },
	{ "vnic_gro", stage_vnic_gro, "KB", GSO_PAYLOAD / 1024.0 },
	{ "vnic_rt_tx", stage_vnic_rt_tx, "KB", VNIC_FRAMES *VNIC_FRAME / 1024.0 },
	{ "vnic_rt_rx", stage_vnic_rt_rx, "KB", VNIC_FRAMES *VNIC_FRAME / 1024.0 },
};

int main(int argc, char **argv)
{
	const struct stage *st;
	uint64_t tx_before, kicks_before;
	unsigned long n;

	st = cost_stage_arg(argc, argv, "cost_stages", stages, sizeof(stages) / sizeof(stages[0]),
			    &n);
	setup();
	make_rx_frame();
	make_gso_packet();
	if (!strncmp(st->name, "vnic_rt", 7))
		vnic_setup();
	st->run(WARMUP);
	tx_before = stub_xsk.tx_frames;
	kicks_before = cost_app_kicks(app);
	counting = 1;
	st->run((uint32_t)n);
	counting = 0;
	printf("{\"stage\": \"%s\", \"rounds\": %lu, \"units\": %.6f, \"unit\": \"%s\", "
	       "\"regions\": %llu, \"counters\": {\"socket_sends\": %llu, \"app_kicks\": %llu, "
	       "\"rt_wakeups\": %llu, \"frer_passed\": %llu, \"frer_discarded\": %llu}}\n",
	       st->name, n, n * st->per_round, st->unit, (unsigned long long)regions,
	       (unsigned long long)(stub_xsk.tx_frames - tx_before),
	       (unsigned long long)(cost_app_kicks(app) - kicks_before),
	       (unsigned long long)wakeups, (unsigned long long)rcvy.total.passed,
	       (unsigned long long)rcvy.total.discarded);
	return 0;
}
