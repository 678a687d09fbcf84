// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_rx.c
 * @brief The receive half of librtnet_preload.so's data path: a datagram
 *        (or a chain of them, a reassembled one) taken from the channel's
 *        RX ring, with its source, stamps and flags as the kernel would
 *        give them; what the kernel socket held when it went real-time
 *        first.  A receive sleeps only when the ring is empty, in poll() on
 *        the channel's notify eventfd and its control connection, so a
 *        signal interrupts it (EINTR) and the daemon's end wakes it
 *        (ENETDOWN).  Every frame in the ring is shared memory, so its
 *        lengths are checked again before anything is copied.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/if_packet.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "rtn_app_priv.h"
#include "rtn_chan_inline.h"
#include "rtn_preload_frame.h"
#include "rtn_preload_priv.h"
#include "rtn_time_inline.h"

/*
 * What the ring's oldest datagram holds for the program: where its data
 * is, and who sent it.  One message, or the chain of them a datagram put
 * together from its fragments came in (rtn_chan.h).
 */
struct rx_view {
	const uint8_t *data; /* in the private copy: one message's */
	uint32_t data_off;   /* where the data starts in the frame (a chain's) */
	uint32_t len;	     /* the datagram's or frame's full length */
	uint32_t pieces;     /* the messages it takes */
	struct sockaddr_in from;
	uint32_t to; /* the IPv4 destination, network order (IP_PKTINFO) */
	struct sockaddr_ll ll;
};

/* The oldest datagram in the RX ring (rtn_ring_cons_oldest()); a broken chain counted. */
static inline struct rtn_msg *oldest(struct rsock *rs, struct rx_view *v, uint32_t *frame_len)
{
	struct rtn_chan_shm *shm = rs->ch->shm;

	return rtn_ring_cons_oldest(&shm->rx, rtn_chan_rx_msgs(shm, rs->ch->depth), rs->ch->depth,
				    &v->pieces, frame_len, &rs->ch->rx_bad_hdr);
}

/*
 * -1: not a datagram or frame this socket gives (dropped and counted by the
 * caller).  @p len the frame's length (a chain's whole one, v->pieces set).
 */
static int view(const struct rsock *rs, const struct rtn_msg *m, uint32_t len, uint8_t *copy,
		struct rx_view *v)
{
	struct rp_frame_view f;

	if (v->pieces == 1 && len > RTN_CHAN_MSG_MAX)
		return -1;
	/*
	 * Parse a private copy: the station may rewrite the slot's bytes
	 * meanwhile.  A chain's headers are in its first message, and the
	 * parser reads no further than the headers.
	 */
	memcpy(copy, m->frame, len < RTN_CHAN_MSG_MAX ? len : RTN_CHAN_MSG_MAX);
	if (rp_frame_view(rs->domain, rs->type, copy, len, &f) < 0)
		return -1;
	v->data = copy + f.data_off;
	v->data_off = f.data_off;
	v->len = f.len;
	if (rs->domain == AF_PACKET) {
		rp_packet_name(rs, &v->ll, f.src_mac);
		v->ll.sll_pkttype = f.pkttype;
	} else {
		memset(&v->from, 0, sizeof(v->from));
		v->from.sin_family = AF_INET;
		v->from.sin_addr.s_addr = f.src_ip;
		v->from.sin_port = f.src_port;
		memcpy(&v->to, copy + 30, sizeof(v->to)); /* Ethernet, then IPv4 without options */
	}
	return 0;
}

/* The receive stamp as the kernel's SO_TIMESTAMP* give it: CLOCK_REALTIME. */
static struct timespec rx_realtime(const struct rsock *rs, const struct rtn_msg *m)
{
	int64_t off = __atomic_load_n(&rs->ch->shm->clock_offset, __ATOMIC_RELAXED);
	int64_t stamp = m->rx_ns ? m->rx_ns : m->rx_rt_ns;
	struct timespec wall;

	clock_gettime(CLOCK_REALTIME, &wall);
	return rtn_ns_to_ts(stamp - off + (rtn_ts_to_ns(&wall) - rtn_now()));
}

static void put_cmsg(struct msghdr *mh, size_t *used, int level, int type, const void *data,
		     size_t len)
{
	struct cmsghdr c = { .cmsg_len = CMSG_LEN(len), .cmsg_level = level, .cmsg_type = type };
	uint8_t *base = mh->msg_control;

	if (*used + CMSG_SPACE(len) > mh->msg_controllen) {
		mh->msg_flags |= MSG_CTRUNC;
		return;
	}
	memcpy(base + *used, &c, sizeof(c));
	memcpy(base + *used + CMSG_LEN(0), data, len);
	*used += CMSG_SPACE(len);
}

