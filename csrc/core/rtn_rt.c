/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_rt.c
 * @brief The real-time thread: settings applied at thread start, a
 *        start/ready handshake, the built-in periodic loop and its stats.
 *
 * The scheduling primitives (set SCHED_FIFO, sleep until an absolute time)
 * come from rt_sched_posix.h; everything else here is backend-neutral.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rtn_core.h"
#include "rtn_hist_inline.h"
#include "rtn_rt.h"
#include "rt_sched_posix.h"

#define RT_THREAD_NAME	  "rtnet-rt"
#define RT_STACK_HEADROOM (256 * 1024) /* above the prefaulted part */
#define RT_PAGE		  4096

struct rtn_rt {
	struct rtn_rt_opts opts;
	rtn_rt_body_fn body;
	void *arg;
	pthread_t thread;
	int dma_fd;  /* /dev/cpu_dma_latency, -1 if not held */
	sem_t ready; /* thread -> rtn_rt_start: settings applied */

	/* Written by the thread before it posts @ready, read-only afterwards. */
	int policy;
	int priority;
	int tid;
	int fallback;
	int memory_locked;
	uint64_t setup_faults; /* page faults taken at SCHED_FIFO before the body */
	int setup_err;
	char setup_msg[256];

	/* Written by the thread while it runs; read with atomics. */
	int stop;
	int running;
	int body_rc;
	uint64_t wakeups;
	uint64_t missed;
	struct rtn_hist hist;
};

/*
 * mlockall() is process-wide while RT threads come and go: the last thread
 * that locked memory unlocks it, so a Python process does not stay locked
 * (and, under RLIMIT_MEMLOCK, fail later mmaps) after its RT work is done.
 * Control path only; the RT loop never takes this lock.
 */
static pthread_mutex_t memlock_mutex = PTHREAD_MUTEX_INITIALIZER;
static int memlock_users;

static int memlock_get(void)
{
	int err = 0;

	pthread_mutex_lock(&memlock_mutex);
	if (memlock_users == 0 && mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
		err = -errno;
	}
	if (!err) {
		memlock_users++;
	}
	pthread_mutex_unlock(&memlock_mutex);
	return err;
}

static void memlock_put(void)
{
	pthread_mutex_lock(&memlock_mutex);
	if (--memlock_users == 0) {
		munlockall();
	}
	pthread_mutex_unlock(&memlock_mutex);
}

void rtn_rt_opts_init(struct rtn_rt_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cpu = -1;
	o->priority = 90;
	o->period_ns = 1000000;
	o->hold_dma_latency = 1;
	o->prefault_stack_kb = RTN_RT_PREFAULT_DEFAULT_KB;
}

/* "0-1,3" for the error message that names the allowed CPUs. */
static void format_cpuset(const cpu_set_t *set, char *buf, size_t len)
{
	size_t pos = 0;
	int cpu, first;

	buf[0] = '\0';
	for (cpu = 0; cpu < CPU_SETSIZE && pos < len; cpu++) {
		if (!CPU_ISSET(cpu, set)) {
			continue;
		}
		first = cpu;
		while (cpu + 1 < CPU_SETSIZE && CPU_ISSET(cpu + 1, set)) {
			cpu++;
		}
		if (first == cpu) {
			pos += snprintf(buf + pos, len - pos, "%s%d", pos ? "," : "", cpu);
		} else {
			pos += snprintf(buf + pos, len - pos, "%s%d-%d", pos ? "," : "", first,
					cpu);
		}
	}
}

static int cpu_is_offline(int cpu)
{
	char path[64], c = '1';
	int fd;

	/* cpu0 usually has no "online" file: it cannot be taken offline. */
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	if (read(fd, &c, 1) != 1) {
		c = '1';
	}
	close(fd);
	return c == '0';
}

static int validate_cpu(int cpu)
{
	char allowed[256];
	cpu_set_t set;

	if (cpu == -1) {
		return 0;
	}
	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		return rtn_set_error(-errno, "cannot read the CPU affinity mask: %s",
				     strerror(errno));
	}
	format_cpuset(&set, allowed, sizeof(allowed));
	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)) {
		return rtn_set_error(-EINVAL, "CPU %d is not available: allowed CPUs are %s", cpu,
				     allowed);
	}
	if (cpu_is_offline(cpu)) {
		return rtn_set_error(-EINVAL, "CPU %d is offline: allowed CPUs are %s", cpu,
				     allowed);
	}
	return 0;
}

static int validate_opts(const struct rtn_rt_opts *o)
{
	if (o->priority < RTN_RT_PRIO_MIN || o->priority > RTN_RT_PRIO_MAX) {
		return rtn_set_error(-EINVAL, "priority %d out of range %d..%d", o->priority,
				     RTN_RT_PRIO_MIN, RTN_RT_PRIO_MAX);
	}
	if (o->period_ns <= 0 || o->period_ns > RTN_RT_PERIOD_MAX_NS) {
		return rtn_set_error(-EINVAL, "period %lld ns out of range 1..%lld ns",
				     (long long)o->period_ns, RTN_RT_PERIOD_MAX_NS);
	}
	if (o->prefault_stack_kb > RTN_RT_PREFAULT_MAX_KB) {
		return rtn_set_error(-EINVAL, "prefault_stack_kb %u above maximum %d",
				     o->prefault_stack_kb, RTN_RT_PREFAULT_MAX_KB);
	}
	return validate_cpu(o->cpu);
}

