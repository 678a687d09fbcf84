/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station.h
 * @brief One station: the AF_XDP socket, the real-time thread, the media
 *        access discipline (TDMA or NoMAC), application channels and the
 *        VNIC, glued together on the RT thread.
 *
 * The RT thread sleeps in poll(2) on the AF_XDP socket, an absolute timerfd
 * armed for the discipline's next deadline, and an eventfd for control.
 * Each wake-up: receive (TDMA frames to the engine, tunnel frames to the
 * VNIC, application EtherTypes to their channels), then run what is due.
 * Frames from applications and the VNIC are moved into the slot queues when
 * the slot that sends them starts, so nothing waits for an extra wake-up.
 *
 * The station's local clock is CLOCK_MONOTONIC plus a simulated offset and
 * drift (lab only), so the synchronisation algorithm meets a known error.
 */
#ifndef RTN_STATION_H
#define RTN_STATION_H

#include <stdint.h>
#include "rtn_capture.h"
#include "rtn_chan.h"
#include "rtn_hist.h"
#include "rtn_rt.h"
#include "rtn_stages.h"
#include "rtn_tdma.h"
#include "rtn_xsk.h"

#define RTN_STATION_MAX_CHANS 16

#define RTN_DISC_NONE  0
#define RTN_DISC_TDMA  1
#define RTN_DISC_NOMAC 2

#define RTN_VNIC_OFF	    0
#define RTN_VNIC_BATCHED    1 /* drained by the RT thread in the NRT slot */
#define RTN_VNIC_PER_PACKET 2 /* a reader thread wakes the RT thread per packet */

/* NoMAC's link model hands frames over this far ahead of their wire time (rtn_station_priv.h) */
#define RTN_NOMAC_PACE_AHEAD_NS	 1000000
#define RTN_NOMAC_PACE_REFILL_NS 500000
/* the most a rate generator's frame may wait for FIFO room behind its schedule (rtn_probe.c) */
#define RTN_RATE_BACKLOG_MAX_NS 1000000000

struct rtn_station_opts {
	struct rtn_xsk_opts xsk;
	struct rtn_rt_opts rt;
	uint8_t mac[6];
	uint8_t pad[2];
	int64_t clock_offset_ns; /* simulated clock error (lab) */
	double drift_ppm;
	uint32_t link_rate_mbps; /* NoMAC pacing (TDMA has its own in its config) */
	/*
	 * Non-zero: the RT thread wakes a learnt margin before each deadline of
	 * its discipline and spins to it (rtn_station.c, WAKE_EARLY_*): slots go
	 * out on time for some CPU spent spinning.
	 */
	uint32_t wake_early;
	/*
	 * A second port for IEEE 802.1CB redundancy (rtn_station_frer.h): its
	 * device in xsk_b.ifname (NULL: one port), the rest as for xsk; the
	 * recovery's history length and reset timeout (rtn_frer_rcvy_init()).
	 */
	struct rtn_xsk_opts xsk_b;
	uint32_t frer_history;
	uint32_t frer_reset_ms;
};

struct rtn_chan_stats {
	int32_t id;
	uint16_t ethertype;
	uint16_t slot;
	uint64_t tx_msgs;
	uint64_t tx_drops; /* refused by the discipline (too big, queue full) */
	/* past their lifetime (rtn_chan_opts.lifetime_ns) when the RT thread came
	 * to them; those that expire later in a TDMA slot's queue count in the
	 * slot's `expired` (rtn_tdma_slot_stats), which knows no channels */
	uint64_t tx_expired;
	int64_t lifetime_ns; /* what the channel was opened with (0: none) */
	uint64_t rx_msgs;
	uint64_t rx_drops;    /* the application did not read in time */
	uint64_t ring_errors; /* the application wrote impossible ring indexes */
	uint64_t rx_bad_hdr;  /* received application headers that lied (dropped) */
	uint64_t rx_notifies; /* writes of the notify eventfd (rtn_station_chan_notifyfd) */
};

struct rtn_vnic_stats {
	int32_t mode;
	uint64_t tap_rx; /* wire frames (segments) from TAP reads (Linux -> wire) */
	uint64_t tap_rx_bytes;
	uint64_t tap_tx; /* wire frames (segments) in TAP writes (wire -> Linux) */
	uint64_t tap_tx_bytes;
	uint64_t tx_dropped;   /* too big for the slot, or queue full */
	uint64_t rx_dropped;   /* ring to the TAP writer full, or malformed */
	uint64_t rx_bad;       /* malformed tunnel frames */
	uint64_t tap_errors;   /* read/write errors (e.g. TAP deleted) */
	uint64_t wakeups;      /* RT thread wake-ups caused by the VNIC (the pump's signals) */
	uint64_t tap_reads;    /* read() calls that returned a packet */
	uint64_t tap_writes;   /* write() calls that took a packet */
	uint64_t tx_bad;       /* malformed packets from the TAP (vnet header) */
	uint64_t pump_wakeups; /* the pump thread's wake-ups */
	uint64_t pump_kicks;   /* ... of them the RT thread's doing */
	uint64_t ring_full;    /* the pump found the ring to the wire full (Linux waits) */
	uint64_t queue_drops;  /* TAP packets dropped: the ring's oldest frame waited too long */
	uint64_t pump_yields;  /* TAP writes the pump held back for an RT thread's wake-up */
	/* bytes copied on the way, the kernel's TAP copies and the RT thread's included */
	uint64_t tx_copy_bytes; /* Linux -> wire: TAP read, GSO cut, queue, UMEM */
	uint64_t rx_copy_bytes; /* wire -> Linux: TAP write (and out of UMEM past the lending) */
};

