// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_wire.c
 * @brief rtn_wire_time_ns() (rtn_tdma.h) for callers outside the data path.
 *        Apart from the TDMA engine, so that the engine and its
 *        configuration check (rtn_tdma_cfg.c), which both need it, do not
 *        call each other.
 */
#include "rtn_tdma.h"
#include "rtn_wire_inline.h"

int64_t rtn_wire_time_ns(uint32_t len, uint32_t mbps)
{
	return rtn_wire_ns(len, mbps);
}
