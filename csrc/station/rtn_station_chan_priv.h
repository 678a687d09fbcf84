/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_chan_priv.h
 * @brief One application channel as the station keeps it
 *        (rtn_station_chan.c): its shared memory, its limits and counters.
 *        Not part of the API.
 */
#ifndef RTN_STATION_CHAN_PRIV_H
#define RTN_STATION_CHAN_PRIV_H

#include <stdint.h>
#include "rtn_chan.h"

/*
 * A UDP socket's datagram leaving in fragments (rtn_station_ip.c): the next
 * fragment's offset (0: none under way), the identification its application
 * gave it and the one the station gives it on the wire.  A value, so that
 * the drain can put it back when a fragment waits in the ring for room.
 */
struct chan_frag {
	uint32_t next;
	uint16_t app_id, id;
};

/*
 * What rtn_chan_tx_ok() changed for a frame: the channel's fragment state
 * before, and the IPv4 identification and checksum it rewrote (rewrote
 * set), put back by rtn_chan_tx_undo() when the frame stays in the ring.
 */
struct chan_tx_undo {
	struct chan_frag frag;
	uint8_t id[2], csum[2];
	int rewrote;
};

struct chan {
	struct rtn_chan_shm *shm;
	uint64_t size;
	uint32_t depth;	      /* messages per ring: ours, never read back from shm */
	int cycles;	      /* someone may wait on it for cycle starts */
	uint64_t ring_errors; /* the application broke its ring's indexes */
	uint64_t rx_bad_hdr;  /* received application headers that lied about their length */
	uint16_t ethertype, slot;
	uint32_t prio, max_size;
	uint64_t tx_msgs, tx_drops, rx_msgs, rx_drops;
	int64_t lifetime_ns; /* rtn_chan_opts.lifetime_ns: 0, messages never expire */
	uint64_t tx_expired; /* messages past their lifetime when the RT thread came to them */
	uint32_t redundant;  /* its EtherType goes out on both ports */
	uint16_t udp_port, udp_flags; /* a UDP socket's (rtn_station_ip.c); 0: not one */
	uint32_t udp_owner;	      /* whose sockets may share the port (rtn_chan.h) */
	uint64_t opened;	      /* the station's count of opens: the newer socket wins */
	int notify_fd;	       /* eventfd written when a delivery finds shm->rx_notify armed */
	uint64_t rx_notifies;  /* writes to it */
	struct chan_frag frag; /* a UDP socket's datagram leaving in fragments */
};

#endif
