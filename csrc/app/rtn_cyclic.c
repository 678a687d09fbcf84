// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_cyclic.c
 * @brief Cyclic task helper: cycle-anchored deadlines on an rtn_rt thread,
 *        or the naive relative-sleep loop of a standard application.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "rtn_chan.h"
#include "rtn_core.h"
#include "rtn_cyclic.h"
#include "rtn_hist_inline.h"
#include "rtn_time_inline.h"

#define FIRST_CYCLE_TIMEOUT_NS (2 * RTN_NS_PER_SEC)
#define POLL_SLICE_NS	       (10 * 1000 * 1000LL) /* re-check stop while waiting */

/*
 * A run's need, kept until the station took the message it handed over:
 * what the lead must cover is the hand-over's lateness against the
 * station's pick-up, not against the slot's nominal start.  When the RT
 * thread itself ran late for the slot (a vCPU that slows down or stalls
 * delays both threads), a late hand-over still made it.
 */
struct pending_need {
	int armed;
	uint32_t pos;		 /* TX ring position of the run's last message */
	int64_t need_ns;	 /* scheduled wake-up to the end of the run */
	int64_t handover_global; /* the hand-over deadline, global time */
};

struct rtn_cyclic {
	struct rtn_app_chan *ch;
	struct rtn_cyclic_opts o;
	rtn_cyclic_fn fn;
	void *arg;
	struct rtn_rt *rt; /* real-time mode */
	pthread_t thread;  /* standard mode */
	int thread_on;
	uint32_t stop; /* standard mode stop request */
	uint32_t done; /* futex: the loop has returned */
	int rc;
	uint64_t runs;
	uint64_t missed;
	int64_t interval_ns;
	struct rtn_lead lead;	     /* handover mode: the lead, written by the task's thread */
	struct pending_need pending; /* handover mode: the last run's need, until its pick-up */
	struct rtn_hist hist;
};

/* What rtn_cyclic_deadline() reports on the task's thread. */
static __thread int64_t tls_deadline;
static __thread int64_t tls_global_shift;

void rtn_cyclic_opts_init(struct rtn_cyclic_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = RTN_CYCLIC_MODE_RT;
	o->handover_ns = -1;
	rtn_rt_opts_init(&o->rt);
}

int64_t rtn_cyclic_deadline(void)
{
	return tls_deadline;
}

int64_t rtn_cyclic_deadline_global(void)
{
	return tls_deadline + tls_global_shift;
}

static int stopping(const struct rtn_cyclic *c)
{
	if (c->rt)
		return rtn_rt_should_stop(c->rt);
	return __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE);
}

/* Wait for the first published cycle, checking for a stop request meanwhile. */
static int first_cycle(struct rtn_cyclic *c, struct rtn_app_waitinfo *wi)
{
	int64_t limit = c->o.first_cycle_timeout_ns ? c->o.first_cycle_timeout_ns :
						      FIRST_CYCLE_TIMEOUT_NS;
	int64_t deadline = rtn_now() + limit;

	while (rtn_app_cycle_info(c->ch, wi) < 0) {
		int rc = rtn_app_wait_cycle(c->ch, wi, POLL_SLICE_NS);

		if (rc == 0)
			break;
		if (rc != -ETIMEDOUT)
			return rc;
		if (stopping(c))
			return 0;
		if (rtn_now() >= deadline)
			return rtn_set_error(-ETIMEDOUT,
					     "no TDMA cycle within %lld ms: is the "
					     "station synchronised?",
					     (long long)(limit / 1000000));
	}
	/* a slave's cycle length is learnt from a second cycle start */
	while (wi->cycle_ns <= 0 && !stopping(c)) {
		int rc = rtn_app_wait_cycle(c->ch, wi, POLL_SLICE_NS);

		if (rc < 0 && rc != -ETIMEDOUT)
			return rc;
		if (rtn_now() >= deadline)
			return rtn_set_error(-ETIMEDOUT, "no cycle length known within %lld ms",
					     (long long)(limit / 1000000));
	}
	return 0;
}

