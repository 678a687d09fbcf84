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
#include <stdlib.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_nomac_priv.h"
#include "rtn_probe_priv.h"
#include "rtn_station_priv.h"
#include "rtn_vnic_priv.h"

/*
 * NoMAC's FIFO: what the RT thread holds for the (modelled) wire.  Deep
 * enough to ride out a stall of the thread at full load: 2048 frames are
 * 13.8 ms of 64-byte frames at 100 Mbit/s (1.4 ms at 1 Gbit/s); with 256 a
 * 2 ms vCPU stall at line rate overflowed it, and frames offered during the
 * stall were dropped although the wire could still carry them afterwards.
 */
#define NOMAC_FIFO 2048
/*
 * NoMAC's link-rate model keeps a virtual wire: each frame has a start time
 * on it, and none starts before the previous one ends at the link rate.
 * Frames are handed to the kernel in batches that may run up to
 * PACE_AHEAD_NS ahead of the clock (the frames a NIC's TX ring would hold);
 * the thread then sleeps until only PACE_REFILL_NS of wire time is left
 * queued and tops it up again.  The average rate stays the link rate, and a
 * wake-up and a kick serve PACE_AHEAD_NS - PACE_REFILL_NS of wire time
 * (~74 64-byte frames at 100 Mbit/s, ~740 at 1 Gbit/s) instead of a frame
 * each.  PACE_REFILL_NS is what a wake-up (or a stall of the thread) may be
 * late before the modelled wire idles; the rate generator (rtn_probe.c)
 * makes its frames up to the same horizon, so it batches the same way.
 */
#define PACE_AHEAD_NS  RTN_NOMAC_PACE_AHEAD_NS
#define PACE_REFILL_NS RTN_NOMAC_PACE_REFILL_NS

struct rtn_nomac {
	struct rtn_station *s;
	struct frame_slot fifo[NOMAC_FIFO];
	uint32_t head, tail;
	int64_t wire_free_at; /* local time the modelled wire is free again */
};

int rtn_nomac_create(struct rtn_station *s)
{
	struct rtn_nomac *n = calloc(1, sizeof(*n));

	if (!n)
		return rtn_set_error(-ENOMEM, "station: out of memory for NoMAC's FIFO");
	n->s = s;
	s->nomac = n;
	return 0;
}

void rtn_nomac_destroy(struct rtn_station *s)
{
	free(s->nomac);
	s->nomac = NULL;
}

/* The FIFO's next free frame, or NULL when it is full; nomac_commit() queues it. */
static struct frame_slot *nomac_slot(void *q)
{
	struct rtn_nomac *n = q;
	uint32_t h = n->head;

	if (h - n->tail >= NOMAC_FIFO)
		return NULL;
	/* every writer takes its slot here: the stamp offset is the frame's unless it says */
	n->fifo[h % NOMAC_FIFO].stamp_off = STAMP_OFF_OF_FRAME;
	return &n->fifo[h % NOMAC_FIFO];
}

static void nomac_commit(void *q)
{
	((struct rtn_nomac *)q)->head++;
}

/* NoMAC has no slots: everything queued goes through the one FIFO. */
static int nomac_queue(void *priv, uint32_t slot, uint32_t prio, const uint8_t *frame, uint32_t len)
{
	struct rtn_nomac *n = priv;
	struct frame_slot *f = nomac_slot(n);

	if (!f)
		return -ENOBUFS;
	memcpy(f->data, frame, len);
	f->len = len;
	nomac_commit(n);
	return 0;
}

static int take_nomac(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		      uint32_t len, void *arg)
{
	struct rtn_nomac *n = arg;
	struct frame_slot *f = nomac_slot(n);

	if (!f)
		return -ENOBUFS;
	memcpy(f->data, m->frame, len);
	f->len = len;
	f->stamp_off = rtn_chan_tx_off(c, m->frame, len); /* a UDP socket's: by its channel */
	nomac_commit(n);
	return 0;
}

static void nomac_collect(struct rtn_nomac *n, int64_t now_local)
{
	struct rtn_station *s = n->s;

	rtn_chans_drain(s, take_nomac, n, now_local); /* NoMAC: local time is global */
}

/*
 * A full TX ring drains as the kernel sends: each refusal kicks it (a copy-mode
 * socket sends a batch of 32 per kick), so a few tries in a row usually find
 * room; past that, look again this much later.
 */
#define TX_RING_TRIES	 64
#define TX_RING_RETRY_NS 20000

/*
 * FIFO order, serialised at the link rate, and a batched VNIC's frames last,
 * straight from its ring once the FIFO is empty: what starts on the virtual
 * wire within PACE_AHEAD_NS goes to the kernel now; a frame the full TX ring
 * refuses stays where it is for the next try.  Returns when the wire will
 * have drained to PACE_REFILL_NS (local), INT64_MAX when nothing waits.
 */
