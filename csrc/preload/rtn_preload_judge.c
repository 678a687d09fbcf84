// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_judge.c
 * @brief Deciding and opening: which path a socket takes by the rules, the
 *        channel it gets from the station daemon, and the take-over that
 *        puts the channel's notify eventfd under the socket's number (with
 *        its epoll registrations moved along).  No daemon: the socket stays
 *        the kernel's with one warning, or fails (RTNET_FALLBACK=fail).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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
#include "rtn_preload_priv.h"

#define EPHEMERAL_TRIES 8

/* ---- judging and opening --------------------------------------------------------- */

/* The options of a UDP socket the station acts on (the port shared among one user's sockets) */
static uint32_t udp_sockopts(const struct rsock *rs)
{
	return (rs->kept[RP_SO_REUSEADDR] ? RTN_UDP_SHARE_ADDR : 0) |
	       (rs->kept[RP_SO_REUSEPORT] ? RTN_UDP_SHARE_PORT : 0) |
	       (rs->kept[RP_IP_MULTICAST_LOOP] ? 0 : RTN_UDP_NO_MC_LOOP);
}

/*
 * Socket @p fd of Linux's own shares its port as @p rs says: SO_REUSEADDR,
 * SO_REUSEPORT, and the device it is bound to (Linux lets sockets bound to
 * different devices share a port whatever their other options say).
 */
static void share_as(int fd, const struct rsock *rs)
{
	int addr = rs->kept[RP_SO_REUSEADDR], port = rs->kept[RP_SO_REUSEPORT];

	rp_real.libc_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &addr, sizeof(addr));
	rp_real.libc_setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &port, sizeof(port));
	rp_real.libc_setsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &rs->bound_if,
				sizeof(rs->bound_if));
}

/* A real-time UDP socket's SO_REUSEADDR, SO_REUSEPORT, IP_MULTICAST_LOOP or device changed. */
void rp_sockopts_changed(struct rsock *rs)
{
	if (rs->state != RP_RT || rs->domain != AF_INET)
		return;
	rtn_app_udp_sockopts(rs->ch, udp_sockopts(rs));
	if (rs->hold_fd >= 0) /* the port Linux holds for it (hold_port) */
		share_as(rs->hold_fd, rs);
}

int rp_open_channel(struct rsock *rs, uint16_t udp_port, int slot, int prio, int64_t lifetime_ns)
{
	struct rtn_chan_opts o;
	int rc;

	rtn_chan_opts_init(&o);
	if (rs->domain == AF_INET) {
		o.udp_port = udp_port;
		o.udp_share = udp_sockopts(rs) & (RTN_UDP_SHARE_ADDR | RTN_UDP_SHARE_PORT);
	} else {
		o.ethertype = rs->ethertype;
	}
	if (slot >= 0)
		o.slot = slot;
	if (prio >= 0)
		o.prio = prio;
	o.lifetime_ns = lifetime_ns; /* the rule's; 0 none */
	/* a ring at least as deep as the RTnet pool the socket asked for */
	while (o.depth < (uint32_t)(RTNET_SOCKET_POOL + rs->pool) && o.depth < RTN_CHAN_MAX_DEPTH)
		o.depth *= 2;
	rc = rtn_app_open(rp_conf.dev, rp_conf.have_netns ? rp_conf.netns : NULL, &o, &rs->ch);
	if (rc < 0 && rp_conf.verbose)
		rp_warn("%s", rtn_last_error());
	return rc;
}

/* What rtn_app_open() says when no daemon answers: none there, or one that just died. */
int rp_no_daemon(int rc)
{
	return rc == -ENOENT || rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -EPIPE;
}

/* Once per process: every later socket falls back the same way. */
void rp_no_daemon_warning(void)
{
	static int said;

	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		rp_warn("no station daemon for %s: sockets stay the kernel's (%s)", rp_conf.dev,
			rtn_last_error());
}

/* The slot priority a socket's own options ask for, where no rule set one. */
static int own_prio(const struct rsock *rs)
{
	if (rs->prio >= 0)
		return rs->prio;
	if (rs->so_priority > 0) /* Linux: higher is more urgent; RTnet: 0 is */
		return rs->so_priority >= 15 ? 0 : 15 - rs->so_priority;
	if (rs->ip_tos) /* IP precedence 0..7 over the upper half of the range */
		return 15 - 2 * (rs->ip_tos >> 5);
	return -1;
}

/* A port the kernel would give an unbound socket, for a real-time socket sending first. */
static int ephemeral_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = rp_real.libc_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -errno;
	if (rp_real.libc_bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    rp_real.libc_getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	rp_real.libc_close(fd);
	return port > 0 ? port : -EADDRNOTAVAIL;
}