/*
 * Learn the pending need once the station's pick-up of its message is known
 * (or cannot be): less the RT thread's own lateness for the slot when it
 * took the message in that occurrence, the whole need when it took it later
 * (a miss) or when it cannot be told.
 */
static void learn_pending(struct rtn_cyclic *c, int64_t cycle_ns)
{
	struct pending_need *p = &c->pending;
	int64_t pickup, need = p->need_ns;

	if (!p->armed)
		return;
	if (rtn_app_tx_pickup(c->ch, p->pos, &pickup) == 1) {
		int64_t rt_late = pickup - p->handover_global;

		if (rt_late > 0 && rt_late < cycle_ns / 2)
			need -= rt_late < need ? rt_late : need;
	}
	p->armed = 0;
	rtn_lead_add(&c->lead, need);
}

/* Run the task once; returns non-zero when the loop must end (rc in c->rc). */
static int run_once(struct rtn_cyclic *c, const struct rtn_app_waitinfo *wi, int64_t deadline,
		    int64_t woke)
{
	uint32_t before = 0;
	int rc;

	rtn_hist_add(&c->hist, woke - deadline);
	tls_deadline = deadline;
	tls_global_shift = wi->cycle_start - wi->cycle_start_os;
	if (c->o.handover_ns >= 0) {
		learn_pending(c, wi->cycle_ns); /* the previous run's, a cycle later */
		before = rtn_app_tx_next(c->ch);
	}
	rc = c->fn(c->arg, wi, woke);
	if (c->o.handover_ns >= 0) {
		int64_t need = rtn_now() - deadline; /* wake-up lateness + the run */
		uint32_t after = rtn_app_tx_next(c->ch);

		if (after != before)
			c->pending = (struct pending_need){ .armed = 1,
							    .pos = after - 1,
							    .need_ns = need,
							    .handover_global = wi->cycle_start +
									       c->o.handover_ns };
		else
			rtn_lead_add(&c->lead, need); /* nothing sent: no pick-up to wait for */
	}
	__atomic_store_n(&c->runs, c->runs + 1, __ATOMIC_RELEASE);
	if (rc < 0) {
		c->rc = rc;
		return 1;
	}
	return rc > 0 || (c->o.cycles && c->runs >= c->o.cycles);
}

/*
 * Where in cycle n the task wakes: offset_ns, or the lead in force before the
 * hand-over deadline (possibly in cycle n - 1, which the arithmetic allows).
 */
static int64_t wake_offset(const struct rtn_cyclic *c)
{
	if (c->o.handover_ns < 0)
		return c->o.offset_ns;
	return c->o.handover_ns - __atomic_load_n(&c->lead.lead_ns, __ATOMIC_RELAXED);
}

/*
 * Real-time mode.  Cycle n's deadline is computed from the newest published
 * cycle p each time, so a slave's task follows the master's cycle grid even
 * as the station corrects its clock.
 */
