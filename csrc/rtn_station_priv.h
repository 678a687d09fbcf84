/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_priv.h
 * @brief The station's state and the small helpers its modules share.  Not
 *        part of the API.  Each concern is an object of its own, the station
 *        holds pointers: the VNIC (rtn_vnic_priv.h), NoMAC (rtn_nomac_priv.h),
 *        the probes (rtn_probe_priv.h), FRER (rtn_station_frer.c) and IPv4
 *        (rtn_station_ip.c).  The files are layered, none calls one above it:
 *          rtn_station.c       open/close, the RT loop, attaching a discipline
 *          rtn_station_tdma.c, rtn_nomac.c        the disciplines
 *          rtn_station_rx.c    the receive dispatch
 *          rtn_station_chan.c  application channels
 *          rtn_vnic_pump.c, rtn_probe.c, rtn_station_ip.c, rtn_capture.c
 *          rtn_station_tx.c    sending (rtn_station_send), the clock
 *          rtn_station_mbox.c, rtn_station_frer.c
 *        What a lower file must ask of a higher one goes through a function
 *        pointer: the discipline's ops, a mailbox command's function.
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

#define RX_BATCH	64

struct rtn_vnic;
struct rtn_nomac;
struct rtn_probe;
struct station_frer;
struct station_ipv4;

#define STAMP_OFF_OF_FRAME	(-2)	/* frame_slot.stamp_off: rtn_app_hdr_tx_off() decides */

/* A frame held for the wire: NoMAC's FIFO, the VNIC's rings. */
struct frame_slot {
	uint32_t len;
	int32_t stamp_off;	/* NoMAC FIFO: where the TX stamp goes (-1 none) */
	uint8_t data[RTN_TDMA_FRAME_MAX];
};

/* Where a producer puts frames (NoMAC's FIFO): the next free one, NULL when full. */
struct frame_sink {
	struct frame_slot *(*slot)(void *q);
	void (*commit)(void *q);
	void *q;
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

typedef void (*rtn_cmd_fn)(struct rtn_station *s, uintptr_t arg);

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
	struct rtn_xsk *xsk_b;	/* port 1's socket, NULL with one port */
	uint32_t unkicked;	/* frames (pairs) sent since the last kicks of the two rings */
	uint32_t skew_max;	/* .. at most this many: half the FRER history (rtn_station_send) */
	struct station_frer *frer;	/* 802.1CB over the two ports */
	struct rtn_rt *rt;
	int efd;		/* wakes the RT thread: mailbox, NoMAC kicks, VNIC */
	int tfd;		/* absolute timer for the discipline's next deadline */
	int done_fd;		/* RT thread -> control: mailbox command done */
	int64_t t0;		/* OS time the clock model starts from */
	pthread_mutex_t ctl_lock;

	/* mailbox: a function the RT thread runs (NULL: none) */
	rtn_cmd_fn cmd;
	uintptr_t cmd_arg;
	int cmd_rc;

	/* discipline: owned by the RT thread while it runs (rtn_station.c attaches it) */
	const struct rtn_disc_ops *ops;
	void *disc_priv;
	struct rtn_tdma *tdma;		/* the TDMA engine, for its clock offset too */
	struct rtn_tdma_cfg tdma_cfg;	/* for (re)starts on the RT thread */
	struct rtn_nomac *nomac;

	struct station_ipv4 *ip;
	struct rtn_probe *probe;

	struct chan chans[RTN_STATION_MAX_CHANS];
	struct chan *live[RTN_STATION_MAX_CHANS];	/* as seen by the RT thread */

	struct rtn_vnic *vnic;		/* the RT thread's view: NULL while none is live */
	struct rtn_vnic *vnic_ctl;	/* the control thread's: attached or not */

	/* capture ring: set by a mailbox command (the RT thread's view), NULL when off */
	struct rtn_capture *cap;

	struct rtn_station_stats st;
	struct rtn_hist wake;		/* timer wake-up lateness on the RT thread */
	struct rtn_stages stages;	/* received application messages, stage by stage */
};

/* ---- disciplines ---------------------------------------------------------- */

/*
 * What the station asks of the attached discipline (RTN_DISC_*), through its
 * private pointer.  The station core never branches on the discipline
 * itself: it calls these.
 */
