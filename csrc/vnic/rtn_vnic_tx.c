/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_tx.c
 * @brief The VNIC, Linux -> wire: the pump reads the TAP straight into the
 *        UMEM frames the segments leave from (in place, rtn_vnic_wire_priv.h)
 *        or through its GSO buffer, and the RT thread hands those frames to
 *        its discipline without copying them (batched) or queues them
 *        (per-packet).
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "rtn_core.h"
#include "rtn_tdma.h"
#include "rtn_tdma_proto.h"
#include "rtn_vnic_state_priv.h"
#include "rtn_xsk.h"

/* ---- Linux -> wire: the pump ------------------------------------------------- */

/* One read from the TAP, without blocking, counted.  0: none waiting, or the TAP died. */
static ssize_t tap_read(struct rtn_vnic *v, uint8_t *buf, size_t cap)
{
	ssize_t n = read(v->tap_fd, buf, cap);

	if (n <= 0) {
		if (n < 0)
			tap_error(v, errno);
		return 0;
	}
	VSTAT_ADD(v, tap_reads, 1);
	VSTAT_ADD(v, tx_copy_bytes, n); /* the kernel's copy out of the skb */
	return n;
}

/*
 * The next inner frame for the wire, into @p inner: the rest of the
 * super-packet read earlier, else a new read (@p *reads counts them).
 * Returns its length, 0 if the TAP has nothing (or died), -1 if a malformed
 * packet was counted and dropped (call again).
 */
static int pump_pull(struct rtn_vnic *v, uint8_t *inner, uint32_t cap, uint32_t *reads)
{
	int n;

	if (!v->vnet) {
		n = (int)tap_read(v, inner, cap); /* straight into the ring's slot */
		*reads += n > 0;
	} else {
		if (!rtn_gso_left(&v->gso)) {
			ssize_t r = tap_read(v, v->gso_buf, RTN_GSO_BUF);

			if (!r)
				return 0;
			++*reads;
			if (rtn_gso_begin(&v->gso, v->gso_buf, (uint32_t)r, cap) < 0) {
				VSTAT_ADD(v, tx_bad, 1);
				return -1;
			}
		}
		n = rtn_gso_next(&v->gso, inner, cap);
		if (n <= 0) { /* cannot happen: rtn_gso_begin checked the sizes */
			v->gso.index = v->gso.nseg;
			VSTAT_ADD(v, tx_bad, 1);
			return -1;
		}
		VSTAT_ADD(v, tx_copy_bytes, n); /* the segment cut from the super-packet */
	}
	if (n > 0) {
		VSTAT_ADD(v, tap_rx, 1);
		VSTAT_ADD(v, tap_rx_bytes, n);
	}
	return n;
}

/* ---- Linux -> wire in place: the TAP read straight into the frames that leave ---- */

/* a layout of more frames than this (a tiny gso_size) is not read in place */
#define LAY_MAX_FRAMES 128

/*
 * The frames one read fills when laid out as @p hdr_len + @p mss: enough
 * for the largest super-packet, or 0 when that is more than LAY_MAX_FRAMES.
 */
static uint32_t lay_frames(uint32_t hdr_len, uint32_t mss)
{
	uint32_t n = mss ? (RTN_GSO_MAX + mss - 1) / mss + 1 : 0;

	return n <= LAY_MAX_FRAMES ? n : 0;
}

/*
 * A read that does not lie as laid out, back together in the GSO buffer
 * (vnet header first), as a read into it would have left it: the one extra
 * copy such a packet costs.  The bytes beyond the layout, read into the
 * buffer's start, go to their place first.  0, or -1 when the read was
 * larger than the buffer (no TAP packet is).
 */
static int gather(struct rtn_vnic *v, const struct iovec *iov, uint32_t n_iov, uint32_t n)
{
	uint32_t i, at = 0;

	if (n > RTN_GSO_BUF)
		return -1;
	for (i = 0; i + 1 < n_iov; i++)
		at += (uint32_t)iov[i].iov_len;
	if (n > at)
		memmove(v->gso_buf + at, v->gso_buf, n - at);
	for (i = 0, at = 0; i + 1 < n_iov && at < n; i++) {
		uint32_t k = n - at < iov[i].iov_len ? n - at : (uint32_t)iov[i].iov_len;

		memcpy(v->gso_buf + at, iov[i].iov_base, k);
		at += k;
	}
	VSTAT_ADD(v, tx_copy_bytes, n);
	return 0;
}

