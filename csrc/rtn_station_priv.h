/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_priv.h
 * @brief The station's state and the small helpers its modules share:
 *        rtn_station.c (open/close, mailbox, RT loop, RX dispatch, the TDMA
 *        discipline's port), rtn_nomac.c (the NoMAC discipline),
 *        rtn_station_chan.c (application channels), rtn_vnic_pump.c (the
 *        VNIC's TAP I/O) and rtn_probe.c (benchmark probes, rate generator).
 *        Not part of the API.
 *
 * Threads and who owns what:
 * - the control thread (Python, serialised by s->ctl_lock) creates and frees
 *   everything; it changes what the RT thread uses only through the mailbox
 *   (executed by the RT thread between two wake-ups) or lock-free handovers
 *   (rtn_tdma_set_config);
 * - the RT thread owns the socket, the engine's queues and the NoMAC FIFO;
 * - VNIC helper threads only touch their ring, their eventfd and the TAP.
 */
#ifndef RTN_STATION_PRIV_H
#define RTN_STATION_PRIV_H

#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "rtn_app_hdr.h"
#include "rtn_capture.h"
#include "rtn_chan_inline.h"
#include "rtn_hist_inline.h"
#include "rtn_stages.h"
#include "rtn_station.h"
#include "rtn_station_frer.h"
#include "rtn_station_ip.h"
#include "rtn_tdma_proto_inline.h"
#include "rtn_time_inline.h"
#include "rtn_vnic_gso.h"

#define RX_BATCH	64
/*
 * NoMAC's FIFO: what the RT thread holds for the (modelled) wire.  Deep
 * enough to ride out a stall of the thread at full load: 2048 frames are
 * 13.8 ms of 64-byte frames at 100 Mbit/s (1.4 ms at 1 Gbit/s); with 256 a
 * 2 ms vCPU stall at line rate overflowed it, and frames offered during the
 * stall were dropped although the wire could still carry them afterwards.
 */
#define NOMAC_FIFO	2048
#define VNIC_RING	512	/* frames between the RT thread and a VNIC helper */
#define VNIC_PRIO	31	/* RTnet: NRT traffic is the lowest priority */
/*
 * NoMAC's link-rate model keeps a virtual wire: each frame has a start time
 * on it, and none starts before the previous one ends at the link rate.
 * Frames are handed to the kernel in batches that may run up to
 * PACE_AHEAD_NS ahead of the clock (the frames a NIC's TX ring would hold);
 * the thread then sleeps until only PACE_REFILL_NS of wire time is left
 * queued and tops it up again.  The average rate stays the link rate, and a
 * wake-up and a kick serve PACE_AHEAD_NS - PACE_REFILL_NS of wire time
 * (~74 64-byte frames at 100 Mbit/s, ~740 at 1 Gbit/s) instead of a frame
 * each.  PACE_REFILL_NS is what a wake-up (or a stall of the thread) may be
 * late before the modelled wire idles; the rate generator (rtn_probe.c)
 * makes its frames up to the same horizon, so it batches the same way.
 */
#define PACE_AHEAD_NS	RTN_NOMAC_PACE_AHEAD_NS
#define PACE_REFILL_NS	RTN_NOMAC_PACE_REFILL_NS
/* batched VNIC: the RT thread writes to the TAP only with this much time to spare */
#define VNIC_WRITE_SLACK_NS	100000
#define VNIC_WRITE_COST_NS	10000	/* budget per TAP write (netif_rx included) */

/* VNIC counters are bumped by the RT thread and the VNIC helper threads alike */
#define VSTAT_ADD(s, field, n) __atomic_fetch_add(&(s)->st.vnic.field, (n), __ATOMIC_RELAXED)

enum { CMD_NONE, CMD_ATTACH_TDMA, CMD_ATTACH_NOMAC, CMD_DETACH, CMD_CHAN_ADD,
       CMD_CHAN_DEL, CMD_VNIC_ATTACH, CMD_VNIC_DETACH, CMD_CAPTURE };

#define STAMP_OFF_OF_FRAME	(-2)	/* frame_slot.stamp_off: rtn_app_hdr_tx_off() decides */

struct frame_slot {
	uint32_t len;
	int32_t stamp_off;	/* NoMAC FIFO: where the TX stamp goes (-1 none) */
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
	uint64_t rx_bad_hdr;	/* received application headers that lied about their length */
	uint16_t ethertype, slot;
	uint32_t prio, max_size;
	uint64_t tx_msgs, tx_drops, rx_msgs, rx_drops;
	uint32_t redundant;	/* its EtherType goes out on both ports */
	uint16_t udp_port, udp_flags;	/* a UDP socket's (rtn_station_ip.c); 0: not one */
	int notify_fd;		/* eventfd written when a delivery finds shm->rx_notify armed */
	uint64_t rx_notifies;	/* writes to it */
};

/* ---- two ports (rtn_station_frer.c) ---------------------------------------- */

/* One received stream: its source MAC and (encapsulated) EtherType. */
struct frer_stream {
	uint8_t src[6];
	uint16_t ethertype;
	struct rtn_frer_rcvy r;
};

struct station_frer {
	struct rtn_xsk *xsk_b;		/* port 1's socket, NULL with one port */
	/* streams[0 .. n_streams - 1] are filled: the RT thread fills an entry,
	 * then publishes it by raising n_streams (release); readers acquire */
	uint32_t n_streams;
	struct frer_stream streams[RTN_STATION_FRER_STREAMS];
	struct rtn_frer_seqgen gen[65536];	/* sequence generation per EtherType */
	uint8_t tx_buf[RTN_TDMA_FRAME_MAX + RTN_RTAG_LEN];	/* the tagged copy */
	uint32_t unkicked;	/* frames (pairs) sent since the last kicks of the two rings */
	uint32_t skew_max;	/* .. at most this many: half the history (rtn_station_send) */
	struct rtn_station_frer_stats st;
};

/* The station's IPv4 (rtn_station_ip.c): set by the control thread, read by the RT thread. */
struct station_ipv4 {
	uint32_t addr;			/* host order, 0 none: atomic */
	uint32_t icmp_slot, icmp_prio;	/* atomic */
	uint16_t next_id;		/* IP identification of the echo replies (RT thread) */
	uint32_t n_neigh;
	struct rtn_neigh neigh[RTN_NEIGH_MAX];
	uint32_t groups[RTN_IP_GROUPS];	    /* joined multicast groups, 0 free: atomic */
	uint32_t group_refs[RTN_IP_GROUPS]; /* their joins (control thread, ctl_lock) */
	struct rtn_ip_stats st;		/* RT thread */
	uint8_t reply[RTN_CHAN_MSG_MAX];	/* an echo reply being built (RT thread) */
};

struct rtn_station {
	struct rtn_station_opts o;
	int rx_woke;		/* a received frame woke the thread since the last timer wake-up */
	int64_t tunnel_rx_at;	/* OS time a tunnel frame for the VNIC last arrived */
	uint32_t tunnel_rx_n;	/* tunnel frames since the last timer wake-up */
	uint32_t tunnel_rx_avg;	/* their running average per timer wake-up, x16 */
	int rx_light;		/* few enough for an RX wake-up to pay */
	int64_t rx_poll_at;	/* OS time: a flood, the sockets are looked at on the timer (0: off) */
	int64_t rx_seen_at;	/* OS time of the last round that took frames (rtn_station_rx_poll_next) */
	int app_chans;		/* application channels open (not the daemon's own): what
				 * arrives for them wakes the thread (rtn_station_rx_wakes) */
	struct rtn_xsk *xsk;
	struct station_frer frer;	/* the second port and 802.1CB */
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

	struct station_ipv4 ip;

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
	int64_t rate_backlog_ns;	/* how far behind schedule a frame may wait for room */
	uint8_t rate_dst[6];		/* the generator's destination */

	/* probe receiver: counts and one-way latency of probe frames */
	uint16_t probe_rx_type;
	uint64_t probe_rx, probe_rx_bytes;
	struct rtn_hist probe_lat;	/* receive stamp minus the sender's transmit stamp */

	/* capture ring: set by CMD_CAPTURE (the RT thread's view), NULL when off */
	struct rtn_capture *cap;

	struct rtn_station_stats st;
	struct rtn_hist wake;		/* timer wake-up lateness on the RT thread */
	struct rtn_stages stages;	/* received application messages, stage by stage */
	uint8_t scratch[RTN_TDMA_FRAME_MAX + 8];
};

/* ---- disciplines ---------------------------------------------------------- */

/*
 * What the RT loop asks of the attached discipline (RTN_DISC_*).  The station
 * core never branches on the discipline itself: it calls these.
 */
struct rtn_disc_ops {
	/* local time of the next deadline (INT64_MAX: none); NoMAC also sends what is due */
	int64_t (*next_event)(struct rtn_station *s);
	/* the work of one wake-up, which came @p woke_late after the deadline it waited for */
	void (*run)(struct rtn_station *s, int64_t woke_late);
	/* queue a frame from the per-packet VNIC; < 0 when refused */
	int (*enqueue)(struct rtn_station *s, const uint8_t *frame, uint32_t len);
	/* a received RTmac frame: 1 a tunnel frame for the VNIC, 0 not ours, < 0 malformed */
	int (*rx_rtmac)(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx);
	/* the next real-time deadline that writes to the TAP must not delay (INT64_MAX: none) */
	int64_t (*rt_deadline)(const struct rtn_station *s);
	/* whether the RT thread polls the TAP itself (the batched VNIC's frames wait there) */
	int (*watch_tap)(const struct rtn_station *s);
	int kick_senders;	/* senders kick the RT thread: no slot picks their messages up */
	int paced_rx;		/* received frames may wait for the next scheduled wake-up */
};

extern const struct rtn_disc_ops rtn_disc_none_ops, rtn_disc_tdma_ops, rtn_disc_nomac_ops;

/* The TDMA engine's port for station @p s (rtn_station_tdma.c). */
struct rtn_tdma_port rtn_station_tdma_port(struct rtn_station *s);

static inline const struct rtn_disc_ops *disc_ops(const struct rtn_station *s)
{
	switch (s->disc) {
	case RTN_DISC_TDMA:
		return &rtn_disc_tdma_ops;
	case RTN_DISC_NOMAC:
		return &rtn_disc_nomac_ops;
	default:
		return &rtn_disc_none_ops;
	}
}

/* An RTmac frame without a discipline that reads it: only a tunnel frame is ours. */
static inline int rtmac_tunnel_only(const uint8_t *frame, uint32_t len)
{
	return len >= 18 && (frame[17] & RTMAC_FLAG_TUNNEL) ? 1 : 0;
}

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


/* ---- ring helpers -------------------------------------------------------- */

static inline struct frame_slot *fr_prod(struct frame_ring *r)
{
	if (r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= VNIC_RING)
		return NULL;
	return &r->slot[r->head % VNIC_RING];
}

static inline void fr_commit(struct frame_ring *r)
{
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
}

static inline struct frame_slot *fr_peek(struct frame_ring *r)
{
	if (r->tail == __atomic_load_n(&r->head, __ATOMIC_ACQUIRE))
		return NULL;
	return &r->slot[r->tail % VNIC_RING];
}

static inline void fr_release(struct frame_ring *r)
{
	__atomic_store_n(&r->tail, r->tail + 1, __ATOMIC_RELEASE);
}

static inline void efd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0) {
		/* counter saturated: the reader is awake anyway */
	}
}

