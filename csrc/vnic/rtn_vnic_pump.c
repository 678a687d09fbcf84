/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_pump.c
 * @brief The VNIC's pump between the wire and a TAP device: one helper
 *        thread that reads and writes the TAP, cuts super-packets into wire
 *        frames (GSO) and merges received segments (GRO) when the TAP has a
 *        vnet header, and hands frames to and from the RT thread through two
 *        lock-free rings.
 *
 * The RT thread makes no TAP system call and does no segmentation, merging
 * or checksum work: it takes ready wire frames from one ring into its
 * windows and puts received tunnel frames, decapsulated in place, into the
 * other by reference: their UMEM frames are lent to the pump and go back to
 * the fill ring once it wrote them (struct tap_loan).
 * How often the two threads wake each other is the mode:
 *
 * - batched: adaptive, as NICs moderate their interrupts.  While traffic is
 *   light the pump watches the TAP and the RT thread wakes it for every
 *   receive round, so a packet goes at once.  Once it moves VNIC_HEAVY
 *   frames or more in a period of VNIC_PUMP_PERIOD_NS it runs on that
 *   period instead: it does not watch the TAP, and a round writes all that
 *   was received and reads all the TAP has; the RT thread wakes it early
 *   only when VNIC_RX_KICK frames wait for the TAP, or when the ring to the
 *   wire fell below VNIC_TX_LOW from above (Linux had more than a period's
 *   windows carry).  One pump wake-up then carries a period's frames both
 *   ways, at the cost of up to one period of delay under a flow.  The RT
 *   thread is woken by the pump only under NoMAC (no slot picks the frames
 *   up), at most once per pump round.
 * - per-packet, the seed's baseline: the pump reads one packet, wakes the
 *   RT thread for it and waits until it was taken before it reads the next
 *   (the TAP has no offloads in this mode, so one read is one frame): one RT
 *   wake-up and one pump wake-up per frame.  Every receive round wakes the
 *   pump.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>
#include "rtn_core.h"
#include "rtn_station_priv.h"
#include "rtn_vnic_gso.h"
#include "rtn_vnic_priv.h"
#include "rtn_vnic_wire_priv.h"
#include "rtn_xsk.h"

#define VNIC_PRIO 31 /* RTnet: NRT traffic is the lowest priority */
/*
 * Batched under a flow: the pump's period, and the frames a period takes to
 * make a flow.  The period is a trade between the pump's wake-ups and the
 * delay TCP sees: measured with one TCP flow through a 1 ms TDMA cycle at
 * 100 Mbit/s modelled (74.3 Mbit/s of TCP capacity), 4 ms carried 68.9
 * Mbit/s at about 250 pump wake-ups per second per station; 8 ms 57.8
 * Mbit/s, 16 ms 22.3 Mbit/s (TCP's window did not grow to the longer round
 * trip within the 5 s run).  A period that adapts, growing towards 128
 * frames a round (up to 32 ms) as the flow's rate rose, carried 27 Mbit/s:
 * once CUBIC has left slow start its window grows far too slowly to fill
 * the round trip the longer period adds (cwnd stayed at 180 to 240 KB
 * while the RTT went from 14 to 44-60 ms).  What preempts the pump under a
 * flow is the application its TAP write woke (532 of 611 involuntary
 * switches in a 5 s run, the rest RT threads).
 */
#define VNIC_PUMP_PERIOD_NS 4000000
#define VNIC_HEAVY	    8
/* ... the RT thread wakes it early for this many received frames ... */
#define VNIC_RX_KICK (VNIC_RING / 4)
/* ... or when the ring to the wire fell to this from above */
#define VNIC_TX_LOW (VNIC_RING / 4)
/* a pump with nothing to do looks again after this long (stop, a dead TAP) */
#define VNIC_PUMP_IDLE_NS 200000000
/*
 * Copies a wire frame's bytes go through between the VNIC's ring and the
 * wire in per-packet mode: the discipline's queue and the UMEM frame the
 * socket sends from.  Counted with the VNIC's own (tx_copy_bytes).  A
 * batched VNIC's frames are sent in place from the ring (rtn_vnic_wire_priv.h),
 * with no copy unless the socket lends no frames.
 */
