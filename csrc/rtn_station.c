/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station.c
 * @brief The station: AF_XDP socket + RT thread + discipline + channels + VNIC.
 *
 * Threads and who owns what:
 * - the control thread (Python, serialised by s->ctl_lock) creates and frees
 *   everything; it changes what the RT thread uses only through the mailbox
 *   (executed by the RT thread between two wake-ups) or lock-free handovers
 *   (rtn_tdma_set_config);
 * - the RT thread owns the socket, the engine's queues and the NoMAC FIFO;
 * - VNIC helper threads only touch their ring, their eventfd and the TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "rtn_chan.h"
#include "rtn_core.h"
#include "rtn_station.h"
#include "rtn_tdma_proto.h"
#include "rtn_time.h"
#include "rtn_vnic_gso.h"

#define RX_BATCH	64
#define NOMAC_FIFO	256
#define VNIC_RING	512	/* frames between the RT thread and a VNIC helper */
#define VNIC_PRIO	31	/* RTnet: NRT traffic is the lowest priority */
/*
 * The link-rate model keeps a virtual wire: frames are handed to the kernel
 * in bursts that may run this far ahead of the clock, which keeps the average
 * rate at the link rate without one wake-up per frame.
 */
#define PACE_AHEAD_NS	30000
/* batched VNIC: the RT thread writes to the TAP only with this much time to spare */
#define VNIC_WRITE_SLACK_NS	100000
#define VNIC_WRITE_COST_NS	10000	/* budget per TAP write (netif_rx included) */

/* VNIC counters are bumped by the RT thread and the VNIC helper threads alike */
#define VSTAT_ADD(s, field, n) __atomic_fetch_add(&(s)->st.vnic.field, (n), __ATOMIC_RELAXED)

enum { CMD_NONE, CMD_ATTACH_TDMA, CMD_ATTACH_NOMAC, CMD_DETACH, CMD_CHAN_ADD,
       CMD_CHAN_DEL, CMD_VNIC_ATTACH, CMD_VNIC_DETACH };

struct frame_slot {
	uint32_t len;
	uint8_t data[RTN_TDMA_FRAME_MAX];
};

/* An SPSC ring of whole frames (VNIC <-> RT thread). */
struct frame_ring {
	uint32_t head __attribute__((aligned(64)));
	uint32_t tail __attribute__((aligned(64)));
	struct frame_slot slot[VNIC_RING];
};

struct chan {
	struct rtn_chan_shm *shm;
	uint64_t size;
	uint32_t depth;		/* messages per ring: ours, never read back from shm */
	int cycles;		/* someone may wait on it for cycle starts */
	uint64_t ring_errors;	/* the application broke its ring's indexes */
	uint16_t ethertype, slot;
	uint32_t prio, max_size;
	uint64_t tx_msgs, tx_drops, rx_msgs, rx_drops;
};

struct rtn_station {
	struct rtn_station_opts o;
	int rx_woke;		/* a received frame woke the thread since the last timer wake-up */
	int64_t tunnel_rx_at;	/* OS time a tunnel frame for the VNIC last arrived */
	uint32_t tunnel_rx_n;	/* tunnel frames since the last timer wake-up */
	uint32_t tunnel_rx_avg;	/* their running average per timer wake-up, x16 */
	int rx_light;		/* few enough for an RX wake-up to pay */
	struct rtn_xsk *xsk;
	struct rtn_rt *rt;
	int efd;		/* wakes the RT thread: mailbox, NoMAC kicks, VNIC */
	int tfd;		/* absolute timer for the discipline's next deadline */
	int done_fd;		/* RT thread -> control: mailbox command done */
	int64_t t0;		/* OS time the clock model starts from */
	pthread_mutex_t ctl_lock;

	/* mailbox */
	int cmd;
	void *cmd_arg;
	int cmd_rc;

	/* discipline: owned by the RT thread while it runs */
	int disc;
	struct rtn_tdma *tdma;
	struct rtn_tdma_cfg tdma_cfg;	/* for (re)starts on the RT thread */

	/* NoMAC */
	struct frame_slot nomac_fifo[NOMAC_FIFO];
	uint32_t nomac_head, nomac_tail;
	int64_t wire_free_at;

	struct chan chans[RTN_STATION_MAX_CHANS];
	struct chan *live[RTN_STATION_MAX_CHANS];	/* as seen by the RT thread */

	/* VNIC */
	int tap_fd;
	int vnic_mode;
	uint32_t vnic_slot;
	int vnic_live;			/* RT thread uses the VNIC */
	struct frame_ring *to_tap;	/* RT -> writer thread */
	struct frame_ring *from_tap;	/* reader thread -> RT (per-packet mode) */
	int writer_efd, reader_stop_efd;
	pthread_t writer, reader;
	int writer_on, reader_on;
	volatile int vnic_stop;
	int tap_dead;			/* the TAP went away: stop touching it */
	int vnic_overran;		/* the last TAP writes ran past a deadline */
	/*
	 * IFF_VNET_HDR: TAP reads are super-packets cut here into wire frames,
	 * TAP writes are merged segments.  Each buffer has one user: gso_buf
	 * the RT thread (batched), rd_buf the reader thread (per-packet),
	 * gro_buf whoever writes to the TAP (RT thread or writer thread).
	 */
	int vnet;
	uint8_t *gso_buf, *rd_buf, *gro_buf;
	struct rtn_gso_seg gso;		/* the super-packet being sent, kept across slots */
	struct rtn_gro gro;

	/* probe: one frame per occurrence of a slot, generated on the RT thread */
	int probe_slot;
	uint16_t probe_type;
	uint32_t probe_len, probe_seq;
	uint64_t probe_sent;

	/* rate generator (RFC 2544 trials under NoMAC): frames due every interval */
	int64_t rate_interval_ns;
	int64_t rate_next;		/* local time the next frame is due */
	uint64_t rate_left;

	/* probe receiver: counts and one-way latency of probe frames */
	uint16_t probe_rx_type;
	uint64_t probe_rx, probe_rx_bytes;
	struct rtn_hist probe_lat;	/* receive stamp minus the sender's transmit stamp */

	struct rtn_station_stats st;
	struct rtn_hist wake;		/* timer wake-up lateness on the RT thread */
	uint8_t scratch[RTN_TDMA_FRAME_MAX + 8];
};

/* ---- clock model -------------------------------------------------------- */

/*
 * The lab's simulated clock: local = os + offset + drift * (os - t0).  Both
 * directions saturate: a local time can be anything the engine computed from
 * a frame (INT64_MAX for "nothing to do"), and a double beyond the int64_t
 * range would be undefined behaviour when converted.
 */
static inline int64_t clamp_ns(double v)
{
	if (!(v > -9.2e18))	/* also NaN */
		return v != v ? 0 : INT64_MIN;
	if (v >= 9.2e18)
		return INT64_MAX;
	return (int64_t)v;
}

static inline int64_t local_of(const struct rtn_station *s, int64_t os)
{
	return rtn_sat_add(rtn_sat_add(os, s->o.clock_offset_ns),
			   clamp_ns((double)rtn_sat_sub(os, s->t0) * s->o.drift_ppm * 1e-6));
}

static inline int64_t os_of(const struct rtn_station *s, int64_t local)
{
	double since = (double)rtn_sat_sub(rtn_sat_sub(local, s->t0), s->o.clock_offset_ns);

	return rtn_sat_add(s->t0, clamp_ns(since / (1.0 + s->o.drift_ppm * 1e-6)));
}

int64_t rtn_station_local_now(const struct rtn_station *s)
{
	return local_of(s, rtn_now());
}

/* ---- ring helpers -------------------------------------------------------- */

static struct frame_slot *fr_prod(struct frame_ring *r)
{
	if (r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= VNIC_RING)
		return NULL;
	return &r->slot[r->head % VNIC_RING];
}

static void fr_commit(struct frame_ring *r)
{
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
}

