// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_sock.c
 * @brief The calls that create, configure and close sockets: socket, bind,
 *        connect, close, dup, fcntl, ioctl (RTnet's included), socket
 *        names and shutdown, with the kernel's semantics and errno values
 *        for a real-time socket, and the kernel's own calls for the rest
 *        (its options: rtn_preload_sockopt.c).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "../include/rtnet.h"
#include "rtn_app_priv.h"
#include "rtn_chan.h"
#include "rtn_chan_inline.h"
#include "rtn_core.h"
#include "rtn_ipv4.h"
#include "rtn_preload_priv.h"
#include "rtn_time_inline.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- socket, bind, connect ------------------------------------------------------------- */

EXPORT int socket(int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC), fd;
	struct rsock *rs;

	if (domain == AF_PACKET && (base == SOCK_RAW || base == SOCK_DGRAM) && protocol) {
		uint16_t et = ntohs((uint16_t)protocol);
		const struct rtn_rule *r = rtn_rules_match_packet(&rp_conf.rules, et);
		int rc;

		if (!r || r->action == RTN_RULE_OS || et < 0x0600)
			return rp_real.libc_socket(domain, type, protocol);
		rs = rp_rs_new(domain, base);
		if (!rs)
			return rp_fail(-ENOMEM);
		rs->ethertype = et;
		rs->nonblock = !!(type & SOCK_NONBLOCK);
		rc = rp_open_channel(rs, 0, r->slot, r->prio, r->lifetime_ns);
		if (rp_no_daemon(rc)) {
			rp_rs_free(rs);
			if (rp_conf.fail_without_daemon)
				return rp_fail(-ENETDOWN);
			rp_no_daemon_warning();
			return rp_real.libc_socket(domain, type, protocol);
		}
		if (rc < 0) {
			rp_rs_free(rs);
			/* the daemon's word: not an EtherType it carries, all channels in use ... */
			return rp_fail(rc == -EREMOTEIO ? -EPROTONOSUPPORT : rc);
		}
		fd = rp_real.libc_fcntl(rtn_app_fd(rs->ch), F_DUPFD_CLOEXEC, 0);
		if (fd < 0 || fd >= RP_MAX_FD) {
			int e = fd < 0 ? errno : EMFILE;

			if (fd >= 0)
				rp_real.libc_close(fd);
			rp_rs_free(rs);
			return rp_fail(-e);
		}
		rs->state = RP_RT;
		if (rp_conf.verbose)
			rp_warn("EtherType 0x%04x on the real-time path of %s", et, rp_conf.dev);
		pthread_mutex_lock(&rp_table_lock);
		rp_table_set_locked(fd, rs, !!(type & SOCK_CLOEXEC));
		pthread_mutex_unlock(&rp_table_lock);
		return fd;
	}
	fd = rp_real.libc_socket(domain, type, protocol);
	if (fd < 0 || fd >= RP_MAX_FD || domain != AF_INET || base != SOCK_DGRAM ||
	    (protocol && protocol != IPPROTO_UDP))
		return fd;
	rs = rp_rs_new(domain, base);
	if (!rs)
		return fd; /* cannot track it: the kernel's, as it is */
	rs->state = RP_PENDING;
	pthread_mutex_lock(&rp_table_lock);
	rp_table_set_locked(fd, rs, !!(type & SOCK_CLOEXEC));
	pthread_mutex_unlock(&rp_table_lock);
	return fd;
}

/*
 * The address a real-time UDP socket is bound to, host order, as Linux's:
 * its bind()'s, or, connected from the wildcard, the address it sends from
 * (no broadcast reaches it then); 0 the wildcard.
 */
static uint32_t local_addr(const struct rsock *rs)
{
	return rs->laddr || !rs->connected ?
		       rs->laddr :
		       __atomic_load_n(&rs->ch->shm->udp.ip, __ATOMIC_RELAXED);
}