static int rt_body(struct rtn_rt *rt, void *arg)
{
	struct rtn_cyclic *c = arg;
	struct rtn_app_waitinfo pub, wi;
	uint32_t n;
	int rc;

	rc = first_cycle(c, &pub);
	if (rc < 0 || stopping(c))
		return rc;
	c->interval_ns = pub.cycle_ns;
	if (c->o.handover_ns >= 0) {
		if (c->o.handover_ns >= pub.cycle_ns || c->o.lead_ns >= pub.cycle_ns)
			return rtn_set_error(-ERANGE,
					     "cyclic task: hand-over at %lld us with a "
					     "lead of %lld us does not fit the %lld us cycle",
					     (long long)c->o.handover_ns / 1000,
					     (long long)c->o.lead_ns / 1000,
					     (long long)pub.cycle_ns / 1000);
		/* an automatic lead starts at a quarter of the cycle, at most half of it */
		rtn_lead_init(&c->lead, c->o.lead_start_ns ? c->o.lead_start_ns : pub.cycle_ns / 4,
			      pub.cycle_ns / 2, c->o.lead_ns);
	}
	/* first run: the earliest cycle whose deadline is still ahead */
	n = pub.cycle_no;
	if (pub.cycle_start_os + wake_offset(c) <= rtn_now())
		n++;
	while (!stopping(c)) {
		int64_t d, deadline, woke, now;

		if (rtn_app_cycle_info(c->ch, &pub) < 0 || pub.cycle_ns <= 0)
			return rtn_set_error(-EPROTO, "cycle information disappeared");
		d = (int32_t)(n - pub.cycle_no);
		deadline = pub.cycle_start_os + d * pub.cycle_ns + wake_offset(c);
		now = rtn_now();
		if (deadline + pub.cycle_ns <= now) {
			/* stalled for a cycle or more: skip, do not fire back to back */
			int64_t skip = (now - deadline) / pub.cycle_ns;

			n += (uint32_t)skip;
			deadline += skip * pub.cycle_ns;
			d += skip;
			__atomic_store_n(&c->missed, c->missed + skip, __ATOMIC_RELAXED);
		}
		woke = rtn_rt_wait_until(rt, deadline);
		wi = (struct rtn_app_waitinfo){ .cycle_no = n,
						.cycle_start = pub.cycle_start + d * pub.cycle_ns,
						.cycle_start_os =
							pub.cycle_start_os + d * pub.cycle_ns,
						.clock_offset = pub.clock_offset,
						.cycle_ns = pub.cycle_ns };
		if (run_once(c, &wi, deadline, woke))
			break;
		n++;
	}
	return c->rc;
}

/*
 * Real-time mode with its own grid (interval_ns set): deadlines at whole
 * multiples of the interval on the shared clock plus the offset, absolute
 * wake-ups as above.  This is a real-time task where no TDMA cycle is
 * published (NoMAC): same policy and pinning, no gate to align to.
 */
static int rt_grid_body(struct rtn_rt *rt, struct rtn_cyclic *c)
{
	int64_t per = c->o.interval_ns, off = c->o.offset_ns % per;
	int64_t deadline = (rtn_now() / per + 1) * per + off;
	struct rtn_app_waitinfo wi;
	uint32_t n = 0;

	c->interval_ns = per;
	while (!stopping(c)) {
		int64_t now = rtn_now(), woke;

		if (deadline + per <= now) {
			int64_t skip = (now - deadline) / per;

			deadline += skip * per;
			n += (uint32_t)skip;
			__atomic_store_n(&c->missed, c->missed + skip, __ATOMIC_RELAXED);
		}
		woke = rtn_rt_wait_until(rt, deadline);
		wi = (struct rtn_app_waitinfo){ .cycle_no = n,
						.cycle_start = deadline - off,
						.cycle_start_os = deadline - off,
						.cycle_ns = per };
		if (run_once(c, &wi, deadline, woke))
			break;
		deadline += per;
		n++;
	}
	return c->rc;
}

/*
 * Standard mode: what an ordinary program does.  The schedule is
 * start + k * interval, but the sleep is relative (computed from "now"
 * before sleeping), on SCHED_OTHER, ignoring where the TDMA cycle is.
 */