/* Touch the stack the loop will use so its first page faults happen now. */
static __attribute__((noinline)) void prefault_stack(size_t bytes)
{
	volatile unsigned char *buf = __builtin_alloca(bytes);
	size_t i;

	for (i = 0; i < bytes; i += RT_PAGE) {
		buf[i] = 0;
	}
}

static int setup_fail(struct rtn_rt *rt, int err, const char *what)
{
	snprintf(rt->setup_msg, sizeof(rt->setup_msg), "%s: %s%s", what, strerror(-err),
		 rt->opts.allow_fallback ? "" : " (run as root or set allow_fallback)");
	return err;
}

/* Page faults this thread has taken so far, minor and major. */
static uint64_t thread_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) != 0) {
		return 0;
	}
	return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

/*
 * Order matters: pin first so the thread's memory work happens on its CPU,
 * then lock memory and prefault the stack so the loop starts without page
 * faults, and only then become SCHED_FIFO.  mlockall() faults in every page
 * of the process (tens of milliseconds for a Python process): done at
 * SCHED_FIFO it would keep every RT thread of lower or equal priority on
 * that CPU, of this process or another, off it for that long.
 */
static int apply_settings(struct rtn_rt *rt)
{
	const struct rtn_rt_opts *o = &rt->opts;
	uint64_t faults;
	char what[64];
	int err;

	rt->tid = (int)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), RT_THREAD_NAME);

	if (o->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o->cpu, &set);
		err = -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		if (err) {
			snprintf(rt->setup_msg, sizeof(rt->setup_msg),
				 "cannot pin the RT thread to CPU %d: %s", o->cpu, strerror(-err));
			return err;
		}
	}

	err = memlock_get();
	if (err && !o->allow_fallback) {
		/* Without privileges both are refused: name SCHED_FIFO, the one that
		 * matters (the thread ends here, so a FIFO granted now harms none). */
		int fifo = rt_sched_set_fifo(o->priority);

		if (fifo) {
			snprintf(what, sizeof(what), "SCHED_FIFO priority %d refused", o->priority);
			return setup_fail(rt, fifo, what);
		}
		return setup_fail(rt, err, "mlockall(MCL_CURRENT|MCL_FUTURE) failed");
	}
	rt->memory_locked = err == 0;

	prefault_stack((size_t)o->prefault_stack_kb * 1024);

	faults = thread_faults();
	err = rt_sched_set_fifo(o->priority);
	if (err && !o->allow_fallback) {
		snprintf(what, sizeof(what), "SCHED_FIFO priority %d refused", o->priority);
		err = setup_fail(rt, err, what);
		goto unlock;
	}
	rt->fallback = err != 0;
	rt->policy = rt_sched_get_policy(&rt->priority) == SCHED_FIFO ? RTN_RT_POLICY_FIFO :
									RTN_RT_POLICY_OTHER;

	/* SCHED_OTHER threads get 50 us of timer slack by default: that is
	 * most of the latency budget, so ask for the minimum. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) != 0) {
		err = setup_fail(rt, -errno, "PR_SET_TIMERSLACK failed");
		goto unlock;
	}
	rt->setup_faults = thread_faults() - faults;
	return 0;

unlock:
	if (rt->memory_locked) {
		memlock_put();
	}
	return err;
}

int64_t rtn_rt_wait_until(struct rtn_rt *rt, int64_t deadline_ns)
{
	rtn_ns_t now;

	rt_sched_sleep_until(deadline_ns);
	now = rt_sched_now();
	rtn_hist_add(&rt->hist, now - deadline_ns);
	__atomic_store_n(&rt->wakeups, rt->wakeups + 1, __ATOMIC_RELEASE);
	return now;
}

int rtn_rt_should_stop(const struct rtn_rt *rt)
{
	return __atomic_load_n(&rt->stop, __ATOMIC_ACQUIRE);
}

/*
 * The wake-up probe, cyclictest's clock_nanosleep loop: absolute deadlines
 * that advance by exactly one period.  After a stall longer than a period
 * the missed deadlines are skipped and counted rather than fired back to
 * back, which would record a burst of fake latencies.
 */
static int periodic_loop(struct rtn_rt *rt)
{
	const rtn_ns_t period = rt->opts.period_ns;
	rtn_ns_t next = rt_sched_now() + period;
	rtn_ns_t now, skip;

	while (!rtn_rt_should_stop(rt)) {
		now = rtn_rt_wait_until(rt, next);
		next += period;
		if (next <= now) {
			skip = (now - next) / period + 1;
			next += skip * period;
			__atomic_store_n(&rt->missed, rt->missed + skip, __ATOMIC_RELAXED);
		}
	}
	return 0;
}

