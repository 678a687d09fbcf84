/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_wire_inline.h
 * @brief A frame's time on the wire, for the data path: inline so that the
 *        TDMA engine's per-frame pacing pays no call for it, and shared by
 *        the engine, its configuration check and NoMAC's link model
 *        (rtn_wire_time_ns() in rtn_tdma.h is the same for Python).
 */
#ifndef RTN_WIRE_INLINE_H
#define RTN_WIRE_INLINE_H

#include <stdint.h>
#include "rtn_tdma_proto.h"

/* Wire time of a frame of @p len bytes (no FCS) at @p mbps: preamble, FCS, IFG, padding. */
static inline int64_t rtn_wire_ns(uint32_t len, uint32_t mbps)
{
	uint32_t on_wire;

	if (mbps == 0)
		return 0;
	if (len < ETH_ZLEN_RTN)
		len = ETH_ZLEN_RTN;
	on_wire = 8 + len + 4 + 12; /* preamble+SFD, frame, FCS, inter-frame gap */
	return ((int64_t)on_wire * 8 * 1000 + mbps - 1) / mbps;
}

#endif
