// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_stall.c
 * @brief The stall detector (rtn_stall.h), on the RT thread of rtn_rt.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rtn_core.h"
#include "rtn_rt.h"
#include "rtn_recring_inline.h"
#include "rtn_stall.h"
#include "rtn_time_inline.h"

#define RTN_STALL_THREAD_NAME "rtnet-stall" /* rtnet.stall.THREAD_NAME */

struct detector {
	struct rtn_stall *owner;
	struct rtn_rt *rt;
	int cpu;
	uint64_t gaps;	 /* records made */
	uint64_t iters;	 /* of the work unit, calibrated to about work_ns */
	uint64_t sink;	 /* the unit's result, so the compiler keeps it */
	int64_t base_ns; /* the fastest unit so far */
	struct rtn_stall_rec rec[RTN_STALL_RECS];
};

struct rtn_stall {
	struct rtn_stall_opts o;
	int n;
	struct detector d[];
};

void rtn_stall_opts_init(struct rtn_stall_opts *o)
{
	*o = (struct rtn_stall_opts){ .period_ns = RTN_STALL_PERIOD_DEFAULT_NS,
				      .threshold_ns = RTN_STALL_THRESHOLD_DEFAULT_NS,
				      .priority = RTN_RT_PRIO_MAX,
				      .work_ns = RTN_STALL_WORK_DEFAULT_NS,
				      .slow_factor = RTN_STALL_SLOW_FACTOR_DEFAULT };
}

static void record(struct detector *d, int kind, int64_t due, int64_t woke, int64_t work_ns,
		   int64_t queued_ns)
{
	struct rtn_stall_rec *r = &d->rec[d->gaps % RTN_STALL_RECS];

	rtn_recring_begin(&r->no);
	r->cpu = d->cpu;
	r->kind = kind;
	r->due_ns = due;
	r->woke_ns = woke;
	r->work_ns = work_ns;
	r->base_ns = d->base_ns;
	r->queued_ns = queued_ns;
	rtn_recring_commit(&r->no, d->gaps);
	__atomic_store_n(&d->gaps, d->gaps + 1, __ATOMIC_RELEASE);
}

/*
 * The calling thread's time runnable but not running so far, in ns: the
 * second field of /proc/thread-self/schedstat ("exec run_delay slices"),
 * -1 if it cannot be read.
 */
static int64_t run_delay_ns(int fd)
{
	char buf[96], *p, *end;
	long long v;
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strchr(buf, ' ');
	if (!p)
		return -1;
	errno = 0;
	v = strtoll(p + 1, &end, 10);
	return errno || end == p + 1 || v < 0 ? -1 : (int64_t)v;
}

/* A dependent chain of multiply-adds: its time is the CPU's speed, not the memory's. */
static int64_t work_unit(struct detector *d, uint64_t iters)
{
	uint64_t x = d->sink | 1;
	int64_t t0 = rtn_now(), t1;

	while (iters--) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ __volatile__("" : "+r"(x));
	}
	t1 = rtn_now();
	d->sink = x;
	return t1 - t0;
}

/* Size the unit to about work_ns, from the fastest of a few trial runs. */
static void calibrate(struct detector *d, int64_t work_ns)
{
	uint64_t trial = 1000;
	int64_t best = INT64_MAX;
	int i;

	for (i = 0; i < 8; i++) {
		int64_t t = work_unit(d, trial);

		if (t > 0 && t < best)
			best = t;
	}
	if (best == INT64_MAX)
		best = 1;
	d->iters = (uint64_t)((double)trial * (double)work_ns / (double)best);
	if (d->iters < 1)
		d->iters = 1;
	d->base_ns = INT64_MAX;
}

/*
 * As the wake-up probe of rtn_rt.c: every wake-up past the threshold is a
 * gap; then the work unit is timed, and two slow units in a row make a
 * slow record from the first one's wake-up to the end of the second.
 */
