/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_priv.h
 * @brief The VNIC as the station sees it (rtn_vnic_pump.c): an object with
 *        its TAP, its pump thread, two frame rings and GSO/GRO buffers, and a
 *        narrow interface.  The RT thread's calls touch only the rings: no
 *        TAP system call, no segmentation or merging.  Its mode (batched or
 *        per-packet) is its own business: every call does what that mode
 *        wants and nothing in the other, so no caller tests it.  Not part of
 *        the API.
 */
#ifndef RTN_VNIC_PRIV_H
#define RTN_VNIC_PRIV_H

#include <stdint.h>

/* UMEM frames the station's first socket lends its VNIC: the ring to the wire (rtn_vnic_wire_priv.h) */
#define RTN_VNIC_TX_FRAMES 1024

struct rtn_vnic;
struct rtn_tdma;
struct rtn_xsk;
struct rtn_xsk_frame;

/* A discipline's queue (struct rtn_disc_ops.queue): < 0 when it refuses the frame. */
typedef int (*rtn_vnic_queue_fn)(void *priv, uint32_t slot, uint32_t prio, const uint8_t *frame,
				 uint32_t len);

void rtn_vnic_destroy(struct rtn_vnic *v);

/* ---- Linux -> wire (RT thread): frames the pump made ready ---- */
/* batched: the next ready frame of at most @p max bytes, sent from the ring once the
 * discipline's own queue is empty (*@p len bytes), or NULL ... */
uint8_t *rtn_vnic_next(struct rtn_vnic *v, uint32_t max, uint32_t *len);
/* ... the same for TDMA's @p slot_id, if that slot carries VNIC frames
 * (struct rtn_tdma_port.tail_peek) ... */
uint8_t *rtn_vnic_tail_peek(struct rtn_vnic *v, const struct rtn_tdma *e, uint32_t slot_id,
			    uint32_t *len);
/* ... and that frame went to the wire (@p sent) or was refused: the next */
void rtn_vnic_taken(struct rtn_vnic *v, uint32_t len, int sent);
/* per-packet: every ready frame to @p queue at once */
void rtn_vnic_take(struct rtn_vnic *v, rtn_vnic_queue_fn queue, void *priv);

/* ---- wire -> Linux (RT thread) ---- */
/*
 * a received tunnel frame @p f, peeked from @p x: 1 when it was queued for the TAP.  It is
 * decapsulated in place and lent to the pump (rtn_xsk_rx_keep), or copied when @p x keeps
 * as many as it may (or is NULL)
 */
int rtn_vnic_rx(struct rtn_vnic *v, struct rtn_xsk *x, struct rtn_xsk_frame *f);
/* before a receive round: the lent frames the pump has written back to their fill rings */
void rtn_vnic_reclaim(struct rtn_vnic *v);
/* a received tunnel frame with a bad RTmac header, counted */
void rtn_vnic_rx_bad(struct rtn_vnic *v);
/* the end of a receive round that queued frames for the TAP: the pump is woken for them
 * when they are worth a wake-up of it */
void rtn_vnic_rx_done(struct rtn_vnic *v);

/* ---- the RT loop's wait ---- */
/* whether received tunnel traffic may wait for a scheduled wake-up */
int rtn_vnic_paced(const struct rtn_vnic *v);
/*
 * whether received tunnel frames wait for the pump's period anyway (batched, under a flow):
 * the pump takes them then, so waking the RT thread early for them moves them into a ring
 * nobody reads before the period ends
 */
int rtn_vnic_rx_deferred(const struct rtn_vnic *v);
/* before the wait: whether frames the pump makes ready should wake the RT thread */
void rtn_vnic_before_wait(struct rtn_vnic *v, int wake_me);
/* RTN_VNIC_* for the statistics (@p v NULL: RTN_VNIC_OFF) */
int rtn_vnic_mode(const struct rtn_vnic *v);

/* ---- for the harnesses (csrc/fuzz/) ---- */
/* back to the state after attach in @p mode on @p slot, @p vnet: the TAP has a vnet header;
 * the pump stopped, the caller is the pump from now on */
int rtn_vnic_reset(struct rtn_vnic *v, int mode, uint32_t slot, int vnet);
/* write everything queued for the TAP now; how many frames were taken */
uint32_t rtn_vnic_write_all(struct rtn_vnic *v);
/* one pump round: received frames to the TAP, the TAP's packets into the ring */
void rtn_vnic_pump_once(struct rtn_vnic *v);

#endif
