/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_priv.h
 * @brief The VNIC as the station sees it (rtn_vnic_pump.c): an object with
 *        its TAP, rings, helper threads and GSO/GRO buffers, and a narrow
 *        interface.  Its mode (batched or per-packet) is its own business:
 *        every call does what that mode wants and nothing in the other, so
 *        no caller tests it.  Not part of the API.
 */
#ifndef RTN_VNIC_PRIV_H
#define RTN_VNIC_PRIV_H

#include <stdint.h>

struct rtn_vnic;
struct rtn_tdma;
struct frame_sink;

/* A discipline's queue (struct rtn_disc_ops.queue): < 0 when it refuses the frame. */
typedef int (*rtn_vnic_queue_fn)(void *priv, uint32_t slot, uint32_t prio, const uint8_t *frame,
				 uint32_t len);

void rtn_vnic_destroy(struct rtn_vnic *v);

/* ---- Linux -> wire (RT thread) ---- */
/* TDMA, before @p slot_id opens: the TAP's frames into it within the occurrence's budget */
void rtn_vnic_refill(struct rtn_vnic *v, struct rtn_tdma *e, uint32_t slot_id, int64_t now,
		     uint32_t link_rate_mbps);
/* the TAP's frames into @p q while it has room */
void rtn_vnic_fill(struct rtn_vnic *v, const struct frame_sink *q);
/* what a helper thread read from the TAP since, to @p queue */
void rtn_vnic_take(struct rtn_vnic *v, rtn_vnic_queue_fn queue, void *priv);

/* ---- wire -> Linux (RT thread) ---- */
/* a received tunnel frame: 1 when it was queued for the TAP */
int rtn_vnic_rx(struct rtn_vnic *v, const uint8_t *frame, uint32_t len);
/* a received tunnel frame with a bad RTmac header, counted */
void rtn_vnic_rx_bad(struct rtn_vnic *v);
/* the end of a receive round that queued frames for the TAP */
void rtn_vnic_rx_done(struct rtn_vnic *v);
/* write what was received to the TAP, as long as @p deadline (local) leaves time */
void rtn_vnic_flush(struct rtn_vnic *v, int64_t deadline);
/* whether the last flush ran past its deadline (and forget it) */
int rtn_vnic_overran(struct rtn_vnic *v);

/* ---- the RT loop's wait ---- */
/* whether received tunnel traffic may wait for a scheduled wake-up */
int rtn_vnic_paced(const struct rtn_vnic *v);
/* the TAP descriptor the RT thread polls itself, -1 none */
int rtn_vnic_watch_fd(const struct rtn_vnic *v);
/* the station's eventfd woke the RT thread; the TAP's poll events */
void rtn_vnic_kicked(struct rtn_vnic *v);
void rtn_vnic_tap_events(struct rtn_vnic *v, short revents);
/* RTN_VNIC_* for the statistics (@p v NULL: RTN_VNIC_OFF) */
int rtn_vnic_mode(const struct rtn_vnic *v);

/* ---- for the harnesses (csrc/fuzz/) ---- */
/* back to the state after attach in @p mode on @p slot, @p vnet: the TAP has a vnet header */
int rtn_vnic_reset(struct rtn_vnic *v, int mode, uint32_t slot, int vnet);
/* write everything queued for the TAP now; how many frames were taken */
uint32_t rtn_vnic_write_all(struct rtn_vnic *v);

#endif
