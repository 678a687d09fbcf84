/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_preload_priv.h
 * @brief librtnet_preload.so's state as its files share it: the socket a
 *        program's descriptor stands for, the descriptor table, the real
 *        libc functions, and the per-call halves (receive, send, wait).
 *
 * A real-time socket's descriptor number is a duplicate of its channel's
 * notify eventfd (rtn_app_fd()), so poll, select and epoll in the kernel
 * see it readable when the channel's RX ring holds a message; the control
 * connection's hang-up (POLLRDHUP: the daemon gone) is watched beside it.
 */
#ifndef RTN_PRELOAD_PRIV_H
#define RTN_PRELOAD_PRIV_H

#include <errno.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "rtn_app.h"
#include "rtn_rules.h"

#define RP_MAX_FD	 65536 /* descriptors above it stay the kernel's */
#define RP_DEFAULT_DEPTH 256   /* messages per ring, as rtn_chan_opts_init() */
#define RP_FRAME_MAX	 1514

enum rp_state {
	RP_PENDING = 1, /* an AF_INET datagram socket not judged yet: the kernel's for now */
	RP_RT,		/* on the real-time path */
};

/*
 * Options a real-time socket keeps as the program set them (or the kernel
 * socket had them: rp_opts_adopt) and reports back, whose effect on the
 * real-time path is as described at rp_kept (rtn_preload_sockopt.c).
 */
enum rp_kept_opt {
	RP_SO_REUSEADDR,
	RP_SO_REUSEPORT,
	RP_SO_BROADCAST,
	RP_SO_DONTROUTE,
	RP_SO_RCVLOWAT,
	RP_SO_NO_CHECK,
	RP_IP_MULTICAST_LOOP,
	RP_IP_PKTINFO,
	RP_IP_RECVERR,
	RP_IP_MTU_DISCOVER,
	RP_KEPT_N
};

/* A datagram the kernel socket held when the socket went real-time (rp_backlog_save). */
struct rp_dgram {
	struct rp_dgram *next;
	struct sockaddr_in from;
	struct in_pktinfo pktinfo; /* the kernel's, when the program had asked for it */
	int has_pktinfo;
	uint32_t len;
	uint8_t data[];
};

/*
 * Groups a pending socket joined through the kernel, carried to the station
 * when it goes real-time (rp_go_rt); Linux's own limit per socket is
 * net.ipv4.igmp_max_memberships, 20 unless raised.
 */
#define RP_MAX_GROUPS 20

struct rsock {
	enum rp_state state;
	int refs;	    /* descriptors standing for it (dup), and calls in progress */
	int domain, type;   /* AF_INET/AF_PACKET, SOCK_DGRAM/SOCK_RAW */
	uint16_t ethertype; /* a packet socket's, host order */
	struct rtn_app_chan *ch;
	pthread_mutex_t tx_lock, rx_lock; /* the rings have one producer and one consumer */
	pthread_mutex_t judge_lock;	  /* one thread at a time judges a pending socket */
	uint32_t laddr, raddr;		  /* host order */
	uint16_t lport, rport;
	int bound, connected;
	int nonblock;			  /* O_NONBLOCK: a file status flag, shared by dups */
	int dead;			  /* the daemon went away: calls fail with ENETDOWN */
	int64_t rcvtimeo_ns, sndtimeo_ns; /* 0: none */
	int64_t rtnet_timeout_ns;	  /* RTNET_RTIOC_TIMEOUT: 0 block, < 0 never wait */
	int rtnet_timeout_set;
	int rcvbuf, sndbuf, so_priority, ip_tos;
	int kept[RP_KEPT_N];		/* enum rp_kept_opt */
	int shut;			/* shutdown(): SHUT_RD + 1 bits; a read then ends at once */
	int ts_ns, ts_us, ts_flags;	/* SO_TIMESTAMPNS, SO_TIMESTAMP, SO_TIMESTAMPING */
	int prio, slot;			/* slot priority 0..31 and TDMA slot */
	int pool;			/* RTNET_RTIOC_EXTPOOL's count */
	uint32_t sends;			/* for the daemon's liveness check every so often */
	int hold_fd;			/* a socket of Linux's own holding the port (hold_port) */
	uint32_t mc_if;			/* IP_MULTICAST_IF's address, network order */
	int bound_if;			/* SO_BINDTODEVICE's device: 0 none, else the station's */
	uint32_t groups[RP_MAX_GROUPS]; /* joined while pending, host order ... */
	int n_groups;
	int groups_elsewhere; /* ... and joined on another device, or more than kept: stays Linux's */
	struct rp_dgram *backlog, **backlog_end; /* received before it went real-time */
};

