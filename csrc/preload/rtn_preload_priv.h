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

#define RP_MAX_FD 65536	     /* descriptors above it stay the kernel's */
#define RP_DEFAULT_DEPTH 256 /* messages per ring, as rtn_chan_opts_init() */
#define RP_FRAME_MAX 1514

enum rp_state {
	RP_PENDING = 1, /* an AF_INET datagram socket not judged yet: the kernel's for now */
	RP_RT,		/* on the real-time path */
};

struct rsock {
	enum rp_state state;
	int refs;	    /* descriptors standing for it (dup) */
	int domain, type;   /* AF_INET/AF_PACKET, SOCK_DGRAM/SOCK_RAW */
	uint16_t ethertype; /* a packet socket's, host order */
	struct rtn_app_chan *ch;
	pthread_mutex_t tx_lock, rx_lock; /* the rings have one producer and one consumer */
	uint32_t laddr, raddr;		  /* host order */
	uint16_t lport, rport;
	int bound, connected;
	int nonblock;			  /* O_NONBLOCK: a file status flag, shared by dups */
	int dead;			  /* the daemon went away: calls fail with ENETDOWN */
	int64_t rcvtimeo_ns, sndtimeo_ns; /* 0: none */
	int64_t rtnet_timeout_ns;	  /* RTNET_RTIOC_TIMEOUT: 0 block, < 0 never wait */
	int rtnet_timeout_set;
	int rcvbuf, sndbuf, so_priority, ip_tos;
	int ts_ns, ts_us, ts_flags; /* SO_TIMESTAMPNS, SO_TIMESTAMP, SO_TIMESTAMPING */
	int prio, slot;		    /* slot priority 0..31 and TDMA slot */
	int pool;		    /* RTNET_RTIOC_EXTPOOL's count */
	uint32_t sends;		    /* for the daemon's liveness check every so often */
};

struct rp_fd {
	struct rsock *rs;
	int cloexec; /* FD_CLOEXEC as the program set it (the real one is always set) */
};

/** The real libc functions, found with dlsym(RTLD_NEXT) before main. */
struct rp_real {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	int (*close)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*shutdown)(int, int);
};

/** What rtnet-run told the library (environment), and the rules. */
struct rp_conf {
	char dev[32];
	char netns[256];
	int have_netns;
	uint32_t rt_addr; /* host order, 0: unknown */
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

/* rtn_preload.c */
void rp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int rp_bad_addr(uintptr_t a, size_t len);
/* by address, never read: a pointer the compiler thinks unwritten is no warning then */
#define rp_bad_ptr(p, len) rp_bad_addr((uintptr_t)(p), (len))
int rp_alive(struct rsock *rs);
/** Drop one descriptor's hold on @p rs (table lock held); frees it with its channel at 0. */
void rp_unref_locked(struct rsock *rs);

/* rtn_preload_io.c: the data path; -errno on failure */
ssize_t rp_recvmsg(int fd, struct rsock *rs, struct msghdr *mh, int flags);
ssize_t rp_sendmsg(int fd, struct rsock *rs, const struct msghdr *mh, int flags);
int rp_fionread(struct rsock *rs);

/* rtn_preload_wait.c: poll, select and epoll with real-time and kernel descriptors */
void rp_epoll_forget_fd(int fd);
void rp_epoll_forget_epfd(int epfd);
/** Re-register @p fd (now a real-time socket's) in every epoll set it was in. */
void rp_epoll_fd_replaced(int fd);

#endif
