// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_sock.c
 * @brief The calls that create, configure and close sockets: socket, bind,
 *        connect, close, dup, fcntl, ioctl (RTnet's included), socket
 *        options and names, with the kernel's semantics and errno values
 *        for a real-time socket, and the kernel's own calls for the rest.
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

/* ---- socket options and names ----------------------------------------------------------- */

/*
 * The room a program's value-result length says it has for @p want bytes
 * at @p buf (at most @p want); -errno for a bad length or pointer.
 */
static int user_room(const void *buf, const socklen_t *len, socklen_t want, socklen_t *have)
{
	if (!len || rp_bad_ptr(len, sizeof(*len)))
		return -EFAULT;
	memcpy(have, len, sizeof(*have));
	if ((int)*have < 0)
		return -EINVAL;
	if (*have > want)
		*have = want;
	if (*have && (!buf || rp_bad_ptr(buf, *have)))
		return -EFAULT;
	return 0;
}

static int put_int(void *val, socklen_t *len, int v)
{
	socklen_t have;
	int rc = user_room(val, len, sizeof(int), &have);

	if (rc < 0)
		return rp_fail(rc);
	memcpy(val, &v, have);
	memcpy(len, &have, sizeof(have));
	return 0;
}

static int put_timeval(void *val, socklen_t *len, int64_t ns)
{
	struct timeval tv = { .tv_sec = ns / 1000000000LL, .tv_usec = ns % 1000000000LL / 1000 };
	socklen_t have;

	if (!len || rp_bad_ptr(len, sizeof(*len)))
		return rp_fail(-EFAULT);
	memcpy(&have, len, sizeof(have));
	if (have < sizeof(tv))
		return rp_fail(-EINVAL);
	if (!val || rp_bad_ptr(val, sizeof(tv)))
		return rp_fail(-EFAULT);
	memcpy(val, &tv, sizeof(tv));
	have = sizeof(tv);
	memcpy(len, &have, sizeof(have));
	return 0;
}

static int get_timeval_ns(const void *val, socklen_t len, int64_t *ns)
{
	struct timeval tv;

	if (len < sizeof(tv))
		return rp_fail(-EINVAL);
	if (!val || rp_bad_ptr(val, sizeof(tv)))
		return rp_fail(-EFAULT);
	memcpy(&tv, val, sizeof(tv));
	if (tv.tv_usec < 0 || tv.tv_usec >= 1000000)
		return rp_fail(-EDOM);
	*ns = tv.tv_sec < 0 ? 0 : tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
	return 0;
}

/*
 * The kept options (enum rp_kept_opt): set, each is reported back as the
 * kernel's would be.  On the real-time path SO_BROADCAST is what allows a
 * send to a broadcast address (EACCES without, as Linux); IP_PKTINFO gives
 * each datagram's in_pktinfo; SO_REUSEADDR, SO_REUSEPORT and
 * IP_MULTICAST_LOOP go to the station (rp_sockopts_changed); the rest change
 * nothing there (nothing is routed, the frames are never fragmented, no
 * error is ever queued).
 */
static const struct {
	int level, opt;
} rp_kept[RP_KEPT_N] = {
	[RP_SO_REUSEADDR] = { SOL_SOCKET, SO_REUSEADDR },
	[RP_SO_REUSEPORT] = { SOL_SOCKET, SO_REUSEPORT },
	[RP_SO_BROADCAST] = { SOL_SOCKET, SO_BROADCAST },
	[RP_SO_DONTROUTE] = { SOL_SOCKET, SO_DONTROUTE },
	[RP_SO_RCVLOWAT] = { SOL_SOCKET, SO_RCVLOWAT },
	[RP_SO_NO_CHECK] = { SOL_SOCKET, SO_NO_CHECK },
	[RP_IP_MULTICAST_LOOP] = { IPPROTO_IP, IP_MULTICAST_LOOP },
	[RP_IP_PKTINFO] = { IPPROTO_IP, IP_PKTINFO },
	[RP_IP_RECVERR] = { IPPROTO_IP, IP_RECVERR },
	[RP_IP_MTU_DISCOVER] = { IPPROTO_IP, IP_MTU_DISCOVER },
};

static int kept_index(int level, int opt)
{
	int i;

	for (i = 0; i < RP_KEPT_N; i++)
		if (rp_kept[i].level == level && rp_kept[i].opt == opt)
			return i;
	return -1;
}

void rp_opts_adopt(int fd, struct rsock *rs)
{
	int i;

	for (i = 0; i < RP_KEPT_N; i++) {
		socklen_t len = sizeof(int);
		int v;

		if (!rp_real.libc_getsockopt(fd, rp_kept[i].level, rp_kept[i].opt, &v, &len))
			rs->kept[i] = v;
	}
}

/*
 * IP_MULTICAST_IF, read as Linux reads it (struct ip_mreqn, ip_mreq or
 * in_addr, by length): a real-time socket sends to a group through its
 * station alone, so the station's device or address may be named (or none,
 * the default); any other is EADDRNOTAVAIL, as Linux answers an address it
 * has no device for.
 */
/*
 * An interface as IP_MULTICAST_IF and the group memberships name it, read
 * as Linux reads it, by length: a struct ip_mreqn, an ip_mreq (its
 * interface lands on imr_address) or, for IP_MULTICAST_IF alone
 * (@p in_addr_too), an in_addr.  -EINVAL when shorter.
 */
static int read_mreqn(const void *val, socklen_t len, int in_addr_too, struct ip_mreqn *m)
{
	memset(m, 0, sizeof(*m));
	if (len >= sizeof(struct ip_mreqn))
		memcpy(m, val, sizeof(*m));
	else if (len >= sizeof(struct ip_mreq))
		memcpy(m, val, sizeof(struct ip_mreq));
	else if (in_addr_too && len >= sizeof(struct in_addr))
		memcpy(&m->imr_address, val, sizeof(struct in_addr));
	else
		return -EINVAL;
	return 0;
}

/*
 * MCAST_JOIN_GROUP and MCAST_LEAVE_GROUP's struct group_req as the ip_mreqn
 * it means for IPv4: the group, the interface by index.  -EINVAL when short
 * or not an IPv4 group, as Linux answers.
 */
static int read_group_req(const void *val, socklen_t len, struct ip_mreqn *m)
{
	struct group_req g;
	struct sockaddr_in sin;

	if (len < sizeof(g))
		return -EINVAL;
	memcpy(&g, val, sizeof(g));
	if (g.gr_group.ss_family != AF_INET)
		return -EINVAL;
	memcpy(&sin, &g.gr_group, sizeof(sin));
	memset(m, 0, sizeof(*m));
	m->imr_multiaddr = sin.sin_addr;
	m->imr_ifindex = (int)g.gr_interface;
	return 0;
}

/* IP_ADD_MEMBERSHIP's and MCAST_JOIN_GROUP's join (1), their leave's 0, else -1. */
static int membership_join(int opt)
{
	switch (opt) {
	case IP_ADD_MEMBERSHIP:
	case MCAST_JOIN_GROUP:
		return 1;
	case IP_DROP_MEMBERSHIP:
	case MCAST_LEAVE_GROUP:
		return 0;
	}
	return -1;
}

/* A membership option's value as an ip_mreqn, read as Linux reads each of them. */
static int read_membership(int opt, const void *val, socklen_t len, struct ip_mreqn *m)
{
	if (opt == MCAST_JOIN_GROUP || opt == MCAST_LEAVE_GROUP)
		return read_group_req(val, len, m);
	return read_mreqn(val, len, 0, m);
}

/*
 * Whether @p m names the station's device: by its index, by its address
 * @p own (network order; 0 unknown: any), or not at all (the default).
 */
static int names_station(const struct ip_mreqn *m, uint32_t own)
{
	if (m->imr_ifindex)
		return m->imr_ifindex == rp_station_ifindex();
	return m->imr_address.s_addr == htonl(INADDR_ANY) || !own || m->imr_address.s_addr == own;
}

static int multicast_if(struct rsock *rs, const void *val, socklen_t len)
{
	uint32_t own = htonl(__atomic_load_n(&rs->ch->shm->udp.ip, __ATOMIC_RELAXED));
	struct ip_mreqn m;

	if (read_mreqn(val, len, 1, &m) < 0)
		return rp_fail(-EINVAL);
	if (!names_station(&m, own))
		return rp_fail(-EADDRNOTAVAIL);
	rs->mc_if = m.imr_address.s_addr; /* what getsockopt() gives back, as Linux's */
	return 0;
}

/*
 * SO_BINDTODEVICE (a name, cut at IFNAMSIZ - 1 as Linux cuts it) and
 * SO_BINDTOIFINDEX (a number), "" or 0 unbinding.  A real-time socket's
 * traffic is its station's: the station's device may be named; a device
 * that does not exist is ENODEV, as Linux answers; another device EINVAL,
 * where Linux would leave the socket deaf to the station (a socket bound to
 * one before it went real-time stays Linux's instead: rp_go_rt).  The port
 * Linux holds for the socket follows (share_as).
 */
static int bind_to_device(struct rsock *rs, int opt, const void *val, socklen_t len)
{
	char name[IFNAMSIZ] = "";
	int ifx = 0;

	if (opt == SO_BINDTOIFINDEX) {
		if (len < sizeof(int))
			return rp_fail(-EINVAL);
		memcpy(&ifx, val, sizeof(int));
		if (ifx < 0)
			return rp_fail(-EINVAL);
		if (ifx && !if_indextoname((unsigned)ifx, name))
			return rp_fail(-ENODEV);
	} else {
		memcpy(name, val, len < IFNAMSIZ - 1 ? len : IFNAMSIZ - 1);
		if (name[0] && !(ifx = (int)if_nametoindex(name)))
			return rp_fail(-ENODEV);
	}
	if (ifx && ifx != rp_station_ifindex()) {
		if (rp_conf.verbose)
			rp_warn("SO_BINDTODEVICE %s: a real-time socket is %s's", name,
				rp_conf.dev);
		return rp_fail(-EINVAL);
	}
	rs->bound_if = ifx;
	rp_sockopts_changed(rs);
	return 0;
}

/* SO_BINDTODEVICE read back as Linux gives it: the name with its NUL, or nothing. */
static int bound_device(const struct rsock *rs, void *val, socklen_t *len)
{
	char name[IFNAMSIZ] = "";
	socklen_t n = 0;

	if (rp_bad_ptr(len, sizeof(*len)))
		return rp_fail(-EFAULT);
	if (rs->bound_if) {
		if (!if_indextoname((unsigned)rs->bound_if, name))
			return rp_fail(-ENODEV); /* the device went away meanwhile */
		n = (socklen_t)strlen(name) + 1;
		if (n > *len)
			return rp_fail(-EINVAL);
		if (rp_bad_ptr(val, n))
			return rp_fail(-EFAULT);
		memcpy(val, name, n);
	}
	*len = n;
	return 0;
}

/*
 * IP_ADD_MEMBERSHIP and IP_DROP_MEMBERSHIP, or MCAST_JOIN_GROUP and
 * MCAST_LEAVE_GROUP with an IPv4 group, on a real-time socket: the group
 * is joined at the station, whose device is the only one it can serve.  An
 * interface that does not exist is ENODEV, as Linux answers; another device
 * EADDRNOTAVAIL, where Linux would join there and the socket would hear
 * that device's traffic, which the station cannot give it (and a group it
 * never joined there, as Linux's leave says).  A socket in a group on
 * another device before it went real-time stays Linux's (note_group).
 */
static int membership(struct rsock *rs, int opt, const void *val, socklen_t len)
{
	uint32_t own = htonl(__atomic_load_n(&rs->ch->shm->udp.ip, __ATOMIC_RELAXED));
	char name[IFNAMSIZ];
	struct ip_mreqn m;
	int rc;

	if (read_membership(opt, val, len, &m) < 0)
		return rp_fail(-EINVAL);
	if (!names_station(&m, own)) {
		if (m.imr_ifindex && (m.imr_ifindex < 0 || !if_indextoname(m.imr_ifindex, name)))
			return rp_fail(-ENODEV);
		if (rp_conf.verbose)
			rp_warn("a group on another device than %s: not a real-time socket's",
				rp_conf.dev);
		return rp_fail(-EADDRNOTAVAIL);
	}
	rc = rtn_app_ipv4_group(rs->ch, ntohl(m.imr_multiaddr.s_addr), membership_join(opt));
	if (rc < 0 && rp_conf.verbose)
		rp_warn("%s", rtn_last_error());
	return rc < 0 ? rp_fail(rc == -ENOTCONN ? -ENETDOWN : rc) : 0;
}

static int setsockopt_held(struct rsock *rs, int level, int opt, const void *val, socklen_t len)
{
	int v = 0;

	if (level == SOL_SOCKET && (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO))
		return get_timeval_ns(val, len,
				      opt == SO_RCVTIMEO ? &rs->rcvtimeo_ns : &rs->sndtimeo_ns);
	if (len && (!val || rp_bad_ptr(val, len)))
		return rp_fail(-EFAULT);
	if (level == SOL_SOCKET && (opt == SO_BINDTODEVICE || opt == SO_BINDTOIFINDEX))
		return bind_to_device(rs, opt, val, len);
	if ((level == SOL_SOCKET || level == IPPROTO_IP) && len >= sizeof(int))
		memcpy(&v, val, sizeof(int));
	else if (level == IPPROTO_IP && len >= 1) /* IP options take a byte too */
		v = *(const unsigned char *)val;
	if (level == SOL_SOCKET) {
		if (len < sizeof(int))
			return rp_fail(-EINVAL);
		switch (opt) {
		case SO_RCVBUF:
			rs->rcvbuf = v < 1152 ? 2304 : 2 * v; /* as Linux reports it back */
			return 0;
		case SO_SNDBUF:
			rs->sndbuf = v < 2304 ? 4608 : 2 * v;
			return 0;
		case SO_PRIORITY:
			if (v < 0 ||
			    v > 6) /* above 6 needs CAP_NET_ADMIN in Linux; keep its range */
				return rp_fail(-EPERM);
			rs->so_priority = v;
			return 0;
		case SO_TIMESTAMPNS:
			rs->ts_ns = !!v;
			return 0;
		case SO_TIMESTAMP:
			rs->ts_us = !!v;
			return 0;
		case SO_TIMESTAMPING:
			rs->ts_flags = v;
			return 0;
		case SO_RCVLOWAT:
			/* as Linux stores it: 0 is 1, a negative value no limit */
			rs->kept[RP_SO_RCVLOWAT] = v < 0 ? INT_MAX : (v > 0 ? v : 1);
			return 0;
		}
		if (kept_index(level, opt) >= 0) {
			rs->kept[kept_index(level, opt)] = v ? 1 : 0;
			if (opt == SO_REUSEADDR || opt == SO_REUSEPORT)
				rp_sockopts_changed(rs);
			return 0;
		}
		return rp_fail(-ENOPROTOOPT);
	}
	if (level == IPPROTO_IP && rs->domain == AF_INET) {
		switch (opt) {
		case IP_TOS:
			rs->ip_tos = v & 0xfc;
			return 0;
		case IP_TTL:
		case IP_MULTICAST_TTL:
			/* accepted, and nothing routes on a segment: its frames carry RTN_IP_TTL */
			return v < -1 || v > 255 ? rp_fail(-EINVAL) : 0;
		case IP_MTU_DISCOVER:
			if (v < IP_PMTUDISC_DONT || v > IP_PMTUDISC_OMIT)
				return rp_fail(-EINVAL);
			rs->kept[RP_IP_MTU_DISCOVER] = v;
			return 0;
		case IP_MULTICAST_LOOP:
		case IP_PKTINFO:
		case IP_RECVERR:
			rs->kept[kept_index(level, opt)] = v ? 1 : 0;
			if (opt == IP_MULTICAST_LOOP)
				rp_sockopts_changed(rs);
			return 0;
		case IP_MULTICAST_IF:
			return multicast_if(rs, val, len);
		case IP_ADD_MEMBERSHIP:
		case IP_DROP_MEMBERSHIP:
		case MCAST_JOIN_GROUP:
		case MCAST_LEAVE_GROUP:
			return membership(rs, opt, val, len);
		}
		return rp_fail(-ENOPROTOOPT);
	}
	return rp_fail(-ENOPROTOOPT);
}

/*
 * A group a pending socket joined or left through the kernel (@p m of
 * option @p opt, which the kernel took: an ip_mreq, an ip_mreqn or a
 * group_req), noted so that it goes along to the station when the socket
 * goes real-time.  A group joined on a device other than the station's (by
 * address or index; none named is the station's) keeps the socket Linux's:
 * the program asked for that device's traffic.
 */
static void note_group(struct rsock *rs, int opt, const void *m, socklen_t len)
{
	int join = membership_join(opt);
	struct ip_mreqn r;
	uint32_t group;
	int i;

	if (read_membership(opt, m, len, &r) < 0)
		return; /* the kernel took it: not so */
	group = ntohl(r.imr_multiaddr.s_addr);
	for (i = 0; i < rs->n_groups && rs->groups[i] != group; i++)
		;
	if (!join) {
		if (i < rs->n_groups)
			rs->groups[i] = rs->groups[--rs->n_groups];
		return;
	}
	if (!names_station(&r, htonl(rp_conf.rt_addr)))
		rs->groups_elsewhere = 1;
	else if (i == rs->n_groups && rs->n_groups < RP_MAX_GROUPS)
		rs->groups[rs->n_groups++] = group;
	else if (i == rs->n_groups)
		rs->groups_elsewhere = 1; /* more than Linux keeps by default: not all could go */
}

EXPORT int setsockopt(int fd, int level, int opt, const void *val, socklen_t len)
{
	struct rsock *rs = rp_hold(fd);
	int rc;

	if (!rs)
		return rp_real.libc_setsockopt(fd, level, opt, val, len);
	if (rs->state == RP_RT)
		return rp_put_ret(rs, setsockopt_held(rs, level, opt, val, len));
	if (rs->domain != AF_INET || level != IPPROTO_IP || membership_join(opt) < 0)
		return rp_put_ret(rs, rp_real.libc_setsockopt(fd, level, opt, val, len));
	/* judged meanwhile by another thread: then the station's */
	pthread_mutex_lock(&rs->judge_lock);
	if (rs->state == RP_RT) {
		rc = setsockopt_held(rs, level, opt, val, len);
	} else {
		rc = rp_real.libc_setsockopt(fd, level, opt, val, len);
		if (rc == 0)
			note_group(rs, opt, val, len);
	}
	pthread_mutex_unlock(&rs->judge_lock);
	return rp_put_ret(rs, rc);
}

static int getsockopt_held(struct rsock *rs, int level, int opt, void *val, socklen_t *len)
{
	if (level == SOL_SOCKET) {
		switch (opt) {
		case SO_TYPE:
			return put_int(val, len, rs->type);
		case SO_DOMAIN:
			return put_int(val, len, rs->domain);
		case SO_PROTOCOL:
			return put_int(val, len,
				       rs->domain == AF_INET ? IPPROTO_UDP : htons(rs->ethertype));
		case SO_ERROR:
			return put_int(val, len, rs->dead ? ENETDOWN : 0);
		case SO_RCVBUF:
			return put_int(val, len, rs->rcvbuf);
		case SO_SNDBUF:
			return put_int(val, len, rs->sndbuf);
		case SO_PRIORITY:
			return put_int(val, len, rs->so_priority);
		case SO_TIMESTAMPNS:
			return put_int(val, len, rs->ts_ns);
		case SO_TIMESTAMP:
			return put_int(val, len, rs->ts_us);
		case SO_TIMESTAMPING:
			return put_int(val, len, rs->ts_flags);
		case SO_ACCEPTCONN:
			return put_int(val, len, 0);
		case SO_RCVTIMEO:
			return put_timeval(val, len, rs->rcvtimeo_ns);
		case SO_SNDTIMEO:
			return put_timeval(val, len, rs->sndtimeo_ns);
		case SO_BINDTODEVICE:
			return bound_device(rs, val, len);
		case SO_BINDTOIFINDEX:
			return put_int(val, len, rs->bound_if);
		}
	}
	if (level == IPPROTO_IP && rs->domain == AF_INET) {
		switch (opt) {
		case IP_TOS:
			return put_int(val, len, rs->ip_tos);
		case IP_TTL:
		case IP_MULTICAST_TTL:
			return put_int(val, len, RTN_IP_TTL); /* what its frames carry */
		case IP_MULTICAST_IF:
			if (rp_bad_ptr(len, sizeof(*len)) || *len < sizeof(struct in_addr))
				return rp_fail(-EINVAL);
			*len = sizeof(struct in_addr);
			if (rp_bad_ptr(val, *len))
				return rp_fail(-EFAULT);
			memcpy(val, &rs->mc_if, sizeof(rs->mc_if));
			return 0;
		}
	}
	if (kept_index(level, opt) >= 0 && (level == SOL_SOCKET || rs->domain == AF_INET))
		return put_int(val, len, rs->kept[kept_index(level, opt)]);
	return rp_fail(-ENOPROTOOPT);
}

EXPORT int getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
	struct rsock *rs = rp_hold_rt(fd);

	if (!rs)
		return rp_real.libc_getsockopt(fd, level, opt, val, len);
	return rp_put_ret(rs, getsockopt_held(rs, level, opt, val, len));
}

static int put_name(struct sockaddr *addr, socklen_t *len, const void *sa, socklen_t salen)
{
	socklen_t have;
	int rc = user_room(addr, len, salen, &have);

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
