// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_app_open.c
 * @brief rtn_app_open(): ask the station daemon for a channel over its
 *        control socket (one JSON line each way, the channel's memfd and
 *        kick eventfd passed with SCM_RIGHTS), then attach to it.
 *
 * The reply is the daemon's, so it is read as hostile: bounded, and the
 * descriptors it carries are closed on every failure.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "rtn_app.h"
#include "rtn_app_priv.h"
#include "rtn_core.h"

#define DEFAULT_RUN_DIR "/run/rtnet"
#define NETNS_DIR	"/var/run/netns"
#define REPLY_MAX	1024

/* Name of the calling thread's network namespace under /var/run/netns, as rtnet.paths. */
static void current_netns(char *name, size_t cap)
{
	struct stat me, st;
	struct dirent *de;
	char path[PATH_MAX];
	DIR *d;

	snprintf(name, cap, "default");
	if (stat("/proc/thread-self/ns/net", &me) < 0)
		return;
	d = opendir(NETNS_DIR);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", NETNS_DIR, de->d_name);
		if (stat(path, &st) == 0 && st.st_ino == me.st_ino && st.st_dev == me.st_dev) {
			snprintf(name, cap, "%s", de->d_name);
			break;
		}
	}
	closedir(d);
}

/* Value of "key" in a flat one-line JSON object; returns a pointer past "key": */
static const char *json_find(const char *js, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(js, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Copy a JSON string value (simple escapes only) into @p out. */
static void json_string(const char *p, char *out, size_t cap)
{
	size_t n = 0;

	if (!p || *p != '"') {
		snprintf(out, cap, "unknown error");
		return;
	}
	for (p++; *p && *p != '"' && n + 1 < cap; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			if (*p == 'u') { /* keep it printable: \uXXXX becomes '?' */
				size_t hex = strspn(p + 1, "0123456789abcdefABCDEF");

				out[n++] = '?';
				p += hex < 4 ? hex : 4;
				continue;
			}
			out[n++] = *p == 'n' ? ' ' : *p == 't' ? ' ' : *p;
			continue;
		}
		out[n++] = *p;
	}
	out[n] = 0;
}

/* Read one reply line, collecting SCM_RIGHTS descriptors from any part of it. */
static int read_reply(int fd, char *line, size_t cap, int *fds, int *nfds)
{
	size_t used = 0;

	*nfds = 0;
	while (used + 1 < cap) {
		char ctl[CMSG_SPACE(4 * sizeof(int))];
		struct iovec iov = { .iov_base = line + used, .iov_len = cap - 1 - used };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl,
				     .msg_controllen = sizeof(ctl) };
		struct cmsghdr *c;
		ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			int k, cnt;

			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (k = 0; k < cnt; k++) {
				int f;

				memcpy(&f, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
				if (*nfds < 4)
					fds[(*nfds)++] = f;
				else
					close(f);
			}
		}
		if (n == 0)
			return -ECONNRESET;
		used += n;
		line[used] = 0;
		if (memchr(line, '\n', used))
			return 0;
	}
	return -EMSGSIZE;
}

