// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload.c
 * @brief librtnet_preload.so, the library rtnet-run preloads: an unmodified
 *        program's UDP and packet sockets that the rules select go through
 *        the station's real-time path (application channels, rtn_app.h),
 *        everything else to the kernel untouched.
 *
 * This file holds the descriptor table and the calls that create, judge,
 * configure and close sockets; the data path is rtn_preload_io.c, the
 * waits rtn_preload_wait.c.  A UDP socket is the kernel's until the rules
 * judge it (at bind, connect or its first send); if they pick the
 * real-time path the library opens a channel for its port and puts the
 * channel's notify eventfd in place of the kernel socket under the same
 * number.  A socket the rules leave to the kernel is forgotten, so it
 * costs nothing from then on.
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

#define EXPORT __attribute__((visibility("default")))
#define EPHEMERAL_TRIES 8
#define RTNET_SOCKET_POOL 16 /* RTnet's buffers per socket before RTNET_RTIOC_EXTPOOL */

struct rp_real rp_real;
struct rp_conf rp_conf;
struct rp_fd rp_fds[RP_MAX_FD];
pthread_mutex_t rp_table_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- set-up ------------------------------------------------------------------ */

void rp_warn(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* straight to the descriptor: stdio may not be set up, or be the program's */
	if (rp_real.write && rp_real.write(2, "rtnet-run: ", 11) == 11)
		n = (int)rp_real.write(2, line, n);
}

static void *real_fn(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		/* nothing works without it: say which, before main, and stop */
		static const char msg[] = "rtnet-run: the C library has no ";
		ssize_t w = write(2, msg, sizeof(msg) - 1);

		w = write(2, name, strlen(name));
		w = write(2, "\n", 1);
		(void)w;
		_exit(127);
	}
	return p;
}

static void find_real(void)
{
#define REAL(f) rp_real.f = real_fn(#f)
	REAL(socket);
	REAL(bind);
	REAL(connect);
	REAL(sendmsg);
	REAL(recvmsg);
	REAL(sendmmsg);
	REAL(recvmmsg);
	REAL(send);
	REAL(sendto);
	REAL(recv);
	REAL(recvfrom);
	REAL(read);
	REAL(write);
	REAL(readv);
	REAL(writev);
	REAL(close);
	REAL(dup);
	REAL(dup2);
	REAL(dup3);
	REAL(fcntl);
	REAL(ioctl);
	REAL(getsockname);
	REAL(getpeername);
	REAL(setsockopt);
	REAL(getsockopt);
	REAL(poll);
	REAL(ppoll);
	REAL(select);
	REAL(pselect);
	REAL(epoll_create1);
	REAL(epoll_ctl);
	REAL(epoll_wait);
	REAL(epoll_pwait);
	REAL(shutdown);
#undef REAL
}

/* Read a whole small file (the rules) into a new buffer; NULL with errno. */
static char *slurp(const char *path)
{
	char *buf = malloc(65537);
	ssize_t n, used = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		int e = fd < 0 ? errno : ENOMEM;

		free(buf);
		if (fd >= 0)
			rp_real.close(fd);
		errno = e;
		return NULL;
	}
	while (used < 65536 && (n = rp_real.read(fd, buf + used, 65536 - used)) > 0)
		used += n;
	rp_real.close(fd);
	if (used == 65536) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[used] = 0;
	return buf;
}

static void fatal_config(const char *what)
{
	rp_warn("%s", what);
	_exit(2);
}

/* The default rules after the user's: the station's address, its subnet, its EtherTypes. */
static void default_rules(void)
{
	const char *subnet = getenv("RTNET_RT_SUBNET"), *ets = getenv("RTNET_ETHERTYPES");
	char text[1024], err[256], a[16];
	size_t used = 0;

	text[0] = 0;
	if (rp_conf.rt_addr) {
		struct in_addr in = { .s_addr = htonl(rp_conf.rt_addr) };

		inet_ntop(AF_INET, &in, a, sizeof(a));
		used += snprintf(text + used, sizeof(text) - used, "rt udp %s *\n", a);
	}
	if (subnet && *subnet && used < sizeof(text))
		used += snprintf(text + used, sizeof(text) - used, "rt udp * %s\n", subnet);
	while (ets && *ets && used < sizeof(text)) {
		size_t len = strcspn(ets, ",");

		used += snprintf(text + used, sizeof(text) - used, "rt packet %.*s\n", (int)len,
				 ets);
		ets += len;
		if (*ets)
			ets++;
	}
	if (used >= sizeof(text))
		fatal_config("RTNET_RT_SUBNET or RTNET_ETHERTYPES is too long");
	if (rtn_rules_parse(text, "the default rules (RTNET_RT_SUBNET, RTNET_ETHERTYPES)",
			    &rp_conf.rules, err, sizeof(err)))
		fatal_config(err);
}

