/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_app.h
 * @brief Application API: send and receive real-time messages through a
 *        station's channel and wait for TDMA cycles, without a system call
 *        on the hot path.
 *
 * A channel is a shared-memory region (struct rtn_chan_shm, rtn_chan.h)
 * that the station daemon hands out over its control socket.  Sending
 * writes the whole Ethernet frame straight into a TX ring slot; the
 * station's real-time thread takes it into the channel's TDMA slot.
 * Receiving reads the RX ring and sleeps on a futex only when it is empty.
 * Waiting for a cycle is RTnet's RTMAC_RTIOC_WAITONCYCLE_EX on a futex the
 * station bumps at every cycle start.
 *
 * All functions return 0 (or a count) or a negative errno with a one-line
 * cause in rtn_last_error().  A channel is used by one sending thread and
 * one receiving thread at a time (the rings are single-producer,
 * single-consumer); waiting for cycles may happen on any number of threads.
 *
 * C applications include rtnet_app.h and link librtnet_app.a
 * (make -C csrc app).
 */
#ifndef RTN_APP_H
#define RTN_APP_H

#include <stdint.h>
#include "rtn_chan.h"
#include "rtn_ipv4.h"
#include "rtn_stages.h"

#define RTN_APP_ETH_HLEN  14
#define RTN_APP_OVERHEAD  58 /* Ethernet header + extended application header (rtn_app_hdr.h) */
#define RTN_APP_SCHED_NOW 0  /* sched_ns: "now", in global time */

struct rtn_app_chan;

/** What came with a received message; times in global time (ns). */
struct rtn_app_msg_info {
	uint8_t dst[6]; /* this station, or a broadcast or multicast address */
	uint8_t src[6];
	uint16_t ethertype;
	uint32_t seq;
	uint32_t len;	  /* payload length (may exceed what was copied) */
	int64_t sched_ns; /* when the sender meant to send */
	int64_t tx_ns;	  /* when the sender's station transmitted */
	int64_t rx_ns;	  /* when this station received (its XDP stamp) */
	/* the other stage stamps (rtn_app_hdr.h), 0 where the sender did not stamp */
	int64_t handover_ns; /* the sending application handed it over */
	int64_t pickup_ns;   /* the sender's RT thread took it at its slot */
	int64_t rx_rt_ns;    /* this station's RT thread took it from the socket */
	int64_t take_ns;     /* this application took it from the ring */
};

/** One TDMA cycle, as RTnet's struct rtmac_waitinfo (RTMAC_RTIOC_WAITONCYCLE_EX). */
struct rtn_app_waitinfo {
	uint32_t cycle_no;
	int64_t cycle_start;	/* global time */
	int64_t cycle_start_os; /* the same instant on this host's CLOCK_MONOTONIC */
	int64_t clock_offset;	/* global - local time of the station */
	int64_t cycle_ns;
};

struct rtn_app_stats {
	int32_t channel; /* id at the station, -1 if attached without one */
	uint16_t ethertype;
	uint16_t slot;
	uint32_t depth;
	uint32_t max_size;
	uint8_t station_mac[6];
	uint8_t pad[2];
	int32_t alive;
	uint64_t tx_sent; /* committed to the TX ring */
	uint64_t tx_full; /* refused: TX ring full (-ENOBUFS) */
	uint64_t kicks;	  /* NoMAC wake-ups of the station */
	uint64_t rx_received;
	uint64_t rx_drops;	 /* the station found the RX ring full */
	uint32_t tx_queued;	 /* in the TX ring now */
	uint32_t rx_queued;	 /* in the RX ring now */
	uint32_t rx_waiting;	 /* receivers asleep on the RX ring */
	uint32_t cycle_waiting;	 /* threads asleep waiting for a cycle */
	uint64_t rx_bad_hdr;	 /* received headers that lied about their length */
	uint16_t udp_port;	 /* a UDP socket's port, 0 for an EtherType channel */
	uint16_t udp_flags;	 /* RTN_UDP_F_* */
	uint64_t tx_unreachable; /* sendto() refused: no neighbour entry (-EHOSTUNREACH) */
};

