// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_tx.c
 * @brief The send half of librtnet_preload.so's data path: sending is
 *        building the frame in the channel's TX ring (rtn_app_sendto(),
 *        rtn_app_send_raw()), with no system call unless a NoMAC station
 *        must be kicked; a full ring waits as a blocking kernel socket
 *        would, or says EAGAIN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "rtn_app_priv.h"
#include "rtn_chan_inline.h"
#include "rtn_preload_priv.h"
#include "rtn_time_inline.h"

#define ALIVE_CHECK_EVERY 1024 /* sends between looks at the control connection */

static ssize_t gather(const struct msghdr *mh, uint8_t *buf, size_t cap, const void **one)
{
	size_t i, len = 0;

	if (mh->msg_iovlen == 1) { /* one piece: no copy before the ring's */
		*one = mh->msg_iov[0].iov_base;
		return (ssize_t)mh->msg_iov[0].iov_len;
	}
	*one = buf;
	for (i = 0; i < mh->msg_iovlen; i++) {
		if (mh->msg_iov[i].iov_len > cap - len)
			return -EMSGSIZE;
		memcpy(buf + len, mh->msg_iov[i].iov_base, mh->msg_iov[i].iov_len);
		len += mh->msg_iov[i].iov_len;
	}
	return (ssize_t)len;
}

static ssize_t send_udp(struct rsock *rs, const struct msghdr *mh, const void *data, size_t len)
{
	uint32_t ip;
	uint16_t port;
	int rc;

	if (mh->msg_name && mh->msg_namelen) {
		struct sockaddr_in to;

		if (mh->msg_namelen < sizeof(to))
			return -EINVAL;
		memcpy(&to, mh->msg_name, sizeof(to));
		if (to.sin_family != AF_INET)
			return -EAFNOSUPPORT;
		ip = ntohl(to.sin_addr.s_addr);
		port = ntohs(to.sin_port);
	} else if (rs->connected) {
		ip = rs->raddr;
		port = rs->rport;
	} else {
		return -EDESTADDRREQ;
	}
	if (!port)
		return -EINVAL;
	if (len > RTN_UDP_MAX_DGRAM) /* as Linux's UDP; the library says what fits its ring */
		return -EMSGSIZE;
	/* a broadcast only from a socket that asked for it, as Linux's */
	if ((ip == INADDR_BROADCAST || (rp_conf.rt_bcast && ip == rp_conf.rt_bcast)) &&
	    !rs->kept[RP_SO_BROADCAST])
		return -EACCES;
	pthread_mutex_lock(&rs->tx_lock);
	rc = rtn_app_sendto(rs->ch, ip, port, data, (uint32_t)len, RTN_APP_SCHED_NOW, NULL);
	pthread_mutex_unlock(&rs->tx_lock);
	return rc < 0 ? rc : (ssize_t)len;
}

static ssize_t send_packet(struct rsock *rs, const struct msghdr *mh, const void *data, size_t len)
{
	uint8_t frame[RTN_CHAN_MSG_MAX];
	const void *f = data;
	size_t flen = len;
	int rc;

	if (rs->type == SOCK_DGRAM) { /* the program gives the payload and the address */
		struct sockaddr_ll to;
		uint16_t et = htons(rs->ethertype);

		if (!mh->msg_name || mh->msg_namelen < offsetof(struct sockaddr_ll, sll_addr) + 6)
			return -EDESTADDRREQ;
		memcpy(&to, mh->msg_name,
		       mh->msg_namelen < sizeof(to) ? mh->msg_namelen : sizeof(to));
		if (to.sll_family != AF_PACKET)
			return -EINVAL;
		if (len > sizeof(frame) - 14)
			return -EMSGSIZE;
		memcpy(frame, to.sll_addr, 6);
		memcpy(frame + 6, rs->ch->shm->station_mac, 6);
		memcpy(frame + 12, &et, 2);
		memcpy(frame + 14, data, len);
		f = frame;
		flen = len + 14;
	}
	if (flen > RTN_CHAN_MSG_MAX)
		return -EMSGSIZE;
	pthread_mutex_lock(&rs->tx_lock);
	rc = rtn_app_send_raw(rs->ch, f, (uint32_t)flen);
	pthread_mutex_unlock(&rs->tx_lock);
	if (rc == -EINVAL && flen > __atomic_load_n(&rs->ch->shm->max_size, __ATOMIC_RELAXED))
		rc = -EMSGSIZE;
	return rc < 0 ? rc : (ssize_t)len;
}

/*
 * How long a full TX ring takes to have room again: under TDMA a cycle (it
 * drains at the channel's slot), under NoMAC (which publishes no cycles)
 * TX_WAIT_NS while the kicked station drains it.
 */
#define TX_WAIT_NS 100000LL