/* Learn what the program set on the kernel socket before it is replaced. */
static void adopt_kernel_options(int fd, struct rsock *rs)
{
	struct timeval tv;
	socklen_t len;
	int v, fl = rp_real.libc_fcntl(fd, F_GETFL);

	rs->nonblock = fl >= 0 && (fl & O_NONBLOCK);
	len = sizeof(tv);
	if (!rp_real.libc_getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len))
		rs->rcvtimeo_ns = tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
	len = sizeof(tv);
	if (!rp_real.libc_getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len))
		rs->sndtimeo_ns = tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
#define ADOPT(level, opt, field)                                \
	len = sizeof(v);                                        \
	if (!rp_real.libc_getsockopt(fd, level, opt, &v, &len)) \
		rs->field = v;
	ADOPT(SOL_SOCKET, SO_PRIORITY, so_priority);
	ADOPT(IPPROTO_IP, IP_TOS, ip_tos);
	ADOPT(SOL_SOCKET, SO_TIMESTAMPNS, ts_ns);
	ADOPT(SOL_SOCKET, SO_TIMESTAMP, ts_us);
	ADOPT(SOL_SOCKET, SO_TIMESTAMPING, ts_flags);
	ADOPT(SOL_SOCKET, SO_BINDTOIFINDEX, bound_if);
#undef ADOPT
	rp_opts_adopt(fd, rs);
}

/*
 * A socket of Linux's own, bound to a real-time UDP socket's address and
 * port with its SO_REUSEADDR and SO_REUSEPORT, kept while the socket lives:
 * Linux then refuses the port to a later socket of its own as it would
 * while the program's kernel socket held it (EADDRINUSE, unless both set
 * SO_REUSEADDR or both SO_REUSEPORT).  It hears nothing from the segment
 * (the station takes the port's frames); what Linux's own path sends it
 * waits in a receive buffer kept at its smallest.  Best effort: a port
 * Linux gave another socket meanwhile is not held.
 */
static void hold_port(struct rsock *rs)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(rs->lport),
				  .sin_addr.s_addr = htonl(rs->laddr) };
	int fd, zero = 0;

	if (rs->domain != AF_INET)
		return;
	fd = rp_real.libc_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	share_as(fd, rs);
	rp_real.libc_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &zero, sizeof(zero));
	if (rp_real.libc_bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rp_real.libc_close(fd); /* taken meanwhile, or an address Linux does not have */
		return;
	}
	rs->hold_fd = fd;
}

/*
 * Put the channel's notify eventfd under every number standing for @p rs
 * (the kernel socket closes; another holds its port: hold_port), and move
 * epoll registrations along.  What the kernel socket had received is kept
 * for the program first (rp_backlog_save), and the notify fd says so.
 */
static int take_over(struct rsock *rs)
{
	int fd, nfd = rtn_app_fd(rs->ch), moved[64], n = 0, i, kept = -1;
	uint64_t one = 1;

	pthread_mutex_lock(&rp_table_lock);
	for (fd = 0; fd < RP_MAX_FD; fd++) {
		if (rp_fds[fd].rs != rs)
			continue;
		if (kept < 0) /* every number stands for the one kernel socket */
			kept = rp_backlog_save(fd, rs);
		/* always close-on-exec: a channel cannot survive exec (F_GETFD shows the program's) */
		if (rp_real.libc_dup3(nfd, fd, O_CLOEXEC) < 0) {
			int e = errno;

			pthread_mutex_unlock(&rp_table_lock);
			return -e;
		}
		if (n < (int)(sizeof(moved) / sizeof(moved[0])))
			moved[n++] = fd;
	}
	rs->state = RP_RT;
	pthread_mutex_unlock(&rp_table_lock);
	hold_port(rs);
	if (kept > 0 && rp_real.libc_write(nfd, &one, sizeof(one)) < 0)
		rp_warn("notify descriptor: %s", strerror(errno));
	for (i = 0; i < n; i++)
		rp_epoll_fd_replaced(moved[i]);
	return 0;
}

/*
 * Whether Linux would bind @p rs to @p sa, asked of a socket of its own
 * sharing as @p rs says (its options adopted from its kernel socket): a port
 * one of Linux's own sockets holds is refused as Linux refuses it
 * (EADDRINUSE), and a privileged one too.  An address Linux does not have
 * is not Linux's to judge.  The program's socket stays as it was, unbound,
 * whatever the answer.
 */
static int linux_would_bind(const struct rsock *rs, const struct sockaddr_in *sa)
{
	int probe = rp_real.libc_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (probe < 0)
		return -errno;
	share_as(probe, rs);
	if (rp_real.libc_bind(probe, (const struct sockaddr *)sa, sizeof(*sa)) < 0 &&
	    errno != EADDRNOTAVAIL)
		rc = -errno;
	rp_real.libc_close(probe);
	return rc;
}

/*
 * Why @p rs asked for another device's traffic, of which the station has
 * none (SO_BINDTODEVICE, a group joined there); NULL: it did not.
 */
static const char *elsewhere(const struct rsock *rs)
{
	if (rs->bound_if && rs->bound_if != rp_station_ifindex())
		return "bound to another device";
	if (rs->groups_elsewhere)
		return "in a group on another device";
	return NULL;
}

