// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_wait.c
 * @brief poll, ppoll, select and pselect with real-time and kernel
 *        descriptors in one call (epoll: rtn_preload_epoll.c).
 *
 * A real-time socket's descriptor is its channel's notify eventfd, which
 * the station writes once per delivery batch while the reader is armed
 * (rtn_app_rx_arm()), so the kernel's own poll and epoll wait on it with
 * the program's other files; nothing spins.  Beside each one the call also
 * watches the channel's control connection, whose hang-up means the daemon
 * is gone: the socket then reports POLLERR and POLLHUP and its calls fail
 * with ENETDOWN.  Readiness to write is room in the TX ring, as a kernel
 * socket's is room in its send buffer: while a socket waits for it, the
 * call looks again each time the ring may have drained (rp_tx_drain_ns: a
 * TDMA cycle), so a sender that polls before each send sleeps instead of
 * spinning on EAGAIN.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rtn_app_priv.h"
#include "rtn_chan_inline.h"
#include "rtn_preload_priv.h"
#include "rtn_time_inline.h"

#define EXPORT	  __attribute__((visibility("default")))
#define STACK_FDS 64

/* ---- poll ----------------------------------------------------------------------- */

static void put_held(struct rsock **held, nfds_t n)
{
	nfds_t i;

	for (i = 0; i < n; i++)
		if (held[i]) {
			rp_put(held[i]);
			held[i] = NULL;
		}
}

/*
 * The one poll: @p timeout_ns < 0 waits for ever.  @p sigmask (ppoll's)
 * may be NULL.  Returns the count of ready entries or -errno.
 */
static int poll_mixed(struct pollfd *fds, nfds_t n, int64_t timeout_ns, const sigset_t *sigmask)
{
	struct pollfd kstack[2 * STACK_FDS], *k = kstack;
	short pre_stack[STACK_FDS], *pre = pre_stack;
	int owner_stack[STACK_FDS], *owner = owner_stack;
	/* each round holds its real-time sockets against a close() in another thread */
	struct rsock *held_stack[STACK_FDS] = { 0 }, **held = held_stack;
	int64_t deadline = timeout_ns > 0 ? rtn_now() + timeout_ns : 0;
	nfds_t i, extra;
	int rc = 0;

	if (n > STACK_FDS) {
		k = malloc(2 * n * sizeof(*k));
		pre = malloc(n * sizeof(*pre));
		owner = malloc(n * sizeof(*owner));
		held = calloc(n, sizeof(*held));
		if (!k || !pre || !owner || !held) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (;;) {
		int any_ready = 0, count = 0, expired;
		int64_t room_wait = 0; /* > 0: a socket waits for room to send; look again then */
		struct timespec ts, *tsp = NULL;

		extra = 0;
		for (i = 0; i < n; i++) {
			struct rsock *rs = held[i] = rp_hold_rt(fds[i].fd);
			short ev = fds[i].events;

			k[i] = fds[i];
			pre[i] = 0;
			if (!rs)
				continue;
			if (ev & (POLLIN | POLLRDNORM)) {
				int r = rs->dead ? -1 : rp_rx_arm(rs);

				if (r > 0)
					pre[i] |= ev & (POLLIN | POLLRDNORM);
				else if (r < 0)
					rs->dead = 1;
			}
			if ((ev & (POLLOUT | POLLWRNORM)) && rp_tx_room(rs))
				pre[i] |= ev & (POLLOUT | POLLWRNORM);
			else if (ev & (POLLOUT | POLLWRNORM))
				room_wait = rp_soonest(room_wait, rp_tx_drain_ns(rs));
			if (rs->dead)
				pre[i] |= POLLERR | POLLHUP;
			any_ready |= pre[i] != 0;
			/* the notify file says "maybe a message"; the ring decides below */
			k[i].events = ev & (POLLIN | POLLRDNORM) ? POLLIN : 0;
			if (rtn_app_ctlfd(rs->ch) >= 0 && !rs->dead) {
				k[n + extra] = (struct pollfd){ .fd = rtn_app_ctlfd(rs->ch),
								.events = POLLRDHUP };
				owner[extra++] = (int)i;
			}
		}
		if (any_ready) {
			ts = (struct timespec){ 0, 0 };
			tsp = &ts;
		} else if (timeout_ns >= 0 || room_wait) {
			int64_t left = deadline ? deadline - rtn_now() : 0;

			if (left < 0)
				left = 0;
			if (room_wait && (timeout_ns < 0 || left > room_wait))
				left = room_wait;
			ts = (struct timespec){ left / 1000000000LL, left % 1000000000LL };
			tsp = &ts;
		}
		rc = rp_real.libc_ppoll(k, n + extra, tsp, sigmask);
		if (rc < 0) {
			rc = -errno;
			goto out;
		}
		for (i = 0; i < extra; i++) {
			struct rsock *rs = held[owner[i]];

			if (k[n + i].revents && rs) {
				rs->dead = 1;
				pre[owner[i]] |= POLLERR | POLLHUP |
						 (fds[owner[i]].events & POLLIN);
			}
		}
		for (i = 0; i < n; i++) {
			struct rsock *rs = held[i];

			if (rs) {
				fds[i].revents = pre[i];
				if ((k[i].revents & POLLIN) && rp_rx_ready(rs))
					fds[i].revents |= fds[i].events & (POLLIN | POLLRDNORM);
			} else {
				fds[i].revents = k[i].revents;
			}
			count += fds[i].revents != 0;
		}
		put_held(held, n);
		/*
		 * Woken for a message another reader took, or a stale count, or
		 * to look at a TX ring again: wait on.
		 */
		expired = timeout_ns >= 0 && (!deadline || rtn_now() >= deadline);
		if (count || any_ready || expired || (rc == 0 && !room_wait)) {
			rc = count;
			goto out;
		}
	}
out:
	if (held)
		put_held(held, n);
	if (held != held_stack)
		free(held);
	if (k != kstack)
		free(k);
	if (pre != pre_stack)
		free(pre);
	if (owner != owner_stack)
		free(owner);
	return rc;
}

static int has_rt(const struct pollfd *fds, nfds_t n)
{
	nfds_t i;

	for (i = 0; i < n; i++)
		if (rp_lookup_rt(fds[i].fd))
			return 1;
	return 0;
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (n && (!fds || rp_bad_ptr(fds, n * sizeof(*fds))))
		return rp_real.libc_poll(fds, n, timeout); /* the kernel's EFAULT */
	if (!has_rt(fds, n))
		return rp_real.libc_poll(fds, n, timeout);
	return rp_done(poll_mixed(fds, n, timeout < 0 ? -1 : timeout * 1000000LL, NULL));
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
	if (n && (!fds || rp_bad_ptr(fds, n * sizeof(*fds))))
		return rp_real.libc_ppoll(fds, n, t, mask);
	if (!has_rt(fds, n))
		return rp_real.libc_ppoll(fds, n, t, mask);
	if (t && (rp_bad_ptr(t, sizeof(*t)) || t->tv_sec < 0 || t->tv_nsec < 0 ||
		  t->tv_nsec >= 1000000000L))
		return rp_done(rp_bad_ptr(t, sizeof(*t)) ? -EFAULT : -EINVAL);
	return rp_done(poll_mixed(fds, n, t ? t->tv_sec * 1000000000LL + t->tv_nsec : -1, mask));
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort(); /* as glibc's __chk_fail */
	return poll(fds, n, timeout);
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask,
		       size_t fdslen);
EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask,
		       size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	return ppoll(fds, n, t, mask);
}

