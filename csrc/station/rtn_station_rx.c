/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_rx.c
 * @brief What the station's RT thread does with received frames: the
 *        receive dispatch (one port or two, through the duplicate
 *        elimination, to the discipline, the VNIC or the channels), and
 *        when a received frame is worth waking the thread for.
 */
#include "rtn_core.h"
#include "rtn_station_priv.h"
#include "rtn_vnic_priv.h"

/* ---- receiving ------------------------------------------------------------ */

/* The XDP program's stamp when there is one, else the poll time. */
static int64_t rx_stamp(const struct rtn_xsk_frame *f, int64_t rx_os)
{
	return f->rx_ts ? f->rx_ts : rx_os;
}

/*
 * One received frame of @p port, taken from its socket at @p rx_os: through
 * the duplicate elimination to TDMA, the VNIC or the channels.  Returns 1
 * when it queued a frame for the TAP.
 */
static int receive_one(struct rtn_station *s, struct rtn_xsk_frame *f, int64_t rx_os, uint32_t port)
{
	int64_t rx_at = rx_stamp(f, rx_os), rx = local_of(s, rx_at);
	uint16_t type;

	s->st.rx_frames++;
	if (s->cap)
		rtn_capture_rx(s, f->data, f->len, rx_at, f->kernel_ts);
	/* duplicates and R-TAGs end here: nothing below sees either */
	if (!rtn_frer_rx(s, port, f->data, &f->len, rx_at))
		return 0;
	if (f->len < ETH_HLEN_RTN)
		return 0;
	type = rtn_get_be16(f->data + 12);
	if (type == ETH_RTMAC) {
		int rc = disc_ops(s)->rx_rtmac(s->disc_priv, f->data, f->len, rx);

		if (rc == 1) {
			if (!s->vnic || !rtn_vnic_rx(s->vnic, port ? s->xsk_b : s->xsk, f))
				return 0;
			s->tunnel_rx_at = rtn_now();
			s->tunnel_rx_n++;
			return 1;
		}
		if (rc < 0 && s->vnic && f->len >= 18 && (f->data[17] & RTMAC_FLAG_TUNNEL))
			rtn_vnic_rx_bad(s->vnic); /* a bad RTmac header: the VNIC's loss */
	} else {
		rtn_chans_rx(s, type, f->data, f->len, rx, local_of(s, rx_os));
	}
	return 0;
}

/*
 * Both ports: what the two sockets hold, merged in the order it arrived
 * (the XDP stamps), so the recovery meets the copies of the two wires as
 * the wires delivered them.  Taking one port's batch before the other's
 * would put up to a batch between a frame and its copy: older than the
 * history, the copy would be rogue, and lost if the first wire had lost
 * the frame.
 */
static int receive_two(struct rtn_station *s)
{
	struct rtn_xsk_frame fa[RX_BATCH], fb[RX_BATCH];
	int64_t ta, tb;
	int na, nb, i, j, queued_for_tap = 0;

	for (;;) {
		na = rtn_xsk_rx_peek(s->xsk, fa, RX_BATCH, &ta);
		nb = rtn_xsk_rx_peek(s->xsk_b, fb, RX_BATCH, &tb);
		if (na <= 0 && nb <= 0)
			return queued_for_tap;
		for (i = j = 0; i < na || j < nb;) {
			if (j >= nb || (i < na && rx_stamp(&fa[i], ta) <= rx_stamp(&fb[j], tb)))
				queued_for_tap |= receive_one(s, &fa[i++], ta, 0);
			else
				queued_for_tap |= receive_one(s, &fb[j++], tb, 1);
		}
		if (na > 0)
			rtn_xsk_rx_release(s->xsk);
		if (nb > 0)
			rtn_xsk_rx_release(s->xsk_b);
	}
}

/* Whether @p d (@p len bytes) is a tunnelled frame: RTmac with the tunnel flag, R-TAG or not. */
static int is_tunnel_frame(const uint8_t *d, uint32_t len)
{
	uint32_t at = 12; /* the EtherType */

	if (len >= at + 2 && rtn_get_be16(d + at) == RTN_RTAG_ETHERTYPE)
		at += RTN_RTAG_LEN; /* an IEEE 802.1CB R-TAG in front of it */
	return len >= at + 6 && rtn_get_be16(d + at) == ETH_RTMAC &&
	       (d[at + 5] & RTMAC_FLAG_TUNNEL);
}

