/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xsk.h
 * @brief AF_XDP socket of the real-time path: our XDP program, UMEM, rings.
 *
 * rtn_xsk_open() loads xdp_rtnet.bpf.o with libbpf, attaches it to the
 * interface (native, or SKB as a fallback), creates a UMEM and an AF_XDP
 * socket with libxdp's xsk API (its own program load inhibited) and enters
 * the socket in xsks_map[queue].  The frame functions below do every ring
 * operation in C, allocate nothing and take the timestamps themselves, so
 * the caller only sees whole frames and nanosecond times (rtn_time_inline.h).
 */
#ifndef RTN_XSK_H
#define RTN_XSK_H

#include <stdint.h>

#define RTN_XDP_MODE_AUTO \
	0 /* SKB mode on a one-queue veth (rtn_xsk_prog.c), else native, else SKB */
#define RTN_XDP_MODE_NATIVE 1
#define RTN_XDP_MODE_SKB    2

#define RTN_XSK_COPY	 0 /* rtn_xsk_opts.zerocopy: bind in copy mode */
#define RTN_XSK_ZEROCOPY 1 /* zero-copy, refused if the driver has none */
#define RTN_XSK_ZC_AUTO	 2 /* zero-copy where the driver offers it, copy mode otherwise */

#define RTN_XSK_MAX_ETHERTYPES 14   /* map holds 16: RTmac and RTcfg are always in */
#define RTN_XSK_FRAME_SIZE     4096 /* UMEM frame: libxdp's XSK_UMEM__DEFAULT_FRAME_SIZE */
#define RTN_XSK_MAX_LEND       4096 /* rtn_xsk_opts.lend_frames at most */

struct rtn_xsk;

struct rtn_xsk_opts {
	const char *ifname;
	const char *bpf_obj_path; /* xdp_rtnet.bpf.o */
	const char *pin_dir;	  /* NULL, or a bpffs directory to pin rt_ethertypes in */
	uint32_t queue;
	int mode;	 /* RTN_XDP_MODE_* */
	uint32_t frames; /* UMEM frames, a power of two >= 64 */
	int zerocopy;	 /* RTN_XSK_COPY, RTN_XSK_ZEROCOPY or RTN_XSK_ZC_AUTO */
	int busy_poll;	 /* spin on the RX ring instead of poll(2) */
	uint32_t n_ethertypes;
	uint16_t ethertypes[14]; /* extra real-time EtherTypes (host order) */
	/*
	 * UMEM frames past the RX and TX halves that the socket never takes for
	 * itself: their owner writes frames there and sends them in place
	 * (rtn_xsk_lent_area), 0 for none.
	 */
	uint32_t lend_frames;
};

struct rtn_xsk_stats {
	uint64_t rx_frames;
	uint64_t rx_bytes;
	uint64_t tx_frames;
	uint64_t tx_bytes;
	uint64_t tx_ring_full;	 /* sends refused with -EAGAIN */
	uint64_t tx_kicks;	 /* sendto() calls that handed queued frames to the kernel */
	uint64_t rx_empty_polls; /* RX ring checks that found nothing */
	uint64_t fill_fail;	 /* frames that could not go back to the fill ring */
	uint64_t invalid_desc;	 /* descriptors outside the UMEM or too long */
	uint64_t rx_kernel_ts;	 /* frames that carried the XDP program's stamp */
	uint64_t truncated;	 /* frames larger than the caller's buffer */
	uint64_t rx_kept;	 /* received frames kept out of the fill ring now (rx_keep) */
	uint64_t xdp_redirected; /* XDP program: frames steered to AF_XDP (all CPUs) */
	uint64_t xdp_passed;	 /* XDP program: frames passed to the stack */
	/* XDP program: frames of the stack that arrived on a receive queue with
	 * no socket bound, passed to Linux (all queues; the first 8 one by one) */
	uint64_t xdp_unbound;
	uint64_t xdp_unbound_queue[8];
	uint64_t tx_in_place; /* frames sent from the lent area, without a copy */
	int mode;	      /* RTN_XDP_MODE_NATIVE or _SKB actually attached */
	int zerocopy;	      /* 1 when the socket is bound zero-copy */
	/* where the XDP program puts the receive stamp: 1 the metadata area, 2
	 * in front of the frame (the kernel refused the program
	 * bpf_xdp_adjust_meta()), 0 nowhere (every stamp is the poll time) */
	int xdp_stamps;
};

/** A received frame still in the UMEM (see rtn_xsk_rx_peek()). */
struct rtn_xsk_frame {
	uint8_t *data;
	uint32_t len;
	int64_t rx_ts;	/* kernel receive stamp (XDP), or the poll time if none */
	int kernel_ts;	/* 1 when rx_ts came from the XDP program */
	uint32_t index; /* its place in the peek (rtn_xsk_rx_keep()) */
};

int rtn_xsk_open(const struct rtn_xsk_opts *opts, struct rtn_xsk **out);
/** Release socket, UMEM and XDP program and free the object; accepts NULL. */
void rtn_xsk_close(struct rtn_xsk *x);