static void atfork_child(void)
{
	int fd;

	/* a thread of the parent may have held them at the fork: the child has no such thread */
	pthread_mutex_init(&rp_table_lock, NULL);
	for (fd = 0; fd < RP_MAX_FD; fd++) {
		struct rsock *rs = rp_fds[fd].rs;

		if (rs) {
			pthread_mutex_init(&rs->tx_lock, NULL);
			pthread_mutex_init(&rs->rx_lock, NULL);
		}
	}
}

__attribute__((constructor)) static void rp_init(void)
{
	const char *dev = getenv("RTNET_DEV"), *ns = getenv("RTNET_NETNS");
	const char *addr = getenv("RTNET_RT_ADDR"), *rules = getenv("RTNET_RULES");
	const char *file = getenv("RTNET_RULES_FILE"), *fb = getenv("RTNET_FALLBACK");
	const char *ifx = getenv("RTNET_IFINDEX");
	char err[320];

	find_real();
	snprintf(rp_conf.dev, sizeof(rp_conf.dev), "%s", dev && *dev ? dev : "rteth0");
	if (ns && *ns) {
		snprintf(rp_conf.netns, sizeof(rp_conf.netns), "%s", ns);
		rp_conf.have_netns = 1;
	}
	if (addr && *addr) {
		struct in_addr in;

		if (inet_pton(AF_INET, addr, &in) != 1)
			fatal_config("RTNET_RT_ADDR is not an IPv4 address");
		rp_conf.rt_addr = ntohl(in.s_addr);
	}
	rp_conf.ifindex = ifx ? atoi(ifx) : 0;
	if (fb && *fb && strcmp(fb, "kernel") != 0 && strcmp(fb, "fail") != 0)
		fatal_config("RTNET_FALLBACK is kernel or fail");
	rp_conf.fail_without_daemon = fb && !strcmp(fb, "fail");
	rp_conf.verbose = getenv("RTNET_VERBOSE") && atoi(getenv("RTNET_VERBOSE")) > 0;
	if (rules && *rules &&
	    rtn_rules_parse(rules, "RTNET_RULES", &rp_conf.rules, err, sizeof(err)))
		fatal_config(err);
	if (file && *file) {
		char *text = slurp(file);

		if (!text) {
			snprintf(err, sizeof(err), "rules file %.200s: %s", file, strerror(errno));
			fatal_config(err);
		}
		if (rtn_rules_parse(text, file, &rp_conf.rules, err, sizeof(err)))
			fatal_config(err);
		free(text);
	}
	default_rules();
	pthread_atfork(NULL, NULL, atfork_child);
}

/* ---- the table ------------------------------------------------------------------ */

int rp_bad_addr(uintptr_t a, size_t len)
{
	if (!len)
		return 0;
	/* what can be told without touching it: NULL's page, past user space, a wrap */
	return a < 4096 || a > 0x7fffffffffffULL || a + len < a || a + len > 0x800000000000ULL;
}

static struct rsock *rs_new(int domain, int type)
{
	struct rsock *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->domain = domain;
	rs->type = type;
	rs->prio = -1;
	rs->slot = -1;
	rs->rcvbuf = rs->sndbuf = 212992; /* Linux's default rmem/wmem, as getsockopt shows */
	pthread_mutex_init(&rs->tx_lock, NULL);
	pthread_mutex_init(&rs->rx_lock, NULL);
	return rs;
}

static void rs_free(struct rsock *rs)
{
	if (rs->ch)
		rtn_app_close(rs->ch);
	pthread_mutex_destroy(&rs->tx_lock);
	pthread_mutex_destroy(&rs->rx_lock);
	free(rs);
}

void rp_unref_locked(struct rsock *rs)
{
	if (--rs->refs == 0)
		rs_free(rs);
}

static void table_set_locked(int fd, struct rsock *rs, int cloexec)
{
	struct rsock *old = rp_fds[fd].rs;

	if (rs)
		rs->refs++;
	rp_fds[fd].cloexec = cloexec;
	__atomic_store_n(&rp_fds[fd].rs, rs, __ATOMIC_RELEASE);
	if (old)
		rp_unref_locked(old);
}

