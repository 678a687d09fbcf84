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
 */
#include <errno.h>
#include <stdlib.h>
#include "rtn_app.h"
#include "rtn_preload_priv.h"

#define EXPORT __attribute__((visibility("default")))

/*
 * A registration of a pending or real-time socket in an epoll set, kept
 * so that it can follow the socket when it goes real-time, and so that
 * the control connection's hang-up (registered with this entry's address
 * as its data) is given to the program as an event of its socket.
 */
struct epreg {
	int epfd, fd, ctlfd;
	struct epoll_event ev;
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
	struct epreg **pp, *e;
	int rc;

	if (!rs)
		return rp_real.libc_epoll_ctl(epfd, op, fd, ev);
	rc = rp_real.libc_epoll_ctl(epfd, op, fd, ev);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ep_lock);
	for (pp = &regs; *pp && !((*pp)->epfd == epfd && (*pp)->fd == fd); pp = &(*pp)->next)
		;
	if (op == EPOLL_CTL_DEL) {
		if (*pp)
			drop_locked(pp);
	} else if (op == EPOLL_CTL_MOD && *pp) {
		(*pp)->ev = *ev;
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
	struct epreg *e;

	pthread_mutex_lock(&ep_lock);
	for (e = regs; e; e = e->next) {
		if (e->fd != fd)
			continue;
		/* the kernel socket's registration went with its file */
		if (rp_real.libc_epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &e->ev) < 0 &&
		    errno == EEXIST)
			rp_real.libc_epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &e->ev);
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

EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	return translate(epfd, evs, rp_real.libc_epoll_wait(epfd, evs, max, timeout));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout,
		       const sigset_t *mask)
{
	return translate(epfd, evs, rp_real.libc_epoll_pwait(epfd, evs, max, timeout, mask));
}
