/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_time_inline.h
 * @brief One time type: signed 64-bit nanoseconds on CLOCK_MONOTONIC.
 *
 * Every station in the lab shares the host's CLOCK_MONOTONIC, which is what
 * makes receive timestamps of one station comparable with the schedule of
 * another.  Wakeups are absolute: the next deadline is always the previous
 * deadline plus the period, never "now + period".
 */
#ifndef RTN_TIME_INLINE_H
#define RTN_TIME_INLINE_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

typedef int64_t rtn_ns_t;

#define RTN_NS_PER_US  1000LL
#define RTN_NS_PER_SEC 1000000000LL
#define RTN_CLOCK      CLOCK_MONOTONIC

static inline rtn_ns_t rtn_ts_to_ns(const struct timespec *ts)
{
	return (rtn_ns_t)ts->tv_sec * RTN_NS_PER_SEC + ts->tv_nsec;
}

static inline struct timespec rtn_ns_to_ts(rtn_ns_t ns)
{
	struct timespec ts = { .tv_sec = ns / RTN_NS_PER_SEC, .tv_nsec = ns % RTN_NS_PER_SEC };
	return ts;
}

#ifdef RTN_CLOCK_PORT
/*
 * The clock port of the harnesses (csrc/fuzz/, csrc/bench/): an object built
 * with -DRTN_CLOCK_PORT=name reads the time from the int64_t variable the
 * harness defines under that name and moves itself, so that an input runs
 * the same way again.  Production builds never define it.
 */
extern int64_t RTN_CLOCK_PORT;

static inline rtn_ns_t rtn_now(void)
{
	return RTN_CLOCK_PORT;
}
#else
static inline rtn_ns_t rtn_now(void)
{
	struct timespec ts;

	clock_gettime(RTN_CLOCK, &ts);
	return rtn_ts_to_ns(&ts);
}
#endif

/*
 * Saturating arithmetic for times that come from the wire or from memory
 * another process can write: the result is clamped to the int64_t range
 * instead of overflowing (undefined behaviour in C).
 */
static inline int64_t rtn_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline int64_t rtn_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/** |a - b| without overflow, as an unsigned distance. */
static inline uint64_t rtn_dist(int64_t a, int64_t b)
{
	return a >= b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/* Spin-loop hint: lets a hyperthread sibling (or the hypervisor) run meanwhile. */
static inline void rtn_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/** Sleep until the absolute time @p deadline on RTN_CLOCK (EINTR-safe). */
static inline void rtn_sleep_until(rtn_ns_t deadline)
{
	struct timespec ts = rtn_ns_to_ts(deadline < 0 ? 0 : deadline);

	/* retry only on a signal: any other error would make this a spin */
	while (clock_nanosleep(RTN_CLOCK, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

#endif