/** Who sent a received UDP datagram (host order). */
struct rtn_app_udp_info {
	uint32_t src_ip;
	uint16_t src_port;
	uint16_t dst_port;
	uint32_t dst_ip; /* this station, or the broadcast */
};

/** A received message reduced to its timestamps, for latency analysis. */
struct rtn_app_sample {
	uint32_t seq;
	uint32_t len;
	int64_t sched_ns;
	int64_t tx_ns;
	int64_t rx_ns;	/* the station received the frame */
	int64_t app_ns; /* the application took it from the ring (global time) */
	int64_t handover_ns;
	int64_t pickup_ns;
	int64_t rx_rt_ns;
};

/**
 * Ask the station daemon on @p dev for a channel over its control socket
 * ($RTNET_RUN_DIR or /run/rtnet, then @p netns or the caller's namespace
 * name, then "<dev>.ctl").  The connection stays open for the channel's
 * life: the daemon reclaims the channel when it closes.  @p o comes from
 * rtn_chan_opts_init(); no_cycles is for the daemon's own channels (-EINVAL).
 */
int rtn_app_open(const char *dev, const char *netns, const struct rtn_chan_opts *o,
		 struct rtn_app_chan **out);

/**
 * UDP sockets (RFC 768 over IPv4, rtn_ipv4.h).  A UDP socket is a channel
 * opened with o->udp_port set (the port it is bound to; o->ethertype is
 * then RTN_ETH_P_IPV4 and may be left 0) and optionally
 * o->udp_flags = RTN_UDP_F_STAMPED: its datagrams start with the RTNX
 * header of rtn_app_hdr.h, so the sender's stage stamps travel with them,
 * and a datagram received with one gives them in the message info.  Both
 * ends must be stamped sockets: to a plain UDP peer the header is data.
 * On the wire an unstamped socket's payload is the application's data only.
 *
 * rtn_app_sendto() builds Ethernet, IPv4 and UDP headers and both checksums
 * in the TX ring slot; the destination MAC comes from the station's
 * neighbour table (rtroute) in the channel's page, without a system call.
 * A datagram larger than one frame (the channel's max_size, or its TDMA
 * slot's size if smaller) leaves in IPv4 fragments, as RTnet's stack sends
 * it, committed at once; rtn_app_recvfrom() takes one put together again
 * whole (the station's collectors, rtn_ip_defrag.h).
 * @return 0 and the sequence number in *seq_out (may be NULL);
 *         -EHOSTUNREACH without a neighbour entry for @p dst_ip (counted),
 *         -EMSGSIZE beyond IPv4's 65,507 bytes or for more fragments than
 *         the TX ring holds, -EINVAL on a channel that is not a UDP socket
 *         or for port 0, -ENOBUFS (fewer free TX ring slots than it
 *         takes), -ENOTCONN.
 */
int rtn_app_sendto(struct rtn_app_chan *ch, uint32_t dst_ip, uint16_t dst_port, const void *payload,
		   uint32_t len, int64_t sched_ns, uint32_t *seq_out);

/**
 * What the station gives a UDP socket, as Linux's UDP gives it (the
 * station's rtn_chan_udp; each -EINVAL on a channel that is not a UDP
 * socket):
 * - rtn_app_udp_connect(): connected to @p ip:@p port (connect(2)), or no
 *   longer (@p ip 0): that peer's datagrams before the port's other
 *   sockets', and no other peer's.  What it sends is unchanged.  -EINVAL
 *   for port 0 with an address.
 * - rtn_app_udp_bound(): bound to @p ip (bind(2); 0 the wildcard): only
 *   datagrams to that address (bound to the station's, no broadcast).
 * - rtn_app_udp_sockopts(): RTN_UDP_SHARE_ADDR and RTN_UDP_SHARE_PORT
 *   (SO_REUSEADDR, SO_REUSEPORT: later sockets of the same user may share
 *   the port; rtn_chan_opts udp_share was the first word) and
 *   RTN_UDP_NO_MC_LOOP (IP_MULTICAST_LOOP cleared: its datagrams to a group
 *   do not come back to this station's sockets).  -EINVAL for other bits.
 */
