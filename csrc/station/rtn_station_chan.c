/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_chan.c
 * @brief The station's side of the application channels (rtn_chan.h): open
 *        and close them, drain their TX rings, deliver received frames to
 *        their RX rings, publish cycle starts; the stage stamps of the
 *        messages passing through (the pick-up on the way out, the
 *        receiver's RT thread on the way in) and the station's stage
 *        statistics.  Everything read from the shared memory is checked:
 *        an application may write it at any time.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include "rtn_app_hdr.h"
#include "rtn_core.h"
#include "rtn_ipv4.h"
#include "rtn_probe_priv.h"
#include "rtn_station_priv.h"

static void rtn_chan_deliver(struct rtn_station *s, struct chan *c, const uint8_t *frame,
			     uint32_t len, const struct rtn_app_stamps *st);

/*
 * A UDP socket's datagram to everyone on the segment, or to a group, reaches
 * this station's own sockets too, as Linux loops it back: a broadcast
 * always, a group's unless its sender had cleared IP_MULTICAST_LOOP as it
 * sent it (and where the station joined the group).  From a copy, taken as
 * the frame went: the application may rewrite its ring slot at any time.
 */
static void loop_back(struct rtn_station *s, const struct rtn_msg *m, uint32_t len)
{
	const uint8_t *frame = m->frame;
	uint8_t copy[RTN_CHAN_MSG_MAX];
	struct chan *to[RTN_STATION_MAX_CHANS];
	struct rtn_app_stamps st;
	const uint8_t *whole = NULL;
	uint32_t dst, keep = 0, n, i;
	int64_t now;
	int staged = 0;

	if (len < RTN_L4_OFF || len > sizeof(copy)) /* a later fragment: its data alone */
		return;
	/*
	 * A unicast datagram, or one to a group nobody here joined (a publisher
	 * alone on its station), costs this look only; the copy's parse, on the
	 * RT thread before the slot's frames go, decides the rest.
	 */
	dst = rtn_get_be32(frame + RTN_IP_OFF + 16);
	if (dst != RTN_IP_BROADCAST &&
	    ((__atomic_load_n(&m->flags, __ATOMIC_RELAXED) & RTN_MSG_NO_MC_LOOP) ||
	     !rtn_ip_group_joined(s, dst)))
		return;
	memcpy(copy, frame, len);
	now = rtn_station_local_now(s);
	n = rtn_ip_rx(s, copy, len, now, now, &st, &whole, &keep, &staged, to, 1);
	for (i = 0; i < n; i++)
		rtn_chan_deliver(s, to[i], whole, keep, &st);
}

/*
 * Every message the application library puts in a TX ring carries its
 * scheduled time (the hand-over for one sent "now"), in the ring slot, not
 * only in a frame with an application header: a plain UDP datagram has a
 * lifetime too.  The application's word: a value that makes no time (0,
 * negative) means none, any other only expires its own messages.
 */
int64_t rtn_chan_expiry(const struct chan *c, const struct rtn_msg *m)
{
	int64_t sched = __atomic_load_n(&m->sched_ns, __ATOMIC_RELAXED);

	if (!c->lifetime_ns || sched <= 0)
		return INT64_MAX;
	return rtn_sat_add(sched, c->lifetime_ns);
}

/*
 * Hand every message waiting in the applications' TX rings to @p take,
 * stamped as picked up at @p pickup_global.  A message longer than its
 * channel allows, or refused by @p take, or past its lifetime, is dropped
 * and counted against that channel only.
 */
void rtn_chans_drain(struct rtn_station *s, rtn_chan_take_fn take, void *arg, int64_t pickup_global)
{
	uint32_t i, n;

	for (i = 0; i < RTN_STATION_MAX_CHANS; i++) {
		struct chan *c = s->live[i];
		struct rtn_msg *m;

		if (!c)
			continue;
		if (c->udp_port)
			rtn_ip_chan_frame_limit(s, c);
		if (rtn_ring_cons_check(&c->shm->tx, c->depth))
			c->ring_errors++;
		/* at most one ring's worth per call, whatever the indexes say */
		for (n = 0;
		     n < c->depth &&
		     (m = rtn_ring_cons_peek(&c->shm->tx, rtn_chan_tx_msgs(c->shm), c->depth));
		     n++) {
			uint32_t len = rtn_msg_len(m);
			struct chan_tx_undo undo;
			int rc = -EINVAL;

			/* the slot is ours until released: the stamp goes into the frame itself */
			if (len <= c->max_size)
				rtn_chan_stamp_pickup(c, m->frame, len, pickup_global);
			if (len <= c->max_size && rtn_chan_tx_ok(s, c, m->frame, len, &undo)) {
				/* past its lifetime: dropped here, before any discipline sees it */
				if (c->lifetime_ns && pickup_global > rtn_chan_expiry(c, m))
					rc = -ETIME;
				else
					rc = take(s, c, m, len, arg);
			}
			/*
			 * The discipline's queue is full: the message stays in the
			 * ring, whose fill makes a blocking sender wait and a
			 * non-blocking one see EAGAIN, as a kernel socket's full send
			 * buffer does.  Taken and dropped, it was lost after the
			 * program had been told it was sent.
			 */
			if (rc == -ENOBUFS) {
				rtn_chan_tx_undo(c, m->frame,
						 &undo); /* looked at again next time */
				break;
			}
			if (rc == -ETIME) {
				c->tx_expired++;
			} else if (rc < 0) {
				c->tx_drops++;
			} else {
				c->tx_msgs++;
				if (c->udp_port)
					loop_back(s, m, len);
			}
			rtn_ring_cons_release(&c->shm->tx);
		}
	}
}

static void fill_msg(struct rtn_msg *m, const uint8_t *frame, uint32_t len, uint32_t flags,
		     const struct rtn_app_stamps *st)
{
	memcpy(m->frame, frame, len);
	m->len = len;
	m->flags = flags;
	m->seq = st->seq;
	m->sched_ns = st->t[RTN_STAMP_SCHED];
	m->handover_ns = st->t[RTN_STAMP_HANDOVER];
	m->pickup_ns = st->t[RTN_STAMP_PICKUP];
	m->tx_ns = st->t[RTN_STAMP_TX];
	m->rx_ns = st->t[RTN_STAMP_RX_XDP];
	m->rx_rt_ns = st->t[RTN_STAMP_RX_RT];
}

/*
 * A UDP socket's datagram put together from its fragments, longer than a
 * message holds: a chain of messages, each a RTN_CHAN_MSG_MAX-byte piece
 * of its frame but the last, all flagged RTN_MSG_MORE but the last, filled
 * once the ring has room for all of them (else none is) and committed at
 * once (rtn_chan.h).  How many, 0 when there was no room.
 */
static uint32_t fill_chain(struct chan *c, const uint8_t *frame, uint32_t len,
			   const struct rtn_app_stamps *st)
{
	struct rtn_msg *msgs = rtn_chan_rx_msgs(c->shm, c->depth);
	uint32_t pieces, head, i;

	if (len > RTN_CHAN_CHAIN_MAX)
		len = RTN_CHAN_CHAIN_MAX;
	pieces = (len + RTN_CHAN_MSG_MAX - 1) / RTN_CHAN_MSG_MAX;
	if (!rtn_ring_prod_room(&c->shm->rx, c->depth, pieces))
		return 0;
	head = __atomic_load_n(&c->shm->rx.head, __ATOMIC_RELAXED); /* ours: we produce */
	for (i = 0; i < pieces; i++) {
		uint32_t at = i * RTN_CHAN_MSG_MAX, n = len - at;

		fill_msg(&msgs[(head + i) & (c->depth - 1)], frame + at,
			 n < RTN_CHAN_MSG_MAX ? n : RTN_CHAN_MSG_MAX,
			 i + 1 < pieces ? RTN_MSG_MORE : 0, st);
	}
	return pieces;
}

/*
 * Into @p c's RX ring: one message (a frame longer than a message cut
 * short), or a UDP socket's datagram put together from fragments as a
 * chain (fill_chain()).
 */
static void rtn_chan_deliver(struct rtn_station *s, struct chan *c, const uint8_t *frame,
			     uint32_t len, const struct rtn_app_stamps *st)
{
	uint32_t pieces = 1;

	if (len > RTN_CHAN_MSG_MAX && c->udp_port) {
		pieces = fill_chain(c, frame, len, st);
	} else {
		struct rtn_msg *m = rtn_ring_prod_slot(
			&c->shm->rx, rtn_chan_rx_msgs(c->shm, c->depth), c->depth);

		if (m)
			fill_msg(m, frame, len < RTN_CHAN_MSG_MAX ? len : RTN_CHAN_MSG_MAX, 0, st);
		else
			pieces = 0;
	}
	if (!pieces) {
		/* the application stopped reading: its loss, nobody else's */
		c->rx_drops++;
		c->shm->rx.drops++;
		return;
	}
	rtn_ring_prod_commit_n(&c->shm->rx, pieces);
	c->rx_msgs++;
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* as for cycle_waiting */
	if (__atomic_load_n(&c->shm->rx.waiting, __ATOMIC_ACQUIRE))
		futex_wake(&c->shm->rx.head);
	/* a reader in poll/epoll: one write per arming, so once per delivery batch */
	if (__atomic_load_n(&c->shm->rx_notify, __ATOMIC_ACQUIRE) &&
	    __atomic_exchange_n(&c->shm->rx_notify, 0, __ATOMIC_ACQ_REL)) {
		uint64_t one = 1;

		if (c->notify_fd >= 0 && write(c->notify_fd, &one, sizeof(one)) == sizeof(one))
			c->rx_notifies++;
	}
}

/*
 * A received frame of a channel's EtherType (or the probe receiver's), to
 * every such channel; @p rx_local is its XDP stamp, @p rt_local when the RT
 * thread took it from the socket.  A frame whose application header lies
 * about its length is counted and dropped: where its payload starts is
 * unknown.  IPv4 goes to the UDP sockets and ICMP echo (rtn_station_ip.c).
 */
void rtn_chans_rx(struct rtn_station *s, uint16_t type, const uint8_t *frame, uint32_t len,
		  int64_t rx_local, int64_t rt_local)
{
	int64_t off = s->tdma ? rtn_tdma_clock_offset(s->tdma) : 0;
	struct rtn_app_stamps st;
	uint32_t i;
	int matched = 0, hdr;

	if (rtn_probe_rx_take(s, type, frame, len, rx_local + off))
		return;
	if (type == RTN_ETH_P_IPV4) {
		struct chan *to[RTN_STATION_MAX_CHANS];
		const uint8_t *whole = NULL;
		uint32_t keep = 0, n;
		int staged = 0;

		n = rtn_ip_rx(s, frame, len, rx_local, rt_local, &st, &whole, &keep, &staged, to,
			      0);
		for (i = 0; i < n; i++)
			rtn_chan_deliver(s, to[i], whole, keep, &st);
		if (n && staged)
			rtn_stages_add(&s->stages, st.seq, st.t);
		return;
	}
	hdr = rtn_app_hdr_parse(frame, len, &st);
	st.t[RTN_STAMP_RX_XDP] = rtn_sat_add(rx_local, off);
	st.t[RTN_STAMP_RX_RT] = rtn_sat_add(rt_local, off);
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++) {
		struct chan *c = s->live[i];

		if (!c || c->ethertype != type)
			continue;
		matched = 1;
		if (hdr < 0) {
			c->rx_bad_hdr++;
			continue;
		}
		rtn_chan_deliver(s, c, frame, len, &st);
	}
	if (!matched)
		s->st.rx_other++;
	else if (hdr > 0)
		rtn_stages_add(&s->stages, st.seq, st.t); /* through the RT thread's stamp */
}