/* The rules left it to the kernel: forget it everywhere. */
static void forget(struct rsock *rs)
{
	int fd;

	pthread_mutex_lock(&rp_table_lock);
	for (fd = 0; fd < RP_MAX_FD && rs->refs; fd++)
		if (rp_fds[fd].rs == rs)
			table_set_locked(fd, NULL, 0);
	pthread_mutex_unlock(&rp_table_lock);
}

int rp_alive(struct rsock *rs)
{
	struct pollfd p = { .fd = rtn_app_ctlfd(rs->ch), .events = POLLRDHUP };

	if (rs->dead)
		return 0;
	/* the daemon's end closed: a reply to a request of ours is not a hang-up */
	if (p.fd >= 0 && rp_real.poll(&p, 1, 0) > 0)
		rs->dead = 1;
	return !rs->dead;
}

/* ---- judging and opening --------------------------------------------------------- */

static int open_channel(struct rsock *rs, uint16_t udp_port, int slot, int prio)
{
	struct rtn_chan_opts o;
	int rc;

	rtn_chan_opts_init(&o);
	if (rs->domain == AF_INET)
		o.udp_port = udp_port;
	else
		o.ethertype = rs->ethertype;
	if (slot >= 0)
		o.slot = slot;
	if (prio >= 0)
		o.prio = prio;
	/* a ring at least as deep as the RTnet pool the socket asked for */
	while (o.depth < (uint32_t)(RTNET_SOCKET_POOL + rs->pool) && o.depth < RTN_CHAN_MAX_DEPTH)
		o.depth *= 2;
	rc = rtn_app_open(rp_conf.dev, rp_conf.have_netns ? rp_conf.netns : NULL, &o, &rs->ch);
	if (rc < 0 && rp_conf.verbose)
		rp_warn("%s", rtn_last_error());
	return rc;
}

/* What rtn_app_open() says when no daemon answers: none there, or one that just died. */
static int no_daemon(int rc)
{
	return rc == -ENOENT || rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -EPIPE;
}

/* Once per process: every later socket falls back the same way. */
static void no_daemon_warning(void)
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
	int fd = rp_real.socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -errno;
	if (rp_real.bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    rp_real.getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	rp_real.close(fd);
	return port > 0 ? port : -EADDRNOTAVAIL;
}

/* Learn what the program set on the kernel socket before it is replaced. */
static void adopt_kernel_options(int fd, struct rsock *rs)
{
	struct timeval tv;
	socklen_t len;
	int v, fl = rp_real.fcntl(fd, F_GETFL);

	rs->nonblock = fl >= 0 && (fl & O_NONBLOCK);
	len = sizeof(tv);
	if (!rp_real.getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len))
		rs->rcvtimeo_ns = tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
	len = sizeof(tv);
	if (!rp_real.getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len))
		rs->sndtimeo_ns = tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
#define ADOPT(level, opt, field)                           \
	len = sizeof(v);                                   \
	if (!rp_real.getsockopt(fd, level, opt, &v, &len)) \
		rs->field = v;
	ADOPT(SOL_SOCKET, SO_PRIORITY, so_priority);
	ADOPT(IPPROTO_IP, IP_TOS, ip_tos);
	ADOPT(SOL_SOCKET, SO_TIMESTAMPNS, ts_ns);
	ADOPT(SOL_SOCKET, SO_TIMESTAMP, ts_us);
	ADOPT(SOL_SOCKET, SO_TIMESTAMPING, ts_flags);
#undef ADOPT
}

/*
 * Put the channel's notify eventfd under every number standing for @p rs
 * (the kernel socket closes), and move epoll registrations along.
 */
static int take_over(struct rsock *rs)
{
	int fd, nfd = rtn_app_fd(rs->ch), moved[64], n = 0, i;

	pthread_mutex_lock(&rp_table_lock);
	for (fd = 0; fd < RP_MAX_FD; fd++) {
		if (rp_fds[fd].rs != rs)
			continue;
		/* always close-on-exec: a channel cannot survive exec (F_GETFD shows the program's) */
		if (rp_real.dup3(nfd, fd, O_CLOEXEC) < 0) {
			int e = errno;

			pthread_mutex_unlock(&rp_table_lock);
			return -e;
		}
		if (n < (int)(sizeof(moved) / sizeof(moved[0])))
			moved[n++] = fd;
	}
	rs->state = RP_RT;
	pthread_mutex_unlock(&rp_table_lock);
	for (i = 0; i < n; i++)
		rp_epoll_fd_replaced(moved[i]);
	return 0;
}

/*
 * A pending UDP socket goes real-time on local port @p port (0: one the
 * kernel would give).  -errno when the channel cannot be had; with no
 * daemon and RTNET_FALLBACK=kernel, 1: the caller goes on with the kernel.
 */