static void *std_main(void *arg)
{
	struct rtn_cyclic *c = arg;
	struct rtn_app_waitinfo wi;
	int64_t start, deadline;

	memset(&wi, 0, sizeof(wi));
	if (!c->interval_ns) {
		c->rc = first_cycle(c, &wi);
		if (c->rc < 0 || stopping(c))
			goto out;
		c->interval_ns = wi.cycle_ns;
	}
	start = rtn_now();
	deadline = start + c->interval_ns;
	while (!stopping(c)) {
		int64_t now = rtn_now(), woke;

		if (deadline + c->interval_ns <= now) {
			int64_t skip = (now - deadline) / c->interval_ns;

			deadline += skip * c->interval_ns;
			__atomic_store_n(&c->missed, c->missed + skip, __ATOMIC_RELAXED);
		}
		if (deadline > now) {
			struct timespec rel = rtn_ns_to_ts(deadline - now);

			nanosleep(&rel, NULL);
		}
		woke = rtn_now();
		if (rtn_app_cycle_info(c->ch, &wi) < 0) {
			memset(&wi, 0, sizeof(wi));
			wi.cycle_ns = c->interval_ns;
		}
		if (run_once(c, &wi, deadline, woke))
			break;
		deadline += c->interval_ns;
	}
out:
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &c->done, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
	return NULL;
}

/* Real-time mode runs rt_body through this wrapper so waiters learn it ended. */
static int rt_body_done(struct rtn_rt *rt, void *arg)
{
	struct rtn_cyclic *c = arg;
	int rc = c->o.interval_ns > 0 ? rt_grid_body(rt, c) : rt_body(rt, c);

	c->rc = rc;
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &c->done, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
	return rc;
}