#define VNIC_TX_COPIES_AFTER_RING 2

/* VNIC counters are bumped by the RT thread and the pump alike */
#define VSTAT_ADD(v, field, n) __atomic_fetch_add(&(v)->s->st.vnic.field, (n), __ATOMIC_RELAXED)

/*
 * A received frame lent to the pump: the inner frame, decapsulated in place
 * in its UMEM frame, which goes back to @p x's fill ring once the pump
 * wrote it (rtn_vnic_reclaim).  base NULL: the frame was copied into the
 * ring's slot instead.
 */
struct tap_loan {
	const uint8_t *base;
	struct rtn_xsk *x;
	uint64_t addr;
};

/* An SPSC ring of whole frames (RT thread -> pump). */
struct frame_ring {
	uint32_t head __attribute__((aligned(64)));
	uint32_t tail __attribute__((aligned(64)));
	struct frame_slot slot[VNIC_RING];
};

struct rtn_vnic {
	struct rtn_station *s; /* its clock, eventfd, MAC and counters */
	int tap_fd;
	int mode;		   /* RTN_VNIC_BATCHED or RTN_VNIC_PER_PACKET */
	uint32_t slot;		   /* TDMA: the slot its frames go in */
	struct wire_ring *to_wire; /* pump -> RT: encapsulated wire frames, built in place */
	struct frame_ring *to_tap; /* RT -> pump: decapsulated received frames */
	struct tap_loan *loan;	   /* to_tap's slots: where each frame's bytes are */
	uint32_t reclaimed;	   /* RT thread: to_tap's slots up to here have no loan left */
	int pump_efd;		   /* the RT thread (or stop) wakes the pump */
	pthread_t pump;
	int pump_on;
	volatile int stop;
	int tap_dead; /* the TAP went away: stop touching it */
	/* the pump sleeps (the RT thread wakes it through pump_efd), waiting for room */
	int pump_asleep, pump_wants_room;
	/* batched: the pump runs on its period (a flow), not on events */
	int pump_heavy;
	int64_t period_at;     /* the pump's current period started then (CLOCK_MONOTONIC) */
	uint32_t period_moved; /* frames it moved both ways in it */
	/* the RT thread wants a kick when frames are ready (NoMAC with room) */
	int rt_wants_kick;
	uint64_t in_place_seen; /* RT thread: the socket's in-place sends counted so far */
	/*
	 * IFF_VNET_HDR: TAP reads are super-packets cut here into wire frames,
	 * TAP writes are merged segments gathered from the ring.  Both are the
	 * pump's (or a harness's that stopped it).
	 */
	int vnet;
	uint8_t *gso_buf;
	struct rtn_gso_seg gso; /* the super-packet being cut, kept across rounds */
	/* how the next super-packet is read into the ring's frames (as the last was cut) */
	uint32_t lay_hdr_len, lay_mss;
	struct rtn_gro gro;
};

/* ---- ring helpers -------------------------------------------------------- */

static inline void fr_commit(struct frame_ring *r)
{
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
}

/* The frame @p k behind the tail (the consumer looks ahead without taking), or NULL. */
static inline struct frame_slot *fr_peek_at(struct frame_ring *r, uint32_t k)
{
	if (__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - r->tail <= k)
		return NULL;
	return &r->slot[(r->tail + k) % VNIC_RING];
}

static inline struct frame_slot *fr_peek(struct frame_ring *r)
{
	return fr_peek_at(r, 0);
}

/* Give @p n frames back to the producer. */
static inline void fr_release_n(struct frame_ring *r, uint32_t n)
{
	__atomic_store_n(&r->tail, r->tail + n, __ATOMIC_RELEASE);
}

static inline void fr_release(struct frame_ring *r)
{
	fr_release_n(r, 1);
}