static int go_rt(int fd, struct rsock *rs, uint16_t port, const struct rtn_rule *r)
{
	int rc, tries = port ? 1 : EPHEMERAL_TRIES, slot, prio;

	adopt_kernel_options(fd, rs);
	slot = r->slot >= 0 ? r->slot : rs->slot;
	prio = r->prio >= 0 ? r->prio : own_prio(rs);
	do {
		int p = port ? port : ephemeral_port();

		if (p < 0)
			return p;
		rc = open_channel(rs, (uint16_t)p, slot, prio);
		if (rc == 0)
			rs->lport = (uint16_t)p;
	} while (rc == -EADDRINUSE && --tries > 0);
	if (no_daemon(rc)) {
		if (rp_conf.fail_without_daemon)
			return -ENETDOWN;
		no_daemon_warning();
		return 1;
	}
	if (rc < 0)
		return rc;
	if (rp_conf.verbose)
		rp_warn("UDP port %u on the real-time path of %s", rs->lport, rp_conf.dev);
	return take_over(rs);
}

static int fail_errno(int rc)
{
	errno = -rc;
	return -1;
}

/* A pending socket about to talk to @p dst: judged now, so it sends where the rules say. */
static int judge_for_remote(int fd, struct rsock *rs, const struct sockaddr_in *dst)
{
	const struct rtn_rule *r;
	int rc;

	r = rtn_rules_match_udp(&rp_conf.rules, rs->laddr, rs->lport, 1,
				ntohl(dst->sin_addr.s_addr), ntohs(dst->sin_port));
	if (!r || r->action == RTN_RULE_OS) {
		forget(rs);
		return 0;
	}
	rc = go_rt(fd, rs, rs->lport, r);
	if (rc == 1) {
		forget(rs);
		return 0;
	}
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
	return judge_for_remote(fd, rs, &dst);
}

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
			return rp_real.socket(domain, type, protocol);
		rs = rs_new(domain, base);
		if (!rs)
			return fail_errno(-ENOMEM);
		rs->ethertype = et;
		rs->nonblock = !!(type & SOCK_NONBLOCK);
		rc = open_channel(rs, 0, r->slot, r->prio);
		if (no_daemon(rc)) {
			rs_free(rs);
			if (rp_conf.fail_without_daemon)
				return fail_errno(-ENETDOWN);
			no_daemon_warning();
			return rp_real.socket(domain, type, protocol);
		}
		if (rc < 0) {
			rs_free(rs);
			/* the daemon's word: not an EtherType it carries, all channels in use ... */
			return fail_errno(rc == -EREMOTEIO ? -EPROTONOSUPPORT : rc);
		}
		fd = rp_real.fcntl(rtn_app_fd(rs->ch), F_DUPFD_CLOEXEC, 0);
		if (fd < 0 || fd >= RP_MAX_FD) {
			int e = fd < 0 ? errno : EMFILE;

			if (fd >= 0)
				rp_real.close(fd);
			rs_free(rs);
			return fail_errno(-e);
		}
		rs->state = RP_RT;
		if (rp_conf.verbose)
			rp_warn("EtherType 0x%04x on the real-time path of %s", et, rp_conf.dev);
		pthread_mutex_lock(&rp_table_lock);
		table_set_locked(fd, rs, !!(type & SOCK_CLOEXEC));
		pthread_mutex_unlock(&rp_table_lock);
		return fd;
	}
	fd = rp_real.socket(domain, type, protocol);
	if (fd < 0 || fd >= RP_MAX_FD || domain != AF_INET || base != SOCK_DGRAM ||
	    (protocol && protocol != IPPROTO_UDP))
		return fd;
	rs = rs_new(domain, base);
	if (!rs)
		return fd; /* cannot track it: the kernel's, as it is */
	rs->state = RP_PENDING;
	pthread_mutex_lock(&rp_table_lock);
	table_set_locked(fd, rs, !!(type & SOCK_CLOEXEC));
	pthread_mutex_unlock(&rp_table_lock);
	return fd;
}

EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = rp_lookup(fd);
	struct sockaddr_in sa;
	const struct rtn_rule *r;
	int rc;

	if (!rs)
		return rp_real.bind(fd, addr, len);
	if (rp_bad_ptr(addr, len))
		return fail_errno(-EFAULT);
	if (rs->domain == AF_PACKET) {
		struct sockaddr_ll ll;

		if (!addr || len < sizeof(ll))
			return fail_errno(-EINVAL);
		memcpy(&ll, addr, sizeof(ll));
		if (ll.sll_family != AF_PACKET)
			return fail_errno(-EINVAL);
		/* one device, one EtherType: binding may only say so again */
		if (ll.sll_ifindex && rp_conf.ifindex && ll.sll_ifindex != rp_conf.ifindex)
			return fail_errno(-ENODEV);
		if (ll.sll_protocol && ntohs(ll.sll_protocol) != rs->ethertype)
			return fail_errno(-EINVAL);
		return 0;
	}
	if (!addr || len < sizeof(sa))
		return fail_errno(-EINVAL);
	memcpy(&sa, addr, sizeof(sa));
	if (sa.sin_family != AF_INET)
		return fail_errno(-EAFNOSUPPORT);
	if (rs->state == RP_RT || rs->bound)
		return fail_errno(-EINVAL); /* as the kernel: a socket binds once */
	r = rtn_rules_match_udp(&rp_conf.rules, ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port), 0, 0,
				0);
	if (r && r->action == RTN_RULE_RT) {
		rs->laddr = ntohl(sa.sin_addr.s_addr);
		rc = go_rt(fd, rs, ntohs(sa.sin_port), r);
		if (rc == 0) {
			rs->bound = 1;
			return 0;
		}
		if (rc < 0)
			return fail_errno(rc);
		forget(rs); /* no daemon: the kernel's */
		return rp_real.bind(fd, addr, len);
	}
	rc = rp_real.bind(fd, addr, len);
	if (rc < 0)
		return rc;
	/* an address of its own that no rule took is the kernel's for good; the wildcard waits */
	if (r || sa.sin_addr.s_addr != htonl(INADDR_ANY)) {
		forget(rs);
		return 0;
	}
	{
		struct sockaddr_in got;
		socklen_t gl = sizeof(got);

		if (rp_real.getsockname(fd, (struct sockaddr *)&got, &gl) == 0)
			rs->lport = ntohs(got.sin_port);
		rs->bound = 1;
	}
	return 0;
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = rp_lookup(fd);
	struct sockaddr_in sa;
	int rc;

	if (!rs || rs->domain != AF_INET)
		return rp_real.connect(fd, addr, len);
	if (rp_bad_ptr(addr, len))
		return fail_errno(-EFAULT);
	if (!addr || len < sizeof(sa_family_t))
		return fail_errno(-EINVAL);
	memcpy(&sa, addr, len < sizeof(sa) ? len : sizeof(sa));
	if (sa.sin_family == AF_UNSPEC) { /* dissolve the association */
		if (rs->state != RP_RT)
			return rp_real.connect(fd, addr, len);
		rs->connected = 0;
		rs->raddr = rs->rport = 0;
		return 0;
	}
	if (len < sizeof(sa))
		return fail_errno(-EINVAL);
	if (sa.sin_family != AF_INET)
		return fail_errno(-EAFNOSUPPORT);
	if (rs->state == RP_PENDING) {
		rc = judge_for_remote(fd, rs, &sa);
		if (rc < 0)
			return fail_errno(rc);
		if (rp_lookup(fd) != rs) /* left to the kernel */
			return rp_real.connect(fd, addr, len);
	}
	if (!sa.sin_port)
		return fail_errno(-EINVAL);
	rs->raddr = ntohl(sa.sin_addr.s_addr);
	rs->rport = ntohs(sa.sin_port);
	rs->connected = 1;
	return 0;
}

/* ---- close, dup, fcntl --------------------------------------------------------------- */

/*
 * Closing a socket's last descriptor closes its channel, and with it what
 * is still in the TX ring: let the station take that first, as the kernel
 * sends a closed UDP socket's queued datagrams (bounded: a station that
 * does not run in CLOSE_DRAIN_NS is not waited for).
 */
#define CLOSE_DRAIN_NS 50000000LL

static void drain_tx(struct rsock *rs)
{
	struct rtn_chan_shm *shm = rs->ch->shm;
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 100000 };
	int i;

	for (i = 0; i < CLOSE_DRAIN_NS / ts.tv_nsec && rtn_ring_count(&shm->tx); i++)
		if (!rp_alive(rs) || nanosleep(&ts, NULL) < 0)
			break;
}