static int64_t nomac_flush(struct rtn_nomac *n, int64_t now_local)
{
	struct rtn_station *s = n->s;
	int full = 0;

	for (;;) {
		struct frame_slot *f = NULL;
		uint8_t *frame;
		uint32_t len;
		int32_t off = -1;
		int64_t tx;
		int rc;

		if (n->tail != n->head) {
			f = &n->fifo[n->tail % NOMAC_FIFO];
			frame = f->data;
			len = f->len;
			off = f->stamp_off == STAMP_OFF_OF_FRAME ?
				      rtn_app_hdr_tx_off(f->data, f->len) :
				      f->stamp_off;
		} else if (!s->vnic ||
			   !(frame = rtn_vnic_next(s->vnic, RTN_TDMA_FRAME_MAX, &len))) {
			return INT64_MAX;
		}
		if (s->o.link_rate_mbps && now_local + PACE_AHEAD_NS < n->wire_free_at)
			return n->wire_free_at - PACE_REFILL_NS;
		rc = rtn_station_send(s, frame, len, off, 0, 0, INT64_MAX, &tx);
		if (rc == -EAGAIN && ++full < TX_RING_TRIES)
			continue;  /* the refusal kicked the kernel, which sends a batch */
		if (rc == -EAGAIN) /* still full: the frame waits for the next try */
			return now_local + TX_RING_RETRY_NS;
		if (rc < 0) {
			s->st.nomac_drops++;
		} else {
			s->st.nomac_tx++;
			n->wire_free_at = (tx > n->wire_free_at ? tx : n->wire_free_at) +
					  rtn_wire_time_ns(len, s->o.link_rate_mbps);
		}
		if (f)
			n->tail++;
		else
			rtn_vnic_taken(s->vnic, len, rc == 0);
	}
}

/*
 * Everything that may go now: the FIFO onto the wire, the rate generator's
 * frames up to the horizon into the FIFO.  A batch larger than the FIFO
 * (1 Gbit/s) alternates the two until the generator reaches the horizon or
 * the wire is full.  Returns the next deadline (local): the wire drained to
 * PACE_REFILL_NS, or the generator's next frame PACE_REFILL_NS before the
 * horizon passes it.
 */
static int64_t nomac_pump(struct rtn_nomac *n, int64_t now_local)
{
	int64_t horizon = now_local + PACE_AHEAD_NS, due, wire;
	struct frame_sink q = { nomac_slot, nomac_commit, n };

	wire = nomac_flush(n, now_local);
	for (;;) {
		uint32_t tail = n->tail;

		due = rtn_probe_generate(n->s, &q, now_local, horizon);
		if (due > horizon)
			break; /* else it waits for room in the FIFO */
		wire = nomac_flush(n, now_local);
		if (n->tail == tail)
			break; /* and the wire is full too: the wire's deadline */
	}
	wire = nomac_flush(n, now_local);
	if (due <= horizon || due == INT64_MAX)
		return wire;
	due -= PACE_REFILL_NS;
	return due < wire ? due : wire;
}

/* What is due now goes out (kicked: the thread may sleep next); the next deadline. */
static int64_t nomac_next_event(void *priv)
{
	struct rtn_nomac *n = priv;
	int64_t next = nomac_pump(n, rtn_station_local_now(n->s));

	station_flush(n->s);
	return next;
}

/* NoMAC's deadlines are when its paced FIFO lets the next frame go */
static int nomac_next_sends(const void *priv)
{
	return 1;
}

static void nomac_run(void *priv, int64_t woke_late)
{
	struct rtn_nomac *n = priv;

	nomac_collect(n, local_of(n->s, rtn_now()));
	nomac_pump(n, local_of(n->s, rtn_now()));
}

static int nomac_rx_rtmac(void *priv, const uint8_t *frame, uint32_t len, int64_t rx)
{
	return rtmac_tunnel_only(frame, len); /* discipline frames are not ours */
}

/*
 * Only while the FIFO has room: a full FIFO with a readable TAP would make
 * poll() return at once and spin this SCHED_FIFO thread until the link frees
 * a frame, starving everything below it on its CPU for as long as a flood
 * lasts.
 */
static int nomac_has_room(const void *priv)
{
	const struct rtn_nomac *n = priv;

	return n->head - n->tail < NOMAC_FIFO;
}

static void nomac_attach(void *priv)
{
}

const struct rtn_disc_ops rtn_disc_nomac_ops = {
	.id = RTN_DISC_NOMAC,
	.attach = nomac_attach,
	.detach = nomac_attach,
	.next_event = nomac_next_event,
	.next_sends = nomac_next_sends,
	.run = nomac_run,
	.queue = nomac_queue,
	.rx_rtmac = nomac_rx_rtmac,
	.has_room = nomac_has_room,
	.kick_senders = 1,
	.paced_rx = 0,
	.rate_generator = 1,
};

/* ---- for the harnesses (csrc/fuzz/) ------------------------------------------- */

int rtn_nomac_take(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		   uint32_t len, void *nomac)
{
	return take_nomac(s, c, m, len, nomac);
}

int64_t rtn_nomac_flush(struct rtn_nomac *n, int64_t now_local)
{
	return nomac_flush(n, now_local);
}

void rtn_nomac_reset(struct rtn_station *s)
{
	s->nomac->head = s->nomac->tail = 0;
	s->nomac->wire_free_at = 0;
}