/* ---- select -------------------------------------------------------------------------- */

static int select_mixed(int nfds, fd_set *r, fd_set *w, fd_set *x, int64_t timeout_ns,
			const sigset_t *mask)
{
	struct pollfd p[FD_SETSIZE];
	nfds_t n = 0, i;
	int rc, count = 0;

	for (i = 0; i < (nfds_t)nfds; i++) {
		short ev = (r && FD_ISSET(i, r) ? POLLIN : 0) |
			   (w && FD_ISSET(i, w) ? POLLOUT : 0) |
			   (x && FD_ISSET(i, x) ? POLLPRI : 0);

		if (ev)
			p[n++] = (struct pollfd){ .fd = (int)i, .events = ev };
	}
	rc = poll_mixed(p, n, timeout_ns, mask);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++) {
		short got = p[i].revents;

		if (got & POLLNVAL)
			return -EBADF; /* as select: a descriptor that is not open */
	}
	if (r)
		FD_ZERO(r);
	if (w)
		FD_ZERO(w);
	if (x)
		FD_ZERO(x);
	for (i = 0; i < n; i++) {
		short got = p[i].revents, ev = p[i].events;

		if ((ev & POLLIN) && (got & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(p[i].fd, r);
			count++;
		}
		if ((ev & POLLOUT) && (got & (POLLOUT | POLLERR))) {
			FD_SET(p[i].fd, w);
			count++;
		}
		if ((ev & POLLPRI) && (got & POLLPRI)) {
			FD_SET(p[i].fd, x);
			count++;
		}
	}
	return count;
}

static int sets_have_rt(int nfds, fd_set *r, fd_set *w, fd_set *x)
{
	int i;

	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	for (i = 0; i < nfds; i++)
		if (((r && FD_ISSET(i, r)) || (w && FD_ISSET(i, w)) || (x && FD_ISSET(i, x))) &&
		    rp_lookup_rt(i))
			return 1;
	return 0;
}

static int sets_ok(int nfds, fd_set *r, fd_set *w, fd_set *x)
{
	return nfds >= 0 && nfds <= FD_SETSIZE && !(r && rp_bad_ptr(r, sizeof(*r))) &&
	       !(w && rp_bad_ptr(w, sizeof(*w))) && !(x && rp_bad_ptr(x, sizeof(*x)));
}

EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *t)
{
	int64_t tmo = -1, start;
	int rc;

	if (!sets_ok(nfds, r, w, x) || !sets_have_rt(nfds, r, w, x) ||
	    (t && rp_bad_ptr(t, sizeof(*t))))
		return rp_real.libc_select(nfds, r, w, x, t);
	if (t) {
		if (t->tv_sec < 0 || t->tv_usec < 0)
			return rp_done(-EINVAL);
		tmo = t->tv_sec * 1000000000LL + t->tv_usec * 1000LL;
	}
	start = rtn_now();
	rc = select_mixed(nfds, r, w, x, tmo, NULL);
	if (t && rc >= 0) { /* Linux's select leaves the time not slept in it */
		int64_t left = tmo - (rtn_now() - start);

		if (left < 0)
			left = 0;
		t->tv_sec = left / 1000000000LL;
		t->tv_usec = left % 1000000000LL / 1000;
	}
	return rp_done(rc);
}

EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *t,
		   const sigset_t *mask)
{
	if (!sets_ok(nfds, r, w, x) || !sets_have_rt(nfds, r, w, x) ||
	    (t && rp_bad_ptr(t, sizeof(*t))))
		return rp_real.libc_pselect(nfds, r, w, x, t, mask);
	if (t && (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L))
		return rp_done(-EINVAL);
	return rp_done(
		select_mixed(nfds, r, w, x, t ? t->tv_sec * 1000000000LL + t->tv_nsec : -1, mask));
}