/*
 * Two ports, at most @p max frames: frame by frame in the wires' order (the
 * XDP stamps, the first port's on a tie, as receive_two merges them), so
 * that what is left stays in both rings for the next take, in the same
 * order.  With @p tunnel_waits (before a deadline) only up to the first
 * tunnelled frame of either.  A frame without a stamp counts as received
 * now; a bad descriptor first in a ring is left to the next whole take
 * (receive_two), which counts it.  Returns whether it queued a frame for
 * the TAP.
 */
static int receive_two_in_order(struct rtn_station *s, uint32_t max, int tunnel_waits)
{
	struct rtn_xsk *port[2] = { s->xsk, s->xsk_b };
	struct rtn_xsk_frame f;
	const uint8_t *d[2];
	uint32_t len[2], taken;
	int64_t at[2], now = rtn_now(), rx_os;
	int p, queued_for_tap = 0;

	for (taken = 0; taken < max; taken++) {
		for (p = 0; p < 2; p++) {
			d[p] = rtn_xsk_rx_next(port[p], &len[p], &at[p]);
			if (d[p] && !at[p])
				at[p] = now;
		}
		if (!d[0] && !d[1])
			break; /* nothing, or a bad descriptor first: left to the next take */
		p = !d[0] || (d[1] && at[1] < at[0]);
		if (tunnel_waits && is_tunnel_frame(d[p], len[p])) {
			s->st.rx_tunnel_after_send++;
			break;
		}
		if (rtn_xsk_rx_peek(port[p], &f, 1, &rx_os) != 1)
			break;
		queued_for_tap |= receive_one(s, &f, rx_os, (uint32_t)p);
		rtn_xsk_rx_release(port[p]);
	}
	return queued_for_tap;
}

/*
 * At most @p max frames of the first port's socket; with @p tunnel_waits,
 * only those before its first tunnelled frame, which are taken one at a
 * time so that frame stays in the ring.  Two ports: all of both, batch by
 * batch; or at most @p max, with @p tunnel_waits only what lies ahead of
 * either's first tunnelled frame, frame by frame.  Inlined into each of its
 * three callers, whose @p tunnel_waits (and, for the whole take, @p max)
 * are constants: the branches that do not apply fold away (rx_dispatch 14
 * instructions a frame fewer, callgrind).
 */
static inline __attribute__((always_inline)) void receive(struct rtn_station *s, uint32_t max,
							  int tunnel_waits)
{
	struct rtn_xsk_frame fr[RX_BATCH];
	uint32_t taken = 0, batch, len;
	const uint8_t *next;
	int64_t rx_os;
	int n, i, queued_for_tap = 0;

	/* the frames it lent the pump that the TAP has now; before a send, after it */
	if (s->vnic && !tunnel_waits)
		rtn_vnic_reclaim(s->vnic);
	if (s->xsk_b) {
		queued_for_tap = max == UINT32_MAX && !tunnel_waits ?
					 receive_two(s) :
					 receive_two_in_order(s, max, tunnel_waits);
	} else {
		for (; taken < max; taken += (uint32_t)n) {
			if (tunnel_waits && (next = rtn_xsk_rx_next(s->xsk, &len, NULL)) &&
			    is_tunnel_frame(next, len)) {
				s->st.rx_tunnel_after_send++;
				break;
			}
			batch = tunnel_waits ? 1 : max - taken < RX_BATCH ? max - taken : RX_BATCH;
			n = rtn_xsk_rx_peek(s->xsk, fr, batch, &rx_os);
			if (n <= 0)
				break;
			for (i = 0; i < n; i++)
				queued_for_tap |= receive_one(s, &fr[i], rx_os, 0);
			rtn_xsk_rx_release(s->xsk);
		}
	}
	if (queued_for_tap && s->vnic)
		rtn_vnic_rx_done(s->vnic);
}

void rtn_station_receive(struct rtn_station *s, uint32_t max)
{
	receive(s, max, 0);
}

void rtn_station_receive_for_deadline(struct rtn_station *s, uint32_t max)
{
	receive(s, max, 1);
}