static inline void efd_drain(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
}

static inline void futex_wake(uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}


/*
 * A read or write error other than EAGAIN/EINTR means the TAP is gone
 * (EBADFD/EIO after the device was deleted).  Count it once and stop
 * touching the fd: polling a dead TAP returns POLLERR at once, which
 * would make the RT thread spin at real-time priority.
 */
static inline void tap_failed(struct rtn_station *s)
{
	if (!__atomic_exchange_n(&s->tap_dead, 1, __ATOMIC_ACQ_REL))
		__atomic_fetch_add(&s->st.vnic.tap_errors, 1, __ATOMIC_RELAXED);
}

static inline int tap_usable(const struct rtn_station *s)
{
	return !__atomic_load_n(&s->tap_dead, __ATOMIC_ACQUIRE);
}

/* ---- between the modules -------------------------------------------------- */

/* Hand what the sockets queued to the kernel: one kick per port and wake-up. */
static inline void station_flush(struct rtn_station *s)
{
	rtn_xsk_flush(s->xsk);
	if (s->frer.xsk_b)
		rtn_xsk_flush(s->frer.xsk_b);
	s->frer.unkicked = 0;
}

/*
 * rtn_station.c: send with stamps in local time (the TDMA engine's port, and
 * NoMAC); @p sched: the local time the frame was scheduled for, 0 unknown;
 * @p deadline: the local time after which it must not be handed over
 * (INT64_MAX: none), -ETIME then
 */
