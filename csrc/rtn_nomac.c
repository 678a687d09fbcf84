/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_nomac.c
 * @brief The NoMAC discipline: one FIFO, sent as soon as the modelled link
 *        has room, shaped like the TDMA engine (next event, run, enqueue).
 *
 * The FIFO is the RT thread's: applications' messages (drained when their
 * kick wakes the thread), the batched VNIC's frames, the per-packet VNIC's
 * frames and the rate generator's (rtn_probe.c) all go through it.
 */
#include <errno.h>
#include <string.h>
#include "rtn_station_priv.h"

/* The FIFO's next free frame, or NULL when it is full; rtn_nomac_commit() queues it. */
struct frame_slot *rtn_nomac_slot(struct rtn_station *s)
{
	uint32_t h = s->nomac_head;

	if (h - s->nomac_tail >= NOMAC_FIFO)
		return NULL;
	/* every writer takes its slot here: the stamp offset is the frame's unless it says */
	s->nomac_fifo[h % NOMAC_FIFO].stamp_off = STAMP_OFF_OF_FRAME;
	return &s->nomac_fifo[h % NOMAC_FIFO];
}

void rtn_nomac_commit(struct rtn_station *s)
{
	s->nomac_head++;
}

static int nomac_enqueue(struct rtn_station *s, const uint8_t *frame, uint32_t len)
{
	struct frame_slot *f = rtn_nomac_slot(s);

	if (!f)
		return -ENOBUFS;
	memcpy(f->data, frame, len);
	f->len = len;
	rtn_nomac_commit(s);
	return 0;
}

static int take_nomac(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		      uint32_t len, void *unused)
{
	struct frame_slot *f = rtn_nomac_slot(s);

	if (!f)
		return -ENOBUFS;
	memcpy(f->data, m->frame, len);
	f->len = len;
	f->stamp_off = rtn_chan_tx_off(c, m->frame, len);	/* a UDP socket's: by its channel */
	rtn_nomac_commit(s);
	return 0;
}

static void nomac_collect(struct rtn_station *s, int64_t now_local)
{
	rtn_chans_drain(s, take_nomac, NULL, now_local);	/* NoMAC: local time is global */
	if (s->vnic_live && s->vnic_mode == RTN_VNIC_BATCHED) {
		struct frame_slot *f;

		while ((f = rtn_nomac_slot(s)) && tap_usable(s)) {
			int len = rtn_vnic_next_frame(s, f->data, RTN_TDMA_FRAME_MAX);

			if (!len)
				break;
			if (len < 0)
				continue;
			f->len = len;
			rtn_nomac_commit(s);
		}
	}
}

/*
 * A full TX ring drains as the kernel sends: each refusal kicks it (a copy-mode
 * socket sends a batch of 32 per kick), so a few tries in a row usually find
 * room; past that, look again this much later.
 */
#define TX_RING_TRIES 64
#define TX_RING_RETRY_NS 20000

/*
 * FIFO order, serialised at the link rate: what starts on the virtual wire
 * within PACE_AHEAD_NS goes to the kernel now; a frame the full TX ring
 * refuses stays at the FIFO's head for the next try.  Returns when the wire will
 * have drained to PACE_REFILL_NS (local), INT64_MAX when the FIFO is empty.
 */
static int64_t nomac_flush(struct rtn_station *s, int64_t now_local)
{
	int full = 0;

	while (s->nomac_tail != s->nomac_head) {
		struct frame_slot *f = &s->nomac_fifo[s->nomac_tail % NOMAC_FIFO];
		int32_t off = f->stamp_off == STAMP_OFF_OF_FRAME ?
				      rtn_app_hdr_tx_off(f->data, f->len) : f->stamp_off;
		int64_t tx;
		int rc;

		if (s->o.link_rate_mbps && now_local + PACE_AHEAD_NS < s->wire_free_at)
			return s->wire_free_at - PACE_REFILL_NS;
		rc = rtn_station_send(s, f->data, f->len, off, 0, 0, INT64_MAX, &tx);
		if (rc == -EAGAIN && ++full < TX_RING_TRIES)
			continue;	/* the refusal kicked the kernel, which sends a batch */
		if (rc == -EAGAIN)	/* still full: the frame waits in the FIFO */
			return now_local + TX_RING_RETRY_NS;
		if (rc < 0) {
			s->st.nomac_drops++;
		} else {
			s->st.nomac_tx++;
			s->wire_free_at = (tx > s->wire_free_at ? tx : s->wire_free_at) +
					  rtn_wire_time_ns(f->len, s->o.link_rate_mbps);
		}
		s->nomac_tail++;
	}
	return INT64_MAX;
}

/*
 * Everything that may go now: the FIFO onto the wire, the rate generator's
 * frames up to the horizon into the FIFO.  A batch larger than the FIFO
 * (1 Gbit/s) alternates the two until the generator reaches the horizon or
 * the wire is full.  Returns the next deadline (local): the wire drained to
 * PACE_REFILL_NS, or the generator's next frame PACE_REFILL_NS before the
 * horizon passes it.
 */
static int64_t nomac_pump(struct rtn_station *s, int64_t now_local)
{
	int64_t horizon = now_local + PACE_AHEAD_NS, due, wire;

	wire = nomac_flush(s, now_local);
	for (;;) {
		uint32_t tail = s->nomac_tail;

		due = rtn_probe_generate(s, now_local, horizon);
		if (due > horizon)
			break;		/* else it waits for room in the FIFO */
		wire = nomac_flush(s, now_local);
		if (s->nomac_tail == tail)
			break;		/* and the wire is full too: the wire's deadline */
	}
	wire = nomac_flush(s, now_local);
	if (due <= horizon || due == INT64_MAX)
		return wire;
	due -= PACE_REFILL_NS;
	return due < wire ? due : wire;
}

/* What is due now goes out (kicked: the thread may sleep next); the next deadline. */
static int64_t nomac_next_event(struct rtn_station *s)
{
	int64_t next = nomac_pump(s, rtn_station_local_now(s));

	station_flush(s);
	return next;
}

static void nomac_run(struct rtn_station *s, int64_t woke_late)
{
	int64_t now_local = local_of(s, rtn_now());

	nomac_collect(s, now_local);
	nomac_pump(s, local_of(s, rtn_now()));
}

static int nomac_rx_rtmac(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx)
{
	return rtmac_tunnel_only(frame, len);	/* discipline frames are not ours */
}

static int64_t nomac_rt_deadline(const struct rtn_station *s)
{
	return INT64_MAX;
}

/*
 * Only while the FIFO has room: a full FIFO with a readable TAP would make
 * poll() return at once and spin this SCHED_FIFO thread until the link frees
 * a frame, starving everything below it on its CPU for as long as a flood
 * lasts.
 */
static int nomac_watch_tap(const struct rtn_station *s)
{
	return s->vnic_live && s->vnic_mode == RTN_VNIC_BATCHED && tap_usable(s) &&
	       s->nomac_head - s->nomac_tail < NOMAC_FIFO;
}

const struct rtn_disc_ops rtn_disc_nomac_ops = {
	.next_event = nomac_next_event,
	.run = nomac_run,
	.enqueue = nomac_enqueue,
	.rx_rtmac = nomac_rx_rtmac,
	.rt_deadline = nomac_rt_deadline,
	.watch_tap = nomac_watch_tap,
	.kick_senders = 1,
	.paced_rx = 0,
};
