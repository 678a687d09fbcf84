/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_nomac_priv.h
 * @brief The NoMAC discipline (rtn_nomac.c): its FIFO and its model of the
 *        wire, one object behind the station's s->nomac, reached through
 *        rtn_disc_nomac_ops with that object as the private pointer.  Not
 *        part of the API.
 */
#ifndef RTN_NOMAC_PRIV_H
#define RTN_NOMAC_PRIV_H

#include <stdint.h>

struct rtn_station;
struct rtn_nomac;
struct chan;
struct rtn_msg;

int rtn_nomac_create(struct rtn_station *s);
void rtn_nomac_destroy(struct rtn_station *s);

/* For the harnesses (csrc/fuzz/), which drive the discipline step by step: */
/* the channel drain's take (rtn_chans_drain) that queues a message in the FIFO */
int rtn_nomac_take(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		   uint32_t len, void *nomac);
/* send what is due of the FIFO; when to look again (local) */
int64_t rtn_nomac_flush(struct rtn_nomac *n, int64_t now_local);
/* an empty FIFO and an idle wire, as after rtn_nomac_create() */
void rtn_nomac_reset(struct rtn_station *s);

#endif
