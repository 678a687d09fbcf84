/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_mods_priv.h
 * @brief What the station's modules offer each other (rtn_station_priv.h
 *        lays out which calls which): the receive dispatch, the channels,
 *        IPv4, FRER and the capture.  Not part of the API.
 */
#ifndef RTN_STATION_MODS_PRIV_H
#define RTN_STATION_MODS_PRIV_H

#include <stdint.h>

struct chan;
struct rtn_app_stamps;
struct rtn_frer_seqgen;
struct rtn_msg;
struct rtn_station;

/* rtn_station_rx.c: take what the sockets hold, both ports merged by arrival */
void rtn_station_receive_all(struct rtn_station *s);
/* at most @p max frames (two ports: of both, in the wires' order) */
void rtn_station_receive(struct rtn_station *s, uint32_t max);
/*
 * The same before a deadline due now: only the frames ahead of the first
 * tunnelled one (a Sync, RT frames; two ports: of either), the VNIC's
 * waiting until after the send
 */
void rtn_station_receive_for_deadline(struct rtn_station *s, uint32_t max);
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
/* when message @p m expires (global time): its scheduled time plus the channel's lifetime;
 * INT64_MAX for a channel without one or a message without a scheduled time */
int64_t rtn_chan_expiry(const struct chan *c, const struct rtn_msg *m);
void rtn_chans_rx(struct rtn_station *s, uint16_t type, const uint8_t *frame, uint32_t len,
		  int64_t rx_local, int64_t rt_local);
void rtn_chans_on_cycle(void *arg, uint32_t cycle_no, int64_t start_local);
void rtn_chans_close_all(struct rtn_station *s);
/* after a change of the channels or the discipline: who kicks, who waits for cycles */
void rtn_chans_refresh(struct rtn_station *s);

/* rtn_station_ip.c: IPv4 (the RT thread's side and the control thread's) */
int rtn_ip_create(struct rtn_station *s);
void rtn_ip_destroy(struct rtn_station *s);
/* for the harnesses (csrc/fuzz/): the counters and the echo identification at zero */
void rtn_ip_reset(struct rtn_station *s);
/*
 * A received IPv4 frame (RT thread): the channels it goes to, in @p to (room
 * for RTN_STATION_MAX_CHANS; several for a broadcast to a shared port), how
 * many; 0 when it was answered, dropped (counted) or kept as a fragment of
 * a datagram not yet whole.  *@p st its stamps, *@p deliver the frame the
 * channels get (@p frame, or the whole datagram its last fragment made, at
 * most RTN_IP_WHOLE_MAX bytes, until the next call) and *@p deliver_len how
 * much of it, *@p staged whether its stages count.  @p looped: one of this
 * station's own datagrams, looped back (a copy); one that finds no socket
 * here is not counted.
 */
uint32_t rtn_ip_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx_local,
		   int64_t rt_local, struct rtn_app_stamps *st, const uint8_t **deliver,
		   uint32_t *deliver_len, int *staged, struct chan **to, int looped);
/* whether the station joined multicast group @p group (host order; RT thread) */
int rtn_ip_group_joined(const struct rtn_station *s, uint32_t group);
int rtn_chan_tx_ok(struct rtn_station *s, struct chan *c, uint8_t *frame, uint32_t len,
		   struct chan_tx_undo *undo);
/* the frame stays in the ring (no room yet): as if rtn_chan_tx_ok() had not looked at it */
void rtn_chan_tx_undo(struct chan *c, uint8_t *frame, const struct chan_tx_undo *undo);
int32_t rtn_chan_tx_off(const struct chan *c, const uint8_t *frame, uint32_t len);
void rtn_chan_stamp_pickup(const struct chan *c, uint8_t *frame, uint32_t len, int64_t t);
/*
 * A UDP socket's frames, and so its fragments, follow its slot's size, as
 * RTnet's follow the slot's MTU (tdma_get_mtu): the limit the library reads
 * from the page at each send, its max_size or the slot's frame if smaller
 * (under TDMA).  On the RT thread, when the channel goes live and as its
 * TX ring is drained, so a slot reconfigured is followed.
 */
void rtn_ip_chan_frame_limit(struct rtn_station *s, struct chan *c);
/* at open and close of a UDP channel: the XDP port map and the channel's page */
int rtn_ip_chan_open(struct rtn_station *s, struct chan *c, uint32_t share);
void rtn_ip_chan_close(struct rtn_station *s, struct chan *c);

/* rtn_station_frer.c */
int rtn_frer_open(struct rtn_station *s);
void rtn_frer_close(struct rtn_station *s);
/* for the harnesses (csrc/fuzz/): no stream, the counters an input can move at zero */
void rtn_frer_reset(struct rtn_station *s);
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
int rtn_frer_rx(struct rtn_station *s, uint32_t port, uint8_t *frame, uint32_t *len, int64_t rx_os);

/* rtn_station_tdma.c, for the harnesses (csrc/fuzz/): the TDMA drain's take */
int rtn_station_take_tdma(struct rtn_station *s, const struct chan *c, const struct rtn_msg *m,
			  uint32_t len, void *engine);

/* rtn_capture.c: mirror a frame into the capture ring (only while s->cap is set) */
void rtn_capture_tx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int32_t stamp_off,
		    uint64_t stamp, int64_t sched_local, int64_t tx_os);
void rtn_capture_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx_os,
		    int xdp_stamp);

#endif