int rtn_station_send(void *arg, uint8_t *frame, uint32_t len, int32_t stamp_off,
		     int64_t stamp_add, int64_t sched, int64_t deadline, int64_t *tx_local);
/* rtn_station.c: run a CMD_* on the RT thread (directly when it is not running) and wait */
int rtn_station_post(struct rtn_station *s, int cmd, uintptr_t arg);

/* rtn_station_rx.c: take what the sockets hold, both ports merged by arrival */
void rtn_station_receive_all(struct rtn_station *s);
/* rtn_station_rx.c: whether a received frame should wake the thread now */
int rtn_station_rx_wakes(const struct rtn_station *s, int64_t next_local);
/* rtn_station_rx.c: a timer wake-up; the recent receive traffic decides the next RX wake-up */
void rtn_station_rx_wake_rearm(struct rtn_station *s);
/* rtn_station_rx.c: when to look at the sockets next without a wake-up (0: watch them) */
int64_t rtn_station_rx_poll_next(struct rtn_station *s, uint64_t got, int64_t now);

/* rtn_station_chan.c */
typedef int (*rtn_chan_take_fn)(struct rtn_station *s, const struct chan *c,
				const struct rtn_msg *m, uint32_t len, void *arg);
void rtn_chans_drain(struct rtn_station *s, rtn_chan_take_fn take, void *arg,
		     int64_t pickup_global);
