/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_inline_priv.h
 * @brief The station's small helpers of the data path, inline: its clock
 *        model, eventfds, futex wake-ups and the kick of its sockets.
 *        Included by rtn_station_priv.h after struct rtn_station.  Not part
 *        of the API.
 */
#ifndef RTN_STATION_INLINE_PRIV_H
#define RTN_STATION_INLINE_PRIV_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "rtn_time_inline.h"
#include "rtn_xsk.h"

/* ---- clock model -------------------------------------------------------- */

/*
 * The lab's simulated clock: local = os + offset + drift * (os - t0).  Both
 * directions saturate: a local time can be anything the engine computed from
 * a frame (INT64_MAX for "nothing to do"), and a double beyond the int64_t
 * range would be undefined behaviour when converted.
 */
static inline int64_t clamp_ns(double v)
{
	if (!(v > -9.2e18)) /* also NaN */
		return v != v ? 0 : INT64_MIN;
	if (v >= 9.2e18)
		return INT64_MAX;
	return (int64_t)v;
}

static inline int64_t local_of(const struct rtn_station *s, int64_t os)
{
	return rtn_sat_add(rtn_sat_add(os, s->o.clock_offset_ns),
			   clamp_ns((double)rtn_sat_sub(os, s->t0) * s->o.drift_ppm * 1e-6));
}

static inline int64_t os_of(const struct rtn_station *s, int64_t local)
{
	double since = (double)rtn_sat_sub(rtn_sat_sub(local, s->t0), s->o.clock_offset_ns);

	return rtn_sat_add(s->t0, clamp_ns(since / (1.0 + s->o.drift_ppm * 1e-6)));
}

/* ---- eventfds and futexes ------------------------------------------------ */

static inline void efd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0) {
		/* counter saturated: the reader is awake anyway */
	}
}

static inline void efd_drain(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
}

static inline void futex_wake(uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

/* Hand what the sockets queued to the kernel: one kick per port and wake-up. */
static inline void station_flush(struct rtn_station *s)
{
	rtn_xsk_flush(s->xsk);
	if (s->xsk_b)
		rtn_xsk_flush(s->xsk_b);
	s->unkicked = 0;
}

#endif