struct rtn_station_stats {
	int32_t discipline;
	int32_t running;
	uint64_t loops; /* RT thread wake-ups, any cause */
	uint64_t timer_wakeups;
	uint64_t spin_waits;  /* short waits spun instead of slept */
	uint64_t early_wakes; /* wake_early: timer wake-ups that came before their deadline */
	uint64_t rx_early;    /* wake_early: frames taken in the margin before a deadline */
	/* deadlines at which tunnelled frames in the ring were left until after the send */
	uint64_t rx_tunnel_after_send;
	int64_t wake_early_ns; /* wake_early: the margin in force (0: off) */
	uint64_t rx_wakeups;   /* wake-ups by a received frame (batched VNIC: <= 1 a cycle) */
	uint64_t rx_polls;     /* timer wake-ups that looked at the sockets in a flood */
	/*
	 * Slot occurrences the engine counted as missed, by cause: the timer
	 * wake-up that should have served them came later than the slot's
	 * guard (the thread could not run: a stall, or something of higher
	 * priority), or anything else (the thread was busy, or woke for
	 * another reason).  The VNIC is no cause: its pump does the TAP work
	 * on a thread of its own.
	 */
	uint64_t miss_late_wake;
	uint64_t miss_other;
	uint64_t rx_frames;
	uint64_t rx_other; /* frames of no known EtherType */
	uint64_t nomac_tx;
	uint64_t nomac_drops;
	/* the rate generator's run: its latest hand-over to the FIFO behind schedule */
	int64_t generator_lag_max_ns;
	uint64_t capture_frames; /* frames mirrored into the capture ring */
	uint64_t capture_drops;	 /* frames the capture ring had no room for */
	int64_t clock_offset_ns;
	double drift_ppm;
	struct rtn_vnic_stats vnic;
};

struct rtn_station;

/** Open the AF_XDP socket (in the calling thread's network namespace). */
int rtn_station_open(const struct rtn_station_opts *o, struct rtn_station **out);
/** Stop the RT thread if running, release everything.  Accepts NULL. */
void rtn_station_close(struct rtn_station *s);

/** Start the RT thread (the discipline may be attached before or after). */
int rtn_station_start(struct rtn_station *s);
int rtn_station_running(const struct rtn_station *s);

/** Attach TDMA with @p cfg, replacing any discipline (the running engine restarts). */
int rtn_station_attach_tdma(struct rtn_station *s, const struct rtn_tdma_cfg *cfg);
/** Change slots of the attached TDMA without a restart (next cycle start). */
int rtn_station_tdma_update(struct rtn_station *s, const struct rtn_tdma_cfg *cfg);
int rtn_station_attach_nomac(struct rtn_station *s);
int rtn_station_detach(struct rtn_station *s);

/*
 * Slot occurrences the TDMA engine found missed at one wake-up of the RT
 * thread, with when: a benchmark tells the misses a stall of the (virtual)
 * CPU explains from the rest by comparing these times with the stall
 * detector's records (rtnet/stall.py).
 */
#define RTN_MISS_RECS 1024 /* the newest kept */
struct rtn_miss_rec {
	uint64_t no;	      /* record number + 1, 0 while being written */
	int64_t at_ns;	      /* CLOCK_MONOTONIC: when the engine ran and found them */
	int64_t woke_late_ns; /* how late that wake-up was */
	uint32_t slots;	      /* occurrences missed, every slot */
	uint32_t slot0;	      /* of them, slot 0's (RTnet's real-time slot) */
};

/**
 * Copy the miss records numbered @p first onwards (0: the oldest still
 * kept) into @p out, at most @p n; overwritten ones are skipped.
 * @return the number copied; *next: the number to pass next time.
 */
uint32_t rtn_station_misses(const struct rtn_station *s, uint64_t first, struct rtn_miss_rec *out,
			    uint32_t n, uint64_t *next);

/*
 * The lateness of every slot 0 occurrence that sent (the RT slot the
 * slot0_lateness histogram counts), with when: the same comparison with
 * the stall detector's records, sample by sample.
 */
#define RTN_LATE_RECS 8192 /* the newest kept: 8 s of a 1 ms cycle */
struct rtn_late_rec {
	uint64_t no;	 /* record number + 1, 0 while being written */
	int64_t at_ns;	 /* CLOCK_MONOTONIC: the engine's run that sent it */
	int64_t late_ns; /* its first frame's hand-over minus the slot's start */
};

/** As rtn_station_misses(), for the slot 0 lateness records. */
uint32_t rtn_station_slot0_lateness(const struct rtn_station *s, uint64_t first,
				    struct rtn_late_rec *out, uint32_t n, uint64_t *next);