static int bind_held(int fd, struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in sa;
	const struct rtn_rule *r;
	int rc;

	if (rp_bad_ptr(addr, len))
		return rp_fail(-EFAULT);
	if (rs->domain == AF_PACKET) {
		struct sockaddr_ll ll;

		if (!addr || len < sizeof(ll))
			return rp_fail(-EINVAL);
		memcpy(&ll, addr, sizeof(ll));
		if (ll.sll_family != AF_PACKET)
			return rp_fail(-EINVAL);
		/* one device, one EtherType: binding may only say so again */
		if (ll.sll_ifindex && rp_conf.ifindex && ll.sll_ifindex != rp_conf.ifindex)
			return rp_fail(-ENODEV);
		if (ll.sll_protocol && ntohs(ll.sll_protocol) != rs->ethertype)
			return rp_fail(-EINVAL);
		return 0;
	}
	if (!addr || len < sizeof(sa))
		return rp_fail(-EINVAL);
	memcpy(&sa, addr, sizeof(sa));
	if (sa.sin_family != AF_INET)
		return rp_fail(-EAFNOSUPPORT);
	if (rs->state == RP_RT || rs->bound)
		return rp_fail(-EINVAL); /* as the kernel: a socket binds once */
	r = rtn_rules_match_udp(&rp_conf.rules, ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port), 0, 0,
				0);
	if (r && r->action == RTN_RULE_RT) {
		rs->laddr = ntohl(sa.sin_addr.s_addr);
		/* a fixed port is Linux's to judge too (rp_go_rt), the socket left unbound */
		rc = rp_go_rt(fd, rs, ntohs(sa.sin_port), r, sa.sin_port ? &sa : NULL);
		if (rc == 0) {
			rs->bound = 1;
			return 0;
		}
		if (rc < 0)
			return rp_fail(rc);
		rp_forget(rs); /* no daemon: the kernel's */
		return rp_real.libc_bind(fd, addr, len);
	}
	rc = rp_real.libc_bind(fd, addr, len);
	if (rc < 0)
		return rc;
	/* an address of its own that no rule took is the kernel's for good; the wildcard waits */
	if (r || sa.sin_addr.s_addr != htonl(INADDR_ANY)) {
		rp_forget(rs);
		return 0;
	}
	{
		struct sockaddr_in got;
		socklen_t gl = sizeof(got);

		if (rp_real.libc_getsockname(fd, (struct sockaddr *)&got, &gl) == 0)
			rs->lport = ntohs(got.sin_port);
		rs->bound = 1;
	}
	return 0;
}

EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = rp_hold(fd);

	if (!rs)
		return rp_real.libc_bind(fd, addr, len);
	return rp_put_ret(rs, bind_held(fd, rs, addr, len));
}

static int connect_held(int fd, struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in sa;
	int rc;

	if (rs->domain != AF_INET)
		return rp_real.libc_connect(fd, addr, len);
	if (rp_bad_ptr(addr, len))
		return rp_fail(-EFAULT);
	if (!addr || len < sizeof(sa_family_t))
		return rp_fail(-EINVAL);
	memcpy(&sa, addr, len < sizeof(sa) ? len : sizeof(sa));
	if (sa.sin_family == AF_UNSPEC) { /* dissolve the association */
		if (rs->state != RP_RT)
			return rp_real.libc_connect(fd, addr, len);
		rs->connected = 0;
		rs->raddr = rs->rport = 0;
		rtn_app_udp_connect(rs->ch, 0, 0);
		rtn_app_udp_bound(rs->ch, local_addr(rs)); /* the wildcard again, unless bound */
		return 0;
	}
	if (len < sizeof(sa))
		return rp_fail(-EINVAL);
	if (sa.sin_family != AF_INET)
		return rp_fail(-EAFNOSUPPORT);
	if (rs->state == RP_PENDING) {
		rc = rp_judge_remote(fd, rs, &sa);
		if (rc < 0)
			return rp_fail(rc);
		if (rp_lookup(fd) != rs) /* left to the kernel */
			return rp_real.libc_connect(fd, addr, len);
	}
	if (!sa.sin_port)
		return rp_fail(-EINVAL);
	rs->raddr = ntohl(sa.sin_addr.s_addr);
	rs->rport = ntohs(sa.sin_port);
	rs->connected = 1;
	/* the station gives a connected socket its peer's datagrams only, to local_addr() */
	if (rs->state == RP_RT) {
		rtn_app_udp_connect(rs->ch, rs->raddr, rs->rport);
		rtn_app_udp_bound(rs->ch, local_addr(rs));
	}
	return 0;
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = rp_hold(fd);

	if (!rs)
		return rp_real.libc_connect(fd, addr, len);
	return rp_put_ret(rs, connect_held(fd, rs, addr, len));
}

/* ---- close, dup, fcntl --------------------------------------------------------------- */

