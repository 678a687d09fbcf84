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

struct rtn_station;

int rtn_nomac_create(struct rtn_station *s);
void rtn_nomac_destroy(struct rtn_station *s);

#endif