/* The @p nseg segments of the scattered packet in v->gso, cut where they lie, queued at @p now. */
static void queue_in_place(struct rtn_vnic *v, uint32_t nseg, int64_t now)
{
	struct wire_ring *r = v->to_wire;
	uint32_t i, len[LAY_MAX_FRAMES];
	uint64_t bytes = 0;

	/* the first segment's headers are the template: it is cut last */
	for (i = nseg; i-- > 0;) {
		uint8_t *f = wire_frame(r, r->head + i);
		int n = rtn_gso_fix_in_place(&v->gso, i, f + RTMAC_HLEN);
		int l = n > 0 ? rtn_rtmac_tunnel_encap(f, VNIC_FRAME_MAX, f + RTMAC_HLEN,
						       (uint32_t)n, v->s->o.mac) :
				-1;

		len[i] = l > 0 ? (uint32_t)l : 0;
		bytes += n > 0 ? (uint32_t)n : 0;
	}
	for (i = 0; i < nseg; i++) {
		if (!len[i]) /* cannot be (the sizes were checked): left empty, skipped */
			VSTAT_ADD(v, tx_dropped, 1);
		wire_commit(r, len[i], now);
	}
	VSTAT_ADD(v, tap_rx, nseg);
	VSTAT_ADD(v, tap_rx_bytes, bytes);
	memset(&v->gso, 0, sizeof(v->gso));
}

/*
 * One TAP read scattered straight into the ring's free frames (readv), laid
 * out as the last super-packet was cut: the vnet header aside, the headers
 * and the first segment's payload at the first frame's inner frame, each
 * further segment's payload at its frame's header length.  A packet that
 * lies as laid out is cut where it is: only its headers are written per
 * segment, and the only copy of its payload is the kernel's into the UMEM
 * frames it leaves from.  Any other (a new flow's header length or MSS, a
 * frame larger than the first) is gathered into the GSO buffer and begun
 * there (v->gso), to be cut as before, and sets the layout for the next.
 * A ring with less room than a whole layout takes what fits in it in
 * place (a lone frame always does) and gathers a larger packet.  Returns 1
 * when it queued frames or began a packet, 0 when the TAP had nothing, -1
 * after a malformed packet was dropped (counted), and -2 when the ring is
 * full or no layout is known: the caller's usual path then.
 */
static int pump_read_in_place(struct rtn_vnic *v, uint32_t *reads, int64_t now)
{
	struct wire_ring *r = v->to_wire;
	uint32_t hdr = v->lay_hdr_len, mss = v->lay_mss, nf = lay_frames(hdr, mss);
	uint32_t cap = VNIC_FRAME_MAX - RTMAC_HLEN, i, n;
	struct iovec iov[LAY_MAX_FRAMES + 2];
	uint8_t vnet[RTN_VNET_HDR_LEN];
	ssize_t got;
	uint32_t room = VNIC_RING - wire_depth(r);
	int nseg = 0;

	if (!nf || !room || hdr + mss > cap)
		return -2;
	if (nf > room) /* what does not fit the room left is gathered */
		nf = room;
	iov[0] = (struct iovec){ vnet, sizeof(vnet) };
	iov[1] = (struct iovec){ wire_frame(r, r->head) + RTMAC_HLEN, hdr + mss };
	for (i = 1; i < nf; i++)
		iov[1 + i] = (struct iovec){ wire_frame(r, r->head + i) + RTMAC_HLEN + hdr, mss };
	iov[1 + nf] = (struct iovec){ v->gso_buf, RTN_GSO_BUF }; /* beyond the layout */
	got = readv(v->tap_fd, iov, (int)nf + 2);
	if (got <= 0) {
		if (got < 0)
			tap_error(v, errno);
		return 0;
	}
	++*reads;
	VSTAT_ADD(v, tap_reads, 1);
	VSTAT_ADD(v, tx_copy_bytes, got); /* the kernel's copy out of the skb */
	n = (uint32_t)got;
	if (n >= sizeof(vnet) && n - sizeof(vnet) <= hdr + mss * nf)
		nseg = rtn_gso_begin_scattered(&v->gso, vnet, iov[1].iov_base, n - sizeof(vnet),
					       cap, hdr, mss);
	if (nseg > 0) {
		queue_in_place(v, (uint32_t)nseg, now);
		return 1;
	}
	if (nseg == 0 && !gather(v, iov, nf + 2, n))
		nseg = rtn_gso_begin(&v->gso, v->gso_buf, n, cap);
	if (nseg <= 0) {
		memset(&v->gso, 0, sizeof(v->gso));
		VSTAT_ADD(v, tx_bad, 1);
		return -1;
	}
	if (v->gso.gso) { /* the next read is laid out as this packet is cut */
		v->lay_hdr_len = v->gso.hdr_len;
		v->lay_mss = v->gso.mss;
	}
	return 1;
}