static void stamp_cmsgs(const struct rsock *rs, const struct rtn_msg *m, const struct rx_view *v,
			struct msghdr *mh)
{
	size_t used = 0;
	struct timespec ts;

	if (!mh->msg_control || !mh->msg_controllen ||
	    rp_bad_ptr(mh->msg_control, mh->msg_controllen)) {
		mh->msg_controllen = 0;
		return;
	}
	if (rs->ts_ns || rs->ts_us || (rs->ts_flags & SOF_TIMESTAMPING_SOFTWARE))
		ts = rx_realtime(rs, m);
	if (rs->ts_ns)
		put_cmsg(mh, &used, SOL_SOCKET, SO_TIMESTAMPNS, &ts, sizeof(ts));
	else if (rs->ts_us) {
		struct timeval tv = { .tv_sec = ts.tv_sec, .tv_usec = ts.tv_nsec / 1000 };

		put_cmsg(mh, &used, SOL_SOCKET, SO_TIMESTAMP, &tv, sizeof(tv));
	}
	if (rs->ts_flags & SOF_TIMESTAMPING_SOFTWARE) {
		struct scm_timestamping three = { .ts = { ts } };

		put_cmsg(mh, &used, SOL_SOCKET, SO_TIMESTAMPING, &three, sizeof(three));
	}
	if (rs->domain == AF_INET && rs->kept[RP_IP_PKTINFO]) {
		uint32_t local = __atomic_load_n(&rs->ch->shm->udp.ip, __ATOMIC_RELAXED);
		struct in_pktinfo pi = { .ipi_ifindex = rp_conf.ifindex,
					 .ipi_spec_dst.s_addr = htonl(local),
					 .ipi_addr.s_addr = v->to };

		put_cmsg(mh, &used, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
	}
	mh->msg_controllen = used;
}

/* Copy @p v's data over the iovec; returns what was copied. */
static size_t scatter(const struct msghdr *mh, const uint8_t *data, size_t len)
{
	size_t i, done = 0;

	for (i = 0; i < mh->msg_iovlen && done < len; i++) {
		size_t n = mh->msg_iov[i].iov_len < len - done ? mh->msg_iov[i].iov_len :
								 len - done;

		memcpy(mh->msg_iov[i].iov_base, data + done, n);
		done += n;
	}
	return done;
}

/* The same from the chain at the ring's tail, straight out of its messages. */
static size_t scatter_chain(const struct rsock *rs, const struct msghdr *mh,
			    const struct rx_view *v)
{
	struct rtn_chan_shm *shm = rs->ch->shm;
	size_t i, done = 0;

	for (i = 0; i < mh->msg_iovlen && done < v->len; i++) {
		size_t n = mh->msg_iov[i].iov_len < v->len - done ? mh->msg_iov[i].iov_len :
								    v->len - done;

		rtn_ring_chain_copy(&shm->rx, rtn_chan_rx_msgs(shm, rs->ch->depth), rs->ch->depth,
				    v->data_off + (uint32_t)done, mh->msg_iov[i].iov_base,
				    (uint32_t)n);
		done += n;
	}
	return done;
}

/* ---- what the kernel socket held when it went real-time ------------------------ */

#define BACKLOG_MAX 4096 /* datagrams kept at most: more than a default receive buffer holds */

int rp_backlog_save(int fd, struct rsock *rs)
{
	uint8_t *buf = malloc(65536); /* a datagram's largest; once a socket, so not kept */
	int n = 0;

	if (!rs->backlog_end)
		rs->backlog_end = &rs->backlog;
	while (buf && n < BACKLOG_MAX) {
		struct sockaddr_in from;
		struct iovec iov = { .iov_base = buf, .iov_len = 65536 };
		uint8_t control[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct msghdr mh = { .msg_name = &from,
				     .msg_namelen = sizeof(from),
				     .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = control,
				     .msg_controllen = sizeof(control) };
		ssize_t len = rp_real.libc_recvmsg(fd, &mh, MSG_DONTWAIT);
		struct cmsghdr *c;
		struct rp_dgram *d;

		if (len < 0 || mh.msg_namelen != sizeof(from))
			break; /* EAGAIN: all taken */
		d = calloc(1, sizeof(*d) + (size_t)len);
		if (!d)
			break;
		/* the kernel gave IP_PKTINFO if the program had asked for it */
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
			    c->cmsg_len >= CMSG_LEN(sizeof(d->pktinfo))) {
				memcpy(&d->pktinfo, CMSG_DATA(c), sizeof(d->pktinfo));
				d->has_pktinfo = 1;
			}
		d->from = from;
		d->len = (uint32_t)len;
		memcpy(d->data, buf, (size_t)len);
		*rs->backlog_end = d;
		rs->backlog_end = &d->next;
		n++;
	}
	free(buf);
	return n;
}

/* The first kept datagram into @p mh, as take_one() gives a ring's (rx_lock held). */
static ssize_t take_backlog(struct rsock *rs, struct msghdr *mh, int flags)
{
	/* all of it, as the kernel's queue: a later connect() does not sift what it holds */
	struct rp_dgram *d = rs->backlog;
	size_t n, used = 0;

	if (!d)
		return -EAGAIN;
	n = scatter(mh, d->data, d->len);
	mh->msg_flags = n < d->len ? MSG_TRUNC : 0;
	if (mh->msg_name) { /* the full length told, what fits copied: the kernel's way */
		memcpy(mh->msg_name, &d->from,
		       mh->msg_namelen < sizeof(d->from) ? mh->msg_namelen : sizeof(d->from));
		mh->msg_namelen = sizeof(d->from);
	} else {
		mh->msg_namelen = 0;
	}
	/* the kernel's receive stamp was not kept; IP_PKTINFO was, if it was asked for */
	if (d->has_pktinfo && rs->kept[RP_IP_PKTINFO] && mh->msg_control && mh->msg_controllen &&
	    !rp_bad_ptr(mh->msg_control, mh->msg_controllen))
		put_cmsg(mh, &used, IPPROTO_IP, IP_PKTINFO, &d->pktinfo, sizeof(d->pktinfo));
	mh->msg_controllen = used;
	if (flags & MSG_TRUNC)
		n = d->len;
	if (!(flags & MSG_PEEK)) {
		rs->backlog = d->next;
		if (!rs->backlog)
			rs->backlog_end = &rs->backlog;
		free(d);
	}
	return (ssize_t)n;
}

/* shutdown(SHUT_RD): a read ends at once, with 0 when nothing is left */
static int shut_rd(const struct rsock *rs)
{
	return __atomic_load_n(&rs->shut, __ATOMIC_RELAXED) & (SHUT_RD + 1);
}

int rp_rx_ready(struct rsock *rs)
{
	struct rtn_chan_shm *shm = rs->ch->shm;

	return __atomic_load_n(&rs->backlog, __ATOMIC_RELAXED) != NULL || shut_rd(rs) ||
	       rtn_ring_cons_peek(&shm->rx, rtn_chan_rx_msgs(shm, rs->ch->depth), rs->ch->depth);
}

int rp_rx_arm(struct rsock *rs)
{
	if (__atomic_load_n(&rs->backlog, __ATOMIC_RELAXED) || shut_rd(rs))
		return 1;
	return rtn_app_rx_arm(rs->ch);
}

/* Take (or peek at) one message into @p mh; -EAGAIN when the ring is empty. */
static ssize_t take_one(struct rsock *rs, struct msghdr *mh, int flags)
{
	struct rtn_chan_shm *shm = rs->ch->shm;
	uint8_t copy[RTN_CHAN_MSG_MAX];
	struct rx_view v;
	struct rtn_msg *m;
	ssize_t rc = -EAGAIN;
	uint32_t flen;

	pthread_mutex_lock(&rs->rx_lock);
	if (rs->backlog && (rc = take_backlog(rs, mh, flags)) != -EAGAIN) {
		pthread_mutex_unlock(&rs->rx_lock);
		return rc;
	}
	while ((m = oldest(rs, &v, &flen))) {
		size_t n;

		if (view(rs, m, flen, copy, &v) < 0) {
			rs->ch->rx_bad_hdr++;
			rtn_ring_cons_release_n(&shm->rx, v.pieces);
			continue;
		}
		/* a connected socket takes its peer's datagrams only, as the kernel's */
		if (rs->connected && rs->domain == AF_INET &&
		    (ntohl(v.from.sin_addr.s_addr) != rs->raddr ||
		     ntohs(v.from.sin_port) != rs->rport)) {
			rtn_ring_cons_release_n(&shm->rx, v.pieces);
			continue;
		}
		n = v.pieces == 1 ? scatter(mh, v.data, v.len) : scatter_chain(rs, mh, &v);
		mh->msg_flags = n < v.len ? MSG_TRUNC : 0;
		if (mh->msg_name) { /* the full length told, what fits copied */
			const void *src = rs->domain == AF_INET ? (const void *)&v.from :
								  (const void *)&v.ll;
			socklen_t sl = rs->domain == AF_INET ? sizeof(v.from) : sizeof(v.ll);

			memcpy(mh->msg_name, src, mh->msg_namelen < sl ? mh->msg_namelen : sl);
			mh->msg_namelen = sl;
		} else {
			mh->msg_namelen = 0;
		}
		stamp_cmsgs(rs, m, &v, mh);
		if (!(flags & MSG_PEEK)) {
			rtn_ring_cons_release_n(&shm->rx, v.pieces);
			rs->ch->rx_received++;
			/*
			 * Drained, and the station wrote the notify fd since it was
			 * armed: clear and re-arm now, so epoll does not report the
			 * socket readable with nothing in it (still armed: nothing
			 * was written, no system call).
			 */
			if (!rtn_ring_cons_peek(&shm->rx, rtn_chan_rx_msgs(shm, rs->ch->depth),
						rs->ch->depth) &&
			    !__atomic_load_n(&shm->rx_notify, __ATOMIC_ACQUIRE))
				rtn_app_rx_arm(rs->ch);
		}
		rc = flags & MSG_TRUNC ? (ssize_t)v.len : (ssize_t)n;
		break;
	}
	pthread_mutex_unlock(&rs->rx_lock);
	return rc;
}

static int64_t rx_timeout_ns(const struct rsock *rs, int flags)
{
	if ((flags & MSG_DONTWAIT) || rs->nonblock)
		return 0;
	if (rs->rtnet_timeout_set)
		return rs->rtnet_timeout_ns < 0 ? 0 :
		       rs->rtnet_timeout_ns	? rs->rtnet_timeout_ns :
						  -1;
	return rs->rcvtimeo_ns ? rs->rcvtimeo_ns : -1;
}

ssize_t rp_recvmsg(int fd, struct rsock *rs, struct msghdr *mh, int flags)
{
	int64_t timeout = rx_timeout_ns(rs, flags), deadline;
	ssize_t rc;
	int e;

	/* as Linux's UDP: no error is ever queued; the flags it does not know (and
	 * MSG_OOB, on receive) are ignored */
	if (flags & MSG_ERRQUEUE)
		return -EAGAIN;
	if (rp_bad_ptr(mh, sizeof(*mh)) || !mh)
		return -EFAULT;
	if ((e = rp_iov_ok(mh->msg_iov, mh->msg_iovlen, SIZE_MAX)))
		return e;
	if (mh->msg_name && mh->msg_namelen && rp_bad_ptr(mh->msg_name, mh->msg_namelen))
		return -EFAULT;
	deadline = timeout > 0 ? rtn_now() + timeout : 0;
	for (;;) {
		struct pollfd p[2];
		int wait_ms, n;

		rc = take_one(rs, mh, flags);
		if (rc != -EAGAIN)
			return rc;
		if (shut_rd(rs)) { /* as the kernel's: the end, with nothing */
			mh->msg_namelen = 0;
			mh->msg_controllen = 0;
			mh->msg_flags = 0;
			return 0;
		}
		if (rs->dead)
			return -ENETDOWN;
		/* empty: arm the notify fd (and see a message that came meanwhile) */
		n = rp_rx_arm(rs);
		if (n < 0) {
			rs->dead = 1;
			return -ENETDOWN;
		}
		if (n > 0)
			continue;
		if (!rp_alive(rs))
			return -ENETDOWN;
		if (timeout == 0)
			return -EAGAIN;
		wait_ms = -1;
		if (deadline) {
			int64_t left = deadline - rtn_now();

			if (left <= 0)
				return -EAGAIN;
			wait_ms = (int)((left + 999999) / 1000000);
		}
		p[0] = (struct pollfd){ .fd = rtn_app_fd(rs->ch), .events = POLLIN };
		p[1] = (struct pollfd){ .fd = rtn_app_ctlfd(rs->ch), .events = POLLRDHUP };
		n = rp_real.libc_poll(p, p[1].fd >= 0 ? 2 : 1, wait_ms);
		if (n < 0)
			return -errno; /* EINTR: a signal, as the kernel's recv */
		if (p[1].revents) {
			rs->dead = 1;
			/* what the station delivered before it went is still the program's */
			rc = take_one(rs, mh, flags);
			return rc == -EAGAIN ? -ENETDOWN : rc;
		}
	}
}

int rp_fionread(struct rsock *rs)
{
	uint8_t copy[RTN_CHAN_MSG_MAX];
	struct rx_view v;
	struct rtn_msg *m;
	uint32_t flen;
	int n = 0;

	pthread_mutex_lock(&rs->rx_lock);
	if (rs->backlog)
		n = (int)rs->backlog->len; /* as Linux's UDP: the next datagram's size */
	else if ((m = oldest(rs, &v, &flen)) && view(rs, m, flen, copy, &v) == 0)
		n = (int)v.len;
	pthread_mutex_unlock(&rs->rx_lock);
	return n;
}