int rtn_xsk_mode(const struct rtn_xsk *x);
/** Why native mode was not used ("" when it was, or was not tried). */
const char *rtn_xsk_fallback_reason(const struct rtn_xsk *x);
int rtn_xsk_fd(const struct rtn_xsk *x);
uint32_t rtn_xsk_frame_size(const struct rtn_xsk *x);
int rtn_xsk_stats(const struct rtn_xsk *x, struct rtn_xsk_stats *out);

/**
 * Send one frame.  *tx_ts is rtn_now() taken right before the descriptor is
 * submitted.  Returns 0, or -EAGAIN when no TX frame or ring slot is free.
 */
int rtn_xsk_send(struct rtn_xsk *x, const void *frame, uint32_t len, int64_t *tx_ts);
/**
 * Like rtn_xsk_send(), and also write rtn_now() + @p stamp_add as a
 * big-endian 64-bit value at @p stamp_offset of the frame right before
 * submission (RTnet's rtskb_tx_timestamp: Sync frames carry local time plus
 * the clock offset).  A negative @p stamp_offset writes nothing.
 */
int rtn_xsk_send_stamped(struct rtn_xsk *x, const void *frame, uint32_t len, int stamp_offset,
			 int64_t stamp_add, int64_t *tx_ts);
/**
 * Like rtn_xsk_send_stamped(), but only while rtn_now() is at most
 * @p deadline when the stamp is taken: later, nothing is sent and the
 * result is -ETIME.  A frame that must leave inside a time window (a TDMA
 * slot) is so never handed over after it, however long the thread stalled
 * between deciding to send it and sending it.
 */
int rtn_xsk_send_by(struct rtn_xsk *x, const void *frame, uint32_t len, int stamp_offset,
		    int64_t stamp_add, int64_t deadline, int64_t *tx_ts);
/**
 * Receive one frame into @p buf.  Returns the number of bytes copied (a
 * longer frame is cut to @p cap and counted as truncated), 0 on timeout, or
 * a negative errno.  @p timeout_us: 0 checks once, -1 waits forever.
 * *@p rx_ts: the time the frame was taken (rtn_xsk_rx_peek() gives the XDP
 * program's stamp); a frame that carried that stamp is counted in
 * rx_kernel_ts all the same, so the stats show whether the driver keeps it.
 */
int rtn_xsk_recv(struct rtn_xsk *x, void *buf, uint32_t cap, int64_t *rx_ts, int timeout_us);
/**
 * Zero-copy receive for C callers: point @p frames at up to @p max received
 * frames inside the UMEM, with one timestamp for the batch.  The frames stay
 * valid until rtn_xsk_rx_release(), which must follow before the next peek.
 * Returns the number of frames (0 if none), never waits.
 */
int rtn_xsk_rx_peek(struct rtn_xsk *x, struct rtn_xsk_frame *frames, uint32_t max, int64_t *rx_ts);
void rtn_xsk_rx_release(struct rtn_xsk *x);
/**
 * The next received frame's bytes without taking it: it stays first in the
 * ring for the next peek.  NULL when the ring is empty, a peek is
 * outstanding, or its descriptor is out of the UMEM (the peek counts that
 * one); otherwise *@p len its length and, unless @p rx_ts is NULL, *@p rx_ts
 * the XDP program's stamp (0: none; not counted, the peek counts it).  Same
 * thread as the peek.
 */
const uint8_t *rtn_xsk_rx_next(struct rtn_xsk *x, uint32_t *len, int64_t *rx_ts);
/**
 * Keep the peeked frame @p f past rtn_xsk_rx_release(): it stays out of the
 * fill ring, its bytes where they are, until rtn_xsk_rx_give_back(*@p addr).
 * At most a quarter of the receive frames are kept at once, so the kernel
 * always has frames to receive into whoever holds the rest.  0, or -ENOBUFS
 * when that many are kept (the caller copies the frame instead), -EINVAL for
 * a frame not in the outstanding peek.  Same thread as the peek.
 */
int rtn_xsk_rx_keep(struct rtn_xsk *x, const struct rtn_xsk_frame *f, uint64_t *addr);
/** A kept frame back to the fill ring (same thread as the peek). */
void rtn_xsk_rx_give_back(struct rtn_xsk *x, uint64_t addr);
/**
 * The frames past the RX and TX halves (rtn_xsk_opts.lend_frames), each
 * rtn_xsk_frame_size() bytes, *@p n of them; NULL when there are none.  A
 * frame written there and given to a send goes out in place, without the
 * copy into a TX frame.  Its owner must not write it again until the kernel
 * is done with it: rtn_xsk_lent_done() counts those frames, which complete
 * in the order they were sent.
 */
uint8_t *rtn_xsk_lent_area(struct rtn_xsk *x, uint32_t *n);
/** Frames sent in place so far.  Same thread as the sends. */
uint64_t rtn_xsk_lent_sent(const struct rtn_xsk *x);
/** Of those, the frames the kernel is done with (completions reaped first).  Same thread. */
uint64_t rtn_xsk_lent_done(struct rtn_xsk *x);
/**
 * Batch transmissions: with @p on, sends only submit their descriptors and
 * one rtn_xsk_flush() hands them all to the kernel (in copy mode every kick
 * is a system call that transmits synchronously, so one per batch, not per
 * frame).  The transmit stamp is still taken per frame, before the kick.
 */
void rtn_xsk_defer_kick(struct rtn_xsk *x, int on);
void rtn_xsk_flush(struct rtn_xsk *x);

#endif