int64_t rp_tx_drain_ns(const struct rsock *rs)
{
	int64_t cycle = __atomic_load_n(&rs->ch->shm->cycle_ns, __ATOMIC_RELAXED);

	return cycle > 0 && cycle <= RTN_NS_PER_SEC ? cycle : TX_WAIT_NS;
}

int rp_tx_room(struct rsock *rs)
{
	struct rtn_chan_shm *shm = rs->ch->shm;

	/* a socket whose station went away is writable: its send then fails, as Linux's */
	return rs->dead || !__atomic_load_n(&shm->alive, __ATOMIC_ACQUIRE) ||
	       rtn_ring_prod_slot(&shm->tx, rtn_chan_tx_msgs(shm), rs->ch->depth) != NULL;
}

/*
 * A blocking socket whose TX ring is full waits, as a kernel socket waits
 * for its send buffer: under TDMA for the next cycle start (a futex, woken
 * by the station), under NoMAC in sleeps (rp_tx_drain_ns).  -EAGAIN once
 * SO_SNDTIMEO is over, -EINTR for a signal.
 */
static int tx_wait(struct rsock *rs, int64_t deadline)
{
	int64_t cycle = __atomic_load_n(&rs->ch->shm->cycle_ns, __ATOMIC_RELAXED), wait;
	struct rtn_app_waitinfo wi;

	wait = cycle > 0 ? 2 * cycle : TX_WAIT_NS;
	if (deadline) {
		int64_t left = deadline - rtn_now();

		if (left <= 0)
			return -EAGAIN;
		if (left < wait)
			wait = left;
	}
	if (cycle > 0) {
		int rc = rtn_app_wait_cycle(rs->ch, &wi, wait);

		return rc == -ENOTCONN ? -ENETDOWN : 0;
	} else {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = wait };

		return nanosleep(&ts, NULL) < 0 ? -errno : 0;
	}
}

/* The datagram's or frame's bytes, sent; a blocking socket waits for room (tx_wait). */
static ssize_t send_waiting(struct rsock *rs, const struct msghdr *mh, int flags, const void *data,
			    size_t len)
{
	int64_t deadline = 0;
	ssize_t rc;

	for (;;) {
		int w;

		rc = rs->domain == AF_INET ? send_udp(rs, mh, data, len) :
					     send_packet(rs, mh, data, len);
		if (rc != -ENOBUFS)
			break;
		/* full: a non-blocking socket is told to come back, a blocking one waits */
		if (rs->nonblock || (flags & MSG_DONTWAIT))
			return rp_alive(rs) ? -EAGAIN : -ENETDOWN;
		if (!rp_alive(rs))
			return -ENETDOWN;
		if (!deadline && rs->sndtimeo_ns)
			deadline = rtn_now() + rs->sndtimeo_ns;
		w = tx_wait(rs, deadline);
		if (w < 0)
			return w;
	}
	if (rc == -ENOTCONN) { /* the station closed the channel */
		rs->dead = 1;
		return -ENETDOWN;
	}
	/* a killed daemon never says so in the ring: look at its connection now and then */
	if (++rs->sends % ALIVE_CHECK_EVERY == 0 && !rp_alive(rs))
		return -ENETDOWN;
	return rc;
}

ssize_t rp_sendmsg(int fd, struct rsock *rs, const struct msghdr *mh, int flags)
{
	uint8_t buf[RTN_CHAN_MSG_MAX], *big = NULL;
	/* a UDP datagram may leave in fragments, a packet socket's frame may not */
	size_t max = rs->domain == AF_INET ? RTN_UDP_MAX_DGRAM : RP_FRAME_MAX, total = 0, i;
	const void *data;
	ssize_t len, rc;

	(void)fd;
	if (flags & MSG_OOB) /* as Linux's UDP, which ignores the flags it does not know */
		return -EOPNOTSUPP;
	if (!mh || rp_bad_ptr(mh, sizeof(*mh)))
		return -EFAULT;
	if ((rc = rp_iov_ok(mh->msg_iov, mh->msg_iovlen, max)))
		return rc;
	if (mh->msg_name && mh->msg_namelen && rp_bad_ptr(mh->msg_name, mh->msg_namelen))
		return -EFAULT;
	if (rs->dead)
		return -ENETDOWN;
	/* pieces of a datagram longer than a frame: gathered on the heap, this call only */
	for (i = 0; mh->msg_iovlen > 1 && i < mh->msg_iovlen; i++)
		total += mh->msg_iov[i].iov_len;
	if (total > sizeof(buf) && !(big = malloc(total)))
		return -ENOBUFS;
	len = gather(mh, big ? big : buf, big ? total : sizeof(buf), &data);
	rc = len < 0 ? len : send_waiting(rs, mh, flags, data, (size_t)len);
	free(big);
	return rc;
}