void rtn_station_receive_all(struct rtn_station *s)
{
	receive(s, UINT32_MAX, 0);
}

/* ---- when received frames wake the thread ------------------------------------ */

/*
 * Whether a received frame wakes the thread.  Always while an application
 * channel is open: its messages go up when they arrive, not at the next
 * scheduled wake-up (which may be most of a cycle away).  Otherwise, under
 * TDMA with the batched VNIC, it may do so once between two timer wake-ups while tunnelled traffic
 * flows (a tunnel frame in the last RX_WAKE_HOLD_NS): that traffic then
 * reaches Linux (and a reply can make the station's next window) within a
 * cycle instead of at the next scheduled wake-up, and costs at most one
 * wake-up per cycle however many frames a peer's window brought.  With no
 * Linux traffic, nothing received wakes it (not even the Sync), and neither
 * with bulk traffic (a running average of one tunnel frame or more per
 * timer wake-up, as a TCP flow's ACKs): the next scheduled wake-up is near,
 * and a wake-up per cycle would cost a context switch per handful of packets.
 * Nor while the VNIC's pump runs on its period (a flow in either direction):
 * it takes received frames only then, so an early wake-up brings them no
 * sooner.  Before, a TCP sender's ACKs (about one per cycle, light by the
 * average above) woke it once a cycle for nothing: 0.017 of batched TCP's
 * 0.073 context switches per packet.
 */
#define RX_WAKE_HOLD_NS 20000000LL

/* A timer wake-up: the recent receive traffic decides the next RX wake-up. */
void rtn_station_rx_wake_rearm(struct rtn_station *s)
{
	uint32_t n = s->tunnel_rx_n < 4096 ? s->tunnel_rx_n : 4096;

	/* average over about eight wake-ups, in sixteenths of a frame */
	s->tunnel_rx_avg += ((int32_t)(n * 16) - (int32_t)s->tunnel_rx_avg) / 8;
	s->rx_light = s->tunnel_rx_avg < 16;
	s->tunnel_rx_n = 0;
	s->rx_woke = 0;
}

int rtn_station_rx_wakes(const struct rtn_station *s, int64_t next_local)
{
	if (!disc_ops(s)->paced_rx || next_local == INT64_MAX)
		return 1;
	/* an application waits for its messages: they go up at once, not at the next slot */
	if (s->app_chans || !(s->vnic && rtn_vnic_paced(s->vnic)))
		return 1;
	/* the pump is on its period: it takes them then, whenever they reach its ring */
	if (rtn_vnic_rx_deferred(s->vnic))
		return 0;
	return !s->rx_woke && s->rx_light && rtn_now() - s->tunnel_rx_at < RX_WAKE_HOLD_NS;
}

/*
 * NAPI's answer to a flood, for a discipline that takes frames as they come
 * (NoMAC), shaped like the kernel's napi_defer_hard_irqs with a
 * gro_flush_timeout: when frames keep coming (a wake-up that finds frames
 * within RX_POLL_NS of the last one that did, or a look that finds any), the
 * thread stops watching its sockets and looks at them on the timer RX_POLL_NS
 * later, until a look finds none.  Sparse traffic (a message per cycle) still
 * wakes the thread at once.  A socket no thread waits on costs its sender
 * nothing to fill: on a veth the receiver's wake-up runs in the sender's
 * softirq, on the sender's CPU.  In a two-port 64-byte flood the receiver woke
 * for every second frame, every copy pair, and the wake-ups took 14% of the
 * sender's CPU (sock_def_readable); an earlier rule that waited for a wake-up
 * to find 16 frames never fired there.  The XDP program stamps every frame,
 * so receive stamps and the latency measured from them do not move; a
 * channel's reader gets a message up to RX_POLL_NS later while a flood lasts.
 */
#define RX_POLL_NS 100000

/* When to look at the sockets next without a wake-up (0: watch them again). */
int64_t rtn_station_rx_poll_next(struct rtn_station *s, uint64_t got, int64_t now)
{
	int polling = s->rx_poll_at != 0, close_to_last = now - s->rx_seen_at < RX_POLL_NS;

	if (disc_ops(s)->paced_rx || !got)
		return 0;
	s->rx_seen_at = now;
	return polling || close_to_last ? now + RX_POLL_NS : 0;
}