/*
 * The groups @p rs joined while pending, joined at the station too: all of
 * them, or none and the socket stays the kernel's (its channel closed), so
 * that it never goes real-time deaf to a group it is in.  -1 then.
 */
static int join_groups(struct rsock *rs)
{
	int i, rc;

	for (i = 0; i < rs->n_groups; i++) {
		rc = rtn_app_ipv4_group(rs->ch, rs->groups[i], 1);
		if (rc < 0) {
			rp_warn("a UDP socket stays the kernel's: its group could not be joined "
				"at the station (%s)",
				rtn_last_error());
			rtn_app_close(rs->ch); /* the station leaves the channel's groups with it */
			rs->ch = NULL;
			return -1;
		}
	}
	return 0;
}

/*
 * A pending UDP socket goes real-time on local port @p port (0: one the
 * kernel would give).  -errno when the channel cannot be had; 1: the caller
 * goes on with the kernel, when no daemon answered and RTNET_FALLBACK=kernel,
 * when the program bound the socket to a device other than the station's
 * (SO_BINDTODEVICE: it asked for that device's traffic alone) or joined a
 * group on one, or when a group it joined could not be joined at the station.
 * With @p kbind (a bind()'s address), Linux judges the address first
 * (linux_would_bind).  Refused, the socket is as it was: the program may
 * bind it elsewhere.
 */
int rp_go_rt(int fd, struct rsock *rs, uint16_t port, const struct rtn_rule *r,
	     const struct sockaddr_in *kbind)
{
	int rc, tries = port ? 1 : EPHEMERAL_TRIES, slot, prio;
	const char *why;

	adopt_kernel_options(fd, rs);
	if ((why = elsewhere(rs))) {
		if (rp_conf.verbose)
			rp_warn("a UDP socket %s stays the kernel's", why);
		return 1;
	}
	if (kbind && (rc = linux_would_bind(rs, kbind)) < 0)
		return rc;
	slot = r->slot >= 0 ? r->slot : rs->slot;
	prio = r->prio >= 0 ? r->prio : own_prio(rs);
	do {
		int p = port ? port : ephemeral_port();

		if (p < 0)
			return p;
		rc = rp_open_channel(rs, (uint16_t)p, slot, prio, r->lifetime_ns);
		if (rc == 0)
			rs->lport = (uint16_t)p;
	} while (rc == -EADDRINUSE && --tries > 0);
	if (rp_no_daemon(rc)) {
		if (rp_conf.fail_without_daemon)
			return -ENETDOWN;
		rp_no_daemon_warning();
		return 1;
	}
	if (rc < 0)
		return rc;
	/* what the station delivers by: the address bound (0 the wildcard), the options */
	rtn_app_udp_bound(rs->ch, rs->laddr);
	rtn_app_udp_sockopts(rs->ch, udp_sockopts(rs));
	if (join_groups(rs) < 0)
		return 1;
	if (rp_conf.verbose)
		rp_warn("UDP port %u on the real-time path of %s", rs->lport, rp_conf.dev);
	return take_over(rs);
}

/* A pending socket about to talk to @p dst: judged now, so it sends where the rules say. */
static int judge_remote(int fd, struct rsock *rs, const struct sockaddr_in *dst)
{
	const struct rtn_rule *r;
	int rc;

	r = rtn_rules_match_udp(&rp_conf.rules, rs->laddr, rs->lport, 1,
				ntohl(dst->sin_addr.s_addr), ntohs(dst->sin_port));
	if (!r || r->action == RTN_RULE_OS) {
		rp_forget(rs);
		return 0;
	}
	rc = rp_go_rt(fd, rs, rs->lport, r, NULL);
	if (rc == 1) {
		rp_forget(rs);
		return 0;
	}
	return rc;
}

int rp_judge_remote(int fd, struct rsock *rs, const struct sockaddr_in *dst)
{
	int rc = 0;

	/*
	 * Two threads sending first on one socket: each would open a channel
	 * of its own on its own port, and all but the last stay open, unread.
	 */
	pthread_mutex_lock(&rs->judge_lock);
	if (rs->state == RP_PENDING && rp_lookup(fd) == rs)
		rc = judge_remote(fd, rs, dst);
	pthread_mutex_unlock(&rs->judge_lock);
	return rc;
}

/* Called by the send path for a pending socket with a destination; 0: it is decided. */
int rp_judge_send(int fd, struct rsock *rs, const struct sockaddr *to, socklen_t tolen);
int rp_judge_send(int fd, struct rsock *rs, const struct sockaddr *to, socklen_t tolen)
{
	struct sockaddr_in dst;

	if (!to || tolen < sizeof(dst) || rp_bad_ptr(to, tolen))
		return 0;
	memcpy(&dst, to, sizeof(dst));
	if (dst.sin_family != AF_INET)
		return 0;
	return rp_judge_remote(fd, rs, &dst);
}