/* Frames in @p r, as either end sees it. */
static inline uint32_t fr_depth(struct frame_ring *r)
{
	return __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}

/*
 * The TAP is gone (deleted: poll says POLLERR, reads and writes EBADFD):
 * count it once and stop touching the fd, since polling a dead TAP returns
 * POLLERR at once, which would make the pump spin.
 */
static inline void tap_gone(struct rtn_vnic *v)
{
	if (!__atomic_exchange_n(&v->tap_dead, 1, __ATOMIC_ACQ_REL))
		VSTAT_ADD(v, tap_errors, 1);
}

/*
 * A read or write that failed with @p err.  Only a TAP that is gone stops
 * the pump's use of it; one that is merely down refuses writes with EIO and
 * has nothing to read: those frames are dropped and counted by the caller,
 * and the TAP carries traffic again once it is up.
 */
static inline void tap_error(struct rtn_vnic *v, int err)
{
	if (err == EBADFD || err == EBADF || err == ENODEV || err == ENXIO)
		tap_gone(v);
}

static inline int tap_usable(const struct rtn_vnic *v)
{
	return !__atomic_load_n(&v->tap_dead, __ATOMIC_ACQUIRE);
}

/* Wake the pump if it sleeps (it looks at both rings before it sleeps again). */
static void pump_kick(struct rtn_vnic *v)
{
	if (__atomic_exchange_n(&v->pump_asleep, 0, __ATOMIC_SEQ_CST)) {
		efd_signal(v->pump_efd);
		VSTAT_ADD(v, pump_kicks, 1);
	}
}

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

/* the first guess: Ethernet, IPv4 and TCP with timestamps, the rest of a frame of payload */
#define LAY_HDR_LEN 66
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

/* The @p nseg segments of the scattered packet in v->gso, cut where they lie, queued. */
static void queue_in_place(struct rtn_vnic *v, uint32_t nseg)
{
	struct wire_ring *r = v->to_wire;
	uint32_t i, len[LAY_MAX_FRAMES];

	/* the first segment's headers are the template: it is cut last */
	for (i = nseg; i-- > 0;) {
		uint8_t *f = wire_frame(r, r->head + i);
		int n = rtn_gso_fix_in_place(&v->gso, i, f + RTMAC_HLEN);
		int l = n > 0 ? rtn_rtmac_tunnel_encap(f, VNIC_FRAME_MAX, f + RTMAC_HLEN,
						       (uint32_t)n, v->s->o.mac) :
				-1;

		len[i] = l > 0 ? (uint32_t)l : 0;
		if (n > 0)
			VSTAT_ADD(v, tap_rx_bytes, n);
	}
	for (i = 0; i < nseg; i++) {
		if (!len[i]) /* cannot be (the sizes were checked): left empty, skipped */
			VSTAT_ADD(v, tx_dropped, 1);
		wire_commit(r, len[i]);
	}
	VSTAT_ADD(v, tap_rx, nseg);
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
static int pump_read_in_place(struct rtn_vnic *v, uint32_t *reads)
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
		queue_in_place(v, (uint32_t)nseg);
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
 * The TAP's packets into the ring to the wire, encapsulated in place (the
 * inner frame is cut RTMAC_HLEN bytes into the slot, so the RTmac header
 * costs no copy), until the ring is full, the TAP has nothing more, or
 * @p max_reads reads were made (a super-packet already read is finished
 * first).  Returns the frames queued.
 */
