// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_tdma_sim.c
 * @brief Fuzz target: the TDMA engine on the simulator (rtn_tdma_sim.c),
 *        three stations (primary master, backup master, slave) running
 *        their own traffic while the input injects frames and events.
 *
 * Input: a header choosing the configuration (cycle, guard: microseconds,
 * or milliseconds on a 40 ms cycle; calibration rounds, listen cycles, clock
 * error, lazy cycle begin, whether the backup runs, transmit windows, the
 * slave's second slot), then records of (kind,
 * station, time step in us, arguments).  A record injects a raw frame, or a
 * Sync / calibration request / reply whose fields are offsets from what the
 * station expects (so that the fuzzer reaches "one cycle ahead" and "2^63 ns
 * ahead" alike), queues a data frame, gives a station frames to send from
 * its port's tail (as a VNIC's ring), silences or revives a station, changes
 * a slot (offset, size, window), or stalls a station's frames; then the
 * segment runs for the time step.
 *
 * Hangs: libFuzzer's -timeout, and an explicit bound on the engine runs per
 * step.  Invariants, whatever the input:
 * - after rtn_tdma_run(now) nothing is due at or before now (otherwise the
 *   run stopped at its loop guard, and the RT thread would spin on it);
 * - a grid in use has a positive cycle length;
 * - counters (frames, Syncs, missed slots, histogram counts...) never
 *   decrease;
 * - every frame buffer is either free or in exactly one queue;
 * - the port's tail is asked for a frame only when the slot's queue is
 *   empty, and the frame taken is the one it offered.
 */
#include "rtn_core.h"
#include "rtn_tdma_state_priv.h"
#include "rtn_tdma_sim.h"
#include "rtn_tdma_sim_priv.h"
#include "tdma_snapshot.h"
#include "fuzz_input.h"

#define N_STATIONS 3
#define LATENCY_NS 5000
#define JITTER_NS  10000
/* far above what the longest step needs (655 cycles of 100 us, a few jobs each) */
#define WORK_MAX 200000
/* simulated cycles per input: enough to synchronise (listen, three calibration
 * rounds) and then some; more only makes each input slower */
#define CYCLES_MAX 24
#define DATA_TYPE  0x88B5

static struct rtn_sim *sim;
static struct rtn_sim sim_saved;
static struct rtn_tdma *engine_saved[N_STATIONS];
static uint64_t work;
static int queued_data; /* this input queued frames: check the pool at its end */

static const uint8_t macs[3][6] = {
	{ 0x02, 0x52, 0x54, 0x00, 0x00, 0x01 }, /* primary master */
	{ 0x02, 0x52, 0x54, 0x00, 0x00, 0x02 }, /* backup master */
	{ 0x02, 0x99, 0x99, 0x99, 0x99, 0x99 }, /* nobody in the segment */
};

/*
 * Every engine run the simulator makes goes through run_counted(): the
 * target is linked with -Wl,--wrap=rtn_tdma_run, so rtn_tdma_sim.o's calls
 * reach __wrap_rtn_tdma_run and the engine's own is __real_rtn_tdma_run.
 */
void __real_rtn_tdma_run(struct rtn_tdma *e, int64_t now);

static void run_counted(struct rtn_tdma *e, int64_t now)
{
	int64_t next;

	if (++work > WORK_MAX)
		fuzz_fail("more than %d engine runs in one step: the simulation does not advance",
			  WORK_MAX);
	__real_rtn_tdma_run(e, now);
	if (!e->grid_valid)
		return;
	if (e->cycle_ns <= 0)
		fuzz_fail("grid in use with a cycle of %lld ns", (long long)e->cycle_ns);
	next = rtn_tdma_next_event(e);
	if (next <= now)
		fuzz_fail(
			"run at %lld left work due at %lld (its loop guard stopped it): state %d, "
			"cycle %u, cycle_ns %lld",
			(long long)now, (long long)next, e->st.state, e->cur_no,
			(long long)e->cycle_ns);
}

void __wrap_rtn_tdma_run(struct rtn_tdma *e, int64_t now);

