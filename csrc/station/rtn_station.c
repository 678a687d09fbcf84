/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station.c
 * @brief The station core: AF_XDP socket + RT thread + discipline, the
 *        command mailbox and the RT loop.
 *
 * Who owns what between the threads is in rtn_station_priv.h.  The modules
 * around this one: rtn_nomac.c (the NoMAC discipline), rtn_station_tdma.c
 * (the TDMA engine of rtn_tdma.c wired to the station), rtn_station_chan.c
 * (application channels), rtn_station_rx.c (the receive dispatch and when
 * received frames wake the thread), rtn_vnic_*.c (the VNIC) and
 * rtn_probe.c (benchmark probes and the rate generator).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "rtn_core.h"
#include "rtn_nomac_priv.h"
#include "rtn_probe_priv.h"
#include "rtn_station_priv.h"
#include "rtn_vnic_priv.h"
#include "rtn_wakeboard.h"

/* ---- no discipline: nothing is sent, tunnel frames still reach the VNIC ------ */

static int64_t none_next_event(void *priv)
{
	return INT64_MAX;
}

static void none_run(void *priv, int64_t woke_late)
{
}

static int none_queue(void *priv, uint32_t slot, uint32_t prio, const uint8_t *frame, uint32_t len)
{
	return -ENOENT;
}

static int none_rx_rtmac(void *priv, const uint8_t *frame, uint32_t len, int64_t rx)
{
	return rtmac_tunnel_only(frame, len);
}

static int none_has_room(const void *priv)
{
	return 0;
}

static void none_attach(void *priv)
{
}

const struct rtn_disc_ops rtn_disc_none_ops = {
	.id = RTN_DISC_NONE,
	.attach = none_attach,
	.detach = none_attach,
	.next_event = none_next_event,
	.run = none_run,
	.queue = none_queue,
	.rx_rtmac = none_rx_rtmac,
	.has_room = none_has_room,
};

/* ---- attaching a discipline (on the RT thread) ------------------------------ */

struct disc_change {
	const struct rtn_disc_ops *ops;
	void *priv;
};

static void set_discipline(struct rtn_station *s, uintptr_t arg)
{
	const struct disc_change *d = (const struct disc_change *)arg;

	s->ops->detach(s->disc_priv);
	s->ops = d->ops;
	s->disc_priv = d->priv;
	s->ops->attach(s->disc_priv);
	rtn_chans_refresh(s);
}

/* Control side, under ctl_lock: @p ops with @p priv becomes the station's discipline. */
static void attach(struct rtn_station *s, const struct rtn_disc_ops *ops, void *priv)
{
	struct disc_change d = { ops, priv };

	rtn_station_post(s, set_discipline, (uintptr_t)&d);
}

/* ---- the RT thread ---------------------------------------------------------- */