void rtn_chans_rx(struct rtn_station *s, uint16_t type, const uint8_t *frame, uint32_t len,
		  int64_t rx_local, int64_t rt_local);
void rtn_chans_on_cycle(void *arg, uint32_t cycle_no, int64_t start_local);
void rtn_chans_close_all(struct rtn_station *s);
/* a received frame with its stamps into @p c's RX ring (counted there when it is full) */
void rtn_chan_deliver(struct rtn_station *s, struct chan *c, const uint8_t *frame, uint32_t len,
		      const struct rtn_app_stamps *st);

/* rtn_station_ip.c: a received IPv4 frame (RT thread); what a channel's TX frame may be */
void rtn_ip_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx_local,
	       int64_t rt_local);
int rtn_chan_tx_ok(struct rtn_station *s, const struct chan *c, const uint8_t *frame,
		   uint32_t len);
int32_t rtn_chan_tx_off(const struct chan *c, const uint8_t *frame, uint32_t len);
void rtn_chan_stamp_pickup(const struct chan *c, uint8_t *frame, uint32_t len, int64_t t);
/* at open and close of a UDP channel: the XDP port map and the channel's page */
int rtn_ip_chan_open(struct rtn_station *s, struct chan *c);
void rtn_ip_chan_close(struct rtn_station *s, struct chan *c);

/* rtn_station_frer.c */
int rtn_frer_open(struct rtn_station *s);
void rtn_frer_close(struct rtn_station *s);
/* the sequence generator of @p frame's stream when it goes out on both ports, else NULL */
struct rtn_frer_seqgen *rtn_frer_tx_stream(struct rtn_station *s, const uint8_t *frame,
					   uint32_t len);
/*
 * Send @p frame tagged with @p gen's next number on both ports, only while
 * the OS time is at most @p deadline_os when the first copy is handed over
 * (rtn_xsk_send_by; the second then follows whatever the time);
 * *@p tagged, *@p tagged_len and *@p stamp_off describe the copy (for the
 * capture).  0 when at least one copy went out (*tx_os: port 0's, else port
 * 1's stamp); -ETIME, with the number given back, when the first was late.
 */
int rtn_frer_send(struct rtn_station *s, struct rtn_frer_seqgen *gen, const uint8_t *frame,
		  uint32_t len, int32_t *stamp_off, int64_t stamp_add, int64_t deadline_os,
		  int64_t *tx_os, const uint8_t **tagged, uint32_t *tagged_len);
/*
 * A frame received on @p port at OS time @p rx_os: 1 to hand on (an R-TAG
 * stripped, *@p len updated), 0 to drop (a duplicate, or counted as bad).
 */
int rtn_frer_rx(struct rtn_station *s, uint32_t port, uint8_t *frame, uint32_t *len,
		int64_t rx_os);

/* rtn_nomac.c */
struct frame_slot *rtn_nomac_slot(struct rtn_station *s);
void rtn_nomac_commit(struct rtn_station *s);

/* rtn_vnic_pump.c */
int rtn_vnic_encap(struct rtn_station *s, const uint8_t *inner, uint32_t len, uint8_t *out,
		   uint32_t cap);
int rtn_vnic_pull(struct rtn_station *s, uint8_t *inner, uint32_t cap);
int rtn_vnic_next_frame(struct rtn_station *s, uint8_t *out, uint32_t cap);
void rtn_vnic_refill(struct rtn_station *s, struct rtn_tdma *e, uint32_t slot_id,
		     uint32_t queue_slot, int64_t now);
void rtn_vnic_take_from_reader(struct rtn_station *s);
void rtn_vnic_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len);
void rtn_vnic_write_direct(struct rtn_station *s, int64_t next_local);
void rtn_vnic_release(struct rtn_station *s);

/* rtn_capture.c: mirror a frame into the capture ring (only while s->cap is set) */
void rtn_capture_tx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int32_t stamp_off,
		    uint64_t stamp, int64_t sched_local, int64_t tx_os);
void rtn_capture_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx_os,
		    int xdp_stamp);

/* rtn_probe.c */
void rtn_probe_refill(struct rtn_station *s, struct rtn_tdma *e, uint32_t slot_id, int64_t now);
int64_t rtn_probe_generate(struct rtn_station *s, int64_t now, int64_t horizon);
int rtn_probe_rx_take(struct rtn_station *s, uint16_t type, const uint8_t *frame, uint32_t len,
		      int64_t rx_global);

#endif
