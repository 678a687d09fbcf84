/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_rx.c
 * @brief The VNIC, wire -> Linux: the RT thread lends the pump received
 *        tunnel frames, decapsulated in place in their UMEM frames; the pump
 *        merges a flow's segments and writes them to the TAP with one
 *        writev, and the frames go back to their fill rings.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "rtn_core.h"
#include "rtn_tdma_proto.h"
#include "rtn_time_inline.h"
#include "rtn_vnic_state_priv.h"
#include "rtn_wakeboard.h"
#include "rtn_xsk.h"

/* ---- wire -> Linux ---------------------------------------------------------- */

/* The UMEM frames of to_tap's slots the pump is done with back to their fill rings. */
void rtn_vnic_reclaim(struct rtn_vnic *v)
{
	uint32_t tail = __atomic_load_n(&v->to_tap->tail, __ATOMIC_ACQUIRE);

	for (; v->reclaimed != tail; v->reclaimed++) {
		struct tap_loan *l = &v->loan[v->reclaimed % VNIC_RING];

		if (l->base)
			rtn_xsk_rx_give_back(l->x, l->addr);
		l->base = NULL;
	}
}

int rtn_vnic_rx(struct rtn_vnic *v, struct rtn_xsk *x, struct rtn_xsk_frame *f)
{
	struct frame_ring *r = v->to_tap;
	struct frame_slot *slot;
	struct tap_loan *l;
	uint8_t *inner = f->data + RTMAC_HLEN;
	int n;

	/* a slot whose frame is still lent is not free, though the pump released it */
	if (r->head - v->reclaimed >= VNIC_RING)
		rtn_vnic_reclaim(v);
	if (r->head - v->reclaimed >= VNIC_RING) {
		VSTAT_ADD(v, rx_dropped, 1);
		return 0;
	}
	/* in place: only the inner Ethernet header is rebuilt, RTMAC_HLEN bytes in */
	n = f->len > RTMAC_HLEN ?
		    rtn_rtmac_tunnel_decap(inner, f->len - RTMAC_HLEN, f->data, f->len) :
		    -1;
	/*
	 * The inner type must be an EtherType (RTnet stores h_proto there) and
	 * something must follow the header: Linux would drop anything else
	 * silently, so count it here where it can be seen.
	 */
	if (n <= ETH_HLEN_RTN || n > (int)sizeof(slot->data) || rtn_get_be16(inner + 12) < 0x0600) {
		VSTAT_ADD(v, rx_bad, 1);
		return 0;
	}
	slot = &r->slot[r->head % VNIC_RING];
	l = &v->loan[r->head % VNIC_RING];
	l->base = NULL;
	if (x && rtn_xsk_rx_keep(x, f, &l->addr) == 0) {
		l->base = inner;
		l->x = x;
	} else {
		memcpy(slot->data, inner, (uint32_t)n); /* the UMEM has lent all it may */
		VSTAT_ADD(v, rx_copy_bytes, n);
	}
	slot->len = (uint32_t)n;
	fr_commit(r);
	return 1;
}

/* Where the bytes of to_tap's slot @p f are: its UMEM frame when lent, else the slot. */
static inline const uint8_t *tap_bytes(const struct rtn_vnic *v, const struct frame_slot *f)
{
	const uint8_t *lent = v->loan[f - v->to_tap->slot].base;

	return lent ? lent : f->data;
}

/* A tunnel frame with a bad RTmac header: the VNIC's loss. */
void rtn_vnic_rx_bad(struct rtn_vnic *v)
{
	VSTAT_ADD(v, rx_bad, 1);
}

/*
 * Frames were queued for the TAP in this round: the pump takes them now,
 * except from a batched pump on its period, which takes them then (or
 * early, for VNIC_RX_KICK of them).
 */
void rtn_vnic_rx_done(struct rtn_vnic *v)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* our head before its flags (see pump_wait) */
	if (v->mode == RTN_VNIC_PER_PACKET || !__atomic_load_n(&v->pump_heavy, __ATOMIC_RELAXED) ||
	    fr_depth(v->to_tap) >= VNIC_RX_KICK)
		pump_kick(v);
}

/*
 * With a vnet header: the frame at the ring's tail and the segments of the
 * same TCP flow right behind it, gathered into v->gro (by reference: the
 * frames stay in the ring until the write).  Returns the frames it took (at
 * most @p max), their bytes in *bytes, or 0 for a frame larger than a
 * super-packet (cannot be).
 */