/* The TDMA engine's on_cycle: publish each cycle start to the channels' readers. */
void rtn_chans_on_cycle(void *arg, uint32_t cycle_no, int64_t start_local)
{
	struct rtn_station *s = arg;
	int64_t off = s->tdma ? rtn_tdma_clock_offset(s->tdma) : 0;
	int64_t cycle_ns = s->tdma_cfg.cycle_ns;
	uint32_t i;

	/* a slave is configured without a cycle: publish the one its grid follows */
	if (!cycle_ns && s->tdma)
		cycle_ns = rtn_tdma_cycle_start(s->tdma, cycle_no + 1) - start_local;
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++) {
		struct rtn_chan_shm *c = s->live[i] ? s->live[i]->shm : NULL;

		if (!c)
			continue;
		c->cycle_no = cycle_no;
		c->cycle_start_global = start_local + off;
		c->clock_offset = off;
		c->cycle_ns = cycle_ns;
		c->cycle_start_os = os_of(s, start_local);
		__atomic_store_n(&c->cycle_seq, c->cycle_seq + 1, __ATOMIC_RELEASE);
		/* full fence: the store of cycle_seq must be visible before we read
		 * cycle_waiting, or a reader going to sleep right now is missed */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&c->cycle_waiting, __ATOMIC_ACQUIRE))
			futex_wake(&c->cycle_seq);
	}
}

