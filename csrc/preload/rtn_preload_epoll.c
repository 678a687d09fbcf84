// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_epoll.c
 * @brief epoll with real-time and kernel descriptors in one set.  The kernel
 *        waits: a real-time socket's descriptor is its channel's notify
 *        eventfd, readable while a message may wait.  What the library adds
 *        is a registration per socket and set, so that it follows the socket
 *        when it goes real-time (the kernel socket's registration goes with
 *        its file), and so that the channel's control connection, registered
 *        beside it with the registration's address as its data, is given to
 *        the program as EPOLLERR|EPOLLHUP of its socket when the daemon goes.
 *
 * Readiness to write is room in the TX ring, as the poll of
 * rtn_preload_wait.c gives it: an eventfd is always writable, so the kernel
 * is never asked for EPOLLOUT on one; the library gives EPOLLOUT itself, as
 * the kernel would for a socket (level-triggered while there is room,
 * edge-triggered once each time room comes back, EPOLLONESHOT once until
 * the program re-arms it), and while a socket waits for room the call looks
 * again each time the ring may have drained (rp_tx_drain_ns).
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "rtn_app.h"
#include "rtn_app_priv.h"
#include "rtn_preload_priv.h"
#include "rtn_time_inline.h"

#define EXPORT __attribute__((visibility("default")))

/*
 * A registration of a pending or real-time socket in an epoll set, kept
 * so that it can follow the socket when it goes real-time, and so that
 * the control connection's hang-up (registered with this entry's address
 * as its data) is given to the program as an event of its socket.
 */
struct epreg {
	int epfd, fd, ctlfd;
	struct epoll_event ev; /* as the program asked */
	int out_given;	       /* EPOLLET: EPOLLOUT given since the ring last had no room ... */
	uint64_t full_mark;    /* ... and since a send found it full (the channel's tx_full then) */
	int disarmed;	       /* EPOLLONESHOT: an event was given; until EPOLL_CTL_MOD ... */
	int quiet_due;	       /* ... by the library: the kernel's registration to be quieted */
	struct epreg *next;
};

static struct epreg *regs;
static int n_regs;
static pthread_mutex_t ep_lock = PTHREAD_MUTEX_INITIALIZER;

static void add_ctl_locked(struct epreg *e)
{
	struct rsock *rs = rp_lookup_rt(e->fd);
	struct epoll_event cev = { .events = EPOLLRDHUP, .data.ptr = e };

	if (!rs || e->ctlfd >= 0 || rtn_app_ctlfd(rs->ch) < 0)
		return;
	if (rp_real.libc_epoll_ctl(e->epfd, EPOLL_CTL_ADD, rtn_app_ctlfd(rs->ch), &cev) == 0)
		e->ctlfd = rtn_app_ctlfd(rs->ch);
}

/* What the kernel is asked for @p fd: the program's events, without EPOLLOUT on a real-time socket. */
static struct epoll_event kernel_events(int fd, const struct epoll_event *ev)
{
	struct epoll_event k = *ev;

	if (rp_lookup_rt(fd))
		k.events &= ~(uint32_t)EPOLLOUT;
	return k;
}

static void drop_locked(struct epreg **pp)
{
	struct epreg *e = *pp;

	if (e->ctlfd >= 0)
		rp_real.libc_epoll_ctl(e->epfd, EPOLL_CTL_DEL, e->ctlfd, NULL);
	*pp = e->next;
	free(e);
	n_regs--;
}

EXPORT int epoll_create1(int flags)
{
	return rp_real.libc_epoll_create1(flags);
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct rsock *rs = rp_lookup(fd);
	struct epoll_event k;
	struct epreg **pp, *e;
	int rc;

	if (!rs)
		return rp_real.libc_epoll_ctl(epfd, op, fd, ev);
	if (op != EPOLL_CTL_DEL) {
		if (!ev || rp_bad_ptr(ev, sizeof(*ev)))
			return rp_fail(-EFAULT);
		k = kernel_events(fd, ev);
	}
	/* under the lock: a wait quieting a one-shot registration it fired comes before or after */
	pthread_mutex_lock(&ep_lock);
	rc = rp_real.libc_epoll_ctl(epfd, op, fd, op == EPOLL_CTL_DEL ? ev : &k);
	if (rc < 0) {
		int err = errno;

		pthread_mutex_unlock(&ep_lock);
		errno = err;
		return rc;
	}
	for (pp = &regs; *pp && !((*pp)->epfd == epfd && (*pp)->fd == fd); pp = &(*pp)->next)
		;
	if (op == EPOLL_CTL_DEL) {
		if (*pp)
			drop_locked(pp);
	} else if (op == EPOLL_CTL_MOD && *pp) {
		(*pp)->ev = *ev; /* re-armed, and readiness looked at afresh, as Linux's MOD */
		(*pp)->out_given = (*pp)->disarmed = (*pp)->quiet_due = 0;
	} else if (op == EPOLL_CTL_ADD && !*pp && (e = calloc(1, sizeof(*e)))) {
		e->epfd = epfd;
		e->fd = fd;
		e->ctlfd = -1;
		e->ev = *ev;
		e->next = regs;
		regs = e;
		n_regs++;
		add_ctl_locked(e);
	}
	pthread_mutex_unlock(&ep_lock);
	return 0;
}