EXPORT int close(int fd)
{
	struct rsock *rs = rp_lookup(fd);

	rp_epoll_forget_fd(fd); /* nothing to do unless an epoll set holds a socket of ours */
	if (!rs)
		return rp_real.close(fd);
	if (rs->state == RP_RT && __atomic_load_n(&rs->refs, __ATOMIC_RELAXED) == 1)
		drain_tx(rs);
	pthread_mutex_lock(&rp_table_lock);
	if (rp_fds[fd].rs == rs)
		table_set_locked(fd, NULL, 0);
	pthread_mutex_unlock(&rp_table_lock);
	return rp_real.close(fd);
}

/* @p newfd (made by the kernel) now stands for what @p oldfd stands for too. */
static int dup_follow(int oldfd, int newfd, int cloexec)
{
	struct rsock *rs = rp_lookup(oldfd);

	if (newfd < 0)
		return newfd;
	if (newfd >= RP_MAX_FD) {
		if (rs) { /* beyond the table: cannot stand for a real-time socket */
			rp_real.close(newfd);
			return fail_errno(-EMFILE);
		}
		return newfd;
	}
	pthread_mutex_lock(&rp_table_lock);
	table_set_locked(newfd, rs, cloexec);
	pthread_mutex_unlock(&rp_table_lock);
	return newfd;
}

EXPORT int dup(int oldfd)
{
	int fd = rp_real.dup(oldfd);

	if (fd >= 0 && rp_lookup(oldfd)) /* the kernel's dup clears close-on-exec */
		rp_real.fcntl(fd, F_SETFD, FD_CLOEXEC);
	return dup_follow(oldfd, fd, 0);
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	int fd;

	if (rp_lookup(newfd) && newfd != oldfd)
		rp_epoll_forget_fd(newfd);
	fd = rp_lookup(oldfd) ? rp_real.dup3(oldfd, newfd, flags | O_CLOEXEC) :
				rp_real.dup3(oldfd, newfd, flags);
	if (fd < 0)
		return fd;
	return dup_follow(oldfd, fd, !!(flags & O_CLOEXEC));
}

EXPORT int dup2(int oldfd, int newfd)
{
	int fd;

	if (oldfd == newfd) /* the kernel's answer: newfd if valid, EBADF if not */
		return rp_real.dup2(oldfd, newfd);
	if (rp_lookup(newfd))
		rp_epoll_forget_fd(newfd);
	fd = rp_real.dup2(oldfd, newfd);
	if (fd >= 0 && rp_lookup(oldfd))
		rp_real.fcntl(fd, F_SETFD, FD_CLOEXEC);
	return dup_follow(oldfd, fd, 0);
}

EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));
EXPORT int fcntl(int fd, int cmd, ...)
{
	struct rsock *rs = rp_lookup(fd);
	va_list ap;
	long arg;
	int rc;

	va_start(ap, cmd);
	arg = va_arg(ap, long); /* every command's argument fits a long (or is a pointer) */
	va_end(ap);
	if (!rs)
		return rp_real.fcntl(fd, cmd, arg);
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		rc = rp_real.fcntl(fd, F_DUPFD_CLOEXEC, arg);
		return dup_follow(fd, rc, cmd == F_DUPFD_CLOEXEC);
	case F_GETFD:
		if (rp_real.fcntl(fd, F_GETFD) < 0)
			return -1;
		return rp_fds[fd].cloexec ? FD_CLOEXEC : 0;
	case F_SETFD:
		if (rp_real.fcntl(fd, F_GETFD) < 0)
			return -1;
		rp_fds[fd].cloexec = !!(arg & FD_CLOEXEC);
		/* a pending socket is still the kernel's: it gets the flag as it is */
		return rs->state == RP_RT ? 0 : rp_real.fcntl(fd, F_SETFD, arg);
	case F_SETFL:
		/*
		 * A real-time socket's file is the channel's notify eventfd, which
		 * the library reads without waiting: it stays non-blocking, and
		 * O_NONBLOCK lives in the socket (shared by dups, as a file's flag).
		 */
		rc = rp_real.fcntl(fd, F_SETFL, rs->state == RP_RT ? arg | O_NONBLOCK : arg);
		if (rc == 0)
			rs->nonblock = !!(arg & O_NONBLOCK);
		return rc;
	case F_GETFL:
		rc = rp_real.fcntl(fd, F_GETFL);
		if (rc >= 0 && rs->state == RP_RT)
			rc = (rc & ~O_NONBLOCK) | (rs->nonblock ? O_NONBLOCK : 0) | O_RDWR;
		return rc;
	default:
		return rp_real.fcntl(fd, cmd, arg);
	}
}

/* ---- ioctl --------------------------------------------------------------------------- */