static struct frame_slot *fr_peek(struct frame_ring *r)
{
	if (r->tail == __atomic_load_n(&r->head, __ATOMIC_ACQUIRE))
		return NULL;
	return &r->slot[r->tail % VNIC_RING];
}

static void fr_release(struct frame_ring *r)
{
	__atomic_store_n(&r->tail, r->tail + 1, __ATOMIC_RELEASE);
}

static void efd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0) {
		/* counter saturated: the reader is awake anyway */
	}
}

static void efd_drain(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
}

static void futex_wake(uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

/* ---- sending -------------------------------------------------------------- */

/* The engine's port: stamps in local time, converted from the socket's OS time. */
static int port_send(void *arg, uint8_t *frame, uint32_t len, int32_t stamp_off,
		     int64_t stamp_add, int64_t *tx_local)
{
	struct rtn_station *s = arg;
	int64_t os = rtn_now(), delta = local_of(s, os) - os, tx;
	int rc;

	rc = rtn_xsk_send_stamped(s->xsk, frame, len, stamp_off, rtn_sat_add(stamp_add, delta), &tx);
	if (rc < 0)
		return rc;
	*tx_local = tx + delta;
	return 0;
}

static int64_t port_truth(void *arg, int64_t local)
{
	/* lab truth: global time is the host's CLOCK_MONOTONIC (master without error) */
	return os_of(arg, local);
}

/*
 * Hand every message waiting in the applications' TX rings to @p take.  A
 * message longer than its channel allows, or refused by @p take, is dropped
 * and counted against that channel only.
 */
static void drain_chans(struct rtn_station *s,
			int (*take)(struct rtn_station *s, const struct chan *c,
				    const struct rtn_msg *m, uint32_t len, void *arg), void *arg)
{
	uint32_t i, n;

	for (i = 0; i < RTN_STATION_MAX_CHANS; i++) {
		struct chan *c = s->live[i];
		struct rtn_msg *m;

		if (!c)
			continue;
		if (rtn_ring_cons_check(&c->shm->tx, c->depth))
			c->ring_errors++;
		/* at most one ring's worth per call, whatever the indexes say */
		for (n = 0; n < c->depth &&
			    (m = rtn_ring_cons_peek(&c->shm->tx, rtn_chan_tx_msgs(c->shm), c->depth));
		     n++) {
			uint32_t len = rtn_msg_len(m);

			if (len > c->max_size || take(s, c, m, len, arg) < 0)
				c->tx_drops++;
			else
				c->tx_msgs++;
			rtn_ring_cons_release(&c->shm->tx);
		}
	}
}

static int take_tdma(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		     uint32_t len, void *engine)
{
	int32_t off = len >= RTN_APP_TX_OFF + 8 ? RTN_APP_TX_OFF : -1;

	return rtn_tdma_enqueue(engine, c->slot, c->prio, m->frame, len, off);
}

static void drain_chans_tdma(struct rtn_station *s, struct rtn_tdma *e)
{
	drain_chans(s, take_tdma, e);
}

static int encap_into(struct rtn_station *s, const uint8_t *inner, uint32_t len,
		      uint8_t *out, uint32_t cap)
{
	return rtn_rtmac_tunnel_encap(out, cap, inner, len, s->o.mac);
}

/*
 * A read or write error other than EAGAIN/EINTR means the TAP is gone
 * (EBADFD/EIO after the device was deleted).  Count it once and stop
 * touching the fd: polling a dead TAP returns POLLERR at once, which
 * would make the RT thread spin at real-time priority.
 */
static void tap_failed(struct rtn_station *s)
{
	if (!__atomic_exchange_n(&s->tap_dead, 1, __ATOMIC_ACQ_REL))
		__atomic_fetch_add(&s->st.vnic.tap_errors, 1, __ATOMIC_RELAXED);
}

static int tap_usable(const struct rtn_station *s)
{
	return !__atomic_load_n(&s->tap_dead, __ATOMIC_ACQUIRE);
}

/* One read from the TAP, without blocking, counted.  0: none waiting, or the TAP died. */
static ssize_t tap_read(struct rtn_station *s, uint8_t *buf, size_t cap)
{
	ssize_t n = read(s->tap_fd, buf, cap);

	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			tap_failed(s);
		return 0;
	}
	VSTAT_ADD(s, tap_reads, 1);
	return n;
}

/*
 * The next frame for the wire, into @p inner: the rest of the super-packet
 * read earlier (so a slot's budget never cuts one short), else a new read.
 * Returns its length, 0 if the TAP has nothing (or died), -1 if a malformed
 * packet was counted and dropped (call again).
 */
static int vnic_pull(struct rtn_station *s, uint8_t *inner, uint32_t cap)
{
	int n;

	if (!s->vnet) {
		n = (int)tap_read(s, inner, cap);
	} else {
		if (!rtn_gso_left(&s->gso)) {
			ssize_t r = tap_read(s, s->gso_buf, RTN_GSO_BUF);

			if (!r)
				return 0;
			if (rtn_gso_begin(&s->gso, s->gso_buf, (uint32_t)r, cap) < 0) {
				VSTAT_ADD(s, tx_bad, 1);
				return -1;
			}
		}
		n = rtn_gso_next(&s->gso, inner, cap);
		if (n <= 0) {	/* cannot happen: rtn_gso_begin checked the sizes */
			s->gso.index = s->gso.nseg;
			VSTAT_ADD(s, tx_bad, 1);
			return -1;
		}
	}
	if (n > 0) {
		VSTAT_ADD(s, tap_rx, 1);
		VSTAT_ADD(s, tap_rx_bytes, n);
	}
	return n;
}

/*
 * Batched VNIC: pull from the TAP into the queue of @p queue_slot, at the
 * lowest priority, until the wire-time budget of the running occurrence of
 * @p slot_id (that queue's slot, a joint one, or an RT slot) is used.  Frames already
 * queued there (real-time ones first) count against the budget first, so a
 * VNIC frame only takes wire time that nothing queued before the slot opened
 * wanted.
 */
static void vnic_refill(struct rtn_station *s, struct rtn_tdma *e, uint32_t slot_id,
			uint32_t queue_slot, int64_t now)
{
	uint32_t size = rtn_tdma_slot_size(e, queue_slot);
	int64_t budget = rtn_tdma_slot_budget(e, slot_id, now);
	int64_t queued = 0;
	uint32_t depth = rtn_tdma_queue_depth(e, queue_slot);
	uint8_t inner[RTN_TDMA_FRAME_MAX];

	queued = (int64_t)depth * rtn_wire_time_ns(size + ETH_HLEN_RTN, s->tdma_cfg.link_rate_mbps);
	while (queued < budget && depth < RTN_TDMA_QUEUE_MAX && tap_usable(s)) {
		int n = vnic_pull(s, inner, sizeof(inner));
		int len;

		if (!n)
			break;
		if (n < 0)
			continue;
		len = encap_into(s, inner, n, s->scratch, sizeof(s->scratch));
		if (len < 0 || rtn_tdma_enqueue(e, queue_slot, VNIC_PRIO, s->scratch, len, -1) < 0) {
			VSTAT_ADD(s, tx_dropped, 1);
			continue;
		}
		depth++;
		queued += rtn_wire_time_ns(len, s->tdma_cfg.link_rate_mbps);
	}
}

/* Per-packet VNIC: whatever the reader thread handed over. */
static void vnic_take_from_reader(struct rtn_station *s)
{
	struct frame_slot *f;

	while ((f = fr_peek(s->from_tap))) {
		int len = encap_into(s, f->data, f->len, s->scratch, sizeof(s->scratch));

		if (len < 0) {
			VSTAT_ADD(s, tx_dropped, 1);
		} else if (s->disc == RTN_DISC_TDMA && s->tdma) {
			if (rtn_tdma_enqueue(s->tdma, s->vnic_slot, VNIC_PRIO, s->scratch, len, -1) < 0)
				VSTAT_ADD(s, tx_dropped, 1);
		} else if (s->disc == RTN_DISC_NOMAC) {
			uint32_t h = s->nomac_head;

			if (h - s->nomac_tail >= NOMAC_FIFO) {
				VSTAT_ADD(s, tx_dropped, 1);
			} else {
				memcpy(s->nomac_fifo[h % NOMAC_FIFO].data, s->scratch, len);
				s->nomac_fifo[h % NOMAC_FIFO].len = len;
				s->nomac_head = h + 1;
			}
		} else {
			VSTAT_ADD(s, tx_dropped, 1);
		}
		fr_release(s->from_tap);
	}
}