static uint32_t pump_fill(struct rtn_vnic *v, uint32_t max_reads)
{
	uint32_t reads = 0, queued = 0;

	while (tap_usable(v) && (reads < max_reads || rtn_gso_left(&v->gso))) {
		uint8_t *f;
		int n, len;

		if (v->vnet && !rtn_gso_left(&v->gso)) {
			uint32_t before = v->to_wire->head;
			int rc = pump_read_in_place(v, &reads);

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
		wire_commit(v->to_wire, (uint32_t)len);
		queued++;
	}
	return queued;
}

/* ---- Linux -> wire: the RT thread --------------------------------------------- */

/* The ring's depth at which a pump that waits for room is woken to read the TAP again. */
static inline uint32_t tx_refill_at(const struct rtn_vnic *v)
{
	return v->mode == RTN_VNIC_PER_PACKET ? 0 : VNIC_TX_LOW;
}

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
	uint64_t sent, done;

	rtn_xsk_lent_counts(v->s->xsk, &sent, &done);
	took_frames(v, wire_retire(v->to_wire, done));
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
	retire_frames(v);
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
	uint64_t in_place, done;

	/* the socket counts a frame it sent in place; any other was copied (a second port's) */
	rtn_xsk_lent_counts(v->s->xsk, &in_place, &done);
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
 * Write up to @p max received frames to the TAP; returns how many were
 * taken.  With a vnet header each write is a gathered super-packet, so the
 * only copy on the way to Linux is the kernel's into its skb.
 */
static uint32_t write_to_tap(struct rtn_vnic *v, uint32_t max)
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
		else
			w = v->vnet ? gro_write(v) : write(v->tap_fd, tap_bytes(v, f), f->len);
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

/* ---- the pump thread ---------------------------------------------------------- */

/* Wake the RT thread for frames it would otherwise leave until a timer (counted). */
static void wake_rt(struct rtn_vnic *v)
{
	efd_signal(v->s->efd);
	VSTAT_ADD(v, wakeups, 1);
}

/*
 * Batched: whether the pump runs on its period.  A period in which it moved
 * VNIC_HEAVY frames or more makes the next one periodic, one with fewer makes
 * it event-driven again.
 */
static void pump_judge(struct rtn_vnic *v, uint32_t moved)
{
	int64_t now = rtn_now();

	v->period_moved += moved;
	if (now - v->period_at < VNIC_PUMP_PERIOD_NS)
		return;
	__atomic_store_n(&v->pump_heavy, v->period_moved >= VNIC_HEAVY, __ATOMIC_SEQ_CST);
	v->period_at = now;
	v->period_moved = 0;
}

/* One round of the pump: what was received to the TAP, the TAP to the wire. */
static void pump_round(struct rtn_vnic *v)
{
	uint32_t wrote = write_to_tap(v, VNIC_RING), queued;

	if (v->mode == RTN_VNIC_PER_PACKET) {
		/* the seed's design: one read, one wake-up of the RT thread */
		if (pump_fill(v, 1))
			wake_rt(v);
		return;
	}
	queued = pump_fill(v, UINT32_MAX);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (queued && __atomic_load_n(&v->rt_wants_kick, __ATOMIC_RELAXED))
		wake_rt(v);
	pump_judge(v, wrote + queued);
}

/*
 * Sleep until there is work.  Event-driven (per-packet, or batched with
 * light traffic): the TAP while the ring to the wire is empty, a kick from
 * the RT thread.  Batched under a flow: the end of the period, or an early
 * kick.  A kick for room comes when the RT thread took the ring down to
 * tx_refill_at (event-driven: any frame taken; periodic: only a fall from
 * above the low-water mark).  The
 * flags are set before the rings are looked at again, and the RT thread
 * looks at the flags after it moved a ring, so no wake-up is lost between
 * the two.
 */
static void pump_wait(struct rtn_vnic *v)
{
	int periodic = v->mode == RTN_VNIC_BATCHED && v->pump_heavy;
	uint32_t taken = __atomic_load_n(&v->to_wire->tail, __ATOMIC_ACQUIRE);
	uint32_t depth = wire_depth(v->to_wire);
	int watch_tap = tap_usable(v) && !periodic && depth == 0;
	int64_t wait_ns = periodic ? v->period_at + VNIC_PUMP_PERIOD_NS - rtn_now() :
				     VNIC_PUMP_IDLE_NS;
	struct timespec ts = { .tv_sec = wait_ns > 0 ? wait_ns / 1000000000 : 0,
			       .tv_nsec = wait_ns > 0 ? wait_ns % 1000000000 : 0 };
	struct pollfd p[2] = { { .fd = v->pump_efd, .events = POLLIN },
			       { .fd = watch_tap ? v->tap_fd : -1, .events = POLLIN } };

	/* periodic: only a ring Linux filled beyond a period's windows; else any frame taken */
	__atomic_store_n(&v->pump_wants_room,
			 tap_usable(v) && depth > (periodic ? tx_refill_at(v) : 0),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&v->pump_asleep, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/*
	 * The RT thread took frames after the decision above and may have
	 * looked at the flags before they were set; or, event-driven, it
	 * queued received frames before they were.
	 */
	if ((__atomic_load_n(&v->to_wire->tail, __ATOMIC_ACQUIRE) != taken &&
	     wire_depth(v->to_wire) <= tx_refill_at(v)) ||
	    (!periodic && fr_depth(v->to_tap))) {
		if (__atomic_exchange_n(&v->pump_asleep, 0, __ATOMIC_SEQ_CST))
			return;
	}
	if (ppoll(p, 2, &ts, NULL) > 0) {
		if (p[0].revents & POLLIN)
			efd_drain(v->pump_efd);
		if (p[1].revents & (POLLERR | POLLHUP | POLLNVAL))
			tap_gone(v); /* TAP deleted under us */
	}
	__atomic_store_n(&v->pump_asleep, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&v->pump_wants_room, 0, __ATOMIC_RELAXED);
	VSTAT_ADD(v, pump_wakeups, 1);
}

static void *vnic_pump(void *arg)
{
	struct rtn_vnic *v = arg;

	pthread_setname_np(pthread_self(), "rtnet-vnic");
	while (!v->stop) {
		pump_round(v);
		if (!v->stop)
			pump_wait(v);
	}
	return NULL;
}

/*
 * The pump on a CPU the RT thread does not have when there is one: the RT
 * thread is SCHED_FIFO on its pinned CPU, the pump an ordinary thread.
 */
static void pump_keep_off_rt_cpu(struct rtn_vnic *v)
{
	int rt_cpu = v->s->o.rt.cpu;
	cpu_set_t set;

	if (rt_cpu < 0 || sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) < 2 ||
	    !CPU_ISSET(rt_cpu, &set))
		return;
	CPU_CLR(rt_cpu, &set);
	pthread_setaffinity_np(v->pump, sizeof(set), &set);
}

/* ---- attach and detach ------------------------------------------------------ */

/* Stop the pump and wait for it: from here on nobody but the caller touches the rings. */
static void pump_stop(struct rtn_vnic *v)
{
	if (!v->pump_on)
		return;
	v->stop = 1;
	efd_signal(v->pump_efd);
	pthread_join(v->pump, NULL);
	v->pump_on = 0;
}

void rtn_vnic_destroy(struct rtn_vnic *v)
{
	if (!v)
		return;
	pump_stop(v);
	if (v->tap_fd >= 0)
		close(v->tap_fd);
	if (v->pump_efd >= 0)
		close(v->pump_efd);
	free(v->to_tap);
	free(v->loan);
	if (v->to_wire)
		free(v->to_wire->own);
	free(v->to_wire);
	free(v->gso_buf);
	free(v);
}

/*
 * Whether the TAP delivers and takes a vnet header (IFF_VNET_HDR), asked of
 * the device itself so the caller's API stays the same.  0 no, 1 yes, or a
 * negative errno for a header size other than the 10-byte virtio_net_hdr.
 */
static int tap_has_vnet_hdr(int fd)
{
	struct ifreq ifr;
	int sz = 0;

	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr) < 0 || !(ifr.ifr_flags & IFF_VNET_HDR))
		return 0; /* not a TAP (a test's socket), or one without the header */
	if (ioctl(fd, TUNGETVNETHDRSZ, &sz) < 0 || sz != RTN_VNET_HDR_LEN)
		return rtn_set_error(-EINVAL,
				     "VNIC: TAP vnet header of %d bytes, only %d supported", sz,
				     RTN_VNET_HDR_LEN);
	return 1;
}

