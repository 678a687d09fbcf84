/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xsk_priv.h
 * @brief The rings of an open AF_XDP socket, for code that drives them
 *        itself (rtn_flood.c).  Not part of the API.
 *
 * The UMEM layout is rtn_xsk.c's: frames [0, frames/2) belong to the fill
 * ring and the RX ring, frames [frames/2, frames) to TX.  Whoever takes the
 * rings over must not mix that with the rtn_xsk_send/recv functions.
 */
#ifndef RTN_XSK_PRIV_H
#define RTN_XSK_PRIV_H

#include <stdint.h>
#include <xdp/xsk.h>
#include "rtn_xsk.h"

struct rtn_xsk_rings {
	struct xsk_ring_prod *fill, *tx;
	struct xsk_ring_cons *comp, *rx;
	uint8_t *area;
	uint64_t area_size;
	uint32_t frame_size, frames;
	int fd, copy_mode;
};

/* 0, or -EBADF when the socket is closed. */
int rtn_xsk_rings(struct rtn_xsk *x, struct rtn_xsk_rings *out);

#endif
