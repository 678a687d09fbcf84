// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_station_chan.c
 * @brief Fuzz target: the station's side of the application channels
 *        (rtn_chans_drain, rtn_chans_rx, rtn_chans_on_cycle in
 *        rtn_station_chan.c; take_tdma in rtn_station_tdma.c, take_nomac in
 *        rtn_nomac.c; the ring helpers in rtn_chan.h): what the RT thread
 *        reads from memory an application can write at any time.
 *
 * The channel memory is a buffer the input may overwrite anywhere between
 * two of the station's steps (ring heads and tails, ring sizes, depth,
 * message lengths, frames) and, in a "racing" drain, between the station's
 * look at a message and its use of it, as a second thread of the
 * application could.  Input: a mode byte (TDMA master or NoMAC, TX ring
 * full, VNIC on, vnet header, probe slot), then operations: an application
 * sends a well-formed message; bytes are written into a channel's memory;
 * the station drains the TX rings (plainly or racing); time passes and the
 * discipline runs its slots (which drain the channels, the probe and the
 * VNIC's TAP); a frame is received for a channel; a cycle start is
 * published; a packet arrives on the TAP.  Besides the sanitizers and
 * libFuzzer's -timeout: no drain takes more messages from a channel than
 * its ring holds, and the socket stub refuses any frame longer than an
 * Ethernet frame.
 */
#include "station_harness.h"

enum { OP_SEND, OP_POKE, OP_DRAIN, OP_RACE, OP_RUN, OP_RX, OP_CYCLE, OP_TAP, OP_KINDS };

/*
 * Simulated time per input: 32 of the master's 1 ms cycles.  Every slot
 * drains the channels, so more cycles only make an input slower (an input
 * of a few hundred runs of 65 ms each took most of a second).
 */
#define TIME_BUDGET_NS (32 * 1000000LL)

struct poke {
	int chan;
	uint32_t off, n;
	const uint8_t *bytes;
};

static const uint16_t chan_type_of[N_CHANS] = { 0x88B5, 0x88B6, 0x88B5, RTN_ETH_P_IPV4,
						RTN_ETH_P_IPV4 };

static void read_poke(struct fuzz_in *in, struct poke *p)
{
	uint16_t where;
	size_t got;

	p->chan = fuzz_u8(in) % N_CHANS;
	where = fuzz_u16(in);
	/* half the writes aim at the header (geometry, ring indexes), half anywhere */
	if (where & 0x8000)
		p->off = (where & 0x7fff) % sizeof(struct rtn_chan_shm);
	else
		p->off = where % H.shm_size[p->chan];
	p->bytes = fuzz_span(in, fuzz_u8(in) % 17, &got);
	p->n = (uint32_t)got;
	if (p->off + p->n > H.shm_size[p->chan])
		p->n = (uint32_t)(H.shm_size[p->chan] - p->off);
}

static void apply_poke(const struct poke *p)
{
	memcpy((uint8_t *)H.s->chans[p->chan].shm + p->off, p->bytes, p->n);
}

/*
 * A drain through this take counts what it takes from each channel (a ring
 * never holds more than its depth, so a drain that takes more is reading
 * what nobody wrote) and, racing, lets the application rewrite its memory
 * right before the first take.
 */
static struct {
	struct poke p;
	int armed;
	uint32_t taken[N_CHANS];
	int (*take)(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		    uint32_t len, void *arg);
	void *arg;
} race;

static int racing_take(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		       uint32_t len, void *unused)
{
	int id = (int)(c - s->chans);

	if (++race.taken[id] > chan_opts[id].depth)
		fuzz_fail("one drain took more than %u messages from channel %d's ring of %u",
			  race.taken[id] - 1, id, chan_opts[id].depth);
	if (race.armed) {
		apply_poke(&race.p);
		race.armed = 0;
	}
	return race.take(s, c, m, len, race.arg);
}

static void drain(int racing, const struct poke *p)
{
	struct rtn_station *s = H.s;

	race.take = s->ops == &rtn_disc_tdma_ops ? rtn_station_take_tdma : rtn_nomac_take;
	race.arg = s->ops == &rtn_disc_tdma_ops ? (void *)s->tdma : (void *)s->nomac;
	race.armed = racing;
	memset(race.taken, 0, sizeof(race.taken));
	if (racing)
		race.p = *p;
	rtn_chans_drain(s, racing_take, NULL, rtn_station_local_now(s));
	if (s->ops == &rtn_disc_nomac_ops)
		rtn_nomac_flush(s->nomac, rtn_station_local_now(s));
}

static void run_for(int64_t dt_ns)
{
	struct rtn_station *s = H.s;

	fuzz_clock_ns += dt_ns;
	if (s->ops == &rtn_disc_tdma_ops) {
		rtn_tdma_run(s->tdma, rtn_station_local_now(s));
	} else {
		rtn_disc_nomac_ops.run(s->nomac, 0); /* what the RT loop runs under NoMAC */
	}
}

static void frame_for(uint8_t *f, uint32_t len, int chan, const uint8_t *body, size_t got)
{
	memset(f, 0, len);
	memcpy(f, body, got < len ? got : len);
	memcpy(f + 6, H.s->o.mac, 6);
	rtn_put_be16(f + 12, chan_type_of[chan]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in_make(data, size);
	uint8_t b0 = fuzz_u8(&in);
	struct station_mode m = { .disc = b0 & 1 ? DISC_NOMAC : DISC_TDMA_MASTER,
				  .tx_full = (b0 >> 1) & 1,
				  .vnic_live = (b0 >> 2) & 1,
				  .vnet = (b0 >> 3) & 1 };
	uint8_t f[RTN_CHAN_MSG_MAX + 64];
	uint32_t ops = 0;

	station_reset(&m);
	if (b0 & 0x10)
		rtn_station_set_probe(H.s, 2, 0x88B7, 60 + fuzz_u8(&in));
	while (fuzz_more(&in) && ops++ < 256 && fuzz_clock_ns - STATION_T0 < TIME_BUDGET_NS) {
		uint8_t op = fuzz_u8(&in) % OP_KINDS;
		struct poke p;
		size_t got;

		switch (op) {
		case OP_SEND: {
			int chan = fuzz_u8(&in) % N_CHANS;
			uint32_t len = ETH_HLEN_RTN +
				       fuzz_u16(&in) % (RTN_CHAN_MSG_MAX - ETH_HLEN_RTN + 1);
			const uint8_t *body = fuzz_span(&in, fuzz_u8(&in), &got);

			frame_for(f, len, chan, body, got);
			app_send(chan, f, len);
			break;
		}
		case OP_POKE:
			read_poke(&in, &p);
			apply_poke(&p);
			break;
		case OP_DRAIN:
			drain(0, NULL);
			break;
		case OP_RACE:
			read_poke(&in, &p);
			drain(1, &p);
			break;
		case OP_RUN:
			run_for(1000LL * fuzz_u16(&in));
			break;
		case OP_RX: {
			int chan = fuzz_u8(&in) % N_CHANS;
			uint32_t len =
				ETH_HLEN_RTN + fuzz_u16(&in) % (sizeof(f) - ETH_HLEN_RTN + 1);
			const uint8_t *body = fuzz_span(&in, fuzz_u8(&in), &got);
			uint8_t *exact;

			frame_for(f, len, chan, body, got);
			exact = fuzz_exact_copy(f, len);
			rtn_chans_rx(H.s, chan_type_of[chan], exact, len,
				     rtn_station_local_now(H.s), rtn_station_local_now(H.s));
			free(exact);
			break;
		}
		case OP_CYCLE:
			rtn_chans_on_cycle(H.s, fuzz_u32(&in), rtn_station_local_now(H.s));
			break;
		case OP_TAP: {
			const uint8_t *pkt = fuzz_span(&in, fuzz_u16(&in), &got);

			if (send(H.tap_peer, pkt, got, MSG_DONTWAIT) < 0 && errno != EAGAIN)
				fuzz_fail("cannot write to the TAP: %s", strerror(errno));
			rtn_vnic_pump_once(H.s->vnic_ctl); /* the harness is the pump */
			break;
		}
		}
		/* the application reads its RX rings now and then, trusting only its own geometry */
		if (op == OP_RX)
			app_drain(fuzz_u8(&in) % N_CHANS, 0);
	}
	return 0;
}