/* The GSO buffer and the GRO state (a TAP with a vnet header, or a harness that may want them). */
static int alloc_gso_buffers(struct rtn_vnic *v)
{
	if (!v->gso_buf)
		v->gso_buf = malloc(RTN_GSO_BUF);
	if (!v->gso_buf)
		return rtn_set_error(-ENOMEM, "VNIC: cannot allocate its GSO buffer");
	rtn_gro_init(&v->gro);
	v->lay_hdr_len = LAY_HDR_LEN;
	v->lay_mss = VNIC_FRAME_MAX - RTMAC_HLEN - LAY_HDR_LEN;
	return 0;
}

/* A VNIC on @p tap_fd (duplicated), its rings and buffers; its pump not yet started. */
static int vnic_create(struct rtn_station *s, int tap_fd, int mode, uint32_t slot,
		       struct rtn_vnic **out)
{
	struct rtn_vnic *v = aligned_alloc(64, (sizeof(*v) + 63) & ~(size_t)63);
	int rc;

	if (!v)
		return rtn_set_error(-ENOMEM, "VNIC: out of memory");
	memset(v, 0, sizeof(*v));
	v->s = s;
	v->mode = mode;
	v->slot = slot;
	v->tap_fd = fcntl(tap_fd, F_DUPFD_CLOEXEC, 0);
	v->pump_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	v->to_tap = aligned_alloc(64, sizeof(struct frame_ring));
	v->loan = calloc(VNIC_RING, sizeof(*v->loan));
	v->to_wire = aligned_alloc(64, sizeof(struct wire_ring));
	if (v->to_wire)
		memset(v->to_wire, 0, sizeof(struct wire_ring));
	if (v->tap_fd < 0 || v->pump_efd < 0 || !v->to_tap || !v->loan || !v->to_wire ||
	    wire_ring_place(v->to_wire, s->xsk) < 0) {
		rc = rtn_set_error(-ENOMEM, "VNIC: cannot allocate its rings and descriptors");
		goto fail;
	}
	rc = tap_has_vnet_hdr(v->tap_fd);
	if (rc < 0)
		goto fail;
	v->vnet = rc;
	if (v->vnet) {
		rc = alloc_gso_buffers(v);
		if (rc)
			goto fail;
	}
	fcntl(v->tap_fd, F_SETFL, fcntl(v->tap_fd, F_GETFL) | O_NONBLOCK);
	memset(v->to_tap, 0, sizeof(struct frame_ring));
	*out = v;
	return 0;
fail:
	rtn_vnic_destroy(v);
	return rc;
}

