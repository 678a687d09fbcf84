// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_preload_io.c
 * @brief The socket calls librtnet_preload.so takes over for data: send,
 *        sendto, sendmsg, sendmmsg, write, writev and their receive
 *        counterparts (the fortified __*_chk ones too).  Each judges a
 *        pending socket first, then goes to the data path
 *        (rtn_preload_tx.c, rtn_preload_rx.c) for a real-time one, or to
 *        the kernel.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include "rtn_preload_priv.h"

#define EXPORT __attribute__((visibility("default")))

/*
 * A pending socket sending to @p to is judged first; the real-time socket
 * it then is, held for the call (rp_hold_rt), or NULL.
 */
static struct rsock *judged(int fd, const struct sockaddr *to, socklen_t tolen, int *err)
{
	struct rsock *rs = rp_lookup(fd);

	*err = 0;
	if (rs && rs->state == RP_PENDING) {
		rs = rp_hold(fd); /* a close meanwhile leaves it to this judging */
		if (rs) {
			*err = rp_judge_send(fd, rs, to, tolen);
			rp_put(rs);
		}
	}
	return *err ? NULL : rp_hold_rt(fd);
}

/* A held socket's call is over: its result, errno set from it. */
static long put_done(struct rsock *rs, long rc)
{
	rp_put(rs);
	return rp_done(rc);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *mh, int flags)
{
	int err;
	struct rsock *rs = judged(fd, mh && !rp_bad_ptr(mh, sizeof(*mh)) ? mh->msg_name : NULL,
				  mh && !rp_bad_ptr(mh, sizeof(*mh)) ? mh->msg_namelen : 0, &err);

	if (err)
		return rp_done(err);
	if (!rs)
		return rp_real.libc_sendmsg(fd, mh, flags);
	return put_done(rs, rp_sendmsg(fd, rs, mh, flags));
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
		      socklen_t tolen)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_name = (void *)to,
			     .msg_namelen = to ? tolen : 0,
			     .msg_iov = &iov,
			     .msg_iovlen = 1 };
	int err;
	struct rsock *rs = judged(fd, to, tolen, &err);

	if (err)
		return rp_done(err);
	if (!rs)
		return rp_real.libc_sendto(fd, buf, len, flags, to, tolen);
	return put_done(rs, rp_sendmsg(fd, rs, &mh, flags));
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct rsock *rs = rp_hold_rt(fd);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (!rs)
		return rp_real.libc_send(fd, buf, len, flags);
	return put_done(rs, rp_sendmsg(fd, rs, &mh, flags));
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct rsock *rs = rp_hold_rt(fd);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (!rs)
		return rp_real.libc_write(fd, buf, len);
	return put_done(rs, rp_sendmsg(fd, rs, &mh, 0));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct rsock *rs = rp_hold_rt(fd);
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n < 0 ? 0 : n };

	if (!rs)
		return rp_real.libc_writev(fd, iov, n);
	return put_done(rs, n < 0 ? -EINVAL : rp_sendmsg(fd, rs, &mh, 0));
}

EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	int err;
	struct rsock *rs =
		judged(fd, n && v && !rp_bad_ptr(v, sizeof(*v)) ? v[0].msg_hdr.msg_name : NULL,
		       n && v && !rp_bad_ptr(v, sizeof(*v)) ? v[0].msg_hdr.msg_namelen : 0, &err);
	unsigned int i;

	if (err)
		return (int)rp_done(err);
	if (!rs)
		return rp_real.libc_sendmmsg(fd, v, n, flags);
	if (n > 1024) /* UIO_MAXIOV, as the kernel caps it */
		n = 1024;
	if (n && (!v || rp_bad_ptr(v, n * sizeof(*v))))
		return (int)put_done(rs, -EFAULT);
	for (i = 0; i < n; i++) {
		ssize_t rc = rp_sendmsg(fd, rs, &v[i].msg_hdr, flags);

		if (rc < 0)
			return (int)put_done(rs, i ? (long)i : rc);
		v[i].msg_len = (unsigned int)rc;
	}
	return (int)put_done(rs, (long)n);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *mh, int flags)
{
	struct rsock *rs = rp_hold_rt(fd);

	if (!rs)
		return rp_real.libc_recvmsg(fd, mh, flags);
	return put_done(rs, rp_recvmsg(fd, rs, mh, flags));
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
			socklen_t *fromlen)
{
	struct rsock *rs = rp_hold_rt(fd);
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t rc;

	if (!rs)
		return rp_real.libc_recvfrom(fd, buf, len, flags, from, fromlen);
	if (from) {
		if (!fromlen || rp_bad_ptr(fromlen, sizeof(*fromlen)))
			return put_done(rs, -EFAULT);
		mh.msg_name = from;
		mh.msg_namelen = *fromlen;
	}
	rc = rp_recvmsg(fd, rs, &mh, flags);
	if (rc >= 0 && from)
		*fromlen = mh.msg_namelen;
	return put_done(rs, rc);
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}

EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	struct rsock *rs = rp_hold_rt(fd);
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (!rs)
		return rp_real.libc_read(fd, buf, len);
	return put_done(rs, rp_recvmsg(fd, rs, &mh, 0));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	struct rsock *rs = rp_hold_rt(fd);
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n < 0 ? 0 : n };

	if (!rs)
		return rp_real.libc_readv(fd, iov, n);
	return put_done(rs, n < 0 ? -EINVAL : rp_recvmsg(fd, rs, &mh, 0));
}

EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *t)
{
	struct rsock *rs = rp_hold_rt(fd);
	unsigned int i;

	if (!rs)
		return rp_real.libc_recvmmsg(fd, v, n, flags, t);
	if (n > 1024)
		n = 1024;
	if (n && (!v || rp_bad_ptr(v, n * sizeof(*v))))
		return (int)put_done(rs, -EFAULT);
	for (i = 0; i < n; i++) {
		/* after the first, MSG_WAITFORONE takes only what is there */
		int f = i && (flags & MSG_WAITFORONE) ? flags | MSG_DONTWAIT : flags;
		ssize_t rc = rp_recvmsg(fd, rs, &v[i].msg_hdr, f & ~MSG_WAITFORONE);

		if (rc < 0)
			return (int)put_done(rs, i ? (long)i : rc);
		v[i].msg_len = (unsigned int)rc;
	}
	return (int)put_done(rs, (long)n);
}

/* _FORTIFY_SOURCE's checked variants, which programs built with it call instead */
EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		abort(); /* as glibc's __chk_fail: the program overflows its own buffer */
	return recv(fd, buf, len, flags);
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			      struct sockaddr *from, socklen_t *fromlen);
EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			      struct sockaddr *from, socklen_t *fromlen)
{
	if (len > buflen)
		abort();
	return recvfrom(fd, buf, len, flags, from, fromlen);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		abort();
	return read(fd, buf, len);
}
