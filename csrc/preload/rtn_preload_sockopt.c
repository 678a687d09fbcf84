// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_sockopt.c
 * @brief setsockopt and getsockopt: a real-time socket's options, kept and
 *        reported back with the kernel's semantics and errno values, the
 *        ones the station acts on passed to it (slot priority, reuse,
 *        multicast memberships and loop, the device bound), and a pending
 *        socket's group memberships noted so they go along when it goes
 *        real-time.  Every other socket's options are the kernel's.
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

static int put_int(void *val, socklen_t *len, int v)
{
	socklen_t have;
	int rc = rp_user_room(val, len, sizeof(int), &have);

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

/*
 * IP_MULTICAST_IF, read as Linux reads it (struct ip_mreqn, ip_mreq or
 * in_addr, by length): a real-time socket sends to a group through its
 * station alone, so the station's device or address may be named (or none,
 * the default); any other is EADDRNOTAVAIL, as Linux answers an address it
 * has no device for.
 */
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