static void arm_timer(struct rtn_station *s, int64_t os_deadline)
{
	struct itimerspec its = { 0 };

	if (os_deadline != INT64_MAX)
		its.it_value = rtn_ns_to_ts(os_deadline);
	timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/*
 * Longest sleep without watching the eventfd: control commands and the stop
 * request wait at most this long for the thread (see station_body).
 */
#define QUIET_SLEEP_MAX_NS 10000000

/*
 * Only the timer can usefully wake the thread: under TDMA with the batched
 * VNIC (or no VNIC traffic path that needs a wake-up) and a deadline within
 * QUIET_SLEEP_MAX_NS.  Then a plain absolute clock_nanosleep replaces
 * timerfd_settime + poll on three descriptors + read, the cheapest wait the
 * kernel has; commands posted meanwhile run at that wake-up.
 */
static int quiet_wait(const struct rtn_station *s, int64_t next_local, int64_t next_os)
{
	return !rtn_station_rx_wakes(s, next_local) && disc_ops(s)->paced_rx &&
	       next_os - rtn_now() < QUIET_SLEEP_MAX_NS;
}

/* Lateness of a timer wake-up for @p deadline, as the periodic loop records it. */
static void timer_woke(struct rtn_station *s, int64_t deadline, int64_t now)
{
	rtn_hist_add(&s->wake, now - deadline);
	s->st.timer_wakeups++;
}

/*
 * A deadline this close is waited for by spinning on the clock: a timer
 * wake-up costs more CPU than that here (~11 us measured with cyclictest on
 * the lab VM) and often comes later than the deadline itself.  The lab's
 * plan has one such gap every cycle (the master's Sync, then its RT slot).
 */
#define SPIN_WAIT_MAX_NS 10000
/*
 * With wake_early, the thread sleeps until a margin before each deadline of
 * its discipline and spins the rest, so a slot goes out on time however late
 * within that margin the timer woke it (peers do the same: an early offset
 * before the transmit time).  The margin is learnt as the application's
 * hand-over lead is (rtn_lead.h): a high quantile of the timer's own
 * lateness plus a margin, at least RTN_LEAD_MIN_NS; at most this, past which
 * the wait is a stall no spinning should pay for.
 */
#define WAKE_EARLY_START_NS 20000
#define WAKE_EARLY_MAX_NS   100000

/* How long before @p next_os (a deadline of the discipline) the thread wakes. */
static int64_t wake_early_ns(const struct rtn_station *s, const struct rtn_disc_ops *ops,
			     int64_t next_os)
{
	if (!s->o.wake_early || next_os == INT64_MAX || !ops->next_sends ||
	    !ops->next_sends(s->disc_priv))
		return 0;
	return s->early.lead_ns;
}

/* a wake-up this close to the discipline's next deadline serves it before the bulk of RX */
#define RX_DEADLINE_NEAR_NS 100000
#define RX_BEFORE_DEADLINE  8 /* frames taken before it: a Sync and the RT frames around it */
/* the time a batch of RX_BEFORE_DEADLINE frames may take, tunnelled ones handed to the pump */
#define RX_EARLY_BATCH_NS 20000

/*
 * Woken early for @p deadline: take what was received, a batch at a time
 * while a batch still fits before it, so that what a peer's window left in
 * the ring is not taken between the deadline and its send (two ports: both
 * rings, in the wires' order).  It takes the place of the few frames taken
 * right before the deadline.
 */
static void receive_while_early(struct rtn_station *s, int64_t deadline)
{
	uint64_t before = s->st.rx_frames, got;

	do {
		got = s->st.rx_frames;
		rtn_station_receive(s, RX_BEFORE_DEADLINE);
	} while (s->st.rx_frames != got && rtn_now() + RX_EARLY_BATCH_NS < deadline);
	s->st.rx_early += s->st.rx_frames - before;
}

/*
 * A timer wake-up at @p now for @p armed, meant to come @p early before a
 * deadline: learn from its lateness, and if the deadline is still ahead take
 * what was received (receive_while_early; *@p rx_done says so) and spin to
 * it (what arrives meanwhile waits: its stamps are the XDP program's).
 * Returns the time it is now.
 */
static int64_t early_woke(struct rtn_station *s, int64_t armed, int64_t early, int64_t now,
			  int *rx_done)
{
	*rx_done = 0;
	if (!early)
		return now;
	rtn_lead_add(&s->early, now - armed);
	s->st.wake_early_ns = s->early.lead_ns;
	if (now >= armed + early)
		return now;
	s->st.early_wakes++;
	receive_while_early(s, armed + early);
	*rx_done = 1;
	while ((now = rtn_now()) < armed + early)
		rtn_cpu_relax();
	return now;
}

static int station_body(struct rtn_rt *rt, void *arg)
{
	struct rtn_station *s = arg;
	int64_t armed = INT64_MAX, armed_early = 0;

	while (!rtn_rt_should_stop(rt)) {
		const struct rtn_disc_ops *ops;
		struct pollfd p[4];
		int64_t next_local, next_os, wait_os, now, early, woke_late = 0;
		int np = 0, port_b_idx = -1, watch_rx, due, rx_done = 0;
		uint64_t rx_before;

		rtn_station_exec_cmd(s);
		ops = disc_ops(s);
		next_local = ops->next_event(s->disc_priv);
		next_os = next_local == INT64_MAX ? INT64_MAX : os_of(s, next_local);
		rtn_wakeboard_post(s->wake_slot, next_os); /* helpers keep their long calls clear */
		early = wake_early_ns(s, ops, next_os);
		if (next_os != INT64_MAX && next_os - rtn_now() < SPIN_WAIT_MAX_NS + early) {
			while ((now = rtn_now()) < next_os)
				rtn_cpu_relax();
			s->st.loops++;
			s->st.spin_waits++;
			rtn_station_rx_wake_rearm(s);
			goto work;
		}
		if (quiet_wait(s, next_local, next_os)) {
			if (armed != INT64_MAX) {
				arm_timer(s, INT64_MAX);
				armed = INT64_MAX;
			}
			rtn_sleep_until(next_os - early);
			now = rtn_now();
			s->st.loops++;
			timer_woke(s, next_os - early, now);
			now = early_woke(s, next_os - early, early, now, &rx_done);
			woke_late = now - next_os;
			rtn_station_rx_wake_rearm(s);
			goto work;
		}
		watch_rx = rtn_station_rx_wakes(s, next_local);
		wait_os = next_os - early;
		if (s->rx_poll_at) {
			watch_rx = 0;
			if (s->rx_poll_at < wait_os) {
				wait_os = s->rx_poll_at;
				early = 0; /* armed for the sockets, not before a deadline */
			}
		}
		if (wait_os != armed) {
			arm_timer(s, wait_os);
			armed = wait_os;
			armed_early = early;
		}
		/*
		 * Receive stamps come from the XDP program, so under TDMA received
		 * frames can wait for the next scheduled wake-up (a slot, the cycle
		 * start) without losing accuracy.  With the batched VNIC that is what
		 * keeps tunnelled traffic from waking the thread per packet: one
		 * received burst may wake it per cycle (rtn_station_rx_wakes); otherwise (and
		 * while no Sync has placed the grid yet) every frame wakes it.
		 */
		/*
		 * A socket not watched is left out (fd -1), not polled for no
		 * events: poll() would still queue the thread on the socket, and
		 * every frame the sender's softirq delivers would take the wait
		 * queue's lock to find nobody to wake (sock_def_readable, 13% of
		 * the sender's CPU in a two-port 64-byte flood).
		 */
		p[np++] = (struct pollfd){ .fd = watch_rx ? rtn_xsk_fd(s->xsk) : -1,
					   .events = POLLIN };
		p[np++] = (struct pollfd){ .fd = s->tfd, .events = POLLIN };
		p[np++] = (struct pollfd){ .fd = s->efd, .events = POLLIN };
		if (s->xsk_b) { /* the second port wakes the thread as the first does */
			port_b_idx = np;
			p[np++] = (struct pollfd){ .fd = watch_rx ? rtn_xsk_fd(s->xsk_b) : -1,
						   .events = POLLIN };
		}
		/* frames the VNIC's pump makes ready wake the thread only where no slot takes them */
		if (s->vnic)
			rtn_vnic_before_wait(s->vnic,
					     ops->kick_senders && ops->has_room(s->disc_priv));
		if (poll(p, np, 100) < 0 && errno != EINTR)
			continue;
		now = rtn_now();
		s->st.loops++;
		if (p[1].revents & POLLIN) {
			uint64_t ticks;

			if (read(s->tfd, &ticks, sizeof(ticks)) > 0 && armed != INT64_MAX) {
				timer_woke(s, armed, now);
				now = early_woke(s, armed, armed_early, now, &rx_done);
				/* late against the deadline, not the early wake-up */
				woke_late = now - armed - armed_early;
				armed = INT64_MIN; /* fired: re-arm on the next round */
			}
			rtn_station_rx_wake_rearm(s);
		} else if ((p[0].revents & POLLIN) ||
			   (port_b_idx >= 0 && (p[port_b_idx].revents & POLLIN))) {
			s->rx_woke = 1;
			s->st.rx_wakeups++;
		}
		if (p[2].revents & POLLIN)
			efd_drain(s->efd);
work:
		rx_before = s->st.rx_frames;
		if (s->rx_poll_at && now >= s->rx_poll_at)
			s->st.rx_polls++;
		/*
		 * A deadline due now (a slot) comes before the bulk of what was
		 * received: a peer's window may have left a hundred tunnel frames
		 * in the ring, and taking them all first would make this slot
		 * late.  What the deadline may need comes first in the ring (a
		 * cycle's Sync, then its RT frames, then the windows' frames), so
		 * a few frames are taken before the discipline runs, up to the
		 * first tunnelled one, the rest after; their stamps are the XDP
		 * program's either way.  Taking up to eight tunnel frames first made
		 * the slot's p99 under a VNIC flow 2 to 7 us later than idle's
		 * (tools/bench_vnic_paired, BENCHMARKS.md).
		 */
		due = next_os != INT64_MAX && now >= next_os - RX_DEADLINE_NEAR_NS;
		if (!due)
			rtn_station_receive_all(s);
		else if (!rx_done) /* woken early, it took them in the margin */
			rtn_station_receive_for_deadline(s, RX_BEFORE_DEADLINE);
		if (s->vnic)
			rtn_vnic_take(s->vnic, ops->queue, s->disc_priv);
		ops->run(s->disc_priv, woke_late);
		station_flush(s);
		if (due)
			rtn_station_receive_all(s);
		s->rx_poll_at = rtn_station_rx_poll_next(s, s->st.rx_frames - rx_before, rtn_now());
	}
	return 0;
}

/* ---- public API ----------------------------------------------------------------- */

/* The first port's socket, with the UMEM frames a VNIC builds its wire frames in. */
static int open_port_a(const struct rtn_station_opts *o, struct rtn_xsk **x)
{
	struct rtn_xsk_opts xo = o->xsk;

	xo.lend_frames = RTN_VNIC_TX_FRAMES;
	return rtn_xsk_open(&xo, x);
}

int rtn_station_open(const struct rtn_station_opts *o, struct rtn_station **out)
{
	struct rtn_station *s;
	int rc;

	rtn_clear_error();
	s = aligned_alloc(64, (sizeof(*s) + 63) & ~(size_t)63);
	if (!s)
		return rtn_set_error(-ENOMEM, "station: out of memory");
	memset(s, 0, sizeof(*s));
	s->o = *o;
	s->efd = s->tfd = s->done_fd = -1;
	s->wake_slot = rtn_wakeboard_claim();
	rtn_wakeboard_pin(s->wake_slot, s->o.rt.cpu); /* its RT thread runs there or not at all */
	s->ops = &rtn_disc_none_ops;
	pthread_mutex_init(&s->ctl_lock, NULL);
	s->t0 = rtn_now();
	rtn_hist_init(&s->wake, 0);
	rtn_lead_init(&s->early, WAKE_EARLY_START_NS, WAKE_EARLY_MAX_NS, 0);
	s->st.wake_early_ns = o->wake_early ? s->early.lead_ns : 0;
	rtn_stages_init(&s->stages);
	rc = rtn_probe_create(s);
	if (!rc)
		rc = rtn_nomac_create(s);
	if (!rc)
		rc = rtn_ip_create(s);
	if (rc)
		goto fail;
	s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->tfd = timerfd_create(RTN_CLOCK, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->efd < 0 || s->done_fd < 0 || s->tfd < 0) {
		rc = rtn_set_error(-errno, "station: eventfd/timerfd: %s", strerror(errno));
		goto fail;
	}
	rc = open_port_a(o, &s->xsk);
	if (rc)
		goto fail;
	/* the RT thread kicks once per wake-up, after everything due was queued */
	rtn_xsk_defer_kick(s->xsk, 1);
	rc = rtn_frer_open(s);
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	rtn_station_close(s);
	return rc;
}

int rtn_station_start(struct rtn_station *s)
{
	int rc;

	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	if (s->rt) {
		pthread_mutex_unlock(&s->ctl_lock);
		return rtn_set_error(-EALREADY, "station already running");
	}
	s->st.running = 1;
	rc = rtn_rt_start(&s->o.rt, station_body, s, &s->rt);
	if (rc)
		s->st.running = 0;
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

static void stop_rt(struct rtn_station *s)
{
	if (s->rt) {
		rtn_rt_stop(s->rt, NULL);
		s->rt = NULL;
		s->st.running = 0;
	}
}

int rtn_station_attach_tdma(struct rtn_station *s, const struct rtn_tdma_cfg *cfg)
{
	struct rtn_tdma_port port = rtn_station_tdma_port(s);
	struct rtn_tdma *e = NULL, *old;
	int rc = rtn_tdma_cfg_check(cfg);

	if (rc)
		return rc;
	pthread_mutex_lock(&s->ctl_lock);
	rc = rtn_tdma_create(s->o.mac, &port, &e);
	if (rc)
		goto out;
	/* first take the old engine away from the RT thread, then hand the new one over */
	attach(s, &rtn_disc_none_ops, NULL);
	old = s->tdma;
	s->tdma = e;
	s->tdma_cfg = *cfg;
	attach(s, &rtn_disc_tdma_ops, s);
	rtn_tdma_destroy(old);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_tdma_update(struct rtn_station *s, const struct rtn_tdma_cfg *cfg)
{
	int rc;

	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	if (s->ops != &rtn_disc_tdma_ops || !s->tdma) {
		rc = rtn_set_error(-ENOENT, "TDMA is not attached");
	} else if (!rtn_station_running(s)) {
		rc = rtn_tdma_cfg_check(cfg);
		if (!rc) {
			s->tdma_cfg = *cfg;
			rtn_tdma_start(s->tdma, &s->tdma_cfg, rtn_station_local_now(s));
		}
	} else {
		rc = rtn_tdma_set_config(s->tdma, cfg);
		if (!rc) {
			int i;

			/* what a restart of the RT thread attaches again */
			s->tdma_cfg = *cfg;
			/* applied at the next cycle start; wait at most a few cycles */
			for (i = 0; i < 2000 && rtn_tdma_config_pending(s->tdma); i++)
				usleep(1000);
			if (rtn_tdma_config_pending(s->tdma))
				rc = rtn_set_error(-ETIMEDOUT,
						   "configuration not applied: "
						   "no cycle start (waiting for Sync?)");
		}
	}
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_attach_nomac(struct rtn_station *s)
{
	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	attach(s, &rtn_disc_nomac_ops, s->nomac);
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

int rtn_station_detach(struct rtn_station *s)
{
	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	attach(s, &rtn_disc_none_ops, NULL);
	rtn_tdma_destroy(s->tdma);
	s->tdma = NULL;
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

int rtn_station_tdma_stats(const struct rtn_station *s, struct rtn_tdma_stats *out)
{
	rtn_clear_error();
	memset(out, 0, sizeof(*out));
	if (!s->tdma)
		return -ENOENT;
	rtn_tdma_read_stats(s->tdma, out);
	return 0;
}

void rtn_station_stats(const struct rtn_station *s, struct rtn_station_stats *out)
{
	*out = s->st;
	out->discipline = s->ops->id;
	out->vnic.mode = rtn_vnic_mode(s->vnic);
	out->clock_offset_ns = s->o.clock_offset_ns;
	out->drift_ppm = s->o.drift_ppm;
}

const struct rtn_hist *rtn_station_wake_hist(const struct rtn_station *s)
{
	return &s->wake;
}

void rtn_station_rt_stats(const struct rtn_station *s, struct rtn_rt_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (s->rt)
		rtn_rt_read_stats(s->rt, out);
}

int rtn_station_xsk_stats(const struct rtn_station *s, struct rtn_xsk_stats *out)
{
	rtn_clear_error();
	return rtn_xsk_stats(s->xsk, out);
}

const char *rtn_station_xdp_fallback(const struct rtn_station *s)
{
	return rtn_xsk_fallback_reason(s->xsk);
}

int rtn_station_xdp_mode(const struct rtn_station *s)
{
	return rtn_xsk_mode(s->xsk);
}

void rtn_station_close(struct rtn_station *s)
{
	if (!s)
		return;
	stop_rt(s);
	rtn_capture_destroy(s->cap);
	rtn_chans_close_all(s);
	rtn_vnic_destroy(s->vnic_ctl);
	rtn_tdma_destroy(s->tdma);
	rtn_frer_close(s);
	rtn_ip_destroy(s);
	rtn_nomac_destroy(s);
	rtn_probe_destroy(s);
	rtn_xsk_close(s->xsk);
	if (s->efd >= 0)
		close(s->efd);
	if (s->done_fd >= 0)
		close(s->done_fd);
	if (s->tfd >= 0)
		close(s->tfd);
	rtn_wakeboard_release(s->wake_slot);
	pthread_mutex_destroy(&s->ctl_lock);
	free(s);
}
