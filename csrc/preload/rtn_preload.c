// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload.c
 * @brief librtnet_preload.so, the library rtnet-run preloads: an unmodified
 *        program's UDP and packet sockets that the rules select go through
 *        the station's real-time path (application channels, rtn_app.h),
 *        everything else to the kernel untouched.
 *
 * This file is the library's ground floor: the real libc functions, the
 * settings and rules read before main, and the descriptor table of the
 * sockets it stands for.  Above it: rtn_preload_judge.c decides and opens
 * (a socket's rules, its channel, its take-over), rtn_preload_sock.c has
 * the calls that create, configure and close sockets, rtn_preload_sockopt.c
 * their options, rtn_preload_io.c the data calls (sending in
 * rtn_preload_tx.c, receiving in rtn_preload_rx.c), rtn_preload_wait.c poll
 * and select, rtn_preload_epoll.c epoll.  A UDP socket is the kernel's
 * until the rules judge it (at bind, connect or its first send); if they
 * pick the real-time path the library opens a channel for its port and puts
 * the channel's notify eventfd in place of the kernel socket under the same
 * number.  A socket the rules leave to the kernel is forgotten, so it costs
 * nothing from then on.
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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include "../include/rtnet.h"
#include "rtn_app_priv.h"
#include "rtn_chan.h"
#include "rtn_chan_inline.h"
#include "rtn_core.h"
#include "rtn_preload_priv.h"

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
	if (rp_real.libc_write && rp_real.libc_write(2, "rtnet-run: ", 11) == 11)
		n = (int)rp_real.libc_write(2, line, n);
}

int rp_station_ifindex(void)
{
	/* the number rtnet-run was told, else the name's in the program's namespace */
	return rp_conf.ifindex > 0 ? rp_conf.ifindex : (int)if_nametoindex(rp_conf.dev);
}

/* Say that a libc function is missing and stop, before main: nothing works without it. */
static void no_real(const char *name)
{
	static const char msg[] = "rtnet-run: the C library has no ";
	/* straight to the kernel: this library's write() needs what is missing */
	long w = syscall(SYS_write, 2, msg, sizeof(msg) - 1);

	w = syscall(SYS_write, 2, name, strlen(name));
	w = syscall(SYS_write, 2, "\n", 1);
	(void)w;
	_exit(127);
}

/* Each field of struct rp_real is libc_NAME: libc's NAME, found after this library. */
static void find_real(void)
{
/* clang-format off */
#define REAL(field) { #field, offsetof(struct rp_real, field) }
	/* clang-format on */
	static const struct {
		const char *field;
		size_t off;
	} fields[] = {
		REAL(libc_socket),	REAL(libc_bind),	REAL(libc_connect),
		REAL(libc_sendmsg),	REAL(libc_recvmsg),	REAL(libc_sendmmsg),
		REAL(libc_recvmmsg),	REAL(libc_send),	REAL(libc_sendto),
		REAL(libc_recv),	REAL(libc_recvfrom),	REAL(libc_read),
		REAL(libc_write),	REAL(libc_readv),	REAL(libc_writev),
		REAL(libc_close),	REAL(libc_dup),		REAL(libc_dup2),
		REAL(libc_dup3),	REAL(libc_fcntl),	REAL(libc_ioctl),
		REAL(libc_getsockname), REAL(libc_getpeername), REAL(libc_setsockopt),
		REAL(libc_getsockopt),	REAL(libc_poll),	REAL(libc_ppoll),
		REAL(libc_select),	REAL(libc_pselect),	REAL(libc_epoll_create1),
		REAL(libc_epoll_ctl),	REAL(libc_epoll_wait),	REAL(libc_epoll_pwait),
		REAL(libc_shutdown),
	};
#undef REAL
	size_t i;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *name = fields[i].field + strlen("libc_");
		void *p = dlsym(RTLD_NEXT, name);

		if (!p)
			no_real(name);
		memcpy((char *)&rp_real + fields[i].off, &p, sizeof(p));
	}
	*(void **)&rp_real.libc_epoll_pwait2 = dlsym(RTLD_NEXT, "epoll_pwait2");
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
			rp_real.libc_close(fd);
		errno = e;
		return NULL;
	}
	while (used < 65536 && (n = rp_real.libc_read(fd, buf + used, 65536 - used)) > 0)
		used += n;
	rp_real.libc_close(fd);
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
	if (subnet && *subnet && used < sizeof(text)) {
		unsigned int b[4], prefix;

		used += snprintf(text + used, sizeof(text) - used, "rt udp * %s\n", subnet);
		if (sscanf(subnet, "%u.%u.%u.%u/%u", &b[0], &b[1], &b[2], &b[3], &prefix) == 5 &&
		    prefix >= 1 && prefix <= 30 && b[0] < 256 && b[1] < 256 && b[2] < 256 &&
		    b[3] < 256)
			rp_conf.rt_bcast = (b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]) |
					   (0xffffffffu >> prefix);
	}
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

/*
 * A program that ends without closing its sockets (exit, or returning from
 * main) has its queued datagrams sent as the kernel would: each real-time
 * socket's TX ring is drained first (rp_drain_tx).  _exit() and a signal
 * skip this, as they skip every destructor.
 */