/*
 * Closing a socket's last descriptor closes its channel, and with it what
 * is still in the TX ring: let the station take that first, as the kernel
 * sends a closed UDP socket's queued datagrams.  Under TDMA a full ring
 * leaves over many cycles (a few frames a slot), so the wait is for the
 * station to stop taking: it ends when the ring is empty, when nothing
 * left it for CLOSE_STALL_NS (or four cycles, if longer), or after
 * CLOSE_DRAIN_MAX_NS in all.
 */
#define CLOSE_STALL_NS	   50000000LL
#define CLOSE_DRAIN_MAX_NS 5000000000LL

void rp_drain_tx(struct rsock *rs)
{
	struct rtn_chan_shm *shm = rs->ch->shm;
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 100000 };
	int64_t cycle = __atomic_load_n(&shm->cycle_ns, __ATOMIC_RELAXED);
	int64_t stall = cycle > 0 && 4 * cycle > CLOSE_STALL_NS ? 4 * cycle : CLOSE_STALL_NS;
	int64_t start = rtn_now(), moved = start;
	uint32_t left = rtn_ring_count(&shm->tx), now_left;

	while (left && rp_alive(rs) && nanosleep(&ts, NULL) == 0) {
		int64_t now = rtn_now();

		now_left = rtn_ring_count(&shm->tx);
		if (now_left < left)
			moved = now;
		left = now_left;
		if (now - moved > stall || now - start > CLOSE_DRAIN_MAX_NS)
			break;
	}
}

EXPORT int close(int fd)
{
	struct rsock *rs = rp_lookup(fd);

	rp_epoll_forget_fd(fd); /* nothing to do unless an epoll set holds a socket of ours */
	if (!rs)
		return rp_real.libc_close(fd);
	if (rs->state == RP_RT && __atomic_load_n(&rs->refs, __ATOMIC_RELAXED) == 1)
		rp_drain_tx(rs);
	pthread_mutex_lock(&rp_table_lock);
	if (rp_fds[fd].rs == rs)
		rp_table_set_locked(fd, NULL, 0);
	pthread_mutex_unlock(&rp_table_lock);
	return rp_real.libc_close(fd);
}

/* @p newfd (made by the kernel) now stands for what @p oldfd stands for too. */
static int dup_follow(int oldfd, int newfd, int cloexec)
{
	struct rsock *rs = rp_lookup(oldfd);

	if (newfd < 0)
		return newfd;
	if (newfd >= RP_MAX_FD) {
		if (rs) { /* beyond the table: cannot stand for a real-time socket */
			rp_real.libc_close(newfd);
			return rp_fail(-EMFILE);
		}
		return newfd;
	}
	pthread_mutex_lock(&rp_table_lock);
	rp_table_set_locked(newfd, rs, cloexec);
	pthread_mutex_unlock(&rp_table_lock);
	return newfd;
}

EXPORT int dup(int oldfd)
{
	int fd = rp_real.libc_dup(oldfd);

	if (fd >= 0 && rp_lookup(oldfd)) /* the kernel's dup clears close-on-exec */
		rp_real.libc_fcntl(fd, F_SETFD, FD_CLOEXEC);
	return dup_follow(oldfd, fd, 0);
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	int fd;

	if (rp_lookup(newfd) && newfd != oldfd)
		rp_epoll_forget_fd(newfd);
	fd = rp_lookup(oldfd) ? rp_real.libc_dup3(oldfd, newfd, flags | O_CLOEXEC) :
				rp_real.libc_dup3(oldfd, newfd, flags);
	if (fd < 0)
		return fd;
	return dup_follow(oldfd, fd, !!(flags & O_CLOEXEC));
}

EXPORT int dup2(int oldfd, int newfd)
{
	int fd;

	if (oldfd == newfd) /* the kernel's answer: newfd if valid, EBADF if not */
		return rp_real.libc_dup2(oldfd, newfd);
	if (rp_lookup(newfd))
		rp_epoll_forget_fd(newfd);
	fd = rp_real.libc_dup2(oldfd, newfd);
	if (fd >= 0 && rp_lookup(oldfd))
		rp_real.libc_fcntl(fd, F_SETFD, FD_CLOEXEC);
	return dup_follow(oldfd, fd, 0);
}