void __wrap_rtn_tdma_run(struct rtn_tdma *e, int64_t now)
{
	run_counted(e, now);
}

/* ---- counters that may only grow ------------------------------------------ */

/* the uint64_t counters from cycles up to the per-slot array */
#define FIXED_COUNTERS                                                                       \
	((offsetof(struct rtn_tdma_stats, slot) - offsetof(struct rtn_tdma_stats, cycles)) / \
	 sizeof(uint64_t))
#define N_HISTS	   4 /* slot_lateness, slot0_lateness, sync_error, sync_delay */
#define N_COUNTERS (FIXED_COUNTERS + RTN_TDMA_MAX_SLOTS * 7 + N_HISTS * 3)

FUZZ_UNTRACED static void counters(const struct rtn_tdma *e, uint64_t *out)
{
	const struct rtn_hist *h[N_HISTS] = { &e->st.slot_lateness, &e->st.slot0_lateness,
					      &e->st.sync_error, &e->st.sync_delay };
	uint32_t i, n = FIXED_COUNTERS;

	memcpy(out, &e->st.cycles, FIXED_COUNTERS * sizeof(uint64_t));
	for (i = 0; i < RTN_TDMA_MAX_SLOTS; i++) {
		const struct rtn_tdma_slot_stats *s = &e->st.slot[i];

		out[n++] = s->occurrences;
		out[n++] = s->frames;
		out[n++] = s->bytes;
		out[n++] = s->missed;
		out[n++] = s->late_starts;
		out[n++] = s->deferred;
		out[n++] = s->expired;
	}
	for (i = 0; i < N_HISTS; i++) {
		out[n++] = h[i]->count;
		out[n++] = h[i]->underflow;
		out[n++] = h[i]->overflow;
	}
}

FUZZ_UNTRACED static void check_counters(uint64_t (*prev)[N_COUNTERS])
{
	uint64_t now[N_COUNTERS];
	uint32_t i, k;

	for (i = 0; i < N_STATIONS; i++) {
		counters(sim->st[i].e, now);
		for (k = 0; k < N_COUNTERS; k++)
			if (now[k] < prev[i][k])
				fuzz_fail("station %u: counter %u went down from %llu to %llu", i,
					  k, (unsigned long long)prev[i][k],
					  (unsigned long long)now[k]);
		memcpy(prev[i], now, sizeof(now));
	}
}

FUZZ_UNTRACED static void check_pool(const struct rtn_tdma *e, uint32_t station)
{
	uint32_t free_n = 0, queued = 0, i;
	uint16_t b;

	for (b = e->free_head; b != NIL; b = e->pool[b].next)
		if (++free_n > RTN_TDMA_POOL)
			fuzz_fail("station %u: the free list loops", station);
	for (i = 0; i < RTN_TDMA_MAX_SLOTS; i++) {
		if (e->q[i].depth > RTN_TDMA_QUEUE_MAX)
			fuzz_fail("station %u: queue %u holds %u frames", station, i,
				  e->q[i].depth);
		queued += e->q[i].depth;
	}
	if (free_n + queued != RTN_TDMA_POOL)
		fuzz_fail("station %u: %u free + %u queued buffers of %d", station, free_n, queued,
			  RTN_TDMA_POOL);
}

/* ---- configuration from the input header ----------------------------------- */

static void slot(struct rtn_tdma_cfg *c, uint32_t id, int64_t offset, uint32_t size,
		 uint32_t period, uint32_t phasing, int64_t window)
{
	c->slots[c->n_slots++] = (struct rtn_tdma_slot_cfg){ .id = (int32_t)id,
							     .offset_ns = offset,
							     .phasing = phasing,
							     .period = period,
							     .size = size,
							     .joint = -1,
							     .window_ns = window };
}

struct setup {
	struct rtn_tdma_cfg cfg[N_STATIONS];
	int64_t offset_ns[N_STATIONS];
	double drift_ppm[N_STATIONS];
	int backup_on;
	int64_t start_gap_ns;
};