/* ---- for the harnesses (csrc/fuzz/) ------------------------------------------- */

/*
 * Back to the state after attach, in @p mode on @p slot, with or without
 * a vnet header, and with the pump stopped: the harness is the pump
 * (rtn_vnic_pump_once, rtn_vnic_write_all).  Empty rings, no GSO packet in
 * flight, nothing unread on the TAP.
 */
int rtn_vnic_reset(struct rtn_vnic *v, int mode, uint32_t slot, int vnet)
{
	uint64_t lent_sent, lent_done;
	int rc;

	pump_stop(v);
	rc = alloc_gso_buffers(v);
	if (rc)
		return rc;
	v->mode = mode;
	v->slot = slot;
	/* a harness lends no UMEM frame (it has none), so there is nothing to give back */
	v->to_tap->head = v->to_tap->tail = v->reclaimed = 0;
	memset(v->loan, 0, VNIC_RING * sizeof(*v->loan));
	rtn_xsk_lent_counts(v->s->xsk, &lent_sent, &lent_done);
	wire_ring_reset(v->to_wire, lent_sent);
	v->in_place_seen = lent_sent;
	v->tap_dead = 0;
	v->vnet = vnet;
	v->pump_asleep = v->pump_wants_room = v->rt_wants_kick = v->pump_heavy = 0;
	v->period_at = 0;
	v->period_moved = 0;
	memset(&v->gso, 0, sizeof(v->gso));
	while (read(v->tap_fd, v->gso_buf, RTN_GSO_BUF) >= 0)
		;
	return 0;
}

