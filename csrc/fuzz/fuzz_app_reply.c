// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_app_reply.c
 * @brief Fuzz target: what the application library reads from the station
 *        daemon's control socket when it opens a channel (rtn_app_open in
 *        rtn_app_open.c: the reply line, its JSON fields, the descriptors passed
 *        with it).
 *
 * The connection (rtn_app_connect, the library's socket port, defined here
 * in place of rtn_app_connect.o) is replaced by one end of a socket pair whose other end already
 * holds the "daemon's" reply, so rtn_app_open() runs unchanged on it.
 * Input: a plan byte (how many descriptors, 0-5, and in which part of the
 * reply), a byte choosing each descriptor (a channel's memfd, an eventfd,
 * /dev/null, memory too small for a channel), a byte splitting the reply
 * into up to four sends, then the reply bytes.  Checked: rtn_app_open()
 * returns 0 with a channel or a negative errno with a message, never blocks
 * (the daemon's end is shut for writing after the reply), and leaves no
 * descriptor open that it does not own.
 */
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <errno.h>
#include "rtn_app.h"
#include "rtn_app_priv.h"
#include "rtn_core.h"
#include "app_harness.h"

#define MAX_FDS	  5
#define MAX_PARTS 4

static struct {
	const uint8_t *reply;
	size_t len;
	uint32_t parts, fd_part, nfds;
	int fds[MAX_FDS];
	int peer; /* the daemon's end, closed after rtn_app_open */
} plan;

static void send_part(int sock, const uint8_t *p, size_t n, int with_fds)
{
	char ctl[CMSG_SPACE(MAX_FDS * sizeof(int))];
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (!n)
		return; /* a stream carries descriptors only with at least one byte */
	if (with_fds && plan.nfds) {
		struct cmsghdr *c;

		memset(ctl, 0, sizeof(ctl));
		mh.msg_control = ctl;
		mh.msg_controllen = CMSG_SPACE(plan.nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(plan.nfds * sizeof(int));
		memcpy(CMSG_DATA(c), plan.fds, plan.nfds * sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)n)
		fuzz_fail("cannot send the reply: %s", strerror(errno));
}

/* the library's socket port (rtn_app_priv.h): linked in place of rtn_app_connect.o */
int rtn_app_connect(int fd, const struct sockaddr *sa, unsigned int len)
{
	size_t per = (plan.len + plan.parts - 1) / plan.parts, off = 0;
	uint32_t k;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		fuzz_fail("socketpair: %s", strerror(errno));
	for (k = 0; k < plan.parts && off < plan.len; k++) {
		size_t n = plan.len - off < per ? plan.len - off : per;

		send_part(sv[1], plan.reply + off, n, k == plan.fd_part);
		off += n;
	}
	/* the daemon says no more: a reply without a newline ends in ECONNRESET, not a hang */
	shutdown(sv[1], SHUT_WR);
	if (dup2(sv[0], fd) < 0)
		fuzz_fail("dup2: %s", strerror(errno));
	close(sv[0]);
	plan.peer = sv[1];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int pool[4]; /* channel memfd, eventfd, /dev/null, too small a memfd */
	struct fuzz_in in = fuzz_in_make(data, size);
	uint8_t how = fuzz_u8(&in), kinds = fuzz_u8(&in), split = fuzz_u8(&in);
	struct rtn_chan_opts o;
	struct rtn_app_chan *ch = NULL;
	int rc, before;
	uint32_t i;

	if (!pool[0]) {
		pool[0] = app_channel_memfd();
		pool[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		pool[2] = open("/dev/null", O_RDWR | O_CLOEXEC);
		pool[3] = memfd_create("fuzz-small", MFD_CLOEXEC);
		if (pool[1] < 0 || pool[2] < 0 || pool[3] < 0 || ftruncate(pool[3], 64) < 0)
			fuzz_fail("cannot make the descriptors to pass: %s", strerror(errno));
	}
	plan.nfds = how % (MAX_FDS + 1);
	plan.fd_part = (how >> 4) % MAX_PARTS;
	plan.parts = 1 + split % MAX_PARTS;
	/* kinds 0 sends the daemon's usual pair first: the memfd, then the eventfd */
	for (i = 0; i < plan.nfds; i++)
		plan.fds[i] = pool[(i + (kinds >> (2 * (i % 4)))) & 3];
	plan.reply = in.p;
	plan.len = in.left;

	before = lowest_free_fd();
	rtn_chan_opts_init(&o);
	o.ethertype = APP_ETHERTYPE;
	rtn_set_error(0, "%s", "");
	rc = rtn_app_open("rteth0", "fuzz", &o, &ch);
	close(plan.peer);
	if (rc == 0) {
		if (!ch || ch->ctlfd < 0)
			fuzz_fail("rtn_app_open succeeded without a channel");
		rtn_app_close(ch);
	} else if (rc > 0 || !rtn_last_error()[0]) {
		fuzz_fail("rtn_app_open returned %d with message \"%s\"", rc, rtn_last_error());
	}
	if (lowest_free_fd() != before)
		fuzz_fail("rtn_app_open (returned %d) left a descriptor open", rc);
	return 0;
}