/*
 * Benchmark traffic made on the RT thread itself: one broadcast frame with an
 * application header per occurrence of the probe slot, so slot timing can be
 * measured with no application in the loop.
 */
static void build_probe(struct rtn_station *s, uint8_t *f, int64_t sched_global)
{
	memset(f, 0, s->probe_len);
	memset(f, 0xff, 6);
	memcpy(f + 6, s->o.mac, 6);
	rtn_put_be16(f + 12, s->probe_type);
	rtn_put_be32(f + 14, RTN_APP_MAGIC);
	rtn_put_be32(f + 18, ++s->probe_seq);
	rtn_put_be64(f + 22, (uint64_t)sched_global);
}

static void probe_refill(struct rtn_station *s, struct rtn_tdma *e, uint32_t slot_id, int64_t now)
{
	uint8_t f[RTN_TDMA_FRAME_MAX];

	if (rtn_tdma_queue_depth(e, slot_id))
		return;
	build_probe(s, f, now + rtn_tdma_clock_offset(e));
	if (rtn_tdma_enqueue(e, slot_id, 0, f, s->probe_len, RTN_APP_TX_OFF) == 0)
		s->probe_sent++;
}

/* NoMAC rate generator: queue every frame that is due; returns the next due time. */
static int64_t rate_generate(struct rtn_station *s, int64_t now)
{
	while (s->rate_left && s->rate_next <= now) {
		uint32_t h = s->nomac_head;

		if (h - s->nomac_tail >= NOMAC_FIFO) {
			s->st.nomac_drops++;	/* offered faster than the link drains */
		} else {
			build_probe(s, s->nomac_fifo[h % NOMAC_FIFO].data, s->rate_next);
			s->nomac_fifo[h % NOMAC_FIFO].len = s->probe_len;
			s->nomac_head = h + 1;
		}
		s->probe_sent++;
		s->rate_left--;
		s->rate_next += s->rate_interval_ns;
	}
	return s->rate_left ? s->rate_next : INT64_MAX;
}

static void port_before_slot(void *arg, struct rtn_tdma *e, uint32_t slot_id, int64_t now)
{
	struct rtn_station *s = arg;

	drain_chans_tdma(s, e);
	if (s->probe_slot == (int)slot_id)
		probe_refill(s, e, slot_id, now);
	if (!s->vnic_live || s->vnic_mode != RTN_VNIC_BATCHED)
		return;
	if (rtn_tdma_shares_queue(e, slot_id, s->vnic_slot))
		vnic_refill(s, e, slot_id, s->vnic_slot, now);
	else if (rtn_tdma_slot_size(e, slot_id) >= rtn_tdma_slot_size(e, s->vnic_slot))
		/* what the RT frames leave of this occurrence: VNIC frames fit it */
		vnic_refill(s, e, slot_id, slot_id, now);
}

static void port_on_cycle(void *arg, uint32_t cycle_no, int64_t start_local)
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

/* ---- NoMAC ------------------------------------------------------------------ */

static int take_nomac(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
		      uint32_t len, void *unused)
{
	uint32_t h = s->nomac_head;

	if (h - s->nomac_tail >= NOMAC_FIFO)
		return -ENOBUFS;
	memcpy(s->nomac_fifo[h % NOMAC_FIFO].data, m->frame, len);
	s->nomac_fifo[h % NOMAC_FIFO].len = len;
	s->nomac_head = h + 1;
	return 0;
}

static void nomac_collect(struct rtn_station *s)
{
	drain_chans(s, take_nomac, NULL);
	if (s->vnic_live && s->vnic_mode == RTN_VNIC_BATCHED) {
		uint8_t inner[RTN_TDMA_FRAME_MAX];

		while (s->nomac_head - s->nomac_tail < NOMAC_FIFO && tap_usable(s)) {
			int n = vnic_pull(s, inner, sizeof(inner));
			int len;
			uint32_t h = s->nomac_head;

			if (!n)
				break;
			if (n < 0)
				continue;
			len = encap_into(s, inner, n, s->nomac_fifo[h % NOMAC_FIFO].data,
					 RTN_TDMA_FRAME_MAX);
			if (len < 0) {
				VSTAT_ADD(s, tx_dropped, 1);
				continue;
			}
			s->nomac_fifo[h % NOMAC_FIFO].len = len;
			s->nomac_head = h + 1;
		}
	}
}

/* FIFO order, serialised at the link rate; returns the next deadline (local). */
static int64_t nomac_flush(struct rtn_station *s, int64_t now_local)
{
	while (s->nomac_tail != s->nomac_head) {
		struct frame_slot *f = &s->nomac_fifo[s->nomac_tail % NOMAC_FIFO];
		int32_t off = -1;
		int64_t tx;

		/* the modelled wire may run up to PACE_AHEAD_NS ahead of the clock */
		if (s->o.link_rate_mbps && now_local + PACE_AHEAD_NS < s->wire_free_at)
			return s->wire_free_at - PACE_AHEAD_NS;
		if (f->len >= RTN_APP_TX_OFF + 8 &&
		    rtn_get_be32(f->data + ETH_HLEN_RTN) == RTN_APP_MAGIC)
			off = RTN_APP_TX_OFF;
		if (port_send(s, f->data, f->len, off, 0, &tx) < 0) {
			s->st.nomac_drops++;
		} else {
			s->st.nomac_tx++;
			s->wire_free_at = (tx > s->wire_free_at ? tx : s->wire_free_at) +
					  rtn_wire_time_ns(f->len, s->o.link_rate_mbps);
		}
		s->nomac_tail++;
	}
	return INT64_MAX;
}

/* ---- receiving ------------------------------------------------------------ */

static void vnic_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len)
{
	struct frame_slot *f;
	int n;

	if (!s->vnic_live)
		return;
	f = fr_prod(s->to_tap);
	if (!f) {
		VSTAT_ADD(s, rx_dropped, 1);
		return;
	}
	n = rtn_rtmac_tunnel_decap(f->data, sizeof(f->data), frame, len);
	/*
	 * The inner type must be an EtherType (RTnet stores h_proto there) and
	 * something must follow the header: Linux would drop anything else
	 * silently, so count it here where it can be seen.
	 */
	if (n <= ETH_HLEN_RTN || rtn_get_be16(f->data + 12) < 0x0600) {
		VSTAT_ADD(s, rx_bad, 1);
		return;
	}
	f->len = n;
	fr_commit(s->to_tap);
	s->tunnel_rx_at = rtn_now();
	s->tunnel_rx_n++;
}