/*
 * The ring holds a standing queue (its oldest frame waited VNIC_QUEUE_MAX_NS
 * or more): the TAP's next packet is read and dropped, counted, one a pump
 * round.  Linux's TCP then slows down instead of filling the ring and the
 * TAP's own queue.  Dropping every packet while the oldest frame is that old
 * would empty the ring under a flood that does not slow down (UDP): the
 * oldest frame's wait lags the queue by its own length.  1 if a packet
 * was dropped, 0 if the TAP had none (or died) or, without a vnet header,
 * the ring has no frame left to read it into (backpressure then).
 */
static int drop_at_the_tap(struct rtn_vnic *v)
{
	uint8_t *buf = v->vnet ? v->gso_buf : wire_prod(v->to_wire);
	size_t cap = v->vnet ? RTN_GSO_BUF : VNIC_FRAME_MAX;

	if (!buf || !tap_read(v, buf, cap))
		return 0;
	VSTAT_ADD(v, queue_drops, 1);
	return 1;
}

/*
 * The TAP's packets into the ring to the wire, encapsulated in place (the
 * inner frame is cut RTMAC_HLEN bytes into the slot, so the RTmac header
 * costs no copy), until the ring is full, the TAP has nothing more, or
 * @p max_reads reads were made (a super-packet already read is finished
 * first).  Returns the frames queued.
 */
uint32_t rtn_vnic_fill(struct rtn_vnic *v, uint32_t max_reads)
{
	uint32_t reads = 0, queued = 0;
	int dropped = 0;
	int64_t now = rtn_now(); /* the round's: when its frames were queued */

	while (tap_usable(v) && (reads < max_reads || rtn_gso_left(&v->gso))) {
		uint8_t *f;
		int n, len;

		/* one packet a round: TCP slows down at the first; a flood still fills the ring */
		if (!dropped && !rtn_gso_left(&v->gso) &&
		    wire_oldest_wait(v->to_wire, now) > VNIC_QUEUE_MAX_NS) {
			if (!drop_at_the_tap(v))
				break;
			dropped = 1;
			reads++;
			continue;
		}
		if (v->vnet && !rtn_gso_left(&v->gso)) {
			uint32_t before = v->to_wire->head;
			int rc = pump_read_in_place(v, &reads, now);

			if (!rc)
				break;
			queued += v->to_wire->head - before;
			if (rc != -2)
				continue; /* queued, dropped, or begun in the GSO buffer */
		}
		f = wire_prod(v->to_wire);
		if (!f) {
			VSTAT_ADD(v, ring_full,
				  1); /* backpressure: Linux's packets wait in the TAP */
			break;
		}
		n = pump_pull(v, f + RTMAC_HLEN, VNIC_FRAME_MAX - RTMAC_HLEN, &reads);
		if (!n)
			break;
		if (n < 0)
			continue;
		len = rtn_rtmac_tunnel_encap(f, VNIC_FRAME_MAX, f + RTMAC_HLEN, (uint32_t)n,
					     v->s->o.mac);
		if (len < 0) {
			VSTAT_ADD(v, tx_dropped, 1);
			continue;
		}
		wire_commit(v->to_wire, (uint32_t)len, now);
		queued++;
	}
	return queued;
}

/* ---- Linux -> wire: the RT thread --------------------------------------------- */

/* The RT thread took frames: wake the pump if it waits for room and there is enough. */
static void took_frames(struct rtn_vnic *v, uint32_t n)
{
	if (!n)
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* our tail before its flag (see pump_wait) */
	if (__atomic_load_n(&v->pump_wants_room, __ATOMIC_RELAXED) &&
	    wire_depth(v->to_wire) <= tx_refill_at(v))
		pump_kick(v);
}