static void *rt_main(void *p)
{
	struct rtn_rt *rt = p;
	int rc;

	rt->setup_err = apply_settings(rt);
	if (rt->setup_err) {
		/* rtn_rt_start() owns @rt from here on: do not touch it again. */
		sem_post(&rt->ready);
		return NULL;
	}
	__atomic_store_n(&rt->running, 1, __ATOMIC_RELEASE);
	sem_post(&rt->ready);

	rc = rt->body ? rt->body(rt, rt->arg) : periodic_loop(rt);

	__atomic_store_n(&rt->body_rc, rc, __ATOMIC_RELAXED);
	__atomic_store_n(&rt->running, 0, __ATOMIC_RELEASE);
	return NULL;
}

static int dma_latency_hold(void)
{
	int32_t zero = 0;
	int fd;

	/* The request stays in force only while the file is open. */
	fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	if (write(fd, &zero, sizeof(zero)) != sizeof(zero)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void rt_free(struct rtn_rt *rt)
{
	if (rt->dma_fd >= 0) {
		close(rt->dma_fd);
	}
	sem_destroy(&rt->ready);
	free(rt);
}

int rtn_rt_start(const struct rtn_rt_opts *o, rtn_rt_body_fn body, void *arg, struct rtn_rt **out)
{
	pthread_attr_t attr;
	struct rtn_rt *rt;
	size_t stack;
	int err;

	rtn_clear_error();
	if (!o || !out) {
		return rtn_set_error(-EINVAL, "rtn_rt_start: NULL options or result");
	}
	*out = NULL;
	err = validate_opts(o);
	if (err) {
		return err;
	}

	rt = calloc(1, sizeof(*rt));
	if (!rt) {
		return rtn_set_error(-ENOMEM, "cannot allocate the RT thread state");
	}
	rt->opts = *o;
	if (rt->opts.prefault_stack_kb == 0) {
		rt->opts.prefault_stack_kb = RTN_RT_PREFAULT_DEFAULT_KB;
	}
	rt->body = body;
	rt->arg = arg;
	rtn_hist_init(&rt->hist, 0);
	rt->dma_fd = o->hold_dma_latency ? dma_latency_hold() : -1;
	sem_init(&rt->ready, 0, 0);

	/* A stack sized for the prefault plus headroom, rather than the 8 MB
	 * default that mlockall() would pin in RAM for every RT thread. */
	stack = (size_t)rt->opts.prefault_stack_kb * 1024 + RT_STACK_HEADROOM;
	pthread_attr_init(&attr);
	err = -pthread_attr_setstacksize(&attr, stack);
	if (!err) {
		err = -pthread_create(&rt->thread, &attr, rt_main, rt);
	}
	pthread_attr_destroy(&attr);
	if (err) {
		rt_free(rt);
		return rtn_set_error(err, "cannot create the RT thread: %s", strerror(-err));
	}

	while (sem_wait(&rt->ready) != 0 && errno == EINTR) {
		;
	}
	if (rt->setup_err) {
		pthread_join(rt->thread, NULL);
		err = rtn_set_error(rt->setup_err, "%s", rt->setup_msg);
		rt_free(rt);
		return err;
	}
	*out = rt;
	return 0;
}

void rtn_rt_read_stats(const struct rtn_rt *rt, struct rtn_rt_stats *out)
{
	out->policy = rt->policy;
	out->priority = rt->priority;
	out->cpu = rt->opts.cpu;
	out->tid = rt->tid;
	out->period_ns = rt->opts.period_ns;
	out->fallback = rt->fallback;
	out->dma_latency_held = rt->dma_fd >= 0;
	out->memory_locked = rt->memory_locked;
	out->setup_faults = rt->setup_faults;
	out->running = __atomic_load_n(&rt->running, __ATOMIC_ACQUIRE);
	out->body_rc = __atomic_load_n(&rt->body_rc, __ATOMIC_RELAXED);
	out->missed = __atomic_load_n(&rt->missed, __ATOMIC_RELAXED);
	out->wakeups = __atomic_load_n(&rt->wakeups, __ATOMIC_ACQUIRE);
	rtn_hist_read(&rt->hist, &out->hist);
}

const struct rtn_hist *rtn_rt_hist(const struct rtn_rt *rt)
{
	return &rt->hist;
}

int rtn_rt_stop(struct rtn_rt *rt, struct rtn_rt_stats *final)
{
	int rc;

	rtn_clear_error();
	if (!rt) {
		return 0;
	}
	__atomic_store_n(&rt->stop, 1, __ATOMIC_RELEASE);
	pthread_join(rt->thread, NULL);
	if (final) {
		rtn_rt_read_stats(rt, final);
	}
	rc = rt->body_rc;
	if (rt->memory_locked) {
		memlock_put();
	}
	rt_free(rt);
	return rc;
}