static void chan_rx(struct rtn_station *s, uint16_t type, const uint8_t *frame, uint32_t len,
		    int64_t rx_local)
{
	int64_t off = s->tdma ? rtn_tdma_clock_offset(s->tdma) : 0;
	uint32_t i;
	int matched = 0;

	if (type == s->probe_rx_type && len >= ETH_HLEN_RTN + RTN_APP_HDR_LEN &&
	    rtn_get_be32(frame + ETH_HLEN_RTN) == RTN_APP_MAGIC) {
		s->probe_rx++;
		s->probe_rx_bytes += len;
		/* the transmit stamp is the sender's word: saturate, never overflow */
		rtn_hist_add(&s->probe_lat, rtn_sat_sub(rtn_sat_add(rx_local, off),
							(int64_t)rtn_get_be64(frame + RTN_APP_TX_OFF)));
		return;
	}

	for (i = 0; i < RTN_STATION_MAX_CHANS; i++) {
		struct chan *c = s->live[i];
		struct rtn_msg *m;

		if (!c || c->ethertype != type)
			continue;
		matched = 1;
		m = rtn_ring_prod_slot(&c->shm->rx, rtn_chan_rx_msgs(c->shm, c->depth), c->depth);
		if (!m) {
			/* the application stopped reading: its loss, nobody else's */
			c->rx_drops++;
			c->shm->rx.drops++;
			continue;
		}
		if (len > RTN_CHAN_MSG_MAX)
			len = RTN_CHAN_MSG_MAX;
		memcpy(m->frame, frame, len);
		m->len = len;
		m->rx_ns = rtn_sat_add(rx_local, off);
		m->seq = 0;
		m->sched_ns = m->tx_ns = 0;
		if (len >= ETH_HLEN_RTN + RTN_APP_HDR_LEN &&
		    rtn_get_be32(frame + ETH_HLEN_RTN) == RTN_APP_MAGIC) {
			m->seq = rtn_get_be32(frame + ETH_HLEN_RTN + 4);
			m->sched_ns = (int64_t)rtn_get_be64(frame + ETH_HLEN_RTN + 8);
			m->tx_ns = (int64_t)rtn_get_be64(frame + ETH_HLEN_RTN + 16);
		}
		rtn_ring_prod_commit(&c->shm->rx);
		c->rx_msgs++;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* as for cycle_waiting */
		if (__atomic_load_n(&c->shm->rx.waiting, __ATOMIC_ACQUIRE))
			futex_wake(&c->shm->rx.head);
	}
	if (!matched)
		s->st.rx_other++;
}

static void receive_all(struct rtn_station *s)
{
	struct rtn_xsk_frame fr[RX_BATCH];
	int64_t rx_os;
	int n, i, queued_for_tap = 0;

	while ((n = rtn_xsk_rx_peek(s->xsk, fr, RX_BATCH, &rx_os)) > 0) {
		for (i = 0; i < n; i++) {
			/* the XDP program's stamp when there is one, else the poll time */
			int64_t rx = local_of(s, fr[i].rx_ts ? fr[i].rx_ts : rx_os);
			uint16_t type;

			s->st.rx_frames++;
			if (fr[i].len < ETH_HLEN_RTN)
				continue;
			type = rtn_get_be16(fr[i].data + 12);
			if (type == ETH_RTMAC) {
				int rc = 1;

				if (s->disc == RTN_DISC_TDMA && s->tdma)
					rc = rtn_tdma_rx(s->tdma, fr[i].data, fr[i].len, rx);
				else if (fr[i].len < 18 || !(fr[i].data[17] & RTMAC_FLAG_TUNNEL))
					rc = 0;	/* NoMAC: discipline frames are not ours */
				if (rc == 1) {
					vnic_rx(s, fr[i].data, fr[i].len);
					queued_for_tap = 1;
				} else if (rc < 0 && s->vnic_live && fr[i].len >= 18 &&
					   (fr[i].data[17] & RTMAC_FLAG_TUNNEL)) {
					/* a tunnel frame with a bad RTmac header: the VNIC's loss */
					VSTAT_ADD(s, rx_bad, 1);
				}
			} else {
				chan_rx(s, type, fr[i].data, fr[i].len, rx);
			}
		}
		rtn_xsk_rx_release(s->xsk);
	}
	if (queued_for_tap && s->vnic_live && s->writer_on)
		efd_signal(s->writer_efd);
}

/* ---- mailbox (executed on the RT thread, or directly when it is not running) */

static void restart_tdma(struct rtn_station *s, int64_t now_local)
{
	rtn_tdma_start(s->tdma, &s->tdma_cfg, now_local);
}

