/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_probe_priv.h
 * @brief Benchmark traffic of the station itself (rtn_probe.c): the slot
 *        probe, the rate generator and the probe receiver, one object behind
 *        the station's s->probe.  Not part of the API.
 */
#ifndef RTN_PROBE_PRIV_H
#define RTN_PROBE_PRIV_H

#include <stdint.h>

struct rtn_station;
struct rtn_tdma;
struct frame_sink;

int rtn_probe_create(struct rtn_station *s);
void rtn_probe_destroy(struct rtn_station *s);
/* for the harnesses (csrc/fuzz/): no probe, no generator, the receiver on @p rx_type, zeroed */
void rtn_probe_reset(struct rtn_station *s, uint16_t rx_type);
/* TDMA, before @p slot_id opens: the probe frame of this occurrence if it is the probe's slot */
void rtn_probe_refill(struct rtn_station *s, struct rtn_tdma *e, uint32_t slot_id, int64_t now);
/* NoMAC: the rate generator's frames due up to @p horizon into @p q; when the next is due */
int64_t rtn_probe_generate(struct rtn_station *s, const struct frame_sink *q, int64_t now,
			   int64_t horizon);
/* a received frame of the probe receiver's EtherType is counted (1), else 0 */
int rtn_probe_rx_take(struct rtn_station *s, uint16_t type, const uint8_t *frame, uint32_t len,
		      int64_t rx_global);

#endif