struct rtn_disc_ops {
	int id;			/* RTN_DISC_*, for the statistics */
	/* on the RT thread, when it becomes (stops being) the station's discipline */
	void (*attach)(void *priv);
	void (*detach)(void *priv);
	/* local time of the next deadline (INT64_MAX: none); NoMAC also sends what is due */
	int64_t (*next_event)(void *priv);
	/* the work of one wake-up, which came @p woke_late after the deadline it waited for */
	void (*run)(void *priv, int64_t woke_late);
	/* queue a frame for @p slot at @p prio (where the discipline has slots); < 0 refused */
	int (*queue)(void *priv, uint32_t slot, uint32_t prio, const uint8_t *frame,
		     uint32_t len);
	/* a received RTmac frame: 1 a tunnel frame for the VNIC, 0 not ours, < 0 malformed */
	int (*rx_rtmac)(void *priv, const uint8_t *frame, uint32_t len, int64_t rx);
	/* the next deadline work outside the schedule must not delay (INT64_MAX: none) */
	int64_t (*hard_deadline)(const void *priv);
	/* whether a frame offered between wake-ups is taken at once (NoMAC's FIFO has room) */
	int (*has_room)(const void *priv);
	int kick_senders;	/* senders kick the RT thread: no slot picks their messages up */
	int paced_rx;		/* received frames may wait for the next scheduled wake-up */
	int rate_generator;	/* the rate generator's frames have a way out (rtn_probe.c) */
};

extern const struct rtn_disc_ops rtn_disc_none_ops, rtn_disc_tdma_ops, rtn_disc_nomac_ops;

/* The TDMA engine's port for station @p s (rtn_station_tdma.c). */
struct rtn_tdma_port rtn_station_tdma_port(struct rtn_station *s);

static inline const struct rtn_disc_ops *disc_ops(const struct rtn_station *s)
{
	return s->ops;
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

/* ---- eventfds and futexes ------------------------------------------------ */

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

/* Hand what the sockets queued to the kernel: one kick per port and wake-up. */
static inline void station_flush(struct rtn_station *s)
{
	rtn_xsk_flush(s->xsk);
	if (s->xsk_b)
		rtn_xsk_flush(s->xsk_b);
	s->unkicked = 0;
}

/* ---- the low layer: sending (rtn_station_tx.c), the mailbox (rtn_station_mbox.c) */

/*
 * Send with stamps in local time (the TDMA engine's port, and NoMAC);
 * @p sched: the local time the frame was scheduled for, 0 unknown;
 * @p deadline: the local time after which it must not be handed over
 * (INT64_MAX: none), -ETIME then
 */
int rtn_station_send(void *arg, uint8_t *frame, uint32_t len, int32_t stamp_off,
		     int64_t stamp_add, int64_t sched, int64_t deadline, int64_t *tx_local);
/* Run @p fn on the RT thread (directly when it is not running) and wait. */
int rtn_station_post(struct rtn_station *s, rtn_cmd_fn fn, uintptr_t arg);
/* RT thread: run the command posted, if any. */
void rtn_station_exec_cmd(struct rtn_station *s);

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
/* after a change of the channels or the discipline: who kicks, who waits for cycles */
void rtn_chans_refresh(struct rtn_station *s);

/* rtn_station_ip.c: IPv4 (the RT thread's side and the control thread's) */
int rtn_ip_create(struct rtn_station *s);
void rtn_ip_destroy(struct rtn_station *s);
/*
 * A received IPv4 frame (RT thread): the channel it goes to, or NULL when it
 * was answered or dropped (counted).  *@p st its stamps, *@p deliver_len
 * how much of it the channel keeps, *@p staged whether its stages count.
 */
struct chan *rtn_ip_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len,
		       int64_t rx_local, int64_t rt_local, struct rtn_app_stamps *st,
		       uint32_t *deliver_len, int *staged);
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

/* rtn_capture.c: mirror a frame into the capture ring (only while s->cap is set) */
void rtn_capture_tx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int32_t stamp_off,
		    uint64_t stamp, int64_t sched_local, int64_t tx_os);
void rtn_capture_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx_os,
		    int xdp_stamp);

#endif
