/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_pump.c
 * @brief The VNIC's pump between the wire and a TAP device: one helper
 *        thread that reads and writes the TAP, cuts super-packets into wire
 *        frames (GSO) and merges received segments (GRO) when the TAP has a
 *        vnet header, and hands frames to and from the RT thread through two
 *        lock-free rings.  This file is the thread (its rounds, its waits)
 *        and the VNIC's life (attach, detach); rtn_vnic_tx.c moves Linux's
 *        packets to the wire, rtn_vnic_rx.c the wire's to Linux, and
 *        rtn_vnic_state_priv.h is the object the three share.
 *
 * The RT thread makes no TAP system call and does no segmentation, merging
 * or checksum work: it takes ready wire frames from one ring into its
 * windows and puts received tunnel frames, decapsulated in place, into the
 * other by reference: their UMEM frames are lent to the pump and go back to
 * the fill ring once it wrote them (struct tap_loan).
 * How often the two threads wake each other is the mode:
 *
 * - batched: adaptive, as NICs moderate their interrupts.  While traffic is
 *   light the pump watches the TAP and the RT thread wakes it for every
 *   receive round, so a packet goes at once.  Once it moves VNIC_HEAVY
 *   frames or more a period of VNIC_PUMP_PERIOD_NS, averaged over about
 *   four (rtn_vnic_moderation.h), it runs on that period instead (on half
 *   of it for a flow of VNIC_BUSY frames a period or more): it does
 *   not watch the TAP, and a round writes all that was received and reads
 *   all the TAP has; the RT thread wakes it early only when VNIC_RX_KICK
 *   frames wait for the TAP, or when the ring to the wire fell below
 *   VNIC_TX_LOW from above (Linux had more than a period's windows carry).
 *   One pump wake-up then carries a period's frames both ways, at the cost
 *   of up to one period of delay under a flow.  The RT thread is woken by
 *   the pump only under NoMAC (no slot picks the frames up), at most once
 *   per pump round.
 * - per-packet, the seed's baseline: the pump reads one packet, wakes the
 *   RT thread for it and waits until it was taken before it reads the next
 *   (the TAP has no offloads in this mode, so one read is one frame): one RT
 *   wake-up and one pump wake-up per frame.  Every receive round wakes the
 *   pump.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "rtn_core.h"
#include "rtn_vnic_moderation.h"
#include "rtn_vnic_state_priv.h"
#include "rtn_wakeboard.h"
#include "rtn_xsk.h"

/* ---- the pump thread ---------------------------------------------------------- */

/* Wake the RT thread for frames it would otherwise leave until a timer (counted). */
static void wake_rt(struct rtn_vnic *v)
{
	efd_signal(v->s->efd);
	VSTAT_ADD(v, wakeups, 1);
}

/*
 * Batched: whether the pump runs on its period, once a period is over: its
 * frames moved, averaged over about four periods (rtn_vnic_moderation.h),
 * VNIC_HEAVY or more make the pump periodic, fewer event-driven.
 */
static void pump_judge(struct rtn_vnic *v, uint32_t moved)
{
	int64_t now = rtn_now();

	v->period_moved += moved;
	if (now - v->period_at < VNIC_PUMP_PERIOD_NS)
		return;
	v->moved_avg = rtn_vnic_mod_update(v->moved_avg, v->period_moved,
					   (now - v->period_at) / VNIC_PUMP_PERIOD_NS);
	__atomic_store_n(&v->pump_heavy, rtn_vnic_mod_periodic(v->moved_avg, VNIC_HEAVY),
			 __ATOMIC_SEQ_CST);
	v->period_at = now;
	v->period_moved = 0;
}

/* One round of the pump: what was received to the TAP, the TAP to the wire. */
static void pump_round(struct rtn_vnic *v)
{
	uint32_t wrote = rtn_vnic_write_tap(v, VNIC_RING), queued;

	if (v->mode == RTN_VNIC_PER_PACKET) {
		/* the seed's design: one read, one wake-up of the RT thread */
		if (rtn_vnic_fill(v, 1))
			wake_rt(v);
		return;
	}
	queued = rtn_vnic_fill(v, UINT32_MAX);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (queued && __atomic_load_n(&v->rt_wants_kick, __ATOMIC_RELAXED))
		wake_rt(v);
	pump_judge(v, wrote + queued);
}

/*
 * Periodic: how long until the next round, on the grid of the current
 * period: its end, or its middle too for a busy flow (rtn_vnic_mod_round_ns).
 * Not positive once the period is over: pump_judge() starts the next.
 */
static int64_t until_next_round(const struct rtn_vnic *v, int64_t now)
{
	int64_t round = rtn_vnic_mod_round_ns(v->moved_avg, VNIC_BUSY, VNIC_PUMP_PERIOD_NS);
	int64_t end = v->period_at + VNIC_PUMP_PERIOD_NS, next = v->period_at + round;

	return (next > now ? next : end) - now;
}

/*
 * Sleep until there is work.  Event-driven (per-packet, or batched with
 * light traffic): the TAP while the ring to the wire is empty, a kick from
 * the RT thread.  Batched under a flow: the end of the period, or an early
 * kick.  A kick for room comes when the RT thread took the ring down to
 * tx_refill_at (event-driven: any frame taken; periodic: only a fall from
 * above the low-water mark).  The
 * flags are set before the rings are looked at again, and the RT thread
 * looks at the flags after it moved a ring, so no wake-up is lost between
 * the two.
 */
static void pump_wait(struct rtn_vnic *v)
{
	int periodic = v->mode == RTN_VNIC_BATCHED && v->pump_heavy;
	uint32_t taken = __atomic_load_n(&v->to_wire->tail, __ATOMIC_ACQUIRE);
	uint32_t depth = wire_depth(v->to_wire);
	int watch_tap = tap_usable(v) && !periodic && depth == 0;
	int64_t wait_ns = periodic ? until_next_round(v, rtn_now()) : VNIC_PUMP_IDLE_NS;
	struct timespec ts = { .tv_sec = wait_ns > 0 ? wait_ns / 1000000000 : 0,
			       .tv_nsec = wait_ns > 0 ? wait_ns % 1000000000 : 0 };
	struct pollfd p[2] = { { .fd = v->pump_efd, .events = POLLIN },
			       { .fd = watch_tap ? v->tap_fd : -1, .events = POLLIN } };

	/* periodic: only a ring Linux filled beyond a period's windows; else any frame taken */
	__atomic_store_n(&v->pump_wants_room,
			 tap_usable(v) && depth > (periodic ? tx_refill_at(v) : 0),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&v->pump_asleep, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/*
	 * The RT thread took frames after the decision above and may have
	 * looked at the flags before they were set; or, event-driven, it
	 * queued received frames before they were.
	 */
	if ((__atomic_load_n(&v->to_wire->tail, __ATOMIC_ACQUIRE) != taken &&
	     wire_depth(v->to_wire) <= tx_refill_at(v)) ||
	    (!periodic && fr_depth(v->to_tap))) {
		if (__atomic_exchange_n(&v->pump_asleep, 0, __ATOMIC_SEQ_CST))
			return;
	}
	if (ppoll(p, 2, &ts, NULL) > 0) {
		if (p[0].revents & POLLIN)
			efd_drain(v->pump_efd);
		if (p[1].revents & (POLLERR | POLLHUP | POLLNVAL))
			tap_gone(v); /* TAP deleted under us */
	}
	__atomic_store_n(&v->pump_asleep, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&v->pump_wants_room, 0, __ATOMIC_RELAXED);
	VSTAT_ADD(v, pump_wakeups, 1);
}

static void *vnic_pump(void *arg)
{
	struct rtn_vnic *v = arg;

	pthread_setname_np(pthread_self(), "rtnet-vnic");
	while (!v->stop) {
		pump_round(v);
		if (!v->stop)
			pump_wait(v);
	}
	return NULL;
}

/*
 * The pump on a CPU the RT thread does not have when there is one: the RT
 * thread is SCHED_FIFO on its pinned CPU, the pump an ordinary thread.  It
 * starts there (@p attr), and v->pump_cpus says where that is: the RT
 * threads whose wake-ups its TAP writes keep clear of are those that may
 * run on one of these CPUs (rtn_wakeboard.h).
 */
static void pump_keep_off_rt_cpu(struct rtn_vnic *v, pthread_attr_t *attr)
{
	int rt_cpu = v->s->o.rt.cpu, cpu;
	uint64_t cpus = 0;
	cpu_set_t set;

	/* on failure v->pump_cpus stays every CPU (vnic_create) */
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	if (rt_cpu >= 0 && CPU_COUNT(&set) >= 2 && CPU_ISSET(rt_cpu, &set)) {
		CPU_CLR(rt_cpu, &set);
		if (pthread_attr_setaffinity_np(attr, sizeof(set), &set))
			return;
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus |= rtn_wakeboard_cpu_mask(cpu);
	v->pump_cpus = cpus;
}

/* ---- attach and detach ------------------------------------------------------ */

/* Stop the pump and wait for it: from here on nobody but the caller touches the rings. */
static void pump_stop(struct rtn_vnic *v)
{
	if (!v->pump_on)
		return;
	v->stop = 1;
	efd_signal(v->pump_efd);
	pthread_join(v->pump, NULL);
	v->pump_on = 0;
}

void rtn_vnic_destroy(struct rtn_vnic *v)
{
	if (!v)
		return;
	pump_stop(v);
	if (v->tap_fd >= 0)
		close(v->tap_fd);
	if (v->pump_efd >= 0)
		close(v->pump_efd);
	free(v->to_tap);
	free(v->loan);
	if (v->to_wire)
		free(v->to_wire->own);
	free(v->to_wire);
	free(v->gso_buf);
	free(v);
}

/*
 * Whether the TAP delivers and takes a vnet header (IFF_VNET_HDR), asked of
 * the device itself so the caller's API stays the same.  0 no, 1 yes, or a
 * negative errno for a header size other than the 10-byte virtio_net_hdr.
 */
static int tap_has_vnet_hdr(int fd)
{
	struct ifreq ifr;
	int sz = 0;

	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr) < 0 || !(ifr.ifr_flags & IFF_VNET_HDR))
		return 0; /* not a TAP (a test's socket), or one without the header */
	if (ioctl(fd, TUNGETVNETHDRSZ, &sz) < 0 || sz != RTN_VNET_HDR_LEN)
		return rtn_set_error(-EINVAL,
				     "VNIC: TAP vnet header of %d bytes, only %d supported", sz,
				     RTN_VNET_HDR_LEN);
	return 1;
}

/* The GSO buffer and the GRO state (a TAP with a vnet header, or a harness that may want them). */
static int alloc_gso_buffers(struct rtn_vnic *v)
{
	if (!v->gso_buf)
		v->gso_buf = malloc(RTN_GSO_BUF);
	if (!v->gso_buf)
		return rtn_set_error(-ENOMEM, "VNIC: cannot allocate its GSO buffer");
	rtn_gro_init(&v->gro);
	v->lay_hdr_len = LAY_HDR_LEN;
	v->lay_mss = VNIC_FRAME_MAX - RTMAC_HLEN - LAY_HDR_LEN;
	return 0;
}

/* A VNIC on @p tap_fd (duplicated), its rings and buffers; its pump not yet started. */
static int vnic_create(struct rtn_station *s, int tap_fd, int mode, uint32_t slot,
		       struct rtn_vnic **out)
{
	struct rtn_vnic *v = aligned_alloc(64, (sizeof(*v) + 63) & ~(size_t)63);
	int rc;

	if (!v)
		return rtn_set_error(-ENOMEM, "VNIC: out of memory");
	memset(v, 0, sizeof(*v));
	v->s = s;
	v->mode = mode;
	v->slot = slot;
	v->tap_fd = fcntl(tap_fd, F_DUPFD_CLOEXEC, 0);
	v->pump_cpus = RTN_WAKEBOARD_ANY_CPU; /* until a pump starts somewhere */
	v->pump_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	v->to_tap = aligned_alloc(64, sizeof(struct frame_ring));
	v->loan = calloc(VNIC_RING, sizeof(*v->loan));
	v->to_wire = aligned_alloc(64, sizeof(struct wire_ring));
	if (v->to_wire)
		memset(v->to_wire, 0, sizeof(struct wire_ring));
	if (v->tap_fd < 0 || v->pump_efd < 0 || !v->to_tap || !v->loan || !v->to_wire ||
	    wire_ring_place(v->to_wire, s->xsk) < 0) {
		rc = rtn_set_error(-ENOMEM, "VNIC: cannot allocate its rings and descriptors");
		goto fail;
	}
	rc = tap_has_vnet_hdr(v->tap_fd);
	if (rc < 0)
		goto fail;
	v->vnet = rc;
	if (v->vnet) {
		rc = alloc_gso_buffers(v);
		if (rc)
			goto fail;
	}
	fcntl(v->tap_fd, F_SETFL, fcntl(v->tap_fd, F_GETFL) | O_NONBLOCK);
	memset(v->to_tap, 0, sizeof(struct frame_ring));
	*out = v;
	return 0;
fail:
	rtn_vnic_destroy(v);
	return rc;
}

/* ---- for the harnesses (csrc/fuzz/) ------------------------------------------- */

/*
 * Back to the state after attach, in @p mode on @p slot, with or without
 * a vnet header, and with the pump stopped: the harness is the pump
 * (rtn_vnic_pump_once, rtn_vnic_write_all).  Empty rings, no GSO packet in
 * flight, nothing unread on the TAP.
 */
int rtn_vnic_reset(struct rtn_vnic *v, int mode, uint32_t slot, int vnet)
{
	int rc;

	pump_stop(v);
	rc = alloc_gso_buffers(v);
	if (rc)
		return rc;
	v->mode = mode;
	v->slot = slot;
	/* a harness lends no UMEM frame (it has none), so there is nothing to give back */
	v->to_tap->head = v->to_tap->tail = v->reclaimed = 0;
	memset(v->loan, 0, VNIC_RING * sizeof(*v->loan));
	wire_ring_reset(v->to_wire, rtn_xsk_lent_sent(v->s->xsk));
	v->in_place_seen = rtn_xsk_lent_sent(v->s->xsk);
	v->tap_dead = 0;
	v->vnet = vnet;
	v->pump_asleep = v->pump_wants_room = v->rt_wants_kick = v->pump_heavy = 0;
	v->period_at = 0;
	v->period_moved = v->moved_avg = 0;
	memset(&v->gso, 0, sizeof(v->gso));
	while (read(v->tap_fd, v->gso_buf, RTN_GSO_BUF) >= 0)
		;
	return 0;
}

/* Write everything the RT thread queued for the TAP now; how many frames were taken. */
uint32_t rtn_vnic_write_all(struct rtn_vnic *v)
{
	return rtn_vnic_write_tap(v, VNIC_RING);
}

/* One pump round on the caller's thread (the pump stopped by rtn_vnic_reset). */
void rtn_vnic_pump_once(struct rtn_vnic *v)
{
	pump_round(v);
}

/*
 * On the RT thread: the VNIC it uses from now on, its ring counting the
 * socket's in-place sends and completions from here.  Only the RT thread's
 * fields: the pump may have queued frames already.
 */
static void vnic_go_live(struct rtn_station *s, uintptr_t arg)
{
	struct rtn_vnic *v = (struct rtn_vnic *)arg;
	uint64_t sent = rtn_xsk_lent_sent(s->xsk);

	v->to_wire->lent_seen = sent;
	v->in_place_seen = sent;
	s->vnic = v;
}

int rtn_station_vnic_attach(struct rtn_station *s, int tap_fd, int mode, uint32_t slot)
{
	struct rtn_vnic *v = NULL;
	pthread_attr_t attr;
	int rc = 0, started;

	rtn_clear_error();
	if (mode != RTN_VNIC_BATCHED && mode != RTN_VNIC_PER_PACKET)
		return rtn_set_error(-EINVAL, "VNIC mode must be batched or per-packet");
	if (slot >= RTN_TDMA_MAX_SLOTS)
		return rtn_set_error(-EINVAL, "VNIC slot %u out of range", slot);
	pthread_mutex_lock(&s->ctl_lock);
	if (s->vnic_ctl) {
		rc = rtn_set_error(-EBUSY, "a VNIC is already attached");
		goto out;
	}
	rc = vnic_create(s, tap_fd, mode, slot, &v);
	if (rc)
		goto out;
	if (pthread_attr_init(&attr)) {
		rc = rtn_set_error(-ENOMEM, "VNIC: cannot start its pump thread");
		rtn_vnic_destroy(v);
		goto out;
	}
	pump_keep_off_rt_cpu(v, &attr);
	started = pthread_create(&v->pump, &attr, vnic_pump, v) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		rc = rtn_set_error(-EAGAIN, "VNIC: cannot start its pump thread");
		rtn_vnic_destroy(v);
		goto out;
	}
	v->pump_on = 1;
	s->vnic_ctl = v;
	rtn_station_post(s, vnic_go_live, (uintptr_t)v);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

/*
 * The frames the VNIC sent in place, done: the next VNIC builds its frames
 * in the same UMEM frames from the first on.  In copy mode the last kick
 * completed them all; a zero-copy NIC completes them within microseconds.
 * At most IN_PLACE_DRAIN_NS is waited: a NIC that stopped sending cannot
 * hold the detach.
 */
#define IN_PLACE_DRAIN_NS 1000000
static void wait_in_place_done(struct rtn_station *s)
{
	int64_t until = rtn_now() + IN_PLACE_DRAIN_NS;

	do
		rtn_xsk_flush(s->xsk);
	while (rtn_xsk_lent_done(s->xsk) != rtn_xsk_lent_sent(s->xsk) && rtn_now() < until);
}

/*
 * On the RT thread, the pump stopped: the VNIC it no longer uses, every
 * frame still lent to it back to its fill ring, written or not.
 */
static void vnic_go_away(struct rtn_station *s, uintptr_t arg)
{
	struct rtn_vnic *v = (struct rtn_vnic *)arg;

	s->vnic = NULL;
	__atomic_store_n(&v->to_tap->tail, v->to_tap->head, __ATOMIC_RELEASE);
	rtn_vnic_reclaim(v);
	wait_in_place_done(s);
}

int rtn_station_vnic_detach(struct rtn_station *s)
{
	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	if (s->vnic_ctl) {
		pump_stop(s->vnic_ctl); /* nobody writes from the lent frames any more */
		rtn_station_post(s, vnic_go_away, (uintptr_t)s->vnic_ctl);
	}
	rtn_vnic_destroy(s->vnic_ctl);
	s->vnic_ctl = NULL;
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}
