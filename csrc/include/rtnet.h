/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtnet.h
 * @brief RTnet's socket ioctls for programs run under rtnet-run, with the
 *        numbers and meanings of RTnet's own rtnet.h, so that RTnet's
 *        POSIX examples compile unchanged with plain gcc against it
 *        (gcc -I$(rtnet-run --include-dir) prog.c).
 *
 * The ioctls take a pointer to their argument and are answered by
 * librtnet_preload.so on a socket it runs on the real-time path (and on a
 * UDP socket it has not judged yet, which keeps them for when it does):
 * - RTNET_RTIOC_XMITPARAMS: SOCK_XMIT_PARAMS(priority, channel); the
 *   priority is the slot priority (0 highest .. 31), the channel the TDMA
 *   slot the socket sends in.
 * - RTNET_RTIOC_TIMEOUT: receive timeout in ns; 0 blocks
 *   (RTDM_TIMEOUT_INFINITE), a negative value does not wait
 *   (RTDM_TIMEOUT_NONE).
 * - RTNET_RTIOC_EXTPOOL / RTNET_RTIOC_SHRPOOL: grow or shrink the socket's
 *   buffer pool (16 buffers to start with, as RTnet's) by n; they return
 *   the number added or removed.  The pool is the channel's ring of
 *   messages: before the socket goes real-time the count sizes the ring,
 *   after it the ring's depth (256 by default) holds what fits.
 */
#ifndef RTNET_H
#define RTNET_H

/* what RTnet's rtnet.h brings in through RTDM's header, which its examples rely on */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/types.h>

typedef int64_t nanosecs_rel_t;
typedef uint64_t nanosecs_abs_t;

#define RTDM_TIMEOUT_INFINITE 0
#define RTDM_TIMEOUT_NONE     (-1)

/* RTDM device classes */
#define RTDM_CLASS_NETWORK 4
#define RTDM_CLASS_RTMAC   5
#define RTIOC_TYPE_NETWORK RTDM_CLASS_NETWORK

#define RTNET_RTIOC_XMITPARAMS _IOW(RTIOC_TYPE_NETWORK, 0x10, unsigned int)
#define RTNET_RTIOC_PRIORITY   RTNET_RTIOC_XMITPARAMS /* legacy name */
#define RTNET_RTIOC_TIMEOUT    _IOW(RTIOC_TYPE_NETWORK, 0x11, int64_t)
/* 0x12 RTNET_RTIOC_CALLBACK is kernel-only; 0x13 RTNET_RTIOC_NONBLOCK was removed */
#define RTNET_RTIOC_EXTPOOL _IOW(RTIOC_TYPE_NETWORK, 0x14, unsigned int)
#define RTNET_RTIOC_SHRPOOL _IOW(RTIOC_TYPE_NETWORK, 0x15, unsigned int)

/* priorities: 0 highest .. 31 lowest */
#define SOCK_MAX_PRIO 0
#define SOCK_DEF_PRIO 15
#define SOCK_MIN_PRIO (SOCK_MAX_PRIO + 30)
#define SOCK_NRT_PRIO (SOCK_MAX_PRIO + 31)

/* channels: the TDMA slot a socket sends in */
#define SOCK_DEF_RT_CHANNEL  0
#define SOCK_DEF_NRT_CHANNEL 1
#define SOCK_USER_CHANNEL    2

#define SOCK_XMIT_PARAMS(priority, channel) ((priority) | ((channel) << 16))

#endif
