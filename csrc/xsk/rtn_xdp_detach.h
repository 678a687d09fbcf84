/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xdp_detach.h
 * @brief Remove an XDP program left on a device by a station that died
 *        without closing (the daemon's crash recovery).
 */
#ifndef RTN_XDP_DETACH_H
#define RTN_XDP_DETACH_H

/**
 * Detach whatever XDP program is attached to @ifname, in driver and in SKB
 * mode, in the calling thread's network namespace.
 * Returns the number of programs removed (0, 1 or 2) or a negative errno.
 */
int rtn_xdp_detach(const char *ifname);

/** Number of XDP programs attached to @ifname (driver + SKB), or a negative errno. */
int rtn_xdp_attached(const char *ifname);

#endif
