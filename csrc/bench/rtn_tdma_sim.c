/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_sim.c
 * @brief Deterministic multi-station TDMA simulation (see rtn_tdma_sim.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_tdma_proto_inline.h"
#include "rtn_tdma_sim.h"
#include "rtn_tdma_sim_priv.h"

static uint64_t rnd(struct rtn_sim *s)
{
	/* xorshift64*: deterministic for a given seed */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ULL;
}

static int64_t to_local(const struct sim_station *t, int64_t tru)
{
	return tru + t->offset_ns + (int64_t)((double)tru * t->drift);
}

static int64_t to_true(const struct sim_station *t, int64_t local)
{
	return (int64_t)((double)(local - t->offset_ns) / (1.0 + t->drift));
}

static int sim_send(void *arg, uint8_t *frame, uint32_t len, int32_t stamp_off, int64_t stamp_add,
		    int64_t sched, int64_t deadline, int64_t *tx_local)
{
	struct sim_station *t = arg;
	struct rtn_sim *s = t->sim;
	struct flight *f;
	int64_t at = s->now, local;

	if (t->handover_frames) {
		t->handover_frames--;
		at += t->handover_ns;
	}
	local = to_local(t, at);
	if (local > deadline)
		return -ETIME; /* as rtn_xsk_send_by(): nothing sent */
	t->sends++;
	if (!t->alive)
		return 0; /* a dead station's frames never reach the wire */
	if (s->n_fl >= MAX_FLIGHT || len > RTN_TDMA_FRAME_MAX)
		return rtn_set_error(-ENOBUFS, "sim: wire full");
	if (stamp_off >= 0)
		rtn_put_be64(frame + stamp_off, (uint64_t)(local + stamp_add));
	*tx_local = local;
	f = &s->fl[s->n_fl++];
	/* the NIC serialises: a frame starts on the wire when the previous one ended */
	f->tx_true = at > t->nic_free ? at : t->nic_free;
	if (t->stall_frames) {
		t->stall_frames--;
		f->tx_true += t->stall_ns;
	}
	t->nic_free = f->tx_true + rtn_wire_time_ns(len, 100);
	f->at = t->nic_free + s->latency;
	f->src = t->idx;
	f->len = len;
	memcpy(f->data, frame, len);
	return 0;
}

static uint8_t *sim_tail_peek(void *arg, const struct rtn_tdma *e, uint32_t slot_id, uint32_t *len)
{
	struct sim_station *t = arg;

	if (!t->tail_n || t->tail_len > rtn_tdma_slot_size(e, slot_id) + 14)
		return NULL;
	if (rtn_tdma_queue_depth(e, slot_id))
		t->tail_bad++; /* the queue's frames go first */
	t->tail_peeked = 1;
	*len = t->tail_len;
	return t->tail_frame;
}

static void sim_tail_taken(void *arg, uint32_t len)
{
	struct sim_station *t = arg;

	if (!t->tail_peeked || !t->tail_n || len != t->tail_len) {
		t->tail_bad++;
	} else {
		t->tail_n--;
		t->tail_sent++;
	}
	t->tail_peeked = 0;
}

int rtn_sim_tail(struct rtn_sim *s, uint32_t i, const uint8_t *frame, uint32_t len, uint32_t count)
{
	struct sim_station *t;

	rtn_clear_error();
	if (i >= s->n)
		return rtn_set_error(-EINVAL, "sim: no station %u", i);
	if (len < 14 || len > RTN_TDMA_FRAME_MAX)
		return rtn_set_error(-EINVAL, "sim: a tail frame of %u bytes", len);
	t = &s->st[i];
	memcpy(t->tail_frame, frame, len);
	t->tail_len = len;
	t->tail_n += count;
	return 0;
}

void rtn_sim_tail_stats(const struct rtn_sim *s, uint32_t i, uint64_t *sent, uint64_t *bad)
{
	*sent = i < s->n ? s->st[i].tail_sent : 0;
	*bad = i < s->n ? s->st[i].tail_bad : 0;
}

static int64_t sim_truth(void *arg, int64_t local)
{
	/* the lab's global time is true time: the master runs without offset */
	return to_true(arg, local);
}

int rtn_sim_create(uint32_t n, int64_t latency_ns, int64_t wake_jitter_ns, uint32_t seed,
		   uint32_t log_cap, struct rtn_sim **out)
{
	struct rtn_sim *s;
	uint32_t i;

	rtn_clear_error();
	if (n < 1 || n > RTN_SIM_MAX_STATIONS)
		return rtn_set_error(-EINVAL, "sim: 1..%d stations", RTN_SIM_MAX_STATIONS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return rtn_set_error(-ENOMEM, "sim: out of memory");
	s->fl = calloc(MAX_FLIGHT, sizeof(*s->fl));
	s->n = n;
	s->latency = latency_ns;
	s->jitter = wake_jitter_ns;
	s->rng = seed ? seed : 1;
	s->log_cap = log_cap;
	s->now = 1000000; /* start away from zero, like a real clock */
	for (i = 0; i < n && s->fl; i++) {
		struct sim_station *t = &s->st[i];
		struct rtn_tdma_port port = { .send = sim_send,
					      .truth = sim_truth,
					      .tail_peek = sim_tail_peek,
					      .tail_taken = sim_tail_taken,
					      .arg = t };
		uint8_t mac[6] = { 0x02, 0x52, 0x54, 0x00, 0x00, (uint8_t)(i + 1) };

		t->sim = s;
		t->idx = i;
		t->alive = 1;
		t->log = calloc(log_cap ? log_cap : 1, sizeof(*t->log));
		if (!t->log || rtn_tdma_create(mac, &port, &t->e)) {
			rtn_sim_destroy(s);
			return rtn_set_error(-ENOMEM, "sim: out of memory");
		}
	}
	if (!s->fl) {
		rtn_sim_destroy(s);
		return rtn_set_error(-ENOMEM, "sim: out of memory");
	}
	*out = s;
	return 0;
}

void rtn_sim_destroy(struct rtn_sim *s)
{
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		rtn_tdma_destroy(s->st[i].e);
		free(s->st[i].log);
	}
	free(s->fl);
	free(s);
}

int rtn_sim_start(struct rtn_sim *s, uint32_t i, const struct rtn_tdma_cfg *cfg,
		  int64_t clock_offset_ns, double drift_ppm)
{
	struct sim_station *t;

	rtn_clear_error();
	if (i >= s->n)
		return rtn_set_error(-EINVAL, "sim: no station %u", i);
	t = &s->st[i];
	t->offset_ns = clock_offset_ns;
	t->drift = drift_ppm / 1e6;
	t->started = 1;
	t->ev_local = INT64_MIN;
	return rtn_tdma_start(t->e, cfg, to_local(t, s->now));
}

int rtn_sim_set_config(struct rtn_sim *s, uint32_t i, const struct rtn_tdma_cfg *cfg)
{
	rtn_clear_error();
	if (i >= s->n)
		return rtn_set_error(-EINVAL, "sim: no station %u", i);
	return rtn_tdma_set_config(s->st[i].e, cfg);
}

void rtn_sim_set_alive(struct rtn_sim *s, uint32_t i, int alive)
{
	if (i < s->n)
		s->st[i].alive = alive;
}

void rtn_sim_set_lazy_begin(struct rtn_sim *s, uint32_t i, int on)
{
	if (i < s->n && s->st[i].e)
		rtn_tdma_set_lazy_begin(s->st[i].e, on);
}

void rtn_sim_stall_frames(struct rtn_sim *s, uint32_t i, uint32_t frames, int64_t stall_ns)
{
	if (i < s->n) {
		s->st[i].stall_frames = frames;
		s->st[i].stall_ns = stall_ns;
	}
}

void rtn_sim_stall_handover(struct rtn_sim *s, uint32_t i, uint32_t frames, int64_t stall_ns)
{
	if (i < s->n) {
		s->st[i].handover_frames = frames;
		s->st[i].handover_ns = stall_ns;
	}
}

uint64_t rtn_sim_wakeups(const struct rtn_sim *s, uint32_t i)
{
	return i < s->n ? s->st[i].wakeups : 0;
}

void rtn_sim_kick_cost(struct rtn_sim *s, uint32_t i, int64_t kick_ns)
{
	if (i < s->n)
		s->st[i].kick_ns = kick_ns > 0 ? kick_ns : 0;
}

int rtn_sim_enqueue(struct rtn_sim *s, uint32_t i, uint32_t slot, uint32_t prio,
		    const uint8_t *frame, uint32_t len, int32_t stamp_off, int64_t expires_true)
{
	rtn_clear_error();
	if (i >= s->n)
		return rtn_set_error(-EINVAL, "sim: no station %u", i);
	return rtn_tdma_enqueue(s->st[i].e, slot, prio, frame, len, stamp_off < 0 ? -1 : stamp_off,
				expires_true > 0 ? to_local(&s->st[i], expires_true) :
						   RTN_TDMA_NEVER);
}

static void deliver(struct rtn_sim *s, const struct flight *f)
{
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		struct sim_station *t = &s->st[i];
		struct rtn_sim_rx *r;

		if (i == f->src || !t->alive || !t->started)
			continue;
		if (t->n_log < s->log_cap) {
			r = &t->log[t->n_log++];
			r->tx_true = f->tx_true;
			r->rx_true = f->at;
			r->src = f->src;
			r->len = f->len;
			memcpy(r->head, f->data, f->len < RTN_SIM_HEAD ? f->len : RTN_SIM_HEAD);
		}
		if (f->len >= 14 && f->data[12] == 0x90 && f->data[13] == 0x21)
			rtn_tdma_rx(t->e, f->data, f->len, to_local(t, s->now));
	}
}

