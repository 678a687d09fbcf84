/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_proto_inline.h
 * @brief Big-endian field access for frames (rtn_tdma_proto.h), inline for
 *        the real-time path: encoders, decoders and the last-moment stamp.
 */
#ifndef RTN_TDMA_PROTO_INLINE_H
#define RTN_TDMA_PROTO_INLINE_H

#include <stdint.h>
#include "rtn_tdma_proto.h"

static inline void rtn_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void rtn_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void rtn_put_be64(uint8_t *p, uint64_t v)
{
	rtn_put_be32(p, v >> 32);
	rtn_put_be32(p + 4, v);
}

static inline uint16_t rtn_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rtn_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rtn_get_be64(const uint8_t *p)
{
	return (uint64_t)rtn_get_be32(p) << 32 | rtn_get_be32(p + 4);
}

/**
 * Stamp an encoded frame at the last moment before it is posted to the TX
 * ring, as RTnet drivers do with rtskb->xmit_stamp.
 * @param frame	frame built by an rtn_tdma_encode_*() function
 * @param off	the xmit offset that encoder returned
 * @param ns	time to write (global for Sync, local for calibration)
 */
static inline void rtn_tdma_stamp(uint8_t *frame, uint32_t off, uint64_t ns)
{
	rtn_put_be64(frame + off, ns);
}

#endif