static void exec_cmd(struct rtn_station *s)
{
	int cmd = __atomic_load_n(&s->cmd, __ATOMIC_ACQUIRE);
	uintptr_t arg = (uintptr_t)s->cmd_arg;

	switch (cmd) {
	case CMD_NONE:
		return;
	case CMD_ATTACH_TDMA:
		/* the control thread prepared s->tdma and s->tdma_cfg */
		restart_tdma(s, rtn_station_local_now(s));
		s->disc = RTN_DISC_TDMA;
		break;
	case CMD_ATTACH_NOMAC:
		s->disc = RTN_DISC_NOMAC;
		break;
	case CMD_DETACH:
		s->disc = RTN_DISC_NONE;
		break;
	case CMD_CHAN_ADD:
		s->live[arg] = &s->chans[arg];
		break;
	case CMD_CHAN_DEL:
		s->live[arg] = NULL;
		break;
	case CMD_VNIC_ATTACH:
		s->vnic_live = 1;
		break;
	case CMD_VNIC_DETACH:
		s->vnic_live = 0;
		break;
	}
	/*
	 * Cycle starts matter only to applications (published for wait-for-cycle);
	 * without any, the engine starts each cycle at its first job, which saves a
	 * slave one wake-up per cycle.
	 */
	if (s->tdma) {
		int listeners = 0;

		for (int i = 0; i < RTN_STATION_MAX_CHANS; i++)
			listeners |= s->live[i] != NULL && s->live[i]->cycles;
		rtn_tdma_set_lazy_begin(s->tdma, !listeners);
	}
	/* senders on a NoMAC station kick the RT thread; under TDMA the slot picks them up */
	for (int i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (s->chans[i].shm)
			__atomic_store_n(&s->chans[i].shm->kick_wanted, s->disc == RTN_DISC_NOMAC,
					 __ATOMIC_RELEASE);
	s->cmd_rc = 0;
	__atomic_store_n(&s->cmd, CMD_NONE, __ATOMIC_RELEASE);
	if (rtn_station_running(s))
		efd_signal(s->done_fd);
}

/* Control side: run @p cmd on the RT thread and wait for it. */
static int post(struct rtn_station *s, int cmd, uintptr_t arg)
{
	s->cmd_arg = (void *)arg;
	__atomic_store_n(&s->cmd, cmd, __ATOMIC_RELEASE);
	if (!rtn_station_running(s)) {
		exec_cmd(s);
		return s->cmd_rc;
	}
	efd_signal(s->efd);
	for (;;) {
		struct pollfd p = { .fd = s->done_fd, .events = POLLIN };

		if (poll(&p, 1, 2000) == 1) {
			efd_drain(s->done_fd);
			if (__atomic_load_n(&s->cmd, __ATOMIC_ACQUIRE) == CMD_NONE)
				return s->cmd_rc;
		} else if (!rtn_station_running(s)) {
			exec_cmd(s);
			return s->cmd_rc;
		}
	}
}

/* ---- the RT thread ---------------------------------------------------------- */

static void arm_timer(struct rtn_station *s, int64_t os_deadline)
{
	struct itimerspec its = { 0 };

	if (os_deadline != INT64_MAX)
		its.it_value = rtn_ns_to_ts(os_deadline);
	timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void vnic_write_direct(struct rtn_station *s, int64_t next_local);

/*
 * Whether a received frame wakes the thread.  Under TDMA with the batched
 * VNIC it may do so once between two timer wake-ups while tunnelled traffic
 * flows (a tunnel frame in the last RX_WAKE_HOLD_NS): that traffic then
 * reaches Linux (and a reply can make the station's next window) within a
 * cycle instead of at the next scheduled wake-up, and costs at most one
 * wake-up per cycle however many frames a peer's window brought.  With no
 * Linux traffic, nothing received wakes it (not even the Sync), and neither
 * with bulk traffic (a running average of one tunnel frame or more per
 * timer wake-up, as a TCP flow's ACKs): the next scheduled wake-up is near,
 * and a wake-up per cycle would cost a context switch per handful of packets.
 */
#define RX_WAKE_HOLD_NS		20000000LL

/* A timer wake-up: the recent receive traffic decides the next RX wake-up. */
static void rx_wake_rearm(struct rtn_station *s)
{
	uint32_t n = s->tunnel_rx_n < 4096 ? s->tunnel_rx_n : 4096;

	/* average over about eight wake-ups, in sixteenths of a frame */
	s->tunnel_rx_avg += ((int32_t)(n * 16) - (int32_t)s->tunnel_rx_avg) / 8;
	s->rx_light = s->tunnel_rx_avg < 16;
	s->tunnel_rx_n = 0;
	s->rx_woke = 0;
}
static int rx_wakes(const struct rtn_station *s, int64_t next_local)
{
	if (s->disc != RTN_DISC_TDMA || next_local == INT64_MAX)
		return 1;
	if (!(s->vnic_live && s->vnic_mode == RTN_VNIC_BATCHED))
		return 1;
	return !s->rx_woke && s->rx_light && rtn_now() - s->tunnel_rx_at < RX_WAKE_HOLD_NS;
}

/*
 * Longest sleep without watching the eventfd: control commands and the stop
 * request wait at most this long for the thread (see station_body).
 */
#define QUIET_SLEEP_MAX_NS	10000000

/*
 * Only the timer can usefully wake the thread: under TDMA with the batched
 * VNIC (or no VNIC traffic path that needs a wake-up) and a deadline within
 * QUIET_SLEEP_MAX_NS.  Then a plain absolute clock_nanosleep replaces
 * timerfd_settime + poll on three descriptors + read, the cheapest wait the
 * kernel has; commands posted meanwhile run at that wake-up.
 */
static int quiet_wait(const struct rtn_station *s, int64_t next_local, int64_t next_os)
{
	return !rx_wakes(s, next_local) && s->disc == RTN_DISC_TDMA &&
	       next_os - rtn_now() < QUIET_SLEEP_MAX_NS;
}

/* Lateness of a timer wake-up for @p deadline, as the periodic loop records it. */
static void timer_woke(struct rtn_station *s, int64_t deadline, int64_t now)
{
	rtn_hist_add(&s->wake, now - deadline);
	s->st.timer_wakeups++;
}

/*
 * A deadline this close is waited for by spinning on the clock: a timer
 * wake-up costs more CPU than that here (~11 us measured with cyclictest on
 * the lab VM) and often comes later than the deadline itself.  The lab's
 * plan has one such gap every cycle (the master's Sync, then its RT slot).
 */
#define SPIN_WAIT_MAX_NS	10000

static int station_body(struct rtn_rt *rt, void *arg)
{
	struct rtn_station *s = arg;
	int64_t armed = INT64_MAX;

	while (!rtn_rt_should_stop(rt)) {
		struct pollfd p[4];
		int64_t next_local = INT64_MAX, next_os, now, woke_late = 0;
		int np = 0, tap_idx = -1;

		exec_cmd(s);
		if (s->disc == RTN_DISC_TDMA && s->tdma)
			next_local = rtn_tdma_next_event(s->tdma);
		else if (s->disc == RTN_DISC_NOMAC) {
			int64_t now_local = rtn_station_local_now(s);
			int64_t due = rate_generate(s, now_local);

			next_local = nomac_flush(s, now_local);
			if (due < next_local)
				next_local = due;
		}
		next_os = next_local == INT64_MAX ? INT64_MAX : os_of(s, next_local);
		if (next_os != INT64_MAX && next_os - rtn_now() < SPIN_WAIT_MAX_NS) {
			while ((now = rtn_now()) < next_os)
				rtn_cpu_relax();
			s->st.loops++;
			s->st.spin_waits++;
			rx_wake_rearm(s);
			goto work;
		}
		if (quiet_wait(s, next_local, next_os)) {
			if (armed != INT64_MAX) {
				arm_timer(s, INT64_MAX);
				armed = INT64_MAX;
			}
			rtn_sleep_until(next_os);
			now = rtn_now();
			s->st.loops++;
			timer_woke(s, next_os, now);
			woke_late = now - next_os;
			rx_wake_rearm(s);
			goto work;
		}
		if (next_os != armed) {
			arm_timer(s, next_os);
			armed = next_os;
		}
		/*
		 * Receive stamps come from the XDP program, so under TDMA received
		 * frames can wait for the next scheduled wake-up (a slot, the cycle
		 * start) without losing accuracy.  With the batched VNIC that is what
		 * keeps tunnelled traffic from waking the thread per packet: one
		 * received burst may wake it per cycle (rx_wakes); otherwise (and
		 * while no Sync has placed the grid yet) every frame wakes it.
		 */
		p[np++] = (struct pollfd){ .fd = rtn_xsk_fd(s->xsk),
					   .events = rx_wakes(s, next_local) ? POLLIN : 0 };
		p[np++] = (struct pollfd){ .fd = s->tfd, .events = POLLIN };
		p[np++] = (struct pollfd){ .fd = s->efd, .events = POLLIN };
		/*
		 * Only while the FIFO has room: a full FIFO with a readable TAP
		 * would make poll() return at once and spin this SCHED_FIFO
		 * thread until the link frees a frame, starving everything
		 * below it on its CPU for as long as a flood lasts.
		 */
		if (s->disc == RTN_DISC_NOMAC && s->vnic_live && s->vnic_mode == RTN_VNIC_BATCHED &&
		    tap_usable(s) && s->nomac_head - s->nomac_tail < NOMAC_FIFO) {
			tap_idx = np;
			p[np++] = (struct pollfd){ .fd = s->tap_fd, .events = POLLIN };
		}
		if (poll(p, np, 100) < 0 && errno != EINTR)
			continue;
		now = rtn_now();
		s->st.loops++;
		if (p[1].revents & POLLIN) {
			uint64_t ticks;

			if (read(s->tfd, &ticks, sizeof(ticks)) > 0 && armed != INT64_MAX) {
				timer_woke(s, armed, now);
				woke_late = now - armed;
				armed = INT64_MIN;	/* fired: re-arm on the next round */
			}
			rx_wake_rearm(s);
		} else if (p[0].revents & POLLIN) {
			s->rx_woke = 1;
			s->st.rx_wakeups++;
		}
		if (p[2].revents & POLLIN) {
			efd_drain(s->efd);
			if (s->vnic_live && s->vnic_mode == RTN_VNIC_PER_PACKET)
				VSTAT_ADD(s, wakeups, 1);
		}
		if (tap_idx >= 0 && (p[tap_idx].revents & POLLIN))
			VSTAT_ADD(s, wakeups, 1);
		if (tap_idx >= 0 && (p[tap_idx].revents & (POLLERR | POLLHUP | POLLNVAL)))
			tap_failed(s);
work:
		receive_all(s);
		if (s->vnic_live && s->vnic_mode == RTN_VNIC_PER_PACKET)
			vnic_take_from_reader(s);
		if (s->disc == RTN_DISC_TDMA && s->tdma) {
			uint64_t missed = rtn_tdma_missed(s->tdma);

			rtn_tdma_run(s->tdma, local_of(s, rtn_now()));
			missed = rtn_tdma_missed(s->tdma) - missed;
			/*
			 * Why: VNIC writes of the previous round ran past this
			 * deadline; the wake-up came later than the slot tolerates
			 * (the thread could not run); or anything else.
			 */
			if (s->vnic_overran)
				s->st.miss_vnic += missed;
			else if (woke_late > s->tdma_cfg.guard_ns)
				s->st.miss_late_wake += missed;
			else
				s->st.miss_other += missed;
			s->vnic_overran = 0;
		} else if (s->disc == RTN_DISC_NOMAC) {
			nomac_collect(s);
			rate_generate(s, local_of(s, rtn_now()));
			nomac_flush(s, local_of(s, rtn_now()));
		}
		rtn_xsk_flush(s->xsk);
		if (s->vnic_live && s->vnic_mode == RTN_VNIC_BATCHED)
			vnic_write_direct(s, s->disc == RTN_DISC_TDMA && s->tdma ?
					  rtn_tdma_next_event(s->tdma) : INT64_MAX);
	}
	return 0;
}

/* ---- VNIC helper threads ------------------------------------------------------ */

/*
 * With a vnet header: the frame at the ring's tail and the segments of the
 * same TCP flow right behind it, merged into s->gro.  Returns the frames
 * taken (at most @p max); their count and bytes in *segs and *bytes.
 */
static uint32_t gro_collect(struct rtn_station *s, uint32_t max, uint32_t *segs, uint64_t *bytes)
{
	struct frame_slot *f = fr_peek(s->to_tap);
	uint32_t n = 1;
	int open = rtn_gro_begin(&s->gro, f->data, f->len);

	*bytes = f->len;
	fr_release(s->to_tap);
	while (open > 0 && n < max && (f = fr_peek(s->to_tap)) &&
	       rtn_gro_append(&s->gro, f->data, f->len)) {
		*bytes += f->len;
		fr_release(s->to_tap);
		n++;
	}
	*segs = open < 0 ? 0 : s->gro.nseg;
	return n;
}

/* Write up to @p max received frames to the TAP; returns how many were taken. */
static uint32_t write_to_tap(struct rtn_station *s, uint32_t max)
{
	struct frame_slot *f;
	uint32_t n = 0;

	while (n < max && (f = fr_peek(s->to_tap))) {
		const uint8_t *buf = f->data;
		uint32_t len = f->len, segs = 1;
		uint64_t bytes = f->len;
		ssize_t w;

		if (s->vnet) {
			n += gro_collect(s, max - n, &segs, &bytes);
			if (!segs) {	/* larger than a super-packet: cannot be */
				VSTAT_ADD(s, rx_dropped, 1);
				continue;
			}
			len = rtn_gro_finish(&s->gro);
			buf = s->gro.out;
		}
		w = tap_usable(s) ? write(s->tap_fd, buf, len) : -1;
		if (w < 0) {
			/* a dead TAP, or a full one (EAGAIN): the frames are lost */
			if (tap_usable(s) && errno != EAGAIN && errno != EINTR)
				tap_failed(s);
			VSTAT_ADD(s, rx_dropped, segs);
		} else {
			VSTAT_ADD(s, tap_writes, 1);
			VSTAT_ADD(s, tap_tx, segs);
			VSTAT_ADD(s, tap_tx_bytes, bytes);
		}
		if (!s->vnet) {
			fr_release(s->to_tap);
			n++;
		}
	}
	return n;
}

/*
 * Batched mode, wire -> Linux: the RT thread writes received frames to the
 * TAP itself, but only when its next deadline is far enough away that the
 * writes (a few microseconds each) cannot delay real-time work; otherwise
 * they wait in the ring for a later wake-up.  No helper thread, so no
 * context switch per batch.
 */
static void vnic_write_direct(struct rtn_station *s, int64_t next_local)
{
	int64_t slack = next_local == INT64_MAX ? INT64_MAX
						 : next_local - rtn_station_local_now(s);

	if (slack <= VNIC_WRITE_SLACK_NS)
		return;
	write_to_tap(s, (uint32_t)(slack == INT64_MAX ? VNIC_RING
				   : (slack - VNIC_WRITE_SLACK_NS) / VNIC_WRITE_COST_NS + 1));
	/* the budget is an estimate: count every time the writes ran into real-time work */
	if (next_local != INT64_MAX && rtn_station_local_now(s) > next_local) {
		s->st.vnic_overruns++;
		s->vnic_overran = 1;
	}
}

/* Per-packet mode, wire -> Linux: a helper thread woken by the RT thread. */
static void *vnic_writer(void *arg)
{
	struct rtn_station *s = arg;

	pthread_setname_np(pthread_self(), "rtnet-vnic-wr");
	while (!s->vnic_stop) {
		struct pollfd p = { .fd = s->writer_efd, .events = POLLIN };

		if (poll(&p, 1, 200) > 0)
			efd_drain(s->writer_efd);
		write_to_tap(s, VNIC_RING);
	}
	return NULL;
}

/*
 * Per-packet mode with a vnet header: one read, its segments into the ring,
 * one wake-up for all of them.  What the ring has no room for is dropped.
 */
static void reader_segment(struct rtn_station *s)
{
	struct rtn_gso_seg g;
	struct frame_slot *f;
	ssize_t n = read(s->tap_fd, s->rd_buf, RTN_GSO_BUF);
	int len;

	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			tap_failed(s);
		return;
	}
	VSTAT_ADD(s, tap_reads, 1);
	if (rtn_gso_begin(&g, s->rd_buf, (uint32_t)n, RTN_TDMA_FRAME_MAX) < 0) {
		VSTAT_ADD(s, tx_bad, 1);
		return;
	}
	while (rtn_gso_left(&g)) {
		f = fr_prod(s->from_tap);
		if (!f) {
			VSTAT_ADD(s, tx_dropped, rtn_gso_left(&g));
			break;
		}
		len = rtn_gso_next(&g, f->data, sizeof(f->data));
		if (len <= 0)
			break;
		f->len = (uint32_t)len;
		VSTAT_ADD(s, tap_rx, 1);
		VSTAT_ADD(s, tap_rx_bytes, len);
		fr_commit(s->from_tap);
	}
	efd_signal(s->efd);
}

/* Per-packet mode: one wake-up of the RT thread for every packet. */
static void *vnic_reader(void *arg)
{
	struct rtn_station *s = arg;

	pthread_setname_np(pthread_self(), "rtnet-vnic-rd");
	while (!s->vnic_stop && tap_usable(s)) {
		struct pollfd p[2] = { { .fd = s->tap_fd, .events = POLLIN },
				       { .fd = s->reader_stop_efd, .events = POLLIN } };
		struct frame_slot *f;
		ssize_t n;

		if (poll(p, 2, 200) <= 0 || !(p[0].revents & POLLIN)) {
			if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
				tap_failed(s);
				break;	/* TAP deleted under us */
			}
			continue;
		}
		if (s->vnet) {
			reader_segment(s);
			continue;
		}
		f = fr_prod(s->from_tap);
		if (!f) {
			uint8_t sink[RTN_TDMA_FRAME_MAX];

			if (read(s->tap_fd, sink, sizeof(sink)) > 0)
				VSTAT_ADD(s, tx_dropped, 1);
			continue;
		}
		n = read(s->tap_fd, f->data, sizeof(f->data));
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			tap_failed(s);
			break;
		}
		if (n <= 0)
			continue;
		f->len = n;
		VSTAT_ADD(s, tap_reads, 1);
		VSTAT_ADD(s, tap_rx, 1);
		VSTAT_ADD(s, tap_rx_bytes, n);
		fr_commit(s->from_tap);
		efd_signal(s->efd);
	}
	return NULL;
}