void rtn_sim_run_until(struct rtn_sim *s, int64_t t_end)
{
	for (;;) {
		int64_t next = INT64_MAX;
		int who = -1, kind = 0; /* kind 0: station event, 1: delivery */
		uint32_t i, fi = 0;

		for (i = 0; i < s->n; i++) {
			struct sim_station *t = &s->st[i];
			int64_t ev;

			if (!t->started || !t->alive)
				continue;
			ev = rtn_tdma_next_event(t->e);
			if (ev == INT64_MAX)
				continue;
			if (ev != t->ev_local) {
				/* a thread wakes a little late for every deadline */
				t->ev_local = ev;
				t->wake_true =
					to_true(t, ev) +
					(s->jitter ? (int64_t)(rnd(s) % (uint64_t)s->jitter) : 0);
				if (t->wake_true < s->now)
					t->wake_true = s->now;
			}
			if (t->wake_true < t->busy_until)
				t->wake_true = t->busy_until; /* still in its last kick */
			if (t->wake_true < next) {
				next = t->wake_true;
				who = i;
				kind = 0;
			}
		}
		for (i = 0; i < s->n_fl; i++) {
			if (s->fl[i].at < next || (s->fl[i].at == next && kind == 0)) {
				next = s->fl[i].at;
				fi = i;
				kind = 1;
			}
		}
		if (next > t_end || (who < 0 && kind == 0)) {
			s->now = t_end;
			return;
		}
		if (next > s->now)
			s->now = next;
		if (kind == 1) {
			struct flight f = s->fl[fi];

			s->fl[fi] = s->fl[--s->n_fl];
			deliver(s, &f);
		} else {
			struct sim_station *t = &s->st[who];
			int64_t local = to_local(t, s->now);
			uint64_t sends = t->sends;

			/* clock conversions round: never run before the engine's deadline */
			if (local < t->ev_local)
				local = t->ev_local;
			rtn_tdma_run(t->e, local);
			t->wakeups++;
			if (t->sends != sends && t->kick_ns)
				t->busy_until = s->now + t->kick_ns;
		}
	}
}