static int detect(struct rtn_rt *rt, void *arg)
{
	struct detector *d = arg;
	int64_t period = d->owner->o.period_ns, thr = d->owner->o.threshold_ns;
	int factor = d->owner->o.slow_factor;
	int64_t next, prev_woke = 0, prev_work = 0, delay, prev_delay;
	int prev_slow = 0;
	/* this thread's own file: opened here, in the detector's thread */
	int sched_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);

	/* not the stack's RT thread: a benchmark that counts those by name leaves this out */
	pthread_setname_np(pthread_self(), RTN_STALL_THREAD_NAME);
	if (factor)
		calibrate(d, d->owner->o.work_ns);
	prev_delay = run_delay_ns(sched_fd);
	next = rtn_now() + period;
	while (!rtn_rt_should_stop(rt)) {
		int64_t now = rtn_rt_wait_until(rt, next);

		delay = run_delay_ns(sched_fd);
		if (now - next > thr)
			record(d, RTN_STALL_GAP, next, now, 0,
			       delay >= 0 && prev_delay >= 0 ? delay - prev_delay : -1);
		prev_delay = delay;
		if (factor) {
			int64_t w = work_unit(d, d->iters);
			int slow;

			if (w < d->base_ns)
				d->base_ns = w > 0 ? w : 1;
			slow = w > d->base_ns * factor;
			if (slow && prev_slow)
				record(d, RTN_STALL_SLOW, prev_woke, now + w,
				       w > prev_work ? w : prev_work, -1);
			prev_slow = slow;
			prev_woke = now;
			prev_work = w;
		}
		next += period;
		if (next <= now)
			next += ((now - next) / period + 1) * period;
	}
	if (sched_fd >= 0)
		close(sched_fd);
	return 0;
}

int rtn_stall_start(const struct rtn_stall_opts *o, const int *cpus, int n, struct rtn_stall **out)
{
	struct rtn_stall *st;
	int i, rc;

	rtn_clear_error();
	if (n < 1 || n > RTN_STALL_MAX_CPUS)
		return rtn_set_error(-EINVAL, "stall detector: 1..%d CPUs, not %d",
				     RTN_STALL_MAX_CPUS, n);
	if (o->period_ns < 10000 || o->period_ns > RTN_RT_PERIOD_MAX_NS || o->threshold_ns < 1)
		return rtn_set_error(-EINVAL,
				     "stall detector: period %lld ns (10 us..10 s), "
				     "threshold %lld ns (> 0)",
				     (long long)o->period_ns, (long long)o->threshold_ns);
	if (o->slow_factor < 0 || o->slow_factor == 1 ||
	    o->slow_factor > RTN_STALL_SLOW_FACTOR_MAX ||
	    (o->slow_factor &&
	     (o->work_ns < 100 || o->work_ns > 100000 || o->work_ns * 10 > o->period_ns)))
		return rtn_set_error(-EINVAL,
				     "stall detector: slow factor %d (0 off, 2..%d), work unit "
				     "%lld ns (100 ns..100 us, at most a tenth of the period)",
				     o->slow_factor, RTN_STALL_SLOW_FACTOR_MAX,
				     (long long)o->work_ns);
	st = calloc(1, sizeof(*st) + (size_t)n * sizeof(st->d[0]));
	if (!st)
		return rtn_set_error(-ENOMEM, "stall detector: out of memory");
	st->o = *o;
	for (i = 0; i < n; i++) {
		struct rtn_rt_opts ro;

		rtn_rt_opts_init(&ro);
		ro.cpu = cpus[i];
		ro.priority = o->priority;
		ro.period_ns = o->period_ns;
		ro.allow_fallback = o->allow_fallback;
		ro.hold_dma_latency = 0; /* measure the CPU as the workload finds it */
		st->d[i].owner = st;
		st->d[i].cpu = cpus[i];
		rc = rtn_rt_start(&ro, detect, &st->d[i], &st->d[i].rt);
		if (rc) {
			st->n = i;
			rtn_stall_stop(st);
			return rc; /* rtn_rt_start said why */
		}
		st->n = i + 1;
	}
	*out = st;
	return 0;
}

int rtn_stall_read(const struct rtn_stall *st, int idx, uint64_t first, struct rtn_stall_rec *out,
		   uint32_t n, uint64_t *next)
{
	const struct detector *d;

	if (idx < 0 || idx >= st->n)
		return -EINVAL;
	d = &st->d[idx];
	return (int)rtn_recring_read(d->rec, sizeof(d->rec[0]), RTN_STALL_RECS,
				     __atomic_load_n(&d->gaps, __ATOMIC_ACQUIRE), first, out, n,
				     next);
}

int rtn_stall_hist(const struct rtn_stall *st, int idx, uint64_t *wakeups, struct rtn_hist *out)
{
	struct rtn_rt_stats s;

	if (idx < 0 || idx >= st->n)
		return -EINVAL;
	rtn_rt_read_stats(st->d[idx].rt, &s);
	*wakeups = s.wakeups;
	*out = s.hist;
	return 0;
}

void rtn_stall_stop(struct rtn_stall *st)
{
	int i;

	if (!st)
		return;
	for (i = 0; i < st->n; i++)
		rtn_rt_stop(st->d[i].rt, NULL);
	free(st);
}
