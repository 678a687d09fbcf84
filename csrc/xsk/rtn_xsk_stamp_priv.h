/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xsk_stamp_priv.h
 * @brief Where xdp_rtnet.bpf.c puts a received frame's stamp, shared by the
 *        program and the socket that cuts it off again (rtn_xsk.c).  Plain
 *        C, no user-space headers: the BPF build includes it too.
 *
 * The loader sets the program's rtn_stamp_rx to the first mode the kernel
 * takes: the metadata area in front of the frame (bpf_xdp_adjust_meta), the
 * frame's own headroom (bpf_xdp_adjust_head: the stamp becomes the first 16
 * bytes of every frame the program steers, so none arrives without one and a
 * frame's own bytes can never pass for it), or none (the poll time).
 */
#ifndef RTN_XSK_STAMP_PRIV_H
#define RTN_XSK_STAMP_PRIV_H

#define RTN_XSK_STAMP_NONE 0
#define RTN_XSK_STAMP_META 1
#define RTN_XSK_STAMP_HEAD 2

/* in front of the frame: this magic, then the CLOCK_MONOTONIC stamp (ns) */
struct rtn_rx_stamp {
	unsigned long long magic;
	unsigned long long rx_ns;
};
#define RTN_RX_STAMP_MAGIC 0x52544e5852584d31ULL /* "RTNXRXM1" */

/* The bytes a received descriptor holds in front of its frame in stamp mode @p mode. */
static inline unsigned int rtn_rx_stamp_in_frame(int mode)
{
	return mode == RTN_XSK_STAMP_HEAD ? sizeof(struct rtn_rx_stamp) : 0;
}

#endif
