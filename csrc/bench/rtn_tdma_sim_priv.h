/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_sim_priv.h
 * @brief The simulator's state (rtn_tdma_sim.c): its stations, their engines
 *        and the frames in flight.  Shared with the TDMA simulator's fuzz
 *        target, which saves and restores it between inputs.  Not part of
 *        the API.
 */
#ifndef RTN_TDMA_SIM_PRIV_H
#define RTN_TDMA_SIM_PRIV_H

#include <stdint.h>
#include "rtn_tdma.h"
#include "rtn_tdma_sim.h"

#define MAX_FLIGHT 4096

struct flight {
	int64_t at; /* true arrival time */
	int64_t tx_true;
	uint32_t src;
	uint32_t len;
	uint8_t data[RTN_TDMA_FRAME_MAX];
};

struct sim_station {
	struct rtn_sim *sim;
	uint32_t idx;
	int started, alive;
	int64_t offset_ns;
	double drift; /* ppm / 1e6 */
	struct rtn_tdma *e;
	struct rtn_sim_rx *log;
	uint32_t n_log;
	int64_t nic_free;  /* true time the station's NIC finishes its last frame */
	int64_t ev_local;  /* the engine's next event we drew a wake-up for */
	int64_t wake_true; /* when the thread actually wakes for it */
	uint64_t wakeups;  /* times the engine ran (a thread's wake-ups) */
	/* a stall after the stamp: the next stall_frames frames leave stall_ns late */
	uint32_t stall_frames;
	int64_t stall_ns;
	/* a stall before it: the next handover_frames are handed over handover_ns
	 * after the engine decided to send them */
	uint32_t handover_frames;
	int64_t handover_ns;
	/* a run that sent ends with a kick that keeps the thread kick_ns (a
	 * copy-mode socket's send() carrying the frames through the wire) */
	int64_t kick_ns, busy_until;
	uint64_t sends; /* frames handed over, for telling a run that sent */
	/* the lowest-priority source (the port's tail, as a VNIC's ring): tail_n
	 * copies of tail_frame; tail_bad counts a peek while the slot's queue
	 * held frames, or a frame taken that was not the one peeked */
	uint32_t tail_n, tail_len;
	int tail_peeked;
	uint64_t tail_sent, tail_bad;
	uint8_t tail_frame[RTN_TDMA_FRAME_MAX];
};

struct rtn_sim {
	uint32_t n;
	int64_t now;
	int64_t latency, jitter;
	uint64_t rng;
	uint32_t log_cap;
	struct sim_station st[RTN_SIM_MAX_STATIONS];
	struct flight *fl;
	uint32_t n_fl;
};

#endif