__attribute__((destructor)) static void rp_fini(void)
{
	int fd;

	for (fd = 0; fd < RP_MAX_FD; fd++) {
		struct rsock *rs = rp_hold_rt(fd);

		if (rs) {
			rp_drain_tx(rs);
			rp_put(rs);
		}
	}
}

/* ---- the table ------------------------------------------------------------------ */

int rp_bad_addr(uintptr_t a, size_t len)
{
	if (!len)
		return 0;
	/* what can be told without touching it: NULL's page, past user space, a wrap */
	return a < 4096 || a > 0x7fffffffffffULL || a + len < a || a + len > 0x800000000000ULL;
}

/* rtn_preload_priv.h says what it gives */
int rp_user_room(const void *buf, const socklen_t *len, socklen_t want, socklen_t *have)
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

/* rtn_preload_priv.h says what it gives */
int rp_iov_ok(const struct iovec *iov, size_t n, size_t max)
{
	size_t i, total = 0;

	if (n > 1024)
		return -EMSGSIZE;
	if (n && (!iov || rp_bad_ptr(iov, n * sizeof(*iov))))
		return -EFAULT;
	for (i = 0; i < n; i++) {
		if (iov[i].iov_len > max - total)
			return -EMSGSIZE;
		total += iov[i].iov_len;
		if (iov[i].iov_len &&
		    (!iov[i].iov_base || rp_bad_ptr(iov[i].iov_base, iov[i].iov_len)))
			return -EFAULT;
	}
	return 0;
}

struct rsock *rp_rs_new(int domain, int type)
{
	struct rsock *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->domain = domain;
	rs->type = type;
	rs->prio = -1;
	rs->slot = -1;
	rs->hold_fd = -1;
	rs->rcvbuf = rs->sndbuf = 212992; /* Linux's default rmem/wmem, as getsockopt shows */
	rs->kept[RP_SO_RCVLOWAT] = 1;
	pthread_mutex_init(&rs->tx_lock, NULL);
	pthread_mutex_init(&rs->rx_lock, NULL);
	pthread_mutex_init(&rs->judge_lock, NULL);
	return rs;
}

void rp_rs_free(struct rsock *rs)
{
	while (rs->backlog) {
		struct rp_dgram *d = rs->backlog;

		rs->backlog = d->next;
		free(d);
	}
	if (rs->ch)
		rtn_app_close(rs->ch);
	if (rs->hold_fd >= 0)
		rp_real.libc_close(rs->hold_fd);
	pthread_mutex_destroy(&rs->tx_lock);
	pthread_mutex_destroy(&rs->rx_lock);
	pthread_mutex_destroy(&rs->judge_lock);
	free(rs);
}

/*
 * Drop one hold on @p rs (table lock held); freed with its channel at 0.
 * Closing the channel may set errno: the call that let go of the socket
 * keeps its own (a close() in another thread can make any call's put the
 * last).
 */
static void unref_locked(struct rsock *rs)
{
	if (--rs->refs == 0) {
		int e = errno;

		rp_rs_free(rs);
		errno = e;
	}
}

void rp_table_set_locked(int fd, struct rsock *rs, int cloexec)
{
	struct rsock *old = rp_fds[fd].rs;

	if (rs)
		rs->refs++;
	rp_fds[fd].cloexec = cloexec;
	__atomic_store_n(&rp_fds[fd].rs, rs, __ATOMIC_RELEASE);
	if (old)
		unref_locked(old);
}

static struct rsock *hold(int fd, int rt_only)
{
	struct rsock *rs;

	if (!rp_lookup(fd))
		return NULL; /* a kernel descriptor: no lock on its way */
	pthread_mutex_lock(&rp_table_lock);
	rs = rp_fds[fd].rs;
	if (rs && (!rt_only || rs->state == RP_RT))
		rs->refs++;
	else
		rs = NULL;
	pthread_mutex_unlock(&rp_table_lock);
	return rs;
}

struct rsock *rp_hold_rt(int fd)
{
	return hold(fd, 1);
}

struct rsock *rp_hold(int fd)
{
	return hold(fd, 0);
}

void rp_put(struct rsock *rs)
{
	pthread_mutex_lock(&rp_table_lock);
	unref_locked(rs);
	pthread_mutex_unlock(&rp_table_lock);
}

/* A call on a held socket is over: the socket put back, the call's @p rc returned. */
int rp_put_ret(struct rsock *rs, int rc)
{
	rp_put(rs);
	return rc;
}

/* The rules left it to the kernel: forget it everywhere. */
void rp_forget(struct rsock *rs)
{
	int fd;

	pthread_mutex_lock(&rp_table_lock);
	for (fd = 0; fd < RP_MAX_FD && rs->refs; fd++)
		if (rp_fds[fd].rs == rs)
			rp_table_set_locked(fd, NULL, 0);
	pthread_mutex_unlock(&rp_table_lock);
}

int rp_alive(struct rsock *rs)
{
	struct pollfd p = { .fd = rtn_app_ctlfd(rs->ch), .events = POLLRDHUP };

	if (rs->dead)
		return 0;
	/* the daemon's end closed: a reply to a request of ours is not a hang-up */
	if (p.fd >= 0 && rp_real.libc_poll(&p, 1, 0) > 0)
		rs->dead = 1;
	return !rs->dead;
}

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