int rtn_app_udp_connect(struct rtn_app_chan *ch, uint32_t ip, uint16_t port);
int rtn_app_udp_bound(struct rtn_app_chan *ch, uint32_t ip);
int rtn_app_udp_sockopts(struct rtn_app_chan *ch, uint32_t bits);

/**
 * rtn_app_recv() on a UDP socket, with the datagram's sender in *@p from
 * (may be NULL).  The stamps in *@p info: rx_ns, rx_rt_ns and take_ns
 * always, the sender's (sched, hand-over, pick-up, tx) from a stamped one.
 */
int rtn_app_recvfrom(struct rtn_app_chan *ch, void *buf, uint32_t cap,
		     struct rtn_app_msg_info *info, struct rtn_app_udp_info *from,
		     int64_t timeout_ns);

/**
 * Use a channel whose file descriptors the caller obtained itself.  On
 * success the channel owns @p memfd and @p kickfd (closed by rtn_app_close);
 * on failure they stay the caller's.
 */
int rtn_app_attach(int memfd, int kickfd, struct rtn_app_chan **out);

/**
 * Give the channel the station's notify eventfd for it (the third
 * descriptor of the daemon's reply); the channel owns it from then on.
 * rtn_app_open() does this itself.  -EINVAL for a negative fd.
 */
int rtn_app_set_notifyfd(struct rtn_app_chan *ch, int notifyfd);

/**
 * A descriptor to wait on in poll/select/epoll with other files: readable
 * while a message may be waiting, once rtn_app_rx_arm() said 0.  -1 when
 * the channel has none (attached without it).
 */
int rtn_app_fd(const struct rtn_app_chan *ch);

/**
 * Get ready to wait on rtn_app_fd(): 1 if a message is waiting (the fd is
 * made readable for it), 0 when the ring is empty and the station will
 * write the fd at its next delivery (one write per arming, so a reader is
 * woken once per delivery batch), -ENOTCONN once the station went away.
 * Clears a stale readiness left from messages already taken.  No system
 * call while messages wait but the clear and, rarely, the re-signal.
 */
int rtn_app_rx_arm(struct rtn_app_chan *ch);

/**
 * Join (@p on) or leave IPv4 multicast @p group (host order) for this UDP
 * socket, over the channel's control connection (IP_ADD_MEMBERSHIP): the
 * station then takes the group's datagrams to the socket's port.  Left
 * when the channel closes.  -EADDRNOTAVAIL for no multicast address or a
 * group not joined, -EADDRINUSE joined already, -ENOBUFS the station's
 * groups all taken, -ENOTCONN without a control connection.
 */
int rtn_app_ipv4_group(struct rtn_app_chan *ch, uint32_t group, int on);

/** The descriptor of the control connection (its hang-up means the daemon is gone), or -1. */
int rtn_app_ctlfd(const struct rtn_app_chan *ch);

/** Unmap and close everything (the control connection too).  Accepts NULL. */
void rtn_app_close(struct rtn_app_chan *ch);

/**
 * Queue one message for @p dst: the frame is built in the TX ring slot.
 * @param sched_ns  when the message was meant to go (global time),
 *                  RTN_APP_SCHED_NOW for the current time.
 * @return 0 and the message's sequence number in *seq_out (may be NULL);
 *         -ENOBUFS if the TX ring is full (counted), -EMSGSIZE, -ENOTCONN.
 */
int rtn_app_send(struct rtn_app_chan *ch, const uint8_t dst[6], const void *payload, uint32_t len,
		 int64_t sched_ns, uint32_t *seq_out);