/*
 * After a change of the channels or of the discipline, on the RT thread.
 * Cycle starts matter only to applications (published for wait-for-cycle);
 * without any, the engine starts each cycle at its first job, which saves a
 * slave one wake-up per cycle.  Senders kick the RT thread unless a slot
 * picks their messages up (NoMAC).
 */
void rtn_chans_refresh(struct rtn_station *s)
{
	int i;

	s->app_chans = 0;
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		s->app_chans += s->live[i] != NULL && s->live[i]->cycles;
	if (s->tdma)
		rtn_tdma_set_lazy_begin(s->tdma, !s->app_chans);
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (s->chans[i].shm)
			__atomic_store_n(&s->chans[i].shm->kick_wanted, disc_ops(s)->kick_senders,
					 __ATOMIC_RELEASE);
}

/* On the RT thread: channel @p id is live (or not) from now on. */
static void chan_add(struct rtn_station *s, uintptr_t id)
{
	s->live[id] = &s->chans[id];
	if (s->chans[id].udp_port)
		rtn_ip_chan_frame_limit(s, &s->chans[id]);
	rtn_chans_refresh(s);
}

static void chan_del(struct rtn_station *s, uintptr_t id)
{
	s->live[id] = NULL;
	rtn_chans_refresh(s);
}