/** Counters of the attached TDMA engine (zeroed struct if none). */
int rtn_station_tdma_stats(const struct rtn_station *s, struct rtn_tdma_stats *out);
void rtn_station_stats(const struct rtn_station *s, struct rtn_station_stats *out);
void rtn_station_rt_stats(const struct rtn_station *s, struct rtn_rt_stats *out);
/** Lateness of the RT thread's timer wake-ups (live; snapshot with rtn_hist_read). */
const struct rtn_hist *rtn_station_wake_hist(const struct rtn_station *s);
int rtn_station_xsk_stats(const struct rtn_station *s, struct rtn_xsk_stats *out);
const char *rtn_station_xdp_fallback(const struct rtn_station *s);
int rtn_station_xdp_mode(const struct rtn_station *s);

/**
 * Open an application channel.  Returns the channel id and a memfd holding
 * its rings (struct rtn_chan_shm) in *memfd and an eventfd the sender may
 * write to wake a NoMAC station in *kickfd; both belong to the caller.
 */
int rtn_station_chan_open(struct rtn_station *s, const struct rtn_chan_opts *o, int *memfd,
			  int *kickfd);
/**
 * A new descriptor of channel @p id's notify eventfd (the caller's): the
 * station writes it at a delivery to the RX ring that finds the ring's
 * reader armed (shm->rx_notify), so a reader can wait for the ring in
 * poll/epoll with other files.  -ENOENT for no such channel.
 */
int rtn_station_chan_notifyfd(struct rtn_station *s, int id);
/** Close channel @p id: the RT thread lets go of it before this returns. */
int rtn_station_chan_close(struct rtn_station *s, int id);
int rtn_station_chan_stats(const struct rtn_station *s, int id, struct rtn_chan_stats *out);

/**
 * Attach the VNIC's TAP file descriptor (non-blocking, IFF_NO_PI) in
 * @p mode, sending in TDMA slot @p slot (RTnet: 1, falling back to 0).
 * The station duplicates @p tap_fd.  A TAP opened with IFF_VNET_HDR (seen
 * with TUNGETIFF) is read as TCP super-packets, cut into wire frames here,
 * and written with received TCP segments merged (rtn_vnic_gso.h).
 */
int rtn_station_vnic_attach(struct rtn_station *s, int tap_fd, int mode, uint32_t slot);
int rtn_station_vnic_detach(struct rtn_station *s);

/**
 * Capture inside the stack (rtn_capture.h): from now on the RT thread
 * mirrors each frame it sends or receives into a ring of @p depth entries
 * keeping @p snaplen bytes each.  One capture at a time (-EBUSY).
 */
int rtn_station_capture_start(struct rtn_station *s, uint32_t snaplen, uint32_t depth);
/** Switch it off; the ring is freed once the RT thread has let go of it. */
int rtn_station_capture_stop(struct rtn_station *s);
/** Move up to @p max of the oldest records into @p out: how many, or -ENOENT when off. */
int rtn_station_capture_read(struct rtn_station *s, struct rtn_cap_rec *out, uint32_t max);

/** Local (simulated) clock of the station, and the conversion from OS time. */
int64_t rtn_station_local_now(const struct rtn_station *s);

/**
 * Benchmark traffic: the RT thread queues one @p len byte broadcast frame of
 * @p ethertype (with an application header) for every occurrence of slot
 * @p slot_id.  A negative @p slot_id stops it.
 */
int rtn_station_set_probe(struct rtn_station *s, int slot_id, uint16_t ethertype, uint32_t len);
uint64_t rtn_station_probe_sent(const struct rtn_station *s);

/**
 * RFC 2544 trials under NoMAC: the RT thread generates @p count frames of
 * @p len bytes at @p rate_pps (application header, transmit stamp); 0 stops.
 * A frame due that finds the FIFO full waits for room up to @p backlog_ns
 * behind its schedule (0..RTN_RATE_BACKLOG_MAX_NS; 0: dropped at once).
 * The frames go to @p dst (6 bytes: a tester's unicast, as RFC 2544 sends),
 * or to broadcast when it is NULL.
 */
int rtn_station_set_rate_probe(struct rtn_station *s, uint16_t ethertype, uint32_t len,
			       uint64_t rate_pps, uint64_t count, int64_t backlog_ns,
			       const uint8_t *dst);
/** Count probe frames of @p ethertype received, with their one-way latency. */
void rtn_station_set_probe_rx(struct rtn_station *s, uint16_t ethertype);
void rtn_station_probe_rx(const struct rtn_station *s, uint64_t *frames, uint64_t *bytes,
			  uint64_t *generator_left);
const struct rtn_hist *rtn_station_probe_latency(const struct rtn_station *s);

/**
 * Stage statistics of the application messages this station received
 * (scheduled through the RT thread's stamp; the take is the receiving
 * application's, rtn_app_stages()).  0 keeps a threshold.
 */
int rtn_station_set_stages(struct rtn_station *s, int64_t outlier_ns, int64_t deadline_ns);
const struct rtn_stages *rtn_station_stages(const struct rtn_station *s);

#endif