/* ---- public API ----------------------------------------------------------------- */

int rtn_station_open(const struct rtn_station_opts *o, struct rtn_station **out)
{
	struct rtn_station *s;
	int rc;

	s = aligned_alloc(64, (sizeof(*s) + 63) & ~(size_t)63);
	if (!s)
		return rtn_set_error(-ENOMEM, "station: out of memory");
	memset(s, 0, sizeof(*s));
	s->o = *o;
	s->efd = s->tfd = s->done_fd = s->tap_fd = s->writer_efd = s->reader_stop_efd = -1;
	pthread_mutex_init(&s->ctl_lock, NULL);
	s->t0 = rtn_now();
	s->probe_slot = -1;
	rtn_hist_init(&s->wake, 0);
	rtn_hist_init(&s->probe_lat, 0);
	s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->tfd = timerfd_create(RTN_CLOCK, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->efd < 0 || s->done_fd < 0 || s->tfd < 0) {
		rc = rtn_set_error(-errno, "station: eventfd/timerfd: %s", strerror(errno));
		goto fail;
	}
	rc = rtn_xsk_open(&o->xsk, &s->xsk);
	if (rc)
		goto fail;
	/* the RT thread kicks once per wake-up, after everything due was queued */
	rtn_xsk_defer_kick(s->xsk, 1);
	*out = s;
	return 0;
fail:
	rtn_station_close(s);
	return rc;
}