static int fcntl_held(int fd, struct rsock *rs, int cmd, long arg)
{
	int rc;

	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		rc = rp_real.libc_fcntl(fd, F_DUPFD_CLOEXEC, arg);
		return dup_follow(fd, rc, cmd == F_DUPFD_CLOEXEC);
	case F_GETFD:
		if (rp_real.libc_fcntl(fd, F_GETFD) < 0)
			return -1;
		return rp_fds[fd].cloexec ? FD_CLOEXEC : 0;
	case F_SETFD:
		if (rp_real.libc_fcntl(fd, F_GETFD) < 0)
			return -1;
		rp_fds[fd].cloexec = !!(arg & FD_CLOEXEC);
		/* a pending socket is still the kernel's: it gets the flag as it is */
		return rs->state == RP_RT ? 0 : rp_real.libc_fcntl(fd, F_SETFD, arg);
	case F_SETFL:
		/*
		 * A real-time socket's file is the channel's notify eventfd, which
		 * the library reads without waiting: it stays non-blocking, and
		 * O_NONBLOCK lives in the socket (shared by dups, as a file's flag).
		 */
		rc = rp_real.libc_fcntl(fd, F_SETFL, rs->state == RP_RT ? arg | O_NONBLOCK : arg);
		if (rc == 0)
			rs->nonblock = !!(arg & O_NONBLOCK);
		return rc;
	case F_GETFL:
		rc = rp_real.libc_fcntl(fd, F_GETFL);
		if (rc >= 0 && rs->state == RP_RT)
			rc = (rc & ~O_NONBLOCK) | (rs->nonblock ? O_NONBLOCK : 0) | O_RDWR;
		return rc;
	default:
		return rp_real.libc_fcntl(fd, cmd, arg);
	}
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	struct rsock *rs = rp_hold(fd);
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long); /* every command's argument fits a long (or is a pointer) */
	va_end(ap);
	if (!rs)
		return rp_real.libc_fcntl(fd, cmd, arg);
	return rp_put_ret(rs, fcntl_held(fd, rs, cmd, arg));
}

EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* ---- ioctl --------------------------------------------------------------------------- */

/* RTnet's socket ioctls (rtnet.h), for a pending or real-time socket. */
static int rtnet_ioctl(struct rsock *rs, unsigned long req, void *argp)
{
	if (rp_bad_ptr(argp, sizeof(int64_t)) || !argp)
		return rp_fail(-EFAULT);
	switch (req) {
	case RTNET_RTIOC_TIMEOUT: {
		int64_t t;

		memcpy(&t, argp, sizeof(t));
		rs->rtnet_timeout_ns = t;
		rs->rtnet_timeout_set = 1;
		return 0;
	}
	case RTNET_RTIOC_XMITPARAMS: {
		unsigned int v;
		int prio, slot;

		memcpy(&v, argp, sizeof(v));
		prio = v & 0xffff;
		slot = v >> 16;
		if (prio > 31 || slot > 63)
			return rp_fail(-EINVAL);
		if (rs->state == RP_RT && (prio != rs->prio || slot != rs->slot)) {
			/* the channel's slot is fixed when it opens */
			rp_warn("RTNET_RTIOC_XMITPARAMS after the socket went real-time: "
				"set it before bind");
			return rp_fail(-EBUSY);
		}
		rs->prio = prio;
		rs->slot = slot;
		return 0;
	}
	case RTNET_RTIOC_EXTPOOL:
	case RTNET_RTIOC_SHRPOOL: {
		/*
		 * RTnet's socket pool: RTNET_SOCKET_POOL buffers, grown or shrunk by
		 * n, the return value what was actually added or removed.  Here the
		 * pool is the channel's ring: before the socket goes real-time the
		 * count sizes the ring; after, a ring deep enough already holds
		 * what is asked (added in full), a shallower one adds what fits.
		 */
		unsigned int n;
		int room;

		memcpy(&n, argp, sizeof(n));
		if (n > RTN_CHAN_MAX_DEPTH)
			n = RTN_CHAN_MAX_DEPTH;
		if (req == RTNET_RTIOC_SHRPOOL) {
			if ((int)n > rs->pool)
				n = rs->pool;
			rs->pool -= n;
			return (int)n;
		}
		if (rs->state == RP_RT) {
			room = (int)rs->ch->depth - RTNET_SOCKET_POOL - rs->pool;
			if (room < 0)
				room = 0;
			if ((int)n > room)
				n = room;
		}
		rs->pool += n;
		return (int)n;
	}
	}
	return rp_fail(-ENOTTY);
}