struct rp_fd {
	struct rsock *rs;
	int cloexec; /* FD_CLOEXEC as the program set it (the real one is always set) */
};

/** The real libc functions (libc_NAME is libc's NAME), found with dlsym(RTLD_NEXT) before main. */
struct rp_real {
	int (*libc_socket)(int, int, int);
	int (*libc_bind)(int, const struct sockaddr *, socklen_t);
	int (*libc_connect)(int, const struct sockaddr *, socklen_t);
	ssize_t (*libc_sendmsg)(int, const struct msghdr *, int);
	ssize_t (*libc_recvmsg)(int, struct msghdr *, int);
	int (*libc_sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	int (*libc_recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	ssize_t (*libc_send)(int, const void *, size_t, int);
	ssize_t (*libc_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*libc_recv)(int, void *, size_t, int);
	ssize_t (*libc_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*libc_read)(int, void *, size_t);
	ssize_t (*libc_write)(int, const void *, size_t);
	ssize_t (*libc_readv)(int, const struct iovec *, int);
	ssize_t (*libc_writev)(int, const struct iovec *, int);
	int (*libc_close)(int);
	int (*libc_dup)(int);
	int (*libc_dup2)(int, int);
	int (*libc_dup3)(int, int, int);
	int (*libc_fcntl)(int, int, ...);
	int (*libc_ioctl)(int, unsigned long, ...);
	int (*libc_getsockname)(int, struct sockaddr *, socklen_t *);
	int (*libc_getpeername)(int, struct sockaddr *, socklen_t *);
	int (*libc_setsockopt)(int, int, int, const void *, socklen_t);
	int (*libc_getsockopt)(int, int, int, void *, socklen_t *);
	int (*libc_poll)(struct pollfd *, nfds_t, int);
	int (*libc_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*libc_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*libc_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			    const sigset_t *);
	int (*libc_epoll_create1)(int);
	int (*libc_epoll_ctl)(int, int, int, struct epoll_event *);
	int (*libc_epoll_wait)(int, struct epoll_event *, int, int);
	int (*libc_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	/* NULL where the C library has none (before glibc 2.35) */
	int (*libc_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
				 const sigset_t *);
	int (*libc_shutdown)(int, int);
};

/** What rtnet-run told the library (environment), and the rules. */
struct rp_conf {
	char dev[32];
	char netns[256];
	int have_netns;
	uint32_t rt_addr;  /* host order, 0: unknown */
	uint32_t rt_bcast; /* the real-time subnet's broadcast address, host order, 0: unknown */
	int ifindex;
	int fail_without_daemon; /* RTNET_FALLBACK=fail: no daemon fails the call (ENETDOWN) */
	int verbose;
	struct rtn_rules rules;
};

extern struct rp_real rp_real;
extern struct rp_conf rp_conf;
extern struct rp_fd rp_fds[RP_MAX_FD];
extern pthread_mutex_t rp_table_lock;

/** The socket @p fd stands for, or NULL (a kernel descriptor). */
static inline struct rsock *rp_lookup(int fd)
{
	if (fd < 0 || fd >= RP_MAX_FD)
		return NULL;
	return __atomic_load_n(&rp_fds[fd].rs, __ATOMIC_ACQUIRE);
}

static inline struct rsock *rp_lookup_rt(int fd)
{
	struct rsock *rs = rp_lookup(fd);

	return rs && rs->state == RP_RT ? rs : NULL;
}

/* The sooner of two waits, 0 standing for none (poll's and epoll's looks at a TX ring). */
static inline int64_t rp_soonest(int64_t a, int64_t b)
{
	return !a || (b && b < a) ? b : a;
}

/* The calls' way to fail: @p rc is -errno; errno set, -1 returned. */
static inline long rp_fail(long rc)
{
	errno = (int)-rc;
	return -1;
}

/* A call's result: a count or 0, or -errno made errno and -1. */
static inline long rp_done(long rc)
{
	return rc >= 0 ? rc : rp_fail(rc);
}

#define RTNET_SOCKET_POOL 16 /* RTnet's buffers per socket before RTNET_RTIOC_EXTPOOL */

/* rtn_preload.c: settings, rules and the descriptor table */
void rp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** The station's device's interface index (0: it has none here). */
int rp_station_ifindex(void);
int rp_bad_addr(uintptr_t a, size_t len);
/**
 * The room a program's value-result length @p len says it has for @p want
 * bytes at @p buf (at most @p want) in *have; -errno for a bad length or pointer.
 */
int rp_user_room(const void *buf, const socklen_t *len, socklen_t want, socklen_t *have);
/**
 * The program's iovec: at most UIO_MAXIOV pieces, together at most @p max
 * bytes (-EMSGSIZE, as the kernel says before it looks at the memory), each
 * where a program's memory may be (-EFAULT); 0 when it is all of that.
 */
int rp_iov_ok(const struct iovec *iov, size_t n, size_t max);
/* by address, never read: a pointer the compiler thinks unwritten is no warning then */
#define rp_bad_ptr(p, len) rp_bad_addr((uintptr_t)(p), (len))
int rp_alive(struct rsock *rs);
struct rsock *rp_rs_new(int domain, int type);
/** Free @p rs with its channel (rtn_app_close()). */
void rp_rs_free(struct rsock *rs);
/** @p fd now stands for @p rs (NULL: for nothing of ours); the table lock is held. */
void rp_table_set_locked(int fd, struct rsock *rs, int cloexec);
/**
 * The real-time socket @p fd stands for, held for one call (NULL: none):
 * a close() in another thread meanwhile leaves it, and its channel, to the
 * call until rp_put(), as the kernel keeps a file for a call in progress.
 */
struct rsock *rp_hold_rt(int fd);
/** The same for a socket of ours in any state (a pending one: bind, connect, judging). */
struct rsock *rp_hold(int fd);
void rp_put(struct rsock *rs);
int rp_put_ret(struct rsock *rs, int rc);
/** The rules left @p rs to the kernel: every descriptor forgets it. */
void rp_forget(struct rsock *rs);
/** Take over the kept options' values from kernel socket @p fd (before it goes real-time). */
void rp_opts_adopt(int fd, struct rsock *rs);
/** A packet socket's address: its EtherType, the device, @p mac. */
void rp_packet_name(const struct rsock *rs, struct sockaddr_ll *ll, const uint8_t *mac);

/* rtn_preload_judge.c: which path a socket takes, and its channel */
int rp_open_channel(struct rsock *rs, uint16_t udp_port, int slot, int prio, int64_t lifetime_ns);
/* a real-time UDP socket's SO_REUSEADDR, SO_REUSEPORT, IP_MULTICAST_LOOP or device changed */
void rp_sockopts_changed(struct rsock *rs);
/** Whether rtn_app_open()'s @p rc means that no daemon answered. */
int rp_no_daemon(int rc);
void rp_no_daemon_warning(void);
/**
 * Pending UDP socket @p fd goes real-time on @p port (0: an ephemeral one);
 * 1: it stays the kernel's (no daemon, another device's traffic asked for,
 * a group it joined not joined at the station).
 */
int rp_go_rt(int fd, struct rsock *rs, uint16_t port, const struct rtn_rule *r,
	     const struct sockaddr_in *kbind);
/**
 * Pending UDP socket @p fd about to talk to @p dst is judged; 0 once decided.
 * Takes @p rs's judge_lock: a socket another thread judged meanwhile is left
 * as that judged it.
 */
int rp_judge_remote(int fd, struct rsock *rs, const struct sockaddr_in *dst);
/** The same for a send to @p to (anything but AF_INET: left pending). */
int rp_judge_send(int fd, struct rsock *rs, const struct sockaddr *to, socklen_t tolen);

/* rtn_preload_rx.c and rtn_preload_tx.c: the data path; -errno on failure */
ssize_t rp_recvmsg(int fd, struct rsock *rs, struct msghdr *mh, int flags);
ssize_t rp_sendmsg(int fd, struct rsock *rs, const struct msghdr *mh, int flags);
int rp_fionread(struct rsock *rs);
/**
 * Keep what kernel socket @p fd has queued for @p rs, about to go
 * real-time (its descriptor then stands for the channel): its receive
 * calls give those datagrams first.  Returns how many were kept.
 */
int rp_backlog_save(int fd, struct rsock *rs);
/**
 * Wait while the station takes what @p rs still has in its TX ring, as the
 * kernel sends a closed socket's queued datagrams (close, exit).
 */
void rp_drain_tx(struct rsock *rs);
/** Whether a receive would find something: arms the notify fd when not (rtn_app_rx_arm). */
int rp_rx_arm(struct rsock *rs);
/** Whether a receive would find something now. */
int rp_rx_ready(struct rsock *rs);
/** Whether a send would find room in the TX ring (or fail at once: the station is gone). */
int rp_tx_room(struct rsock *rs);
/** How long a full TX ring takes to have room again: a TDMA cycle, or NoMAC's short wait. */
int64_t rp_tx_drain_ns(const struct rsock *rs);

/* rtn_preload_epoll.c: epoll registrations of our sockets */
/** @p fd (a socket, or an epoll set) is closing: forget its registrations. */
void rp_epoll_forget_fd(int fd);
/** Re-register @p fd (now a real-time socket's) in every epoll set it was in. */
void rp_epoll_fd_replaced(int fd);

#endif