int64_t rtn_sim_now(const struct rtn_sim *s)
{
	return s->now;
}

void rtn_sim_stats(const struct rtn_sim *s, uint32_t i, struct rtn_tdma_stats *out)
{
	if (i < s->n)
		rtn_tdma_read_stats(s->st[i].e, out);
}

uint32_t rtn_sim_rx_log(const struct rtn_sim *s, uint32_t i, struct rtn_sim_rx *out, uint32_t max)
{
	uint32_t n;

	if (i >= s->n)
		return 0;
	n = s->st[i].n_log < max ? s->st[i].n_log : max;
	memcpy(out, s->st[i].log, n * sizeof(*out));
	return n;
}

void rtn_sim_clear_logs(struct rtn_sim *s)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		s->st[i].n_log = 0;
}

int rtn_sim_inject_aged(struct rtn_sim *s, uint32_t i, const uint8_t *frame, uint32_t len,
			int64_t age_ns)
{
	rtn_clear_error();
	if (i >= s->n)
		return rtn_set_error(-EINVAL, "sim: no station %u", i);
	if (age_ns < 0 || age_ns > s->now)
		return rtn_set_error(-EINVAL, "sim: age %lld outside 0..now", (long long)age_ns);
	return rtn_tdma_rx(s->st[i].e, frame, len, to_local(&s->st[i], s->now - age_ns));
}

int rtn_sim_inject(struct rtn_sim *s, uint32_t i, const uint8_t *frame, uint32_t len)
{
	return rtn_sim_inject_aged(s, i, frame, len, 0);
}
