// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_app.c
 * @brief Application side of a channel: attaching its memory, frame
 *        building in the TX ring, futex-based receive and cycle waits
 *        (the control-socket request is rtn_app_open.c).
 *
 * Wake-up protocol with the station's RT thread: a sleeper increments the
 * ring's (or the cycle's) waiting counter, re-checks, then futex-waits on
 * the word the RT thread bumps; the RT thread wakes only when the counter
 * is non-zero, so an application that never blocks costs it no system call.
 * Each futex wait is capped at WAIT_SLICE_NS as a safety net against a
 * wake-up lost between the RT thread's commit and its look at the counter.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "rtn_app.h"
#include "rtn_app_hdr.h"
#include "rtn_app_priv.h"
#include "rtn_chan_inline.h"
#include "rtn_core.h"
#include "rtn_time_inline.h"

#define WAIT_SLICE_NS	   (100 * 1000 * 1000LL)
#define LEARN_MAX_CYCLE_NS RTN_NS_PER_SEC /* TDMA cycles are at most 1 s */

/* ---- helpers ---------------------------------------------------------------- */

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static long futex_wait(uint32_t *addr, uint32_t val, int64_t rel_ns)
{
	struct timespec ts = rtn_ns_to_ts(rel_ns);

	/* shared futex: the word lives in a memfd mapped by two processes */
	return syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static int alive(const struct rtn_app_chan *ch)
{
	return __atomic_load_n(&ch->shm->alive, __ATOMIC_ACQUIRE);
}

/* ---- open / attach / close ---------------------------------------------------- */

int rtn_app_attach(int memfd, int kickfd, struct rtn_app_chan **out)
{
	struct rtn_app_chan *ch;
	struct rtn_chan_shm *shm;
	struct stat st;
	uint32_t depth;

	rtn_clear_error();
	if (fstat(memfd, &st) < 0)
		return rtn_set_error(-errno, "channel memory fd %d: %s", memfd, strerror(errno));
	if ((uint64_t)st.st_size < sizeof(*shm))
		return rtn_set_error(-EINVAL, "channel memory of %lld bytes is too small",
				     (long long)st.st_size);
	shm = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, memfd, 0);
	if (shm == MAP_FAILED)
		return rtn_set_error(-errno, "channel mmap: %s", strerror(errno));
	if (shm->magic != RTN_CHAN_MAGIC || shm->version != RTN_CHAN_VERSION) {
		uint32_t magic = shm->magic, version = shm->version;

		munmap(shm, st.st_size);
		return rtn_set_error(-EPROTO,
				     "not a channel of this version (magic 0x%08x, version %u)",
				     magic, version);
	}
	depth = __atomic_load_n(&shm->depth, __ATOMIC_RELAXED);
	if (!depth || (depth & (depth - 1)) || depth > RTN_CHAN_MAX_DEPTH ||
	    shm->tx.size != depth || shm->rx.size != depth ||
	    rtn_chan_shm_size(depth) > (uint64_t)st.st_size) {
		munmap(shm, st.st_size);
		return rtn_set_error(-EPROTO, "channel header inconsistent (depth %u, %lld bytes)",
				     depth, (long long)st.st_size);
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		munmap(shm, st.st_size);
		return rtn_set_error(-ENOMEM, "channel: out of memory");
	}
	ch->shm = shm;
	ch->size = st.st_size;
	ch->depth = depth;
	ch->memfd = memfd;
	ch->kickfd = kickfd;
	ch->ctlfd = -1;
	ch->notifyfd = -1;
	ch->channel = -1;
	ch->udp_port = __atomic_load_n(&shm->udp.port, __ATOMIC_RELAXED);
	ch->udp_flags = __atomic_load_n(&shm->udp.flags, __ATOMIC_RELAXED);
	rtn_stages_init(&ch->stages);
	*out = ch;
	return 0;
}