void rp_epoll_fd_replaced(int fd)
{
	struct epoll_event k;
	struct epreg *e;

	pthread_mutex_lock(&ep_lock);
	for (e = regs; e; e = e->next) {
		if (e->fd != fd)
			continue;
		k = kernel_events(fd, &e->ev);
		if (e->disarmed) /* a one-shot registration already fired stays quiet */
			k.events = EPOLLONESHOT;
		/* the kernel socket's registration went with its file */
		if (rp_real.libc_epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &k) < 0 && errno == EEXIST)
			rp_real.libc_epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &k);
		add_ctl_locked(e);
	}
	pthread_mutex_unlock(&ep_lock);
}

void rp_epoll_forget_fd(int fd)
{
	struct epreg **pp;

	if (!__atomic_load_n(&n_regs, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ep_lock);
	for (pp = &regs; *pp;) {
		if ((*pp)->fd == fd || (*pp)->epfd == fd)
			drop_locked(pp);
		else
			pp = &(*pp)->next;
	}
	pthread_mutex_unlock(&ep_lock);
}

/* Events for our control-connection entries become the program's socket's. */
static int translate(int epfd, struct epoll_event *evs, int n)
{
	int i;

	if (n <= 0 || !__atomic_load_n(&n_regs, __ATOMIC_RELAXED))
		return n;
	pthread_mutex_lock(&ep_lock);
	for (i = 0; i < n; i++) {
		struct epreg *e;

		for (e = regs; e && (void *)e != evs[i].data.ptr; e = e->next)
			;
		if (!e || e->epfd != epfd)
			continue;
		if (rp_lookup_rt(e->fd))
			rp_lookup_rt(e->fd)->dead = 1;
		evs[i].events = EPOLLERR | EPOLLHUP | (e->ev.events & EPOLLIN);
		evs[i].data = e->ev.data;
	}
	pthread_mutex_unlock(&ep_lock);
	return n;
}

/*
 * EPOLLOUT of the real-time sockets in set @p epfd that want it, into @p evs
 * (at most @p max): those with room in their TX ring, as the registration's
 * flags allow.  *@p room_wait: how soon to look again at one without room
 * (0: none waits).  The lock is held.
 */
static int writable_locked(int epfd, struct epoll_event *evs, int max, int64_t *room_wait)
{
	struct epreg *e;
	int n = 0;

	for (e = regs; e && n < max; e = e->next) {
		struct rsock *rs;
		uint64_t full;

		if (e->epfd != epfd || !(e->ev.events & EPOLLOUT) || e->disarmed ||
		    !(rs = rp_lookup_rt(e->fd)))
			continue;
		if (!rp_tx_room(rs)) {
			e->out_given = 0;
			*room_wait = rp_soonest(*room_wait, rp_tx_drain_ns(rs));
			continue;
		}
		/* an edge: room again since a send found none (EAGAIN), or since a wait did */
		full = __atomic_load_n(&rs->ch->tx_full, __ATOMIC_RELAXED);
		if ((e->ev.events & EPOLLET) && e->out_given && e->full_mark == full)
			continue;
		evs[n].events = EPOLLOUT | (rs->dead ? EPOLLERR | EPOLLHUP : 0);
		evs[n++].data = e->ev.data;
		e->out_given = 1;
		e->full_mark = full;
		/* the whole registration, as the kernel's, once this round's events are in */
		if (e->ev.events & EPOLLONESHOT)
			e->disarmed = e->quiet_due = 1;
	}
	return n;
}

/*
 * The one-shot registrations given EPOLLOUT this round go quiet in the
 * kernel too, now that an event the kernel had for them (EPOLLIN) went out
 * in the same entry.  The lock is held.
 */
static void quiet_fired_locked(int epfd)
{
	struct epreg *e;

	for (e = regs; e; e = e->next) {
		struct epoll_event quiet = { .events = EPOLLONESHOT, .data = e->ev.data };

		if (e->epfd != epfd || !e->quiet_due)
			continue;
		e->quiet_due = 0;
		rp_real.libc_epoll_ctl(epfd, EPOLL_CTL_MOD, e->fd, &quiet);
	}
}

/*
 * The kernel's events @p k[0..n) join the @p given EPOLLOUT ones in front of
 * them: one entry per registration (matched by the program's data), and a
 * one-shot registration the kernel fired gives no EPOLLOUT after.  The
 * count of entries.
 */
static int merge_locked(int epfd, struct epoll_event *evs, int given, int n)
{
	int i, j, out = given;

	for (j = given; j < given + n; j++) {
		struct epreg *e;

		for (e = regs; e; e = e->next)
			if (e->epfd == epfd && e->ev.data.u64 == evs[j].data.u64 &&
			    (e->ev.events & EPOLLONESHOT))
				e->disarmed = 1;
		for (i = 0; i < given && evs[i].data.u64 != evs[j].data.u64; i++)
			;
		if (i < given)
			evs[i].events |= evs[j].events;
		else
			evs[out++] = evs[j];
	}
	return out;
}

/* The kernel's wait: @p timeout_ns < 0 for ever; epoll_pwait2's nanoseconds where libc has it. */
static int kernel_wait(int epfd, struct epoll_event *evs, int max, int64_t timeout_ns,
		       const sigset_t *mask)
{
	if (rp_real.libc_epoll_pwait2) {
		struct timespec ts = { timeout_ns / RTN_NS_PER_SEC, timeout_ns % RTN_NS_PER_SEC };

		return rp_real.libc_epoll_pwait2(epfd, evs, max, timeout_ns < 0 ? NULL : &ts, mask);
	}
	return rp_real.libc_epoll_pwait(
		epfd, evs, max, timeout_ns < 0 ? -1 : (int)((timeout_ns + 999999) / 1000000), mask);
}

/* The one epoll wait: @p timeout_ns < 0 waits for ever; the count of events or -errno. */
static int wait_mixed(int epfd, struct epoll_event *evs, int max, int64_t timeout_ns,
		      const sigset_t *mask)
{
	int64_t deadline = timeout_ns > 0 ? rtn_now() + timeout_ns : 0;

	if (max <= 0 || max > INT32_MAX / (int)sizeof(*evs) || rp_bad_ptr(evs, max * sizeof(*evs)))
		return kernel_wait(epfd, evs, max, timeout_ns, mask); /* the kernel's error */
	for (;;) {
		int64_t room_wait = 0, t = timeout_ns;
		int given = 0, n = 0;

		if (__atomic_load_n(&n_regs, __ATOMIC_RELAXED)) {
			pthread_mutex_lock(&ep_lock);
			given = writable_locked(epfd, evs, max, &room_wait);
			pthread_mutex_unlock(&ep_lock);
		}
		if (given) {
			t = 0;
		} else if (room_wait) {
			int64_t left = deadline ? deadline - rtn_now() : 0;

			t = timeout_ns < 0 || left > room_wait ? room_wait : (left > 0 ? left : 0);
		}
		if (given < max) {
			n = translate(epfd, evs + given,
				      kernel_wait(epfd, evs + given, max - given, t, mask));
			if (n < 0 && !given)
				return -1; /* the kernel's errno */
			if (n < 0)
				n = 0; /* interrupted, say: what was given stands */
		}
		if (given || (n && __atomic_load_n(&n_regs, __ATOMIC_RELAXED))) {
			pthread_mutex_lock(&ep_lock);
			n = merge_locked(epfd, evs, given, n) - given;
			quiet_fired_locked(epfd);
			pthread_mutex_unlock(&ep_lock);
		}
		if (given + n || !room_wait || timeout_ns == 0 ||
		    (deadline && rtn_now() >= deadline))
			return given + n;
	}
}

/* No socket of ours in any set: the kernel's call as the program made it. */
static int none_of_ours(void)
{
	return !__atomic_load_n(&n_regs, __ATOMIC_RELAXED);
}

EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	if (none_of_ours())
		return rp_real.libc_epoll_wait(epfd, evs, max, timeout);
	return wait_mixed(epfd, evs, max, timeout < 0 ? -1 : timeout * 1000000LL, NULL);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout,
		       const sigset_t *mask)
{
	if (none_of_ours())
		return rp_real.libc_epoll_pwait(epfd, evs, max, timeout, mask);
	return wait_mixed(epfd, evs, max, timeout < 0 ? -1 : timeout * 1000000LL, mask);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *t,
			const sigset_t *mask)
{
	if (none_of_ours() && rp_real.libc_epoll_pwait2)
		return rp_real.libc_epoll_pwait2(epfd, evs, max, t, mask);
	if (t && (rp_bad_ptr(t, sizeof(*t)) || t->tv_sec < 0 || t->tv_nsec < 0 ||
		  t->tv_nsec >= RTN_NS_PER_SEC))
		return rp_fail(rp_bad_ptr(t, sizeof(*t)) ? -EFAULT : -EINVAL);
	return wait_mixed(epfd, evs, max, t ? t->tv_sec * RTN_NS_PER_SEC + t->tv_nsec : -1, mask);
}
