/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_station_frer.h
 * @brief A station with two ports: IEEE 802.1CB frame replication and
 *        elimination (rtn_frer.h) over two wires, one RT thread for both.
 *
 * A station opened with a second device (rtn_station_opts.xsk_b.ifname) has
 * a second AF_XDP socket, with its own UMEM and our XDP program, on it.
 * Port 0 is the first device, port 1 the second.
 *
 * Sending: a frame of a redundant stream goes out on both ports, each copy
 * with an R-TAG carrying the same sequence number.  Everything else stays on
 * port 0 without a tag, as on a station with one port.  The redundant
 * streams of a station are:
 * - TDMA Sync (the master's and a backup master's): the one frame the
 *   schedule of every other station hangs on.  Calibration frames and
 *   tunnelled VNIC frames are not replicated: calibration repeats at a
 *   station's start, and the VNIC is not real-time traffic;
 * - every frame of an EtherType while a channel of that EtherType is open
 *   with rtn_chan_opts.redundant (the probe generators' frames included).
 * Sequence numbers are generated per EtherType (the sequence generation
 * function of 802.1CB, one per stream).
 *
 * Each copy of a Sync carries the time of its own transmission, as RTnet
 * stamps a Sync right before it goes out: a slave pairs the stamp of
 * whichever copy it took with that copy's receive stamp, so its offset is
 * the same whichever wire delivered first.  Before the copy for port 1 is
 * stamped, port 0's queue is handed to the kernel, so both copies are
 * stamped the same short time before their wire.
 *
 * Receiving: the stream of a received frame is its source MAC and its
 * EtherType (the encapsulated one of a tagged frame): the two ports of a
 * station share one MAC, so both copies name the same stream.  A tagged
 * frame is stripped and run through its stream's vector recovery; only
 * frames that pass reach TDMA, the channels or the VNIC, so nothing behind
 * this sees a duplicate or an R-TAG (the TDMA header sits where it always
 * does).  The stream table holds RTN_STATION_FRER_STREAMS streams, taken in
 * the order they first arrive and kept while the station lives; a tagged
 * frame of a stream beyond it is counted (streams_refused) and dropped.
 * An untagged frame on port 0 is passed as it always was (and counted as
 * tagless by its stream, if it has one); an untagged frame on port 1 is
 * dropped: nothing sends untagged traffic there.  A truncated tag is
 * counted (bad_tags) and dropped.
 */
#ifndef RTN_STATION_FRER_H
#define RTN_STATION_FRER_H

#include <stdint.h>
#include "rtn_frer.h"
#include "rtn_station.h"
#include "rtn_xsk.h"

#define RTN_STATION_FRER_STREAMS 32
/*
 * The station's history length when none is given.  Not 802.1CB's default
 * of 2: with it, one frame lost on both wires is a jump of 2, which the
 * vector algorithm takes as rogue, and every later frame with it, until the
 * reset timer runs out: a stream (TDMA's Sync included) stops for
 * frerSeqRcvyResetMSec.  32 rides out a burst of 31 frames lost on both
 * wires, or one wire trailing the other by as many.
 */
#define RTN_STATION_FRER_HISTORY 32
#define RTN_STATION_PORTS	 2

/** What one port sent and received (counted by the station). */
struct rtn_station_port_stats {
	uint64_t rx_frames;   /* frames taken from the port's socket */
	uint64_t rx_tagged;   /* of them with an R-TAG */
	uint64_t rx_untagged; /* without (port 1: dropped) */
	uint64_t bad_tags;    /* a truncated R-TAG (dropped) */
	uint64_t tx_copies;   /* copies of redundant frames sent */
	uint64_t tx_errors;   /* copies the socket refused (TX ring full) */
};

struct rtn_station_frer_stats {
	uint32_t ports;		  /* 1, or 2 with a second device */
	uint32_t streams;	  /* received streams in the table */
	uint32_t history_len;	  /* frerSeqRcvyHistoryLength */
	uint32_t reset_ms;	  /* frerSeqRcvyResetMSec */
	uint64_t streams_refused; /* tagged frames of streams the table had no room for */
	uint64_t tx_redundant;	  /* frames sent as redundant (copies: per port) */
	struct rtn_station_port_stats port[2];
};

/** One received stream and its 802.1CB counters (frerCpsSeqRcvy*), per port and in total. */
struct rtn_station_frer_stream {
	uint8_t src[6];
	uint16_t ethertype; /* the encapsulated EtherType */
	struct rtn_frer_port_counters total;
	struct rtn_frer_port_counters port[2];
	uint64_t lost;
	uint64_t resets;
};

void rtn_station_frer_stats(const struct rtn_station *s, struct rtn_station_frer_stats *out);
/** Stream @p i (0 .. streams - 1): 0, or -ENOENT. */
int rtn_station_frer_stream(const struct rtn_station *s, uint32_t i,
			    struct rtn_station_frer_stream *out);
/** The XDP socket counters of port @p port: 0, or -ENOENT for a port the station lacks. */
int rtn_station_port_xsk_stats(const struct rtn_station *s, uint32_t port,
			       struct rtn_xsk_stats *out);

#endif