int rtn_station_chan_open(struct rtn_station *s, const struct rtn_chan_opts *o, int *memfd,
			  int *kickfd)
{
	struct rtn_chan_shm *shm;
	uint64_t size;
	int i, fd, nfd, rc = 0;

	rtn_clear_error();
	if (!o->depth || (o->depth & (o->depth - 1)) || o->depth > RTN_CHAN_MAX_DEPTH)
		return rtn_set_error(-EINVAL, "channel depth %u: a power of two up to %d", o->depth,
				     RTN_CHAN_MAX_DEPTH);
	if (o->max_size < ETH_HLEN_RTN || o->max_size > RTN_CHAN_MSG_MAX)
		return rtn_set_error(-EINVAL, "channel maximum size %u outside 14..%d", o->max_size,
				     RTN_CHAN_MSG_MAX);
	/* RTcfg is served by the daemon itself (its channels have no_cycles): never an app's */
	if (o->ethertype < 0x0600 || o->ethertype == ETH_RTMAC ||
	    (o->ethertype == ETH_RTCFG && !o->no_cycles))
		return rtn_set_error(-EINVAL, "EtherType 0x%04x cannot carry a channel",
				     o->ethertype);
	if (o->prio > 31)
		return rtn_set_error(-EINVAL, "priority %u outside 0..31", o->prio);
	if (o->lifetime_ns < 0 || o->lifetime_ns > RTN_CHAN_LIFETIME_MAX_NS)
		return rtn_set_error(-EINVAL, "channel lifetime %lld ns outside 0..%lld",
				     (long long)o->lifetime_ns, RTN_CHAN_LIFETIME_MAX_NS);
	/* IPv4 is a UDP socket's (or the daemon's ping channel's), whole frames of it nobody's */
	if (o->udp_port ? o->ethertype != RTN_ETH_P_IPV4 || (o->udp_flags & ~RTN_UDP_F_STAMPED) ||
				  (o->udp_share & ~(RTN_UDP_SHARE_ADDR | RTN_UDP_SHARE_PORT)) :
			  o->ethertype == RTN_ETH_P_IPV4 &&
				  (!o->no_cycles || o->udp_flags || o->udp_share))
		return rtn_set_error(-EINVAL,
				     "an IPv4 channel is a UDP socket (EtherType 0x0800 "
				     "with a port, flags %u, sharing %u)",
				     RTN_UDP_F_STAMPED, RTN_UDP_SHARE_ADDR | RTN_UDP_SHARE_PORT);
	pthread_mutex_lock(&s->ctl_lock);
	for (i = 0; i < RTN_STATION_MAX_CHANS && s->chans[i].shm; i++)
		;
	if (i == RTN_STATION_MAX_CHANS) {
		rc = rtn_set_error(-ENOSPC, "all %d channels are in use", RTN_STATION_MAX_CHANS);
		goto out;
	}
	size = rtn_chan_shm_size(o->depth);
	/*
	 * Sealed at its size: the application gets this fd, and a shrunk file
	 * would make the RT thread's next access to the mapping a SIGBUS.
	 */
	fd = memfd_create("rtnet-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = rtn_set_error(-errno, "channel memory: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	shm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (shm == MAP_FAILED) {
		rc = rtn_set_error(-errno, "channel mmap: %s", strerror(errno));
		close(fd);
		goto out;
	}
	shm->magic = RTN_CHAN_MAGIC;
	shm->version = RTN_CHAN_VERSION;
	shm->depth = o->depth;
	shm->ethertype = o->ethertype;
	shm->slot = o->slot;
	shm->prio = o->prio;
	shm->max_size = o->max_size;
	memcpy(shm->station_mac, s->o.mac, 6);
	shm->tx.size = shm->rx.size = o->depth;
	shm->alive = 1;
	/* non-blocking: a reader that never reads cannot make the RT thread wait */
	nfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (nfd < 0) {
		rc = rtn_set_error(-errno, "channel notify eventfd: %s", strerror(errno));
		munmap(shm, size);
		close(fd);
		goto out;
	}
	s->chans[i] = (struct chan){ .shm = shm,
				     .size = size,
				     .depth = o->depth,
				     .cycles = !o->no_cycles,
				     .ethertype = o->ethertype,
				     .slot = o->slot,
				     .prio = o->prio,
				     .max_size = o->max_size,
				     .lifetime_ns = o->lifetime_ns,
				     .redundant = !!o->redundant,
				     .udp_port = o->udp_port,
				     .udp_flags = o->udp_flags,
				     .udp_owner = o->udp_owner,
				     .opened = ++s->chans_opened,
				     .notify_fd = nfd };
	rc = rtn_ip_chan_open(s, &s->chans[i], o->udp_share);
	if (rc < 0) {
		munmap(shm, size);
		close(fd);
		close(nfd);
		memset(&s->chans[i], 0, sizeof(s->chans[i]));
		goto out;
	}
	rtn_station_post(s, chan_add, i);
	*memfd = fd;
	*kickfd = dup(s->efd);
	rc = i;
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_chan_close(struct rtn_station *s, int id)
{
	struct chan *c;

	rtn_clear_error();
	if (id < 0 || id >= RTN_STATION_MAX_CHANS || !s->chans[id].shm)
		return rtn_set_error(-ENOENT, "no channel %d", id);
	pthread_mutex_lock(&s->ctl_lock);
	c = &s->chans[id];
	rtn_station_post(s, chan_del, id);
	rtn_ip_chan_close(s, c);
	c->shm->alive = 0;
	futex_wake(&c->shm->rx.head);
	futex_wake(&c->shm->cycle_seq);
	if (c->notify_fd >= 0) { /* a reader in poll sees the channel die */
		uint64_t one = 1;
		ssize_t w = write(c->notify_fd, &one, sizeof(one)); /* fails only when full */

		(void)w;
		close(c->notify_fd);
	}
	munmap(c->shm, c->size);
	memset(c, 0, sizeof(*c));
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

int rtn_station_chan_notifyfd(struct rtn_station *s, int id)
{
	int fd;

	rtn_clear_error();
	if (id < 0 || id >= RTN_STATION_MAX_CHANS || !s->chans[id].shm)
		return rtn_set_error(-ENOENT, "no channel %d", id);
	fd = fcntl(s->chans[id].notify_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return rtn_set_error(-errno, "channel %d notify eventfd: %s", id, strerror(errno));
	return fd;
}

int rtn_station_chan_stats(const struct rtn_station *s, int id, struct rtn_chan_stats *out)
{
	const struct chan *c;

	rtn_clear_error();
	if (id < 0 || id >= RTN_STATION_MAX_CHANS || !s->chans[id].shm)
		return rtn_set_error(-ENOENT, "no channel %d", id);
	c = &s->chans[id];
	*out = (struct rtn_chan_stats){ .id = id,
					.ethertype = c->ethertype,
					.slot = c->slot,
					.tx_msgs = c->tx_msgs,
					.tx_drops = c->tx_drops,
					.tx_expired = c->tx_expired,
					.lifetime_ns = c->lifetime_ns,
					.rx_msgs = c->rx_msgs,
					.rx_drops = c->rx_drops,
					.ring_errors = c->ring_errors,
					.rx_bad_hdr = c->rx_bad_hdr,
					.rx_notifies = c->rx_notifies };
	return 0;
}

int rtn_station_set_stages(struct rtn_station *s, int64_t outlier_ns, int64_t deadline_ns)
{
	rtn_clear_error();
	if (rtn_stages_set(&s->stages, outlier_ns, deadline_ns))
		return rtn_set_error(-EINVAL, "stage thresholds %lld and %lld ns: not negative",
				     (long long)outlier_ns, (long long)deadline_ns);
	return 0;
}

const struct rtn_stages *rtn_station_stages(const struct rtn_station *s)
{
	return &s->stages;
}

/* At close: every channel's readers see it die. */
void rtn_chans_close_all(struct rtn_station *s)
{
	int i;

	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (s->chans[i].shm)
			rtn_station_chan_close(s, i);
}