/* A transmit window (slot 1) right where slot 0 ends: it runs with that slot. */
static void window_after_slot0(struct rtn_tdma_cfg *c, int64_t len)
{
	const struct rtn_tdma_slot_cfg *s0 = &c->slots[0];

	slot(c, 1,
	     s0->offset_ns + rtn_wire_time_ns(s0->size + ETH_HLEN_RTN, c->link_rate_mbps) +
		     c->guard_ns,
	     s0->size, 1, 1, len);
}

/*
 * Station @p i's slots in a cycle of @p cycle ns: slot 0 at 0, 30% and 60%
 * of it.  The primary may have a window after its slot 0 (as rtmac.plan
 * lays a master out); the slave may have a second slot, at 80% every other
 * cycle, or a window after its slot 0.
 */
static void layout(struct rtn_tdma_cfg *c, uint32_t i, int64_t cycle, uint32_t size, uint8_t flags,
		   uint8_t cal)
{
	c->n_slots = 0;
	c->cycle_ns = i == 2 ? 0 : cycle;
	if (i == 1)
		c->backup_offset_ns = cycle / 10;
	slot(c, 0, cycle * 3 * i / 10, size, 1, 1, 0);
	if (i == 0 && (cal & 0x40))
		window_after_slot0(c, cycle / 10);
	if (i != 2 || !(flags & 0x20))
		return;
	if (flags & 0x80)
		window_after_slot0(c, cycle / 5);
	else
		slot(c, 1, cycle * 8 / 10, size, 2, 1 + ((flags >> 6) & 1), 0);
}

static void make_configs(struct fuzz_in *in, struct setup *su)
{
	static const int64_t offsets[4] = { 0, 50000, -30000, 1000000000 };
	static const double drifts[4] = { 0, 100, -50, 3 };
	uint8_t b0 = fuzz_u8(in), flags = fuzz_u8(in), cal = fuzz_u8(in), b3 = fuzz_u8(in);
	uint8_t clk = fuzz_u8(in), size_sel = fuzz_u8(in);
	/*
	 * b3's top bit: an emulated segment's 40 ms cycle and a guard of
	 * milliseconds, which also widens what a Sync may move the clock by
	 * (rtn_tdma_rx.c, stamp_tol_max)
	 */
	int64_t cycle = b3 & 0x80 ? 40000000LL : 100000LL * (1 + b0 % 10);
	int64_t guard = b3 & 0x80 ? 500000LL * (1 + b3 % 6) : 5000LL * (1 + b3 % 10);
	uint32_t i, size = 60 + size_sel % 200;

	for (i = 0; i < N_STATIONS; i++) {
		struct rtn_tdma_cfg *c = &su->cfg[i];

		rtn_tdma_cfg_init(c, i == 2 ? RTN_TDMA_ROLE_SLAVE : RTN_TDMA_ROLE_MASTER);
		c->guard_ns = guard;
		c->listen_cycles = (cal >> 4) & 3;
		c->cal_rounds = i == 0 ? 0 : i == 1 ? (cal & 3) : ((cal >> 2) & 3);
		layout(c, i, cycle, size, flags, cal);
		/* a combination that does not fit the cycle falls back to a roomy one */
		if (rtn_tdma_cfg_check(c)) {
			c->guard_ns = 5000;
			layout(c, i, 1000000, size, flags, cal);
		}
		if (rtn_tdma_cfg_check(c))
			fuzz_fail("harness built an invalid configuration for station %u: %s", i,
				  rtn_last_error());
	}
	su->backup_on = flags & 1;
	for (i = 0; i < N_STATIONS; i++)
		rtn_tdma_set_lazy_begin(sim->st[i].e, (flags >> (1 + i)) & 1);
	su->offset_ns[0] = 0;
	su->drift_ppm[0] = 0;
	for (i = 1; i < N_STATIONS; i++) {
		su->offset_ns[i] = offsets[(clk >> (4 * i - 4)) & 3];
		su->drift_ppm[i] = flags & 0x10 ? drifts[(clk >> (4 * i - 2)) & 3] : 0;
	}
	su->start_gap_ns = 10000LL * fuzz_u8(in);
	sim->rng = 1 + fuzz_u8(in);
}