int rtn_app_set_notifyfd(struct rtn_app_chan *ch, int notifyfd)
{
	rtn_clear_error();
	if (notifyfd < 0)
		return rtn_set_error(-EINVAL, "notify fd %d is not a descriptor", notifyfd);
	if (ch->notifyfd >= 0)
		close(ch->notifyfd);
	ch->notifyfd = notifyfd;
	/* armed from the start: a first message makes the fd readable */
	__atomic_store_n(&ch->shm->rx_notify, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int rtn_app_fd(const struct rtn_app_chan *ch)
{
	return ch->notifyfd;
}

int rtn_app_ctlfd(const struct rtn_app_chan *ch)
{
	return ch->ctlfd;
}

int rtn_app_rx_arm(struct rtn_app_chan *ch)
{
	struct rtn_chan_shm *shm = ch->shm;
	uint64_t count, one = 1;
	ssize_t n;

	if (rtn_ring_cons_peek(&shm->rx, rtn_chan_rx_msgs(shm, ch->depth), ch->depth))
		return 1;
	if (!alive(ch))
		return rtn_set_error(-ENOTCONN, "the station closed the channel");
	if (ch->notifyfd < 0)
		return rtn_set_error(-EBADF, "the channel has no notify descriptor");
	/*
	 * Empty: clear what earlier deliveries wrote, arm, look again.  A
	 * delivery between the look and the arming did not write the fd (it
	 * found it disarmed): the second look sees its message and signals
	 * the fd itself, so the fd is never quiet while the ring holds one.
	 */
	n = read(ch->notifyfd, &count, sizeof(count));
	(void)n;
	__atomic_store_n(&shm->rx_notify, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (rtn_ring_cons_peek(&shm->rx, rtn_chan_rx_msgs(shm, ch->depth), ch->depth)) {
		n = write(ch->notifyfd, &one, sizeof(one));
		(void)n;
		return 1;
	}
	return 0;
}

void rtn_app_close(struct rtn_app_chan *ch)
{
	if (!ch)
		return;
	if (ch->notifyfd >= 0)
		close(ch->notifyfd);
	munmap(ch->shm, ch->size);
	close(ch->memfd);
	if (ch->kickfd >= 0)
		close(ch->kickfd);
	if (ch->ctlfd >= 0)
		close(ch->ctlfd); /* the daemon reclaims the channel */
	free(ch);
}

/* ---- send ------------------------------------------------------------------------ */

struct rtn_msg *rtn_app_tx_slot(struct rtn_app_chan *ch, int *rc)
{
	return rtn_app_tx_slots(ch, 1, rc);
}

struct rtn_msg *rtn_app_tx_slots(struct rtn_app_chan *ch, uint32_t n, int *rc)
{
	struct rtn_chan_shm *shm = ch->shm;
	struct rtn_msg *m;

	if (!alive(ch)) {
		*rc = rtn_set_error(-ENOTCONN, "the station closed the channel");
		return NULL;
	}
	m = n == 1 || rtn_ring_prod_room(&shm->tx, ch->depth, n) ?
		    rtn_ring_prod_slot(&shm->tx, rtn_chan_tx_msgs(shm), ch->depth) :
		    NULL;
	if (!m) {
		/* the RT thread has not run the slot yet: refuse rather than block */
		__atomic_store_n(&ch->tx_full, ch->tx_full + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&shm->tx.drops, shm->tx.drops + 1, __ATOMIC_RELAXED);
		*rc = -ENOBUFS;
	}
	return m;
}

void rtn_app_tx_commit(struct rtn_app_chan *ch)
{
	rtn_app_tx_commit_n(ch, 1);
}

void rtn_app_tx_commit_n(struct rtn_app_chan *ch, uint32_t n)
{
	struct rtn_chan_shm *shm = ch->shm;

	rtn_ring_prod_commit_n(&shm->tx, n);
	ch->tx_sent += n;
	if (__atomic_load_n(&shm->kick_wanted, __ATOMIC_ACQUIRE) && ch->kickfd >= 0) {
		uint64_t one = 1;

		/* NoMAC has no slot timer: without this the frame waits for any other wake-up */
		if (write(ch->kickfd, &one, sizeof(one)) == sizeof(one))
			ch->kicks++;
	}
}

/* Build one message in the TX ring and commit it; the numbering is the caller's. */
static int put_msg(struct rtn_app_chan *ch, const uint8_t dst[6], const void *payload, uint32_t len,
		   int64_t sched_ns, uint32_t seq)
{
	struct rtn_chan_shm *shm = ch->shm;
	uint32_t flen = RTN_APP_OVERHEAD + len;
	struct rtn_msg *m;
	int64_t handover;
	uint8_t *f;
	int rc = 0;

	rtn_clear_error();
	if (alive(ch) && (flen > shm->max_size || flen > RTN_CHAN_MSG_MAX))
		return rtn_set_error(
			-EMSGSIZE, "payload of %u bytes: the channel carries at most %u", len,
			(shm->max_size < RTN_CHAN_MSG_MAX ? shm->max_size : RTN_CHAN_MSG_MAX) -
				RTN_APP_OVERHEAD);
	m = rtn_app_tx_slot(ch, &rc);
	if (!m)
		return rc;
	handover = rtn_app_global_now(ch);
	if (sched_ns == RTN_APP_SCHED_NOW)
		sched_ns = handover;
	f = m->frame;
	memcpy(f, dst, 6);
	memcpy(f + 6, shm->station_mac, 6);
	put_be16(f + 12, shm->ethertype);
	rtn_app_hdr_put(f, seq, sched_ns, handover);
	if (len)
		memcpy(f + RTN_APP_OVERHEAD, payload, len);
	m->len = flen;
	m->seq = seq;
	m->sched_ns = sched_ns;
	m->handover_ns = handover;
	m->pickup_ns = m->tx_ns = m->rx_ns = m->rx_rt_ns = 0;
	m->flags = 0;
	rtn_app_tx_commit(ch);
	return 0;
}

int rtn_app_send(struct rtn_app_chan *ch, const uint8_t dst[6], const void *payload, uint32_t len,
		 int64_t sched_ns, uint32_t *seq_out)
{
	int rc = put_msg(ch, dst, payload, len, sched_ns, ch->next_seq);

	if (rc)
		return rc;
	if (seq_out)
		*seq_out = ch->next_seq;
	ch->next_seq++;
	return 0;
}

uint32_t rtn_app_tx_next(const struct rtn_app_chan *ch)
{
	return __atomic_load_n(&ch->shm->tx.head, __ATOMIC_RELAXED); /* ours: we produce */
}

int rtn_app_tx_pickup(const struct rtn_app_chan *ch, uint32_t pos, int64_t *pickup_ns)
{
	uint32_t head = __atomic_load_n(&ch->shm->tx.head, __ATOMIC_RELAXED);
	uint32_t tail = __atomic_load_n(&ch->shm->tx.tail, __ATOMIC_ACQUIRE);
	const struct rtn_msg *m = &rtn_chan_tx_msgs(ch->shm)[pos & (ch->depth - 1)];
	uint8_t hdr[RTN_APP_XOVERHEAD];
	struct rtn_app_stamps st;

	if (head - pos - 1 >= ch->depth) /* not sent (pos >= head), or its slot reused */
		return -1;
	if (tail - pos - 1 >= ch->depth) /* the station's tail has not passed it */
		return 0;
	/* the station may still write the page: parse a copy, never the shared bytes */
	memcpy(hdr, m->frame, sizeof(hdr));
	if (rtn_app_hdr_parse(hdr, sizeof(hdr), &st) != 1 || !st.t[RTN_STAMP_PICKUP])
		return -1;
	*pickup_ns = st.t[RTN_STAMP_PICKUP];
	return 1;
}

int rtn_app_reply(struct rtn_app_chan *ch, const struct rtn_app_msg_info *to, const void *payload,
		  uint32_t len)
{
	return put_msg(ch, to->src, payload, len, RTN_APP_SCHED_NOW, to->seq);
}

/* ---- receive --------------------------------------------------------------------- */

/*
 * Take the oldest message, or the chain of them a datagram put together
 * from fragments came in (@p pieces of them, @p len bytes in all: the
 * headers are in the first, rtn_chan.h): the stamps are the station's (it
 * parsed the frame), the payload's start is the frame's own header, parsed
 * again because the memory is shared (a lying one: the payload is the
 * whole frame after the Ethernet header, and it is counted).
 */
static int take(struct rtn_app_chan *ch, struct rtn_msg *m, uint32_t pieces, uint32_t len,
		void *buf, uint32_t cap, struct rtn_app_msg_info *info,
		struct rtn_app_udp_info *udp)
{
	struct rtn_chan_shm *shm = ch->shm;
	struct rtn_app_stamps hdr;
	uint32_t plen, n;
	int64_t t[RTN_STAMP_N] = { m->sched_ns, m->handover_ns, m->pickup_ns,	       m->tx_ns,
				   m->rx_ns,	m->rx_rt_ns,	rtn_app_global_now(ch) };

	if (pieces == 1 && len > RTN_CHAN_MSG_MAX)
		len = RTN_CHAN_MSG_MAX; /* a broken length: never read past the slot */
	/* the headers lie in the first piece; the parsers read no further than they reach */
	if ((ch->udp_port ? rtn_app_udp_payload(ch, m->frame, len, &hdr, udp) :
			    rtn_app_hdr_parse(m->frame, len, &hdr)) < 0)
		ch->rx_bad_hdr++;
	plen = len > hdr.hdr_len ? len - hdr.hdr_len : 0;
	n = plen < cap ? plen : cap;
	if (n && pieces == 1)
		memcpy(buf, m->frame + hdr.hdr_len, n);
	else if (n)
		rtn_ring_chain_copy(&shm->rx, rtn_chan_rx_msgs(shm, ch->depth), ch->depth,
				    hdr.hdr_len, buf, n);
	if (info) {
		memcpy(info->dst, m->frame, 6);
		memcpy(info->src, m->frame + 6, 6);
		info->ethertype = (uint16_t)(m->frame[12] << 8 | m->frame[13]);
		info->seq = m->seq;
		info->len = plen;
		info->sched_ns = t[RTN_STAMP_SCHED];
		info->tx_ns = t[RTN_STAMP_TX];
		info->rx_ns = t[RTN_STAMP_RX_XDP];
		info->handover_ns = t[RTN_STAMP_HANDOVER];
		info->pickup_ns = t[RTN_STAMP_PICKUP];
		info->rx_rt_ns = t[RTN_STAMP_RX_RT];
		info->take_ns = t[RTN_STAMP_TAKE];
	}
	rtn_stages_add(&ch->stages, m->seq, t);
	rtn_ring_cons_release_n(&shm->rx, pieces);
	ch->rx_received++;
	return n;
}

/* The oldest datagram in the RX ring (rtn_ring_cons_oldest()); a broken chain counted. */
static inline struct rtn_msg *oldest(struct rtn_app_chan *ch, uint32_t *pieces, uint32_t *len)
{
	return rtn_ring_cons_oldest(&ch->shm->rx, rtn_chan_rx_msgs(ch->shm, ch->depth), ch->depth,
				    pieces, len, &ch->rx_bad_hdr);
}

static int recv_msg(struct rtn_app_chan *ch, void *buf, uint32_t cap, struct rtn_app_msg_info *info,
		    struct rtn_app_udp_info *udp, int64_t timeout_ns)
{
	struct rtn_chan_shm *shm = ch->shm;
	int64_t deadline = timeout_ns > 0 ? rtn_now() + timeout_ns : 0;
	uint32_t pieces, len;
	struct rtn_msg *m;
	int rc = -EAGAIN;

	rtn_clear_error();
	m = oldest(ch, &pieces, &len);
	if (m) /* hot path: no system call */
		return take(ch, m, pieces, len, buf, cap, info, udp);
	if (!alive(ch))
		return rtn_set_error(-ENOTCONN, "the station closed the channel");
	if (timeout_ns == 0)
		return -EAGAIN;
	__atomic_fetch_add(&shm->rx.waiting, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		uint32_t head = __atomic_load_n(&shm->rx.head, __ATOMIC_SEQ_CST);
		int64_t slice = WAIT_SLICE_NS;

		m = oldest(ch, &pieces, &len);
		if (m) {
			rc = take(ch, m, pieces, len, buf, cap, info, udp);
			break;
		}
		if (!alive(ch)) {
			rc = rtn_set_error(-ENOTCONN, "the station closed the channel");
			break;
		}
		if (deadline) {
			int64_t left = deadline - rtn_now();

			if (left <= 0) {
				rc = -EAGAIN;
				break;
			}
			if (left < slice)
				slice = left;
		}
		futex_wait(&shm->rx.head, head, slice);
	}
	__atomic_fetch_sub(&shm->rx.waiting, 1, __ATOMIC_SEQ_CST);
	return rc;
}

int rtn_app_recv(struct rtn_app_chan *ch, void *buf, uint32_t cap, struct rtn_app_msg_info *info,
		 int64_t timeout_ns)
{
	return recv_msg(ch, buf, cap, info, NULL, timeout_ns);
}

int rtn_app_recvfrom(struct rtn_app_chan *ch, void *buf, uint32_t cap,
		     struct rtn_app_msg_info *info, struct rtn_app_udp_info *from,
		     int64_t timeout_ns)
{
	if (from)
		memset(from, 0, sizeof(*from));
	if (!ch->udp_port)
		return rtn_set_error(-EINVAL, "recvfrom: the channel is not a UDP socket");
	return recv_msg(ch, buf, cap, info, from, timeout_ns);
}

int rtn_app_subscribe(struct rtn_app_chan *ch, struct rtn_app_sample *out, uint32_t n,
		      int64_t idle_timeout_ns)
{
	struct rtn_app_msg_info info;
	uint32_t got = 0;
	uint8_t scratch[1];

	rtn_clear_error();
	while (got < n) {
		int rc = rtn_app_recv(ch, scratch, 0, &info, idle_timeout_ns);

		if (rc == -EAGAIN)
			break;
		if (rc < 0)
			return got ? (int)got : rc;
		out[got++] = (struct rtn_app_sample){ .seq = info.seq,
						      .len = info.len,
						      .sched_ns = info.sched_ns,
						      .tx_ns = info.tx_ns,
						      .rx_ns = info.rx_ns,
						      .app_ns = info.take_ns,
						      .handover_ns = info.handover_ns,
						      .pickup_ns = info.pickup_ns,
						      .rx_rt_ns = info.rx_rt_ns };
	}
	return got;
}

/* ---- cycles ---------------------------------------------------------------------- */

static void read_cycle(const struct rtn_chan_shm *c, struct rtn_app_waitinfo *wi)
{
	wi->cycle_no = __atomic_load_n(&c->cycle_no, __ATOMIC_RELAXED);
	wi->cycle_start = __atomic_load_n(&c->cycle_start_global, __ATOMIC_RELAXED);
	wi->cycle_start_os = __atomic_load_n(&c->cycle_start_os, __ATOMIC_RELAXED);
	wi->clock_offset = __atomic_load_n(&c->clock_offset, __ATOMIC_RELAXED);
	wi->cycle_ns = __atomic_load_n(&c->cycle_ns, __ATOMIC_RELAXED);
}

/*
 * The station writes the fields and then bumps cycle_seq, with no "being
 * written" marker; two identical reads under an unchanged sequence number
 * mean the fields were not being rewritten in between.
 */
static uint32_t snapshot_cycle(const struct rtn_chan_shm *c, struct rtn_app_waitinfo *wi)
{
	struct rtn_app_waitinfo again;
	uint32_t s1, s2;

	for (;;) {
		s1 = __atomic_load_n(&c->cycle_seq, __ATOMIC_ACQUIRE);
		read_cycle(c, wi);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		read_cycle(c, &again);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&c->cycle_seq, __ATOMIC_ACQUIRE);
		if (s1 == s2 && wi->cycle_no == again.cycle_no &&
		    wi->cycle_start == again.cycle_start &&
		    wi->cycle_start_os == again.cycle_start_os &&
		    wi->clock_offset == again.clock_offset && wi->cycle_ns == again.cycle_ns)
			return s1;
	}
}

/*
 * A TDMA slave is configured without a cycle length (it follows the
 * master's Sync frames) and its station publishes cycle_ns 0.  Derive it
 * from the span since the first publication seen, rounded to the
 * microseconds cycles are set in; refined while the span grows, so the
 * slave's early clock corrections average out, then kept.
 */
#define LEARN_SPAN_CYCLES 1024

static void fill_cycle_ns(struct rtn_app_chan *ch, struct rtn_app_waitinfo *wi)
{
	uint32_t no = __atomic_load_n(&ch->learn_no, __ATOMIC_RELAXED);
	int64_t start = __atomic_load_n(&ch->learn_start_os, __ATOMIC_RELAXED);
	int64_t learnt = __atomic_load_n(&ch->learnt_cycle_ns, __ATOMIC_RELAXED);
	int32_t dn = (int32_t)(wi->cycle_no - no);

	if (wi->cycle_ns > 0)
		return;
	if (learnt < 0) { /* frozen */
		wi->cycle_ns = -learnt;
		return;
	}
	if (!start || dn < 0 || dn > 16 * LEARN_SPAN_CYCLES) {
		/* first publication, or the TDMA restarted: new anchor */
		__atomic_store_n(&ch->learn_no, wi->cycle_no, __ATOMIC_RELAXED);
		__atomic_store_n(&ch->learn_start_os, wi->cycle_start_os, __ATOMIC_RELAXED);
	} else if (dn > 0) {
		int64_t per = rtn_sat_sub(wi->cycle_start_os, start) / dn;

		if (per <= 0 || per > LEARN_MAX_CYCLE_NS) {
			/* the page's times make no cycle: start again from here */
			__atomic_store_n(&ch->learn_no, wi->cycle_no, __ATOMIC_RELAXED);
			__atomic_store_n(&ch->learn_start_os, wi->cycle_start_os, __ATOMIC_RELAXED);
			learnt = 0;
		} else {
			learnt = (per + RTN_NS_PER_US / 2) / RTN_NS_PER_US * RTN_NS_PER_US;
			__atomic_store_n(&ch->learnt_cycle_ns,
					 dn >= LEARN_SPAN_CYCLES ? -learnt : learnt,
					 __ATOMIC_RELAXED);
		}
	}
	wi->cycle_ns = learnt;
}

int rtn_app_cycle_info(struct rtn_app_chan *ch, struct rtn_app_waitinfo *wi)
{
	rtn_clear_error();
	memset(wi, 0, sizeof(*wi));
	if (snapshot_cycle(ch->shm, wi) == 0)
		return -EAGAIN;
	fill_cycle_ns(ch, wi);
	return 0;
}

int64_t rtn_app_global_now(struct rtn_app_chan *ch)
{
	struct rtn_app_waitinfo wi;

	if (rtn_app_cycle_info(ch, &wi) < 0)
		return rtn_now();
	/* the station's page says both: saturate rather than overflow on nonsense */
	return rtn_sat_add(rtn_now(), rtn_sat_sub(wi.cycle_start, wi.cycle_start_os));
}

int rtn_app_wait_cycle(struct rtn_app_chan *ch, struct rtn_app_waitinfo *wi, int64_t timeout_ns)
{
	struct rtn_chan_shm *shm = ch->shm;
	int64_t deadline = timeout_ns > 0 ? rtn_now() + timeout_ns : 0;
	uint32_t start = __atomic_load_n(&shm->cycle_seq, __ATOMIC_ACQUIRE);
	int rc = 0;

	rtn_clear_error();
	__atomic_fetch_add(&shm->cycle_waiting, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		uint32_t now_seq = __atomic_load_n(&shm->cycle_seq, __ATOMIC_SEQ_CST);
		int64_t slice = WAIT_SLICE_NS;

		if (now_seq != start)
			break;
		if (!alive(ch)) {
			rc = rtn_set_error(-ENOTCONN, "the station closed the channel");
			break;
		}
		if (timeout_ns == 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (deadline) {
			int64_t left = deadline - rtn_now();

			if (left <= 0) {
				rc = rtn_set_error(-ETIMEDOUT,
						   "no TDMA cycle started within %lld us",
						   (long long)(timeout_ns / 1000));
				break;
			}
			if (left < slice)
				slice = left;
		}
		futex_wait(&shm->cycle_seq, start, slice);
	}
	__atomic_fetch_sub(&shm->cycle_waiting, 1, __ATOMIC_SEQ_CST);
	if (rc == 0) {
		snapshot_cycle(shm, wi);
		fill_cycle_ns(ch, wi);
	}
	return rc;
}

/* ---- stats ------------------------------------------------------------------------- */

void rtn_app_stats(const struct rtn_app_chan *ch, struct rtn_app_stats *out)
{
	const struct rtn_chan_shm *shm = ch->shm;

	*out = (struct rtn_app_stats){
		.channel = ch->channel,
		.ethertype = shm->ethertype,
		.slot = shm->slot,
		.depth = ch->depth,
		.max_size = shm->max_size,
		.alive = (int32_t)__atomic_load_n(&shm->alive, __ATOMIC_ACQUIRE),
		.tx_sent = ch->tx_sent,
		.tx_full = ch->tx_full,
		.kicks = ch->kicks,
		.rx_received = ch->rx_received,
		.rx_bad_hdr = ch->rx_bad_hdr,
		.udp_port = ch->udp_port,
		.udp_flags = ch->udp_flags,
		.tx_unreachable = ch->tx_unreachable,
		.rx_drops = __atomic_load_n(&shm->rx.drops, __ATOMIC_RELAXED),
		.tx_queued = rtn_ring_count(&shm->tx),
		.rx_queued = rtn_ring_count(&shm->rx),
		.rx_waiting = __atomic_load_n(&shm->rx.waiting, __ATOMIC_ACQUIRE),
		.cycle_waiting = __atomic_load_n(&shm->cycle_waiting, __ATOMIC_ACQUIRE),
	};
	memcpy(out->station_mac, shm->station_mac, 6);
}

int rtn_app_set_stages(struct rtn_app_chan *ch, int64_t outlier_ns, int64_t deadline_ns)
{
	rtn_clear_error();
	if (rtn_stages_set(&ch->stages, outlier_ns, deadline_ns))
		return rtn_set_error(-EINVAL, "stage thresholds %lld and %lld ns: not negative",
				     (long long)outlier_ns, (long long)deadline_ns);
	return 0;
}

const struct rtn_stages *rtn_app_stages(const struct rtn_app_chan *ch)
{
	return &ch->stages;
}
