/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_chanio.c
 * @brief Application side of a channel's rings (see rtn_chanio.h).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "rtn_chan.h"
#include "rtn_chanio.h"
#include "rtn_core.h"

/* The ring depth, read once: a power of two up to RTN_CHAN_MAX_DEPTH, or 0. */
static uint32_t depth_of(const struct rtn_chan_shm *c)
{
	uint32_t d = __atomic_load_n(&c->depth, __ATOMIC_RELAXED);

	return d && !(d & (d - 1)) && d <= RTN_CHAN_MAX_DEPTH ? d : 0;
}

int rtn_chanio_send(struct rtn_chan_shm *c, const uint8_t *frame, uint32_t len,
		    uint32_t seq, int64_t sched_ns, int kickfd)
{
	struct rtn_msg *m;
	uint64_t one = 1;
	uint32_t depth = depth_of(c);

	rtn_clear_error();
	if (!depth)
		return -EPROTO;
	if (len > c->max_size || len > RTN_CHAN_MSG_MAX)
		return -EINVAL;
	m = rtn_ring_prod_slot(&c->tx, rtn_chan_tx_msgs(c), depth);
	if (!m) {
		c->tx.drops++;
		return -ENOBUFS;
	}
	memcpy(m->frame, frame, len);
	m->len = len;
	m->seq = seq;
	m->sched_ns = sched_ns;
	m->tx_ns = m->rx_ns = 0;
	rtn_ring_prod_commit(&c->tx);
	if (kickfd >= 0 && __atomic_load_n(&c->kick_wanted, __ATOMIC_ACQUIRE)) {
		/* NoMAC sends as soon as it is told; nothing to do if the kick is lost */
		if (write(kickfd, &one, sizeof(one)) < 0)
			return 0;
	}
	return 0;
}

int rtn_chanio_recv(struct rtn_chan_shm *c, struct rtn_msg *out, int timeout_ms)
{
	struct rtn_msg *m;
	struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };
	uint32_t depth = depth_of(c);

	rtn_clear_error();
	if (!depth)
		return -EPROTO;
	for (;;) {
		m = rtn_ring_cons_peek(&c->rx, rtn_chan_rx_msgs(c, depth), depth);
		if (m) {
			uint32_t len = rtn_msg_len(m);

			if (len > RTN_CHAN_MSG_MAX)
				len = RTN_CHAN_MSG_MAX;
			memcpy(out, m, sizeof(*out) - RTN_CHAN_MSG_MAX);
			memcpy(out->frame, m->frame, len);
			out->len = len;
			rtn_ring_cons_release(&c->rx);
			return 1;
		}
		if (!__atomic_load_n(&c->alive, __ATOMIC_ACQUIRE))
			return -EPIPE;
		if (timeout_ms <= 0)
			return 0;
		{
			uint32_t head = __atomic_load_n(&c->rx.head, __ATOMIC_ACQUIRE);

			__atomic_store_n(&c->rx.waiting, 1, __ATOMIC_RELEASE);
			/* re-check after announcing: the RT thread may have just produced */
			if (head == c->rx.tail)
				syscall(SYS_futex, &c->rx.head, FUTEX_WAIT, head, &ts, NULL, 0);
			__atomic_store_n(&c->rx.waiting, 0, __ATOMIC_RELEASE);
		}
		timeout_ms = 0;	/* one wait only: the caller loops */
	}
}