static int ioctl_held(int fd, struct rsock *rs, unsigned long req, void *argp)
{
	if (_IOC_TYPE(req) == RTIOC_TYPE_NETWORK && _IOC_SIZE(req) &&
	    (req == RTNET_RTIOC_TIMEOUT || req == RTNET_RTIOC_XMITPARAMS ||
	     req == RTNET_RTIOC_EXTPOOL || req == RTNET_RTIOC_SHRPOOL))
		return rtnet_ioctl(rs, req, argp);
	if (rs->state != RP_RT)
		return rp_real.libc_ioctl(fd, req, argp);
	switch (req) {
	case FIONBIO: {
		int on;

		if (!argp || rp_bad_ptr(argp, sizeof(int)))
			return rp_fail(-EFAULT);
		memcpy(&on, argp, sizeof(on));
		rs->nonblock = !!on;
		return 0;
	}
	case FIONREAD: {
		int n;

		if (!argp || rp_bad_ptr(argp, sizeof(int)))
			return rp_fail(-EFAULT);
		n = rp_fionread(rs);
		memcpy(argp, &n, sizeof(n));
		return 0;
	}
	}
	/* interface requests (SIOCGIFINDEX, SIOCGIFADDR ...) are any socket's: ask one of ours */
	if ((req >= 0x8900 && req <= 0x89ff)) {
		int s = rp_real.libc_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc, e;

		if (s < 0)
			return -1;
		rc = rp_real.libc_ioctl(s, req, argp);
		e = errno;
		rp_real.libc_close(s);
		errno = e;
		return rc;
	}
	return rp_fail(-ENOTTY);
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	struct rsock *rs = rp_hold(fd);
	va_list ap;
	void *argp;

	va_start(ap, req);
	argp = va_arg(ap, void *);
	va_end(ap);
	if (!rs)
		return rp_real.libc_ioctl(fd, req, argp);
	return rp_put_ret(rs, ioctl_held(fd, rs, req, argp));
}

/* ---- socket names, shutdown ----------------------------------------------------------- */

static int put_name(struct sockaddr *addr, socklen_t *len, const void *sa, socklen_t salen)
{
	socklen_t have;
	int rc = rp_user_room(addr, len, salen, &have);

	if (rc < 0)
		return rp_fail(rc);
	memcpy(addr, sa, have);
	memcpy(len, &salen, sizeof(salen)); /* the full length, as the kernel tells it */
	return 0;
}

static int getsockname_held(struct rsock *rs, struct sockaddr *addr, socklen_t *len)
{
	if (rs->domain == AF_PACKET) {
		struct sockaddr_ll ll;

		rp_packet_name(rs, &ll, rs->ch->shm->station_mac);
		return put_name(addr, len, &ll, sizeof(ll));
	} else {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(rs->lport),
					  .sin_addr.s_addr = htonl(local_addr(rs)) };

		return put_name(addr, len, &sa, sizeof(sa));
	}
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct rsock *rs = rp_hold_rt(fd);

	if (!rs)
		return rp_real.libc_getsockname(fd, addr, len);
	return rp_put_ret(rs, getsockname_held(rs, addr, len));
}

static int getpeername_held(struct rsock *rs, struct sockaddr *addr, socklen_t *len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	if (!rs->connected)
		return rp_fail(-ENOTCONN);
	sa.sin_port = htons(rs->rport);
	sa.sin_addr.s_addr = htonl(rs->raddr);
	return put_name(addr, len, &sa, sizeof(sa));
}

EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct rsock *rs = rp_hold_rt(fd);

	if (!rs)
		return rp_real.libc_getpeername(fd, addr, len);
	return rp_put_ret(rs, getpeername_held(rs, addr, len));
}

static int shutdown_held(struct rsock *rs, int how)
{
	uint64_t one = 1;

	if (how < SHUT_RD || how > SHUT_RDWR)
		return rp_fail(-EINVAL);
	/*
	 * As Linux's UDP: the socket is marked and its waiting readers woken
	 * (a read then ends with 0), connected or not, but an unconnected
	 * socket is told ENOTCONN.  Sending is not affected, as there.
	 */
	__atomic_or_fetch(&rs->shut, how + 1, __ATOMIC_SEQ_CST);
	if ((how + 1) & (SHUT_RD + 1) &&
	    rp_real.libc_write(rtn_app_fd(rs->ch), &one, sizeof(one)) < 0)
		rp_warn("notify descriptor: %s", strerror(errno));
	return rs->connected ? 0 : rp_fail(-ENOTCONN);
}

EXPORT int shutdown(int fd, int how)
{
	struct rsock *rs = rp_hold_rt(fd);

	if (!rs)
		return rp_real.libc_shutdown(fd, how);
	return rp_put_ret(rs, shutdown_held(rs, how));
}