int rtn_cyclic_start(struct rtn_app_chan *ch, const struct rtn_cyclic_opts *o, rtn_cyclic_fn fn,
		     void *arg, struct rtn_cyclic **out)
{
	struct rtn_cyclic *c;
	int rc;

	rtn_clear_error();
	if (!ch || !fn)
		return rtn_set_error(-EINVAL, "cyclic task: channel and function are required");
	if (o->mode != RTN_CYCLIC_MODE_RT && o->mode != RTN_CYCLIC_MODE_STANDARD)
		return rtn_set_error(-EINVAL, "cyclic task: unknown mode %d", o->mode);
	if (o->offset_ns < 0 || o->interval_ns < 0 || o->first_cycle_timeout_ns < 0 ||
	    o->lead_ns < 0 || o->lead_start_ns < 0 || o->handover_ns < -1)
		return rtn_set_error(-EINVAL, "cyclic task: offset, interval, timeout and lead "
					      "must not be negative");
	if (o->handover_ns >= 0 && (o->mode != RTN_CYCLIC_MODE_RT || o->interval_ns))
		return rtn_set_error(-EINVAL, "cyclic task: a hand-over deadline needs the "
					      "real-time mode on the TDMA cycle");
	c = calloc(1, sizeof(*c));
	if (!c)
		return rtn_set_error(-ENOMEM, "cyclic task: out of memory");
	c->ch = ch;
	c->o = *o;
	c->fn = fn;
	c->arg = arg;
	c->interval_ns = o->interval_ns;
	rtn_hist_init(&c->hist, 0);
	if (o->mode == RTN_CYCLIC_MODE_RT) {
		struct rtn_rt_opts rto = o->rt;

		if (rto.period_ns <= 0)
			rto.period_ns = 1000000; /* unused by a body; rtn_rt validates it */
		rc = rtn_rt_start(&rto, rt_body_done, c, &c->rt);
	} else {
		rc = -pthread_create(&c->thread, NULL, std_main, c);
		if (rc)
			rtn_set_error(rc, "cyclic task: cannot create the thread: %s",
				      strerror(-rc));
		else
			c->thread_on = 1;
	}
	if (rc < 0) {
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int rtn_cyclic_wait(struct rtn_cyclic *c, int64_t timeout_ns)
{
	int64_t deadline = timeout_ns > 0 ? rtn_now() + timeout_ns : 0;

	rtn_clear_error();
	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		struct timespec ts;
		int64_t left = POLL_SLICE_NS * 10;

		if (timeout_ns == 0)
			return -ETIMEDOUT;
		if (deadline) {
			left = deadline - rtn_now();
			if (left <= 0)
				return -ETIMEDOUT;
		}
		ts = rtn_ns_to_ts(left < POLL_SLICE_NS * 10 ? left : POLL_SLICE_NS * 10);
		syscall(SYS_futex, &c->done, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
	return 0;
}

void rtn_cyclic_read_stats(const struct rtn_cyclic *c, struct rtn_cyclic_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->mode = c->o.mode;
	if (c->rt) {
		struct rtn_rt_stats rs;

		rtn_rt_read_stats(c->rt, &rs);
		out->policy = rs.policy;
		out->priority = rs.priority;
		out->cpu = rs.cpu;
		out->memory_locked = rs.memory_locked;
		out->dma_latency_held = rs.dma_latency_held;
	} else {
		out->policy = RTN_RT_POLICY_OTHER;
		out->cpu = -1;
	}
	out->running = !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
	out->rc = out->running ? 0 : c->rc;
	out->runs = __atomic_load_n(&c->runs, __ATOMIC_ACQUIRE);
	out->missed = __atomic_load_n(&c->missed, __ATOMIC_RELAXED);
	out->interval_ns = c->interval_ns;
	out->handover_ns = c->o.handover_ns;
	if (c->o.handover_ns >= 0) {
		/* plain reads of counters the task's thread writes: each is one aligned word */
		out->lead_ns = __atomic_load_n(&c->lead.lead_ns, __ATOMIC_RELAXED);
		out->lead_need_max_ns = __atomic_load_n(&c->lead.need_max_ns, __ATOMIC_RELAXED);
		out->lead_auto = c->lead.fixed_ns == 0;
		out->lead_updates = __atomic_load_n(&c->lead.updates, __ATOMIC_RELAXED);
		out->lead_late = __atomic_load_n(&c->lead.late, __ATOMIC_RELAXED);
		out->lead_beyond = __atomic_load_n(&c->lead.beyond, __ATOMIC_RELAXED);
	}
	rtn_hist_read(&c->hist, &out->hist);
}

int rtn_cyclic_stop(struct rtn_cyclic *c, struct rtn_cyclic_stats *final)
{
	struct rtn_rt_stats rs;
	int rc;

	rtn_clear_error();
	if (!c)
		return 0;
	if (c->rt) {
		rtn_rt_read_stats(c->rt, &rs); /* policy etc. while the thread exists */
		rtn_rt_stop(c->rt, NULL);
	} else if (c->thread_on) {
		__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
		pthread_join(c->thread, NULL);
	}
	if (final) {
		struct rtn_rt *rt = c->rt;

		c->rt = NULL;
		rtn_cyclic_read_stats(c, final);
		if (rt) {
			final->policy = rs.policy;
			final->priority = rs.priority;
			final->cpu = rs.cpu;
			final->memory_locked = rs.memory_locked;
			final->dma_latency_held = rs.dma_latency_held;
		}
	}
	rc = c->rc;
	free(c);
	return rc;
}

/* ---- built-in publisher -------------------------------------------------------- */

int rtn_cyclic_publisher(void *arg, const struct rtn_app_waitinfo *cycle, int64_t now)
{
	struct rtn_cyclic_pub *p = arg;
	static const uint8_t zeros[RTN_CHAN_MSG_MAX];
	uint32_t seq;
	int rc;

	rtn_clear_error();
	if (p->dst_port)
		rc = rtn_app_sendto(p->ch, p->dst_ip, p->dst_port, zeros, p->payload_len,
				    rtn_cyclic_deadline_global(), &seq);
	else
		rc = rtn_app_send(p->ch, p->dst, zeros, p->payload_len,
				  rtn_cyclic_deadline_global(), &seq);
	if (rc == -ENOBUFS) {
		p->refused++;
		return 0;
	}
	if (rc < 0) {
		p->last_error = rc;
		return rc;
	}
	p->last_seq = seq;
	__atomic_store_n(&p->sent, p->sent + 1, __ATOMIC_RELEASE);
	return 0;
}

rtn_cyclic_fn rtn_cyclic_publisher_fn(void)
{
	return rtn_cyclic_publisher;
}