static uint32_t gro_collect(struct rtn_vnic *v, uint32_t max, uint64_t *bytes)
{
	struct frame_slot *f = fr_peek(v->to_tap);
	uint32_t n = 1;
	int open = rtn_gro_begin(&v->gro, tap_bytes(v, f), f->len);

	if (open < 0)
		return 0;
	*bytes = f->len;
	while (open > 0 && n < max && (f = fr_peek_at(v->to_tap, n)) &&
	       rtn_gro_append(&v->gro, tap_bytes(v, f), f->len)) {
		*bytes += f->len;
		n++;
	}
	return n;
}

/* One write of the gathered packet: the vnet header and headers, then the pieces in place. */
static ssize_t gro_write(struct rtn_vnic *v)
{
	struct iovec iov[1 + RTN_GRO_MAX_SEGS];
	uint32_t i;

	iov[0] = (struct iovec){ v->gro.head, v->gro.head_len };
	for (i = 0; i < v->gro.nseg; i++)
		iov[1 + i] = (struct iovec){ (void *)v->gro.piece[i].base, v->gro.piece[i].len };
	return writev(v->tap_fd, iov, (int)(1 + v->gro.nseg));
}

/*
 * Before a TAP write of @p segs merged segments: Linux's TCP receive for them
 * runs inside the system call, tens of microseconds in which, on a kernel
 * without full preemption, an RT thread woken on this CPU waits
 * (rtn_wakeboard.h).  A write that would start within VNIC_CLEAR_NS of the
 * deadline of an RT thread that may run where the pump may waits until just
 * past it instead (counted); one pinned to a CPU the pump keeps off is never
 * in its way.  A lone frame's write is short and goes at once.
 */
static void keep_clear_of_rt_wakeups(struct rtn_vnic *v, uint32_t segs)
{
	int64_t now, next;

	if (segs < VNIC_CLEAR_MIN_SEGS)
		return;
	now = rtn_now();
	next = rtn_wakeboard_next(now, v->pump_cpus);
	if (next - now >= VNIC_CLEAR_NS)
		return;
	rtn_sleep_until(next + VNIC_CLEAR_AFTER_NS);
	VSTAT_ADD(v, pump_yields, 1);
}

/*
 * Write up to @p max received frames to the TAP; returns how many were
 * taken.  With a vnet header each write is a gathered super-packet, so the
 * only copy on the way to Linux is the kernel's into its skb.
 */
uint32_t rtn_vnic_write_tap(struct rtn_vnic *v, uint32_t max)
{
	struct frame_slot *f;
	uint32_t n = 0;

	while (n < max && (f = fr_peek(v->to_tap))) {
		uint32_t took = 1, segs = 1;
		uint64_t bytes = f->len;
		ssize_t w;

		if (v->vnet) {
			took = gro_collect(v, max - n, &bytes);
			if (!took) { /* larger than a super-packet: cannot be */
				VSTAT_ADD(v, rx_dropped, 1);
				fr_release(v->to_tap);
				n++;
				continue;
			}
			segs = v->gro.nseg;
			rtn_gro_finish(&v->gro);
		}
		if (!tap_usable(v))
			w = -1;
		else {
			keep_clear_of_rt_wakeups(v, segs);
			w = v->vnet ? gro_write(v) : write(v->tap_fd, tap_bytes(v, f), f->len);
		}
		if (w < 0) {
			/* a TAP that is gone, down (EIO) or full (EAGAIN): the frames are lost */
			if (tap_usable(v))
				tap_error(v, errno);
			VSTAT_ADD(v, rx_dropped, segs);
		} else {
			VSTAT_ADD(v, tap_writes, 1);
			VSTAT_ADD(v, tap_tx, segs);
			VSTAT_ADD(v, tap_tx_bytes, bytes);
			VSTAT_ADD(v, rx_copy_bytes, bytes); /* the kernel's copy into an skb */
		}
		fr_release_n(v->to_tap, took); /* the write is done with them */
		n += took;
	}
	return n;
}

int rtn_vnic_paced(const struct rtn_vnic *v)
{
	return v->mode == RTN_VNIC_BATCHED;
}

int rtn_vnic_rx_deferred(const struct rtn_vnic *v)
{
	return v->mode == RTN_VNIC_BATCHED && __atomic_load_n(&v->pump_heavy, __ATOMIC_RELAXED);
}

int rtn_vnic_mode(const struct rtn_vnic *v)
{
	return v ? v->mode : RTN_VNIC_OFF;
}