/* RTnet's socket ioctls (rtnet.h), for a pending or real-time socket. */
static int rtnet_ioctl(struct rsock *rs, unsigned long req, void *argp)
{
	if (rp_bad_ptr(argp, sizeof(int64_t)) || !argp)
		return fail_errno(-EFAULT);
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
			return fail_errno(-EINVAL);
		if (rs->state == RP_RT && (prio != rs->prio || slot != rs->slot)) {
			/* the channel's slot is fixed when it opens */
			rp_warn("RTNET_RTIOC_XMITPARAMS after the socket went real-time: "
				"set it before bind");
			return fail_errno(-EBUSY);
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
	return fail_errno(-ENOTTY);
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	struct rsock *rs = rp_lookup(fd);
	va_list ap;
	void *argp;

	va_start(ap, req);
	argp = va_arg(ap, void *);
	va_end(ap);
	if (!rs)
		return rp_real.ioctl(fd, req, argp);
	if (_IOC_TYPE(req) == RTIOC_TYPE_NETWORK && _IOC_SIZE(req) &&
	    (req == RTNET_RTIOC_TIMEOUT || req == RTNET_RTIOC_XMITPARAMS ||
	     req == RTNET_RTIOC_EXTPOOL || req == RTNET_RTIOC_SHRPOOL))
		return rtnet_ioctl(rs, req, argp);
	if (rs->state != RP_RT)
		return rp_real.ioctl(fd, req, argp);
	switch (req) {
	case FIONBIO: {
		int on;

		if (!argp || rp_bad_ptr(argp, sizeof(int)))
			return fail_errno(-EFAULT);
		memcpy(&on, argp, sizeof(on));
		rs->nonblock = !!on;
		return 0;
	}
	case FIONREAD: {
		int n;

		if (!argp || rp_bad_ptr(argp, sizeof(int)))
			return fail_errno(-EFAULT);
		n = rp_fionread(rs);
		memcpy(argp, &n, sizeof(n));
		return 0;
	}
	}
	/* interface requests (SIOCGIFINDEX, SIOCGIFADDR ...) are any socket's: ask one of ours */
	if ((req >= 0x8900 && req <= 0x89ff)) {
		int s = rp_real.socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc, e;

		if (s < 0)
			return -1;
		rc = rp_real.ioctl(s, req, argp);
		e = errno;
		rp_real.close(s);
		errno = e;
		return rc;
	}
	return fail_errno(-ENOTTY);
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
		return fail_errno(rc);
	memcpy(val, &v, have);
	memcpy(len, &have, sizeof(have));
	return 0;
}

static int put_timeval(void *val, socklen_t *len, int64_t ns)
{
	struct timeval tv = { .tv_sec = ns / 1000000000LL, .tv_usec = ns % 1000000000LL / 1000 };
	socklen_t have;

	if (!len || rp_bad_ptr(len, sizeof(*len)))
		return fail_errno(-EFAULT);
	memcpy(&have, len, sizeof(have));
	if (have < sizeof(tv))
		return fail_errno(-EINVAL);
	if (!val || rp_bad_ptr(val, sizeof(tv)))
		return fail_errno(-EFAULT);
	memcpy(val, &tv, sizeof(tv));
	have = sizeof(tv);
	memcpy(len, &have, sizeof(have));
	return 0;
}

static int get_timeval_ns(const void *val, socklen_t len, int64_t *ns)
{
	struct timeval tv;

	if (len < sizeof(tv))
		return fail_errno(-EINVAL);
	if (!val || rp_bad_ptr(val, sizeof(tv)))
		return fail_errno(-EFAULT);
	memcpy(&tv, val, sizeof(tv));
	if (tv.tv_usec < 0 || tv.tv_usec >= 1000000)
		return fail_errno(-EDOM);
	*ns = tv.tv_sec < 0 ? 0 : tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
	return 0;
}

EXPORT int setsockopt(int fd, int level, int opt, const void *val, socklen_t len)
{
	struct rsock *rs = rp_lookup_rt(fd);
	int v = 0;

	if (!rs)
		return rp_real.setsockopt(fd, level, opt, val, len);
	if (level == SOL_SOCKET && (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO))
		return get_timeval_ns(val, len,
				      opt == SO_RCVTIMEO ? &rs->rcvtimeo_ns : &rs->sndtimeo_ns);
	if (len && (!val || rp_bad_ptr(val, len)))
		return fail_errno(-EFAULT);
	if ((level == SOL_SOCKET || level == IPPROTO_IP) && len >= sizeof(int))
		memcpy(&v, val, sizeof(int));
	else if (level == IPPROTO_IP && len >= 1) /* IP options take a byte too */
		v = *(const unsigned char *)val;
	if (level == SOL_SOCKET) {
		if (len < sizeof(int))
			return fail_errno(-EINVAL);
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
				return fail_errno(-EPERM);
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
		case SO_REUSEADDR:
		case SO_REUSEPORT:
		case SO_BROADCAST:
		case SO_DONTROUTE:
		case SO_RCVLOWAT:
		case SO_NO_CHECK:
			return 0; /* accepted: nothing on the real-time path depends on them */
		}
		return fail_errno(-ENOPROTOOPT);
	}
	if (level == IPPROTO_IP && rs->domain == AF_INET) {
		switch (opt) {
		case IP_TOS:
			rs->ip_tos = v & 0xfc;
			return 0;
		case IP_TTL:
		case IP_MULTICAST_TTL:
		case IP_MULTICAST_LOOP:
		case IP_PKTINFO:
		case IP_RECVERR:
		case IP_MTU_DISCOVER:
			return 0;
		case IP_ADD_MEMBERSHIP:
		case IP_DROP_MEMBERSHIP: {
			struct in_addr group; /* first in struct ip_mreq and ip_mreqn alike */
			int rc;

			if (len < sizeof(struct ip_mreq))
				return fail_errno(-EINVAL);
			memcpy(&group, val, sizeof(group));
			rc = rtn_app_ipv4_group(rs->ch, ntohl(group.s_addr),
						opt == IP_ADD_MEMBERSHIP);
			if (rc < 0 && rp_conf.verbose)
				rp_warn("%s", rtn_last_error());
			return rc < 0 ? fail_errno(rc == -ENOTCONN ? -ENETDOWN : rc) : 0;
		}
		}
		return fail_errno(-ENOPROTOOPT);
	}
	return fail_errno(-ENOPROTOOPT);
}

