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
 *          rtn_vnic_*.c, rtn_probe.c, rtn_station_ip.c, rtn_capture.c
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
#include "rtn_lead.h"
#include "rtn_stages.h"
#include "rtn_station.h"
#include "rtn_station_frer.h"
#include "rtn_station_ip.h"
#include "rtn_tdma_proto_inline.h"
#include "rtn_time_inline.h"

#define RX_BATCH 64

struct rtn_vnic;
struct rtn_nomac;
struct rtn_probe;
struct station_frer;
struct station_ipv4;

#define STAMP_OFF_OF_FRAME (-2) /* frame_slot.stamp_off: rtn_app_hdr_tx_off() decides */

/* A frame held for the wire: NoMAC's FIFO, the VNIC's rings. */
struct frame_slot {
	uint32_t len;
	int32_t stamp_off; /* NoMAC FIFO: where the TX stamp goes (-1 none) */
	uint8_t data[RTN_TDMA_FRAME_MAX];
};

/* Where a producer puts frames (NoMAC's FIFO): the next free one, NULL when full. */
struct frame_sink {
	struct frame_slot *(*slot)(void *q);
	void (*commit)(void *q);
	void *q;
};

#include "rtn_station_chan_priv.h"

typedef void (*rtn_cmd_fn)(struct rtn_station *s, uintptr_t arg);

struct rtn_station {
	struct rtn_station_opts o;
	int rx_woke;		/* a received frame woke the thread since the last timer wake-up */
	int64_t tunnel_rx_at;	/* OS time a tunnel frame for the VNIC last arrived */
	uint32_t tunnel_rx_n;	/* tunnel frames since the last timer wake-up */
	uint32_t tunnel_rx_avg; /* their running average per timer wake-up, x16 */
	int rx_light;		/* few enough for an RX wake-up to pay */
	int64_t rx_poll_at; /* OS time: a flood, the sockets are looked at on the timer (0: off) */
	int64_t rx_seen_at; /* OS time of the last round that took frames (rtn_station_rx_poll_next) */
	int app_chans;	    /* application channels open (not the daemon's own): what
				 * arrives for them wakes the thread (rtn_station_rx_wakes) */
	struct rtn_xsk *xsk;
	struct rtn_xsk *xsk_b; /* port 1's socket, NULL with one port */
	uint32_t unkicked;     /* frames (pairs) sent since the last kicks of the two rings */
	uint32_t skew_max;     /* .. at most this many: half the FRER history (rtn_station_send) */
	struct station_frer *frer; /* 802.1CB over the two ports */
	struct rtn_rt *rt;
	int efd;       /* wakes the RT thread: mailbox, NoMAC kicks, VNIC */
	int tfd;       /* absolute timer for the discipline's next deadline */
	int wake_slot; /* where the RT thread posts that deadline (rtn_wakeboard.h), or -1 */
	int done_fd;   /* RT thread -> control: mailbox command done */
	int64_t t0;    /* OS time the clock model starts from */
	pthread_mutex_t ctl_lock;

	/* mailbox: a function the RT thread runs (NULL: none) */
	rtn_cmd_fn cmd;
	uintptr_t cmd_arg;
	int cmd_rc;

	/* discipline: owned by the RT thread while it runs (rtn_station.c attaches it) */
	const struct rtn_disc_ops *ops;
	void *disc_priv;
	struct rtn_tdma *tdma;	      /* the TDMA engine, for its clock offset too */
	struct rtn_tdma_cfg tdma_cfg; /* for (re)starts on the RT thread */
	struct rtn_nomac *nomac;

	struct station_ipv4 *ip;
	struct rtn_probe *probe;

	struct chan chans[RTN_STATION_MAX_CHANS];
	struct chan *live[RTN_STATION_MAX_CHANS]; /* as seen by the RT thread */
	uint64_t chans_opened;			  /* under ctl_lock: chan.opened's count */

	struct rtn_vnic *vnic;	   /* the RT thread's view: NULL while none is live */
	struct rtn_vnic *vnic_ctl; /* the control thread's: attached or not */

	/* capture ring: set by a mailbox command (the RT thread's view), NULL when off */
	struct rtn_capture *cap;

	struct rtn_station_stats st;
	uint64_t misses; /* miss records written (TDMA; the RT thread's) */
	struct rtn_miss_rec miss[RTN_MISS_RECS];
	uint64_t lates; /* slot 0 lateness records written (the RT thread's) */
	struct rtn_late_rec late[RTN_LATE_RECS];
	struct rtn_hist wake;	  /* timer wake-up lateness on the RT thread */
	struct rtn_lead early;	  /* wake_early: how early it wakes (the RT thread's) */
	struct rtn_stages stages; /* received application messages, stage by stage */
};

#include "rtn_station_disc_priv.h"
#include "rtn_station_inline_priv.h"
#include "rtn_station_mods_priv.h"

/* ---- the low layer: sending (rtn_station_tx.c), the mailbox (rtn_station_mbox.c) */

/*
 * Send with stamps in local time (the TDMA engine's port, and NoMAC);
 * @p sched: the local time the frame was scheduled for, 0 unknown;
 * @p deadline: the local time after which it must not be handed over
 * (INT64_MAX: none), -ETIME then
 */
int rtn_station_send(void *arg, uint8_t *frame, uint32_t len, int32_t stamp_off, int64_t stamp_add,
		     int64_t sched, int64_t deadline, int64_t *tx_local);
/* Run @p fn on the RT thread (directly when it is not running) and wait. */
int rtn_station_post(struct rtn_station *s, rtn_cmd_fn fn, uintptr_t arg);
/* RT thread: run the command posted, if any. */
void rtn_station_exec_cmd(struct rtn_station *s);

#endif