int rtn_app_open(const char *dev, const char *netns, const struct rtn_chan_opts *o,
		 struct rtn_app_chan **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *base = getenv("RTNET_RUN_DIR");
	char ns[256], req[320], line[REPLY_MAX], err[256];
	int fd, rc, fds[4], nfds = 0, i, n;
	const char *p;

	rtn_clear_error();
	if (!dev || !*dev || strchr(dev, '/'))
		return rtn_set_error(-EINVAL, "device name %s is not valid", dev ? dev : "(null)");
	/* the control protocol has no such request: an application's channel publishes cycles */
	if (o->no_cycles)
		return rtn_set_error(-EINVAL,
				     "%s: no_cycles is for the station daemon's own channels", dev);
	/* the protocol carries whole microseconds */
	if (o->lifetime_ns < 0 || o->lifetime_ns > RTN_CHAN_LIFETIME_MAX_NS ||
	    o->lifetime_ns % 1000)
		return rtn_set_error(-EINVAL,
				     "%s: lifetime %lld ns: whole microseconds up to %lld ns", dev,
				     (long long)o->lifetime_ns, RTN_CHAN_LIFETIME_MAX_NS);
	if (netns)
		snprintf(ns, sizeof(ns), "%s", netns);
	else
		current_netns(ns, sizeof(ns));
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s/%s.ctl",
		     base && *base ? base : DEFAULT_RUN_DIR, ns, dev) >= (int)sizeof(sa.sun_path))
		return rtn_set_error(-ENAMETOOLONG, "control socket path for %s is too long", dev);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rtn_set_error(-errno, "control socket: %s", strerror(errno));
	if (rtn_app_connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(fd);
		return rtn_set_error(rc, "%s: no station daemon at %s (%s)", dev, sa.sun_path,
				     strerror(-rc));
	}
	if (o->udp_port) /* a UDP socket (the daemon knows its EtherType) */
		n = snprintf(req, sizeof(req),
			     "{\"cmd\": \"channel.open\", \"udp_port\": %u, \"stamped\": %s, "
			     "\"share\": %u, \"slot\": %u, \"prio\": %u, \"max_size\": %u, "
			     "\"depth\": %u",
			     o->udp_port, o->udp_flags & RTN_UDP_F_STAMPED ? "true" : "false",
			     o->udp_share, o->slot, o->prio, o->max_size, o->depth);
	else
		n = snprintf(req, sizeof(req),
			     "{\"cmd\": \"channel.open\", \"ethertype\": %u, \"slot\": %u, "
			     "\"prio\": %u, \"max_size\": %u, \"depth\": %u",
			     o->ethertype, o->slot, o->prio, o->max_size, o->depth);
	/* 0 asks for nothing: the daemon's [[channel]] setting, as Channel.open's None */
	if (o->lifetime_ns)
		n += snprintf(req + n, sizeof(req) - n, ", \"lifetime_us\": %lld",
			      (long long)(o->lifetime_ns / 1000));
	snprintf(req + n, sizeof(req) - n, "}\n");
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		rc = -errno;
		close(fd);
		return rtn_set_error(rc ? rc : -EIO, "%s: control request failed", dev);
	}
	rc = read_reply(fd, line, sizeof(line), fds, &nfds);
	if (rc < 0) {
		rtn_set_error(rc, "%s: no reply from the station daemon (%s)", dev, strerror(-rc));
		goto fail;
	}
	p = json_find(line, "ok");
	if (!p || strncmp(p, "true", 4)) {
		long e;

		json_string(json_find(line, "error"), err, sizeof(err));
		/* the station's own errno where the daemon gives one (EADDRINUSE for a bound port) */
		p = json_find(line, "errno");
		e = p ? strtol(p, NULL, 10) : 0;
		rc = rtn_set_error(e > 0 && e < 4096 ? (int)-e : -EREMOTEIO,
				   "%s: channel refused: %s", dev, err);
		goto fail;
	}
	if (nfds != 3) {
		rc = rtn_set_error(-EPROTO, "%s: daemon sent %d descriptors, expected 3", dev,
				   nfds);
		goto fail;
	}
	rc = rtn_app_attach(fds[0], fds[1], out);
	if (rc < 0)
		goto fail;
	rtn_app_set_notifyfd(*out, fds[2]); /* the channel's now, like the other two */
	p = json_find(line, "channel");
	(*out)->channel = p ? (int32_t)strtol(p, NULL, 10) : -1;
	(*out)->ctlfd = fd;
	return 0;
fail:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	close(fd);
	return rc;
}

int rtn_app_ipv4_group(struct rtn_app_chan *ch, uint32_t group, int on)
{
	char req[160], line[REPLY_MAX], err[256];
	int fds[4], nfds = 0, rc, i;
	const char *p;
	long e;

	rtn_clear_error();
	if (ch->ctlfd < 0)
		return rtn_set_error(-ENOTCONN, "the channel has no control connection");
	snprintf(req, sizeof(req),
		 "{\"cmd\": \"ipv4.join\", \"group\": \"%u.%u.%u.%u\", \"join\": %s}\n",
		 group >> 24, group >> 16 & 255, group >> 8 & 255, group & 255,
		 on ? "true" : "false");
	if (send(ch->ctlfd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		return rtn_set_error(errno == EPIPE ? -ENOTCONN : -errno, "multicast request: %s",
				     strerror(errno));
	rc = read_reply(ch->ctlfd, line, sizeof(line), fds, &nfds);
	for (i = 0; i < nfds; i++) /* none expected: a daemon that sends some loses them */
		close(fds[i]);
	if (rc < 0)
		return rtn_set_error(rc == -ECONNRESET ? -ENOTCONN : rc,
				     "multicast request: no reply (%s)", strerror(-rc));
	p = json_find(line, "ok");
	if (p && !strncmp(p, "true", 4))
		return 0;
	json_string(json_find(line, "error"), err, sizeof(err));
	p = json_find(line, "errno");
	e = p ? strtol(p, NULL, 10) : 0;
	return rtn_set_error(e > 0 && e < 4096 ? (int)-e : -EREMOTEIO, "%s", err);
}