EXPORT int getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
	struct rsock *rs = rp_lookup_rt(fd);

	if (!rs)
		return rp_real.getsockopt(fd, level, opt, val, len);
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
		}
		return fail_errno(-ENOPROTOOPT);
	}
	if (level == IPPROTO_IP && opt == IP_TOS && rs->domain == AF_INET)
		return put_int(val, len, rs->ip_tos);
	return fail_errno(-ENOPROTOOPT);
}

static int put_name(struct sockaddr *addr, socklen_t *len, const void *sa, socklen_t salen)
{
	socklen_t have;
	int rc = user_room(addr, len, salen, &have);

	if (rc < 0)
		return fail_errno(rc);
	memcpy(addr, sa, have);
	memcpy(len, &salen, sizeof(salen)); /* the full length, as the kernel tells it */
	return 0;
}

void rp_packet_name(const struct rsock *rs, struct sockaddr_ll *ll, const uint8_t *mac);
void rp_packet_name(const struct rsock *rs, struct sockaddr_ll *ll, const uint8_t *mac)
{
	memset(ll, 0, sizeof(*ll));
	ll->sll_family = AF_PACKET;
	ll->sll_protocol = htons(rs->ethertype);
	ll->sll_ifindex = rp_conf.ifindex;
	ll->sll_hatype = 1; /* ARPHRD_ETHER */
	ll->sll_halen = 6;
	memcpy(ll->sll_addr, mac, 6);
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct rsock *rs = rp_lookup_rt(fd);

	if (!rs)
		return rp_real.getsockname(fd, addr, len);
	if (rs->domain == AF_PACKET) {
		struct sockaddr_ll ll;

		rp_packet_name(rs, &ll, rs->ch->shm->station_mac);
		return put_name(addr, len, &ll, sizeof(ll));
	} else {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons(rs->lport),
					  .sin_addr.s_addr = htonl(rs->laddr) };

		return put_name(addr, len, &sa, sizeof(sa));
	}
}

EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct rsock *rs = rp_lookup_rt(fd);
	struct sockaddr_in sa = { .sin_family = AF_INET };

	if (!rs)
		return rp_real.getpeername(fd, addr, len);
	if (!rs->connected)
		return fail_errno(-ENOTCONN);
	sa.sin_port = htons(rs->rport);
	sa.sin_addr.s_addr = htonl(rs->raddr);
	return put_name(addr, len, &sa, sizeof(sa));
}

EXPORT int shutdown(int fd, int how)
{
	struct rsock *rs = rp_lookup_rt(fd);

	if (!rs)
		return rp_real.shutdown(fd, how);
	if (how < SHUT_RD || how > SHUT_RDWR)
		return fail_errno(-EINVAL);
	return fail_errno(-ENOTCONN); /* as for a datagram socket in Linux */
}
