/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_chan.h
 * @brief Application channels: two single-producer/single-consumer rings in
 *        one shared-memory region (a memfd), between one application and the
 *        station's real-time thread.
 *
 * The application writes messages into the TX ring and reads the RX ring;
 * the RT thread does the opposite.  Neither side makes a system call on the
 * hot path: the RT thread picks up TX messages whenever it runs a slot, and
 * only wakes a reader (futex) that said it is sleeping.  Every message
 * carries its scheduled time and its TX and RX timestamps, in the segment's
 * global time (local time + TDMA clock offset), so end-to-end latency can be
 * measured from either end.
 *
 * On the wire an application message is an Ethernet frame of the channel's
 * EtherType whose payload starts with struct rtn_app_hdr (extended with the
 * sender's stage stamps, rtn_app_hdr.h); the sender's RT thread writes its
 * pick-up stamp into it when it takes the message and tx_ns at the last
 * moment before transmission.
 * The ring operations both sides use are in rtn_chan_inline.h.
 */
#ifndef RTN_CHAN_H
#define RTN_CHAN_H

#include <stdint.h>
#include "rtn_neigh.h"

#define RTN_CHAN_MAGIC 0x52544e43u /* "RTNC" */
#define RTN_CHAN_VERSION \
	5			       /* 2: struct rtn_msg carries the stage stamps;
					 * 3: struct rtn_chan_udp after the rings;
					 * 4: rx_notify and the notify eventfd;
					 * 5: struct rtn_chan_udp's peer, bound and
					 *    sockopts, struct rtn_msg's flags */
#define RTN_CHAN_MSG_MAX   1536	       /* whole Ethernet frame, no FCS */
#define RTN_CHAN_MAX_DEPTH 4096	       /* messages per ring, a power of two */
#define RTN_APP_MAGIC	   0x52544e41u /* "RTNA" on the wire */
#define RTN_APP_HDR_LEN	   24
#define RTN_APP_TX_OFF	   30 /* frame offset of rtn_app_hdr.tx_ns: 14 + 16 */

/* the longest lifetime a channel's messages may be given (rtn_chan_opts.lifetime_ns): 10 s */
#define RTN_CHAN_LIFETIME_MAX_NS 10000000000LL

/**
 * What a channel is opened with: by an application through the station
 * daemon (rtn_app_open()) or by the daemon itself (rtn_station_chan_open()).
 */
struct rtn_chan_opts {
	uint16_t ethertype;
	uint16_t slot;	    /* TDMA slot the channel sends in */
	uint32_t prio;	    /* 0 highest .. 31 */
	uint32_t max_size;  /* largest frame, Ethernet header included */
	uint32_t depth;	    /* messages per ring, power of two */
	uint32_t no_cycles; /* nobody waits on this channel for cycle starts (the
				 * daemon's own services): it does not keep the engine
				 * from starting cycles at their first job */
	uint32_t redundant; /* a station with two ports sends the channel's
				 * EtherType on both (rtn_station_frer.h) */
	/* IPv4/UDP (rtn_ipv4.h): a UDP socket is a channel bound to a port */
	uint16_t udp_port;  /* 0: an EtherType channel; else the EtherType is IPv4 */
	uint16_t udp_flags; /* RTN_UDP_F_* */
	/*
	 * A port several UDP sockets share, as Linux lets them: every socket
	 * on it set RTN_UDP_SHARE_ADDR (SO_REUSEADDR) or every one
	 * RTN_UDP_SHARE_PORT (SO_REUSEPORT), and all have one owner, @p
	 * udp_owner (the daemon gives its client's uid + 1: Linux's rule for
	 * SO_REUSEPORT; 0 shares with none).
	 */
	uint16_t udp_share;
	uint32_t udp_owner;
	/*
	 * How long a message stays worth sending: one not on the wire by its
	 * scheduled time (rtn_msg.sched_ns: the hand-over for one sent "now")
	 * plus this is dropped and counted, where it waits (DDS's LIFESPAN,
	 * the ETF qdisc's deadline mode), so a backlog of stale cyclic data
	 * never delays fresh data.
	 * 0: never (rtn_app_open(): the daemon's [[channel]] setting); at most
	 * RTN_CHAN_LIFETIME_MAX_NS.
	 */
	int64_t lifetime_ns;
};

#define RTN_UDP_F_STAMPED 1 /* datagrams carry the RTNX header (both ends opt in) */
/* a UDP socket's options as the station sees them (rtn_chan_udp.sockopts) */
#define RTN_UDP_SHARE_ADDR 1 /* SO_REUSEADDR */
#define RTN_UDP_SHARE_PORT 2 /* SO_REUSEPORT */
#define RTN_UDP_NO_MC_LOOP 4 /* IP_MULTICAST_LOOP cleared */
#define RTN_UDP_SOCKOPTS   7 /* all of them */
/* a UDP datagram's sender had IP_MULTICAST_LOOP cleared as it sent it (rtn_msg.flags) */
#define RTN_MSG_NO_MC_LOOP 1
/*
 * A received message the next one continues (rtn_msg.flags): a datagram the
 * station put together from its fragments is longer than one message, so it
 * is delivered as a chain, its frame cut into RTN_CHAN_MSG_MAX-byte pieces,
 * every piece but the last flagged, the whole chain published at once
 * (rtn_ring_cons_chain() reads it).
 */
#define RTN_MSG_MORE 2
#define RTN_CHAN_CHAIN_MAX \
	65549 /* a chain's bytes, at most: one IPv4 datagram's frame (14 + 65535) */

/**
 * Defaults: slot 0, priority 15, 1514-byte frames, 256 messages, cycles
 * published; the EtherType is left 0, the caller's to choose.
 */
void rtn_chan_opts_init(struct rtn_chan_opts *o);

/** Header of an application payload on the wire (big-endian). */
struct rtn_app_hdr {
	uint32_t magic;
	uint32_t seq;
	int64_t sched_ns; /* when the sender meant to send (global time) */
	int64_t tx_ns;	  /* written by the sender's RT thread at transmission */
} __attribute__((packed));

/** One message slot of a ring; the stamps of rtn_app_hdr.h, 0 where absent. */
struct rtn_msg {
	uint32_t len; /* frame length */
	uint32_t seq;
	uint32_t flags; /* RTN_MSG_*: a TX message's, as its sender sent it */
	uint32_t reserved;
	int64_t sched_ns;
	int64_t tx_ns;
	int64_t rx_ns;	     /* the receiver's XDP stamp (its RT thread's when there is none) */
	int64_t handover_ns; /* the sending application wrote it into its TX ring */
	int64_t pickup_ns;   /* the sender's RT thread took it at its slot */
	int64_t rx_rt_ns;    /* the receiver's RT thread took it from the socket */
	uint8_t frame[RTN_CHAN_MSG_MAX];
};

struct rtn_ring {
	uint32_t head __attribute__((aligned(64))); /* written by the producer */
	uint32_t tail __attribute__((aligned(64))); /* written by the consumer */
	uint32_t size;				    /* power of two */
	uint32_t waiting;			    /* consumer sleeps on head (futex) */
	uint64_t drops;				    /* producer found the ring full */
};

/** What a UDP channel's sender needs, written by the station; then what its application says. */
struct rtn_chan_udp {
	uint32_t ip;	/* the station's real-time IPv4 address, host order; 0 none */
	uint16_t port;	/* the bound port, 0 for an EtherType channel */
	uint16_t flags; /* RTN_UDP_F_* */
	/*
	 * Written by the application as its socket changes: the peer its
	 * connect() names, (IPv4 address << 16) | port in host order, 0 while
	 * unconnected; the address its bind() named, host order, 0 the
	 * wildcard; RTN_UDP_SHARE_* and RTN_UDP_NO_MC_LOOP (rtn_chan_opts
	 * udp_share at first; the library copies the latter into each datagram
	 * it sends, rtn_msg.flags).  The station reads them to let a socket
	 * share the port and to choose among the sockets on it as Linux's UDP
	 * chooses; whatever they say, it shares and chooses only among its
	 * owner's sockets.
	 */
	uint64_t peer;
	uint32_t bound;
	uint32_t sockopts;
	struct rtn_neigh_table neigh; /* rtn_neigh.h */
};

struct rtn_chan_shm {
	uint32_t magic;
	uint32_t version;
	uint32_t depth; /* messages per ring */
	uint16_t ethertype;
	uint16_t slot;
	uint32_t prio;
	uint32_t max_size; /* largest frame this channel may send */
	uint8_t station_mac[6];
	uint8_t pad[2];
	/* cycle information, for RTMAC_RTIOC_WAITONCYCLE */
	uint32_t cycle_seq __attribute__((aligned(64))); /* futex: +1 per cycle */
	uint32_t cycle_waiting;
	uint32_t cycle_no;
	int64_t cycle_start_global;
	int64_t cycle_ns;
	int64_t clock_offset;
	int64_t cycle_start_os; /* the same instant on the host's CLOCK_MONOTONIC */
	uint32_t alive;		/* cleared by the station when it goes away */
	uint32_t kick_wanted;	/* NoMAC: write the kick eventfd after sending */
	/*
	 * Armed (1) by a reader that wants the channel's notify eventfd written
	 * at the next delivery, so that poll/epoll see the ring as a readable
	 * file; the station disarms it (0) as it writes, once per delivery
	 * batch (rtn_station_chan_notifyfd()).
	 */
	uint32_t rx_notify;
	struct rtn_ring tx;
	struct rtn_ring rx;
	struct rtn_chan_udp udp;
	/* followed by depth TX messages, then depth RX messages */
};

#endif