/* ---- records ---------------------------------------------------------------- */

enum {
	REC_RAW,
	REC_SYNC,
	REC_REQ_CAL,
	REC_RPL_CAL,
	REC_DATA,
	REC_ALIVE,
	REC_SLOT,
	REC_STALL,
	REC_TAIL,
	REC_KINDS
};

static const uint8_t *src_of(uint8_t sel)
{
	return macs[sel % 3];
}

static void inject(uint32_t i, const uint8_t *frame, uint32_t len)
{
	uint8_t *exact = fuzz_exact_copy(frame, len);
	int rc = rtn_sim_inject(sim, i, exact, len);

	if (rc != 0 && rc != 1 && !(rc <= RTN_FRM_TRUNC_ETH && rc >= RTN_FRM_NOT_TUNNEL))
		fuzz_fail("rtn_tdma_rx returned %d", rc);
	free(exact);
}

static void record(struct fuzz_in *in, uint8_t kind, uint32_t i, const struct setup *su)
{
	struct sim_station *t = &sim->st[i];
	struct rtn_tdma *e = t->e;
	uint64_t now_global = (uint64_t)sim->now; /* true time is the lab's global time */
	uint8_t f[RTN_TDMA_FRAME_MAX];
	size_t got;

	switch (kind) {
	case REC_RAW: {
		const uint8_t *p = fuzz_span(in, fuzz_u16(in) % (RTN_TDMA_FRAME_MAX + 1), &got);

		inject(i, p, (uint32_t)got);
		break;
	}
	case REC_SYNC: {
		const uint8_t *src = src_of(fuzz_u8(in));
		uint32_t cycle = e->cur_no + fuzz_u32(in);
		uint64_t xmit = now_global + fuzz_u64(in);
		uint64_t sched = xmit + fuzz_u64(in);

		inject(i, f,
		       (uint32_t)rtn_tdma_encode_sync(f, sizeof(f), src, cycle, xmit, sched, NULL));
		break;
	}
	case REC_REQ_CAL: {
		const uint8_t *src = src_of(fuzz_u8(in));
		uint64_t xmit = fuzz_u64(in);
		uint32_t reply_cycle = e->cur_no + fuzz_u32(in);
		uint64_t offset = fuzz_u64(in);

		inject(i, f,
		       (uint32_t)rtn_tdma_encode_req_cal(f, sizeof(f), e->mac, src, xmit,
							 reply_cycle, offset, NULL));
		break;
	}
	case REC_RPL_CAL: {
		const uint8_t *src = src_of(fuzz_u8(in));
		uint64_t req = e->req_xmit + (uint64_t)(int64_t)(int16_t)fuzz_u16(in);
		uint64_t rx = req + fuzz_u64(in);
		uint64_t tx = rx + fuzz_u64(in);

		inject(i, f,
		       (uint32_t)rtn_tdma_encode_rpl_cal(f, sizeof(f), e->mac, src, req, rx, tx,
							 NULL));
		break;
	}
	case REC_DATA: {
		uint32_t slot_id = fuzz_u8(in) % 4, prio = fuzz_u8(in);
		uint32_t len = fuzz_u16(in) % (RTN_TDMA_FRAME_MAX + 100);
		/* some frames expire: anywhere from now to 65 ms on, or already past */
		int64_t expires = fuzz_u8(in) & 1 ? sim->now + 1000LL * (fuzz_u16(in) - 100) : 0;
		int rc;

		memset(f, 0, sizeof(f));
		memset(f, 0xff, 6);
		memcpy(f + 6, e->mac, 6);
		rtn_put_be16(f + 12, DATA_TYPE);
		rc = rtn_sim_enqueue(sim, i, slot_id, prio, f, len > sizeof(f) ? sizeof(f) : len,
				     -1, expires);
		queued_data = 1;
		if (rc && rc != -EMSGSIZE && rc != -ENOENT && rc != -ENOBUFS)
			fuzz_fail("rtn_tdma_enqueue returned %d", rc);
		break;
	}
	case REC_ALIVE:
		rtn_sim_set_alive(sim, i, !t->alive);
		break;
	case REC_SLOT: {
		struct rtn_tdma_cfg c = su->cfg[i];
		int rc;

		c.slots[0].offset_ns = (int64_t)(fuzz_u16(in) % 1000) * 1000;
		c.slots[0].size = 60 + fuzz_u8(in) * 5;
		c.slots[c.n_slots - 1].window_ns = 2000LL * fuzz_u8(in);
		rc = rtn_sim_set_config(sim, i, &c);
		if (rc && rc != -EINVAL && rc != -EBUSY)
			fuzz_fail("rtn_tdma_set_config returned %d", rc);
		break;
	}
	case REC_STALL:
		rtn_sim_stall_frames(sim, i, fuzz_u8(in) % 4, 1000LL * fuzz_u8(in));
		break;
	case REC_TAIL: {
		uint32_t len = 14 + fuzz_u16(in) % (RTN_TDMA_FRAME_MAX - 13);

		memset(f, 0, sizeof(f));
		memset(f, 0xff, 6);
		memcpy(f + 6, e->mac, 6);
		rtn_put_be16(f + 12, DATA_TYPE);
		if (rtn_sim_tail(sim, i, f, len, fuzz_u8(in) % 16))
			fuzz_fail("rtn_sim_tail refused a %u-byte frame", len);
		break;
	}
	}
}