/* Write everything the RT thread queued for the TAP now; how many frames were taken. */
uint32_t rtn_vnic_write_all(struct rtn_vnic *v)
{
	return write_to_tap(v, VNIC_RING);
}

/* One pump round on the caller's thread (the pump stopped by rtn_vnic_reset). */
void rtn_vnic_pump_once(struct rtn_vnic *v)
{
	pump_round(v);
}

/*
 * On the RT thread: the VNIC it uses from now on, its ring counting the
 * socket's in-place sends and completions from here.
 */
static void vnic_go_live(struct rtn_station *s, uintptr_t arg)
{
	struct rtn_vnic *v = (struct rtn_vnic *)arg;
	uint64_t sent, done;

	rtn_xsk_lent_counts(s->xsk, &sent, &done);
	wire_ring_reset(v->to_wire, sent);
	v->in_place_seen = sent;
	s->vnic = v;
}

int rtn_station_vnic_attach(struct rtn_station *s, int tap_fd, int mode, uint32_t slot)
{
	struct rtn_vnic *v = NULL;
	int rc = 0;

	rtn_clear_error();
	if (mode != RTN_VNIC_BATCHED && mode != RTN_VNIC_PER_PACKET)
		return rtn_set_error(-EINVAL, "VNIC mode must be batched or per-packet");
	if (slot >= RTN_TDMA_MAX_SLOTS)
		return rtn_set_error(-EINVAL, "VNIC slot %u out of range", slot);
	pthread_mutex_lock(&s->ctl_lock);
	if (s->vnic_ctl) {
		rc = rtn_set_error(-EBUSY, "a VNIC is already attached");
		goto out;
	}
	rc = vnic_create(s, tap_fd, mode, slot, &v);
	if (rc)
		goto out;
	if (pthread_create(&v->pump, NULL, vnic_pump, v) != 0) {
		rc = rtn_set_error(-EAGAIN, "VNIC: cannot start its pump thread");
		rtn_vnic_destroy(v);
		goto out;
	}
	v->pump_on = 1;
	pump_keep_off_rt_cpu(v);
	s->vnic_ctl = v;
	rtn_station_post(s, vnic_go_live, (uintptr_t)v);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

/*
 * The frames the VNIC sent in place, done: the next VNIC builds its frames
 * in the same UMEM frames from the first on.  In copy mode the last kick
 * completed them all; a zero-copy NIC completes them within microseconds.
 * At most IN_PLACE_DRAIN_NS is waited: a NIC that stopped sending cannot
 * hold the detach.
 */
#define IN_PLACE_DRAIN_NS 1000000
static void wait_in_place_done(struct rtn_station *s)
{
	int64_t until = rtn_now() + IN_PLACE_DRAIN_NS;
	uint64_t sent, done;

	do {
		rtn_xsk_flush(s->xsk);
		rtn_xsk_lent_counts(s->xsk, &sent, &done);
	} while (sent != done && rtn_now() < until);
}

/*
 * On the RT thread, the pump stopped: the VNIC it no longer uses, every
 * frame still lent to it back to its fill ring, written or not.
 */
static void vnic_go_away(struct rtn_station *s, uintptr_t arg)
{
	struct rtn_vnic *v = (struct rtn_vnic *)arg;

	s->vnic = NULL;
	__atomic_store_n(&v->to_tap->tail, v->to_tap->head, __ATOMIC_RELEASE);
	rtn_vnic_reclaim(v);
	wait_in_place_done(s);
}

int rtn_station_vnic_detach(struct rtn_station *s)
{
	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	if (s->vnic_ctl) {
		pump_stop(s->vnic_ctl); /* nobody writes from the lent frames any more */
		rtn_station_post(s, vnic_go_away, (uintptr_t)s->vnic_ctl);
	}
	rtn_vnic_destroy(s->vnic_ctl);
	s->vnic_ctl = NULL;
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}