int rtn_station_running(const struct rtn_station *s)
{
	return s->rt != NULL;
}

int rtn_station_start(struct rtn_station *s)
{
	int rc;

	pthread_mutex_lock(&s->ctl_lock);
	if (s->rt) {
		pthread_mutex_unlock(&s->ctl_lock);
		return rtn_set_error(-EALREADY, "station already running");
	}
	s->st.running = 1;
	rc = rtn_rt_start(&s->o.rt, station_body, s, &s->rt);
	if (rc)
		s->st.running = 0;
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

static void stop_rt(struct rtn_station *s)
{
	if (s->rt) {
		rtn_rt_stop(s->rt, NULL);
		s->rt = NULL;
		s->st.running = 0;
	}
}

int rtn_station_attach_tdma(struct rtn_station *s, const struct rtn_tdma_cfg *cfg)
{
	struct rtn_tdma_port port = { .send = port_send, .truth = port_truth,
				      .before_slot = port_before_slot,
				      .on_cycle = port_on_cycle, .arg = s };
	struct rtn_tdma *e = NULL, *old;
	int rc = rtn_tdma_cfg_check(cfg);

	if (rc)
		return rc;
	pthread_mutex_lock(&s->ctl_lock);
	rc = rtn_tdma_create(s->o.mac, &port, &e);
	if (rc)
		goto out;
	/* first take the old engine away from the RT thread, then hand the new one over */
	post(s, CMD_DETACH, 0);
	old = s->tdma;
	s->tdma = e;
	s->tdma_cfg = *cfg;
	post(s, CMD_ATTACH_TDMA, 0);
	rtn_tdma_destroy(old);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_tdma_update(struct rtn_station *s, const struct rtn_tdma_cfg *cfg)
{
	int rc;

	pthread_mutex_lock(&s->ctl_lock);
	if (s->disc != RTN_DISC_TDMA || !s->tdma) {
		rc = rtn_set_error(-ENOENT, "TDMA is not attached");
	} else if (!rtn_station_running(s)) {
		rc = rtn_tdma_cfg_check(cfg);
		if (!rc) {
			s->tdma_cfg = *cfg;
			restart_tdma(s, rtn_station_local_now(s));
		}
	} else {
		rc = rtn_tdma_set_config(s->tdma, cfg);
		if (!rc) {
			int i;

			s->tdma_cfg.n_slots = cfg->n_slots;
			memcpy(s->tdma_cfg.slots, cfg->slots, sizeof(cfg->slots));
			/* applied at the next cycle start; wait at most a few cycles */
			for (i = 0; i < 2000 && rtn_tdma_config_pending(s->tdma); i++)
				usleep(1000);
			if (rtn_tdma_config_pending(s->tdma))
				rc = rtn_set_error(-ETIMEDOUT, "configuration not applied: "
						   "no cycle start (waiting for Sync?)");
		}
	}
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_attach_nomac(struct rtn_station *s)
{
	pthread_mutex_lock(&s->ctl_lock);
	post(s, CMD_ATTACH_NOMAC, 0);
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

int rtn_station_detach(struct rtn_station *s)
{
	pthread_mutex_lock(&s->ctl_lock);
	post(s, CMD_DETACH, 0);
	rtn_tdma_destroy(s->tdma);
	s->tdma = NULL;
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

int rtn_station_tdma_stats(const struct rtn_station *s, struct rtn_tdma_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!s->tdma)
		return -ENOENT;
	rtn_tdma_read_stats(s->tdma, out);
	return 0;
}

void rtn_station_stats(const struct rtn_station *s, struct rtn_station_stats *out)
{
	*out = s->st;
	out->discipline = s->disc;
	out->vnic.mode = s->vnic_live ? s->vnic_mode : RTN_VNIC_OFF;
	out->clock_offset_ns = s->o.clock_offset_ns;
	out->drift_ppm = s->o.drift_ppm;
}

const struct rtn_hist *rtn_station_wake_hist(const struct rtn_station *s)
{
	return &s->wake;
}

void rtn_station_rt_stats(const struct rtn_station *s, struct rtn_rt_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (s->rt)
		rtn_rt_read_stats(s->rt, out);
}

int rtn_station_xsk_stats(const struct rtn_station *s, struct rtn_xsk_stats *out)
{
	return rtn_xsk_stats(s->xsk, out);
}

const char *rtn_station_xdp_fallback(const struct rtn_station *s)
{
	return rtn_xsk_fallback_reason(s->xsk);
}

int rtn_station_xdp_mode(const struct rtn_station *s)
{
	return rtn_xsk_mode(s->xsk);
}

int rtn_station_chan_open(struct rtn_station *s, const struct rtn_chan_opts *o,
			  int *memfd, int *kickfd)
{
	struct rtn_chan_shm *shm;
	uint64_t size;
	int i, fd, rc = 0;

	if (!o->depth || (o->depth & (o->depth - 1)) || o->depth > RTN_CHAN_MAX_DEPTH)
		return rtn_set_error(-EINVAL, "channel depth %u: a power of two up to %d", o->depth,
				     RTN_CHAN_MAX_DEPTH);
	if (o->max_size < ETH_HLEN_RTN || o->max_size > RTN_CHAN_MSG_MAX)
		return rtn_set_error(-EINVAL, "channel maximum size %u outside 14..%d",
				     o->max_size, RTN_CHAN_MSG_MAX);
	if (o->ethertype < 0x0600 || o->ethertype == ETH_RTMAC || o->ethertype == ETH_RTCFG)
		return rtn_set_error(-EINVAL, "EtherType 0x%04x cannot carry a channel", o->ethertype);
	if (o->prio > 31)
		return rtn_set_error(-EINVAL, "priority %u outside 0..31", o->prio);
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
	s->chans[i] = (struct chan){ .shm = shm, .size = size, .depth = o->depth,
				     .cycles = !o->no_cycles, .ethertype = o->ethertype,
				     .slot = o->slot, .prio = o->prio, .max_size = o->max_size };
	post(s, CMD_CHAN_ADD, i);
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

	if (id < 0 || id >= RTN_STATION_MAX_CHANS || !s->chans[id].shm)
		return rtn_set_error(-ENOENT, "no channel %d", id);
	pthread_mutex_lock(&s->ctl_lock);
	c = &s->chans[id];
	post(s, CMD_CHAN_DEL, id);
	c->shm->alive = 0;
	futex_wake(&c->shm->rx.head);
	futex_wake(&c->shm->cycle_seq);
	munmap(c->shm, c->size);
	memset(c, 0, sizeof(*c));
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

int rtn_station_chan_stats(const struct rtn_station *s, int id, struct rtn_chan_stats *out)
{
	const struct chan *c;

	if (id < 0 || id >= RTN_STATION_MAX_CHANS || !s->chans[id].shm)
		return rtn_set_error(-ENOENT, "no channel %d", id);
	c = &s->chans[id];
	*out = (struct rtn_chan_stats){ .id = id, .ethertype = c->ethertype, .slot = c->slot,
					.tx_msgs = c->tx_msgs, .tx_drops = c->tx_drops,
					.rx_msgs = c->rx_msgs, .rx_drops = c->rx_drops,
					.ring_errors = c->ring_errors };
	return 0;
}

static void vnic_release(struct rtn_station *s)
{
	s->vnic_stop = 1;
	if (s->reader_on) {
		efd_signal(s->reader_stop_efd);
		pthread_join(s->reader, NULL);
	}
	if (s->writer_on) {
		efd_signal(s->writer_efd);
		pthread_join(s->writer, NULL);
	}
	s->reader_on = s->writer_on = 0;
	if (s->tap_fd >= 0)
		close(s->tap_fd);
	if (s->writer_efd >= 0)
		close(s->writer_efd);
	if (s->reader_stop_efd >= 0)
		close(s->reader_stop_efd);
	s->tap_fd = s->writer_efd = s->reader_stop_efd = -1;
	free(s->to_tap);
	free(s->from_tap);
	s->to_tap = s->from_tap = NULL;
	free(s->gso_buf);
	free(s->rd_buf);
	free(s->gro_buf);
	s->gso_buf = s->rd_buf = s->gro_buf = NULL;
	s->vnet = 0;
}

/*
 * Whether the TAP delivers and takes a vnet header (IFF_VNET_HDR), asked of
 * the device itself so the caller's API stays the same.  0 no, 1 yes, or a
 * negative errno for a header size other than the 10-byte virtio_net_hdr.
 */
static int tap_has_vnet_hdr(int fd)
{
	struct ifreq ifr;
	int sz = 0;

	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr) < 0 || !(ifr.ifr_flags & IFF_VNET_HDR))
		return 0;	/* not a TAP (a test's socket), or one without the header */
	if (ioctl(fd, TUNGETVNETHDRSZ, &sz) < 0 || sz != RTN_VNET_HDR_LEN)
		return rtn_set_error(-EINVAL, "VNIC: TAP vnet header of %d bytes, only %d supported",
				     sz, RTN_VNET_HDR_LEN);
	return 1;
}

int rtn_station_vnic_attach(struct rtn_station *s, int tap_fd, int mode, uint32_t slot)
{
	int rc = 0;

	if (mode != RTN_VNIC_BATCHED && mode != RTN_VNIC_PER_PACKET)
		return rtn_set_error(-EINVAL, "VNIC mode must be batched or per-packet");
	if (slot >= RTN_TDMA_MAX_SLOTS)
		return rtn_set_error(-EINVAL, "VNIC slot %u out of range", slot);
	pthread_mutex_lock(&s->ctl_lock);
	if (s->tap_fd >= 0) {
		rc = rtn_set_error(-EBUSY, "a VNIC is already attached");
		goto out;
	}
	s->tap_fd = fcntl(tap_fd, F_DUPFD_CLOEXEC, 0);
	s->writer_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->reader_stop_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->to_tap = aligned_alloc(64, sizeof(struct frame_ring));
	s->from_tap = aligned_alloc(64, sizeof(struct frame_ring));
	if (s->tap_fd < 0 || s->writer_efd < 0 || s->reader_stop_efd < 0 ||
	    !s->to_tap || !s->from_tap) {
		rc = rtn_set_error(-ENOMEM, "VNIC: cannot allocate its rings and descriptors");
		vnic_release(s);
		goto out;
	}
	rc = tap_has_vnet_hdr(s->tap_fd);
	if (rc < 0) {
		vnic_release(s);
		goto out;
	}
	s->vnet = rc;
	rc = 0;
	if (s->vnet) {
		s->gso_buf = malloc(RTN_GSO_BUF);
		s->rd_buf = malloc(RTN_GSO_BUF);
		s->gro_buf = malloc(RTN_GSO_BUF);
		if (!s->gso_buf || !s->rd_buf || !s->gro_buf) {
			rc = rtn_set_error(-ENOMEM, "VNIC: cannot allocate its GSO buffers");
			vnic_release(s);
			goto out;
		}
		memset(&s->gso, 0, sizeof(s->gso));
		rtn_gro_init(&s->gro, s->gro_buf, RTN_GSO_BUF);
	}
	fcntl(s->tap_fd, F_SETFL, fcntl(s->tap_fd, F_GETFL) | O_NONBLOCK);
	memset(s->to_tap, 0, sizeof(struct frame_ring));
	memset(s->from_tap, 0, sizeof(struct frame_ring));
	s->vnic_mode = mode;
	s->vnic_slot = slot;
	s->vnic_stop = 0;
	s->tap_dead = 0;
	/* batched: the RT thread does both directions itself (vnic_write_direct) */
	if (mode == RTN_VNIC_PER_PACKET) {
		if (pthread_create(&s->writer, NULL, vnic_writer, s) == 0)
			s->writer_on = 1;
		if (pthread_create(&s->reader, NULL, vnic_reader, s) == 0)
			s->reader_on = 1;
	}
	if (mode == RTN_VNIC_PER_PACKET && (!s->writer_on || !s->reader_on)) {
		rc = rtn_set_error(-EAGAIN, "VNIC: cannot start its threads");
		vnic_release(s);
		goto out;
	}
	post(s, CMD_VNIC_ATTACH, 0);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_vnic_detach(struct rtn_station *s)
{
	pthread_mutex_lock(&s->ctl_lock);
	post(s, CMD_VNIC_DETACH, 0);
	vnic_release(s);
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

void rtn_station_close(struct rtn_station *s)
{
	int i;

	if (!s)
		return;
	stop_rt(s);
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (s->chans[i].shm)
			rtn_station_chan_close(s, i);
	vnic_release(s);
	rtn_tdma_destroy(s->tdma);
	rtn_xsk_destroy(s->xsk);
	if (s->efd >= 0)
		close(s->efd);
	if (s->done_fd >= 0)
		close(s->done_fd);
	if (s->tfd >= 0)
		close(s->tfd);
	pthread_mutex_destroy(&s->ctl_lock);
	free(s);
}

int rtn_station_set_probe(struct rtn_station *s, int slot_id, uint16_t ethertype, uint32_t len)
{
	if (slot_id >= RTN_TDMA_MAX_SLOTS || (slot_id >= 0 && (len < 60 || len > RTN_TDMA_FRAME_MAX)))
		return rtn_set_error(-EINVAL, "probe: slot below %d and length 60..%d",
				     RTN_TDMA_MAX_SLOTS, RTN_TDMA_FRAME_MAX);
	if (slot_id >= 0 && (ethertype < 0x0600 || ethertype == ETH_RTMAC || ethertype == ETH_RTCFG))
		return rtn_set_error(-EINVAL, "probe: EtherType 0x%04x not allowed", ethertype);
	/* plain stores: the RT thread reads them at a slot start; a torn update costs one frame */
	s->probe_type = ethertype;
	s->probe_len = len;
	__atomic_store_n(&s->probe_slot, slot_id, __ATOMIC_RELEASE);
	return 0;
}

uint64_t rtn_station_probe_sent(const struct rtn_station *s)
{
	return s->probe_sent;
}

int rtn_station_set_rate_probe(struct rtn_station *s, uint16_t ethertype, uint32_t len,
			       uint64_t rate_pps, uint64_t count)
{
	if (s->disc != RTN_DISC_NOMAC && count)
		return rtn_set_error(-EINVAL, "rate probe: attach NoMAC first (TDMA sends in slots)");
	if (count && (len < 60 || len > RTN_TDMA_FRAME_MAX || rate_pps < 1 || rate_pps > 10000000))
		return rtn_set_error(-EINVAL, "rate probe: length 60..%d and rate 1..10000000 frames/s",
				     RTN_TDMA_FRAME_MAX);
	s->probe_type = ethertype;
	s->probe_len = len;
	s->rate_interval_ns = count ? (int64_t)(1000000000ull / rate_pps) : 0;
	s->rate_next = rtn_station_local_now(s);
	__atomic_store_n(&s->rate_left, count, __ATOMIC_RELEASE);
	efd_signal(s->efd);
	return 0;
}

void rtn_station_set_probe_rx(struct rtn_station *s, uint16_t ethertype)
{
	s->probe_rx_type = ethertype;
}

void rtn_station_probe_rx(const struct rtn_station *s, uint64_t *frames, uint64_t *bytes,
			  uint64_t *generator_left)
{
	*frames = s->probe_rx;
	*bytes = s->probe_rx_bytes;
	*generator_left = __atomic_load_n(&s->rate_left, __ATOMIC_ACQUIRE);
}

const struct rtn_hist *rtn_station_probe_latency(const struct rtn_station *s)
{
	return &s->probe_lat;
}