/**
 * Queue a whole Ethernet frame @p frame of @p len bytes, as the caller built
 * it (no application header, so the station stamps nothing into it).  Its
 * source MAC is the caller's to set.
 * @return 0; -EINVAL if it is shorter than an Ethernet header, longer than
 *         the channel's max_size, of another EtherType than the channel's or
 *         starts like an application header (the station would stamp it);
 *         -ENOBUFS if the TX ring is full (counted), -ENOTCONN.
 */
int rtn_app_send_raw(struct rtn_app_chan *ch, const void *frame, uint32_t len);

/** Where in the TX ring the next message will go, for rtn_app_tx_pickup(). */
uint32_t rtn_app_tx_next(const struct rtn_app_chan *ch);

/**
 * The station's pick-up stamp of the message sent at TX ring position
 * @p pos (rtn_app_tx_next() before sending it), global time: the station's
 * RT thread writes it into the frame when it takes the message for its slot.
 * @return 1 and *pickup_ns; 0 while the station has not taken it; -1 when
 *         it cannot be told: never sent, its ring slot reused since, or no
 *         stamp (a raw frame, or a ring the station found broken).
 */
int rtn_app_tx_pickup(const struct rtn_app_chan *ch, uint32_t pos, int64_t *pickup_ns);

/**
 * Answer a received message: send @p payload to its sender carrying its
 * sequence number, so that the sender can pair the answer with its request
 * (as an ICMP echo reply does).  The channel's own numbering does not
 * advance.  Returns what rtn_app_send() returns.
 */
int rtn_app_reply(struct rtn_app_chan *ch, const struct rtn_app_msg_info *to, const void *payload,
		  uint32_t len);

/**
 * Receive one message: copies up to @p cap payload bytes into @p buf.
 * @param timeout_ns  0: do not wait; < 0: wait forever.
 * A frame without an application header (rtn_app_send_raw()) gives the
 * bytes after its Ethernet header, with seq and the sender's stamps 0.
 * @return bytes copied (info->len has the full length), -EAGAIN if nothing
 *         arrived in time, -ENOTCONN once the station went away.
 */
int rtn_app_recv(struct rtn_app_chan *ch, void *buf, uint32_t cap, struct rtn_app_msg_info *info,
		 int64_t timeout_ns);

/**
 * Wait for the next TDMA cycle to start (RTMAC_RTIOC_WAITONCYCLE_EX).
 * @return 0 and *wi, -ETIMEDOUT, or -ENOTCONN.
 */
int rtn_app_wait_cycle(struct rtn_app_chan *ch, struct rtn_app_waitinfo *wi, int64_t timeout_ns);

/** The most recently started cycle without waiting; -EAGAIN before the first one. */
int rtn_app_cycle_info(struct rtn_app_chan *ch, struct rtn_app_waitinfo *wi);

/** Global time now: CLOCK_MONOTONIC shifted by the last published cycle's offset. */
int64_t rtn_app_global_now(struct rtn_app_chan *ch);

void rtn_app_stats(const struct rtn_app_chan *ch, struct rtn_app_stats *out);

/**
 * Receive up to @p n messages into @p out, in arrival order, for latency
 * analysis; stops early when nothing arrives for @p idle_timeout_ns.
 * @return the number of samples stored, or -ENOTCONN with none.
 */
int rtn_app_subscribe(struct rtn_app_chan *ch, struct rtn_app_sample *out, uint32_t n,
		      int64_t idle_timeout_ns);

/**
 * Stage statistics of the messages received on this channel, every stamp
 * through the take (rtn_stages.h); the channel's receiving thread writes
 * them, any thread may read them.  0 keeps a threshold; -EINVAL if negative.
 */
int rtn_app_set_stages(struct rtn_app_chan *ch, int64_t outlier_ns, int64_t deadline_ns);
const struct rtn_stages *rtn_app_stages(const struct rtn_app_chan *ch);

#endif