/* The slots whose frames the kernel is done with back to the pump. */
static void retire_frames(struct rtn_vnic *v)
{
	took_frames(v, wire_retire(v->to_wire, rtn_xsk_lent_done(v->s->xsk)));
}

/*
 * Batched VNIC: the next ready frame, sent by the discipline straight from
 * the ring once its own queue is empty (TDMA's slot queue, NoMAC's FIFO):
 * in place, from the UMEM frame the pump built it in.  NULL when none is
 * ready; one larger than @p max bytes (the slot it would go in is smaller
 * than the VNIC's, which shrank under a running VNIC) is dropped.  The
 * discipline calls rtn_vnic_taken once it sent the frame or gave up on it.
 */
uint8_t *rtn_vnic_next(struct rtn_vnic *v, uint32_t max, uint32_t *len)
{
	struct wire_slot *w;
	uint8_t *f;

	if (v->mode != RTN_VNIC_BATCHED)
		return NULL;
	retire_frames(v); /* here too: a quiet TDMA wait skips rtn_vnic_before_wait */
	while ((f = wire_peek(v->to_wire, &w)) && (w->len > max || !w->len)) {
		if (w->len) /* an empty one was counted by the pump */
			VSTAT_ADD(v, tx_dropped, 1);
		wire_handed(v->to_wire, 0);
	}
	if (!f)
		return NULL;
	*len = w->len;
	return f;
}

/*
 * TDMA, in an occurrence of @p slot_id whose queue is empty: the VNIC's
 * slot and those sharing its queue carry VNIC frames, and so does any slot
 * at least as large (what the RT frames leave of its occurrence).  VNIC
 * frames thus only ever take wire time that no queued frame wanted.
 */
uint8_t *rtn_vnic_tail_peek(struct rtn_vnic *v, const struct rtn_tdma *e, uint32_t slot_id,
			    uint32_t *len)
{
	uint32_t size = rtn_tdma_slot_size(e, slot_id);

	if (!rtn_tdma_shares_queue(e, slot_id, v->slot) && size < rtn_tdma_slot_size(e, v->slot))
		return NULL;
	return rtn_vnic_next(v, size + ETH_HLEN_RTN, len);
}

void rtn_vnic_taken(struct rtn_vnic *v, uint32_t len, int sent)
{
	/* the socket counts a frame it sent in place; any other was copied (a second port's) */
	uint64_t in_place = rtn_xsk_lent_sent(v->s->xsk);

	if (!sent)
		VSTAT_ADD(v, tx_dropped, 1);
	else if (in_place == v->in_place_seen)
		VSTAT_ADD(v, tx_copy_bytes, len); /* into a TX frame of the socket */
	wire_handed(v->to_wire, sent && in_place != v->in_place_seen);
	v->in_place_seen = in_place;
}

/* Per-packet VNIC: every frame the pump handed over, to the discipline's @p queue at once. */
void rtn_vnic_take(struct rtn_vnic *v, rtn_vnic_queue_fn queue, void *priv)
{
	struct wire_slot *w;
	uint8_t *f;

	if (v->mode != RTN_VNIC_PER_PACKET)
		return;
	while ((f = wire_peek(v->to_wire, &w))) {
		if (!w->len) /* counted by the pump */
			;
		else if (queue(priv, v->slot, VNIC_PRIO, f, w->len) < 0)
			VSTAT_ADD(v, tx_dropped, 1);
		else
			VSTAT_ADD(v, tx_copy_bytes, (uint64_t)w->len * VNIC_TX_COPIES_AFTER_RING);
		wire_handed(v->to_wire, 0); /* the queue has its own copy */
	}
	retire_frames(v);
}

/* Before the RT thread waits: whether frames from the pump should wake it (NoMAC with room). */
void rtn_vnic_before_wait(struct rtn_vnic *v, int wake_me)
{
	retire_frames(v); /* the wake-up's kicks are done: the kernel has its frames */
	__atomic_store_n(&v->rt_wants_kick, wake_me && v->mode == RTN_VNIC_BATCHED,
			 __ATOMIC_SEQ_CST);
}