/* The port's tail is asked only once the slot's queue is empty, and takes what it offered. */
FUZZ_UNTRACED static void check_tails(void)
{
	uint64_t sent, bad;
	uint32_t i;

	for (i = 0; i < N_STATIONS; i++) {
		rtn_sim_tail_stats(sim, i, &sent, &bad);
		if (bad)
			fuzz_fail("station %u: %llu tail calls out of turn (%llu tail frames sent)",
				  i, (unsigned long long)bad, (unsigned long long)sent);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t prev[N_STATIONS][N_COUNTERS];
	struct fuzz_in in = fuzz_in_make(data, size);
	struct setup su;
	int64_t t0, end;
	uint32_t i;

	if (!sim) {
		if (rtn_sim_create(N_STATIONS, LATENCY_NS, JITTER_NS, 1, 0, &sim))
			fuzz_fail("cannot create the simulator");
		sim_saved = *sim;
		for (i = 0; i < N_STATIONS; i++)
			engine_saved[i] = tdma_snapshot_save(sim->st[i].e);
	}
	for (i = 0; i < N_STATIONS; i++)
		tdma_snapshot_restore(sim->st[i].e, engine_saved[i]);
	*sim = sim_saved;
	memset(prev, 0, sizeof(prev));
	work = 0;
	queued_data = 0;

	make_configs(&in, &su);
	if (rtn_sim_start(sim, 0, &su.cfg[0], su.offset_ns[0], su.drift_ppm[0]))
		fuzz_fail("primary master refused its configuration");
	rtn_sim_run_until(sim, sim->now + su.start_gap_ns);
	for (i = 1; i < N_STATIONS; i++) {
		if (i == 1 && !su.backup_on)
			continue;
		if (rtn_sim_start(sim, i, &su.cfg[i], su.offset_ns[i], su.drift_ppm[i]))
			fuzz_fail("station %u refused its configuration", i);
	}
	t0 = sim->now;
	end = t0 + CYCLES_MAX * (su.cfg[0].cycle_ns);
	while (fuzz_more(&in) && sim->now < end) {
		uint8_t kind = fuzz_u8(&in) % REC_KINDS;
		uint32_t who = fuzz_u8(&in) % N_STATIONS;
		int64_t step = 1000LL * fuzz_u16(&in);

		record(&in, kind, who, &su);
		work = 0;
		rtn_sim_run_until(sim, sim->now + step < end ? sim->now + step : end);
		check_counters(prev);
		check_tails();
	}
	for (i = 0; i < N_STATIONS && queued_data; i++)
		check_pool(sim->st[i].e, i);
	return 0;
}
