/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_tdma_sim.h
 * @brief A deterministic segment of TDMA stations on a virtual clock.
 *
 * The same engine that runs on the RT thread runs here against a simulated
 * wire: each station has its own clock (offset and drift against true time),
 * wakes up a pseudo-random 0..wake_jitter_ns late (as a real thread would),
 * and every frame reaches every other station after its wire time plus a
 * fixed latency.  Tests use it to check the protocol (synchronisation,
 * calibration, failover, slot timing) exactly and quickly; the lab tests
 * check the same things on real AF_XDP sockets.
 */
#ifndef RTN_TDMA_SIM_H
#define RTN_TDMA_SIM_H

#include <stdint.h>
#include "rtn_tdma.h"

#define RTN_SIM_MAX_STATIONS 8
#define RTN_SIM_HEAD	     64 /* bytes of each received frame kept in the log */

struct rtn_sim_rx {
	int64_t tx_true; /* true time the sender handed the frame to the wire */
	int64_t rx_true; /* true time it arrived */
	uint32_t src;	 /* sending station */
	uint32_t len;
	uint8_t head[RTN_SIM_HEAD];
};

struct rtn_sim;

int rtn_sim_create(uint32_t n_stations, int64_t latency_ns, int64_t wake_jitter_ns, uint32_t seed,
		   uint32_t log_capacity, struct rtn_sim **out);
void rtn_sim_destroy(struct rtn_sim *s);

/** Configure and start station @p i at the current true time. */
int rtn_sim_start(struct rtn_sim *s, uint32_t i, const struct rtn_tdma_cfg *cfg,
		  int64_t clock_offset_ns, double drift_ppm);
/** Reconfigure a running station (applied at its next cycle start). */
int rtn_sim_set_config(struct rtn_sim *s, uint32_t i, const struct rtn_tdma_cfg *cfg);
/** Silence station @p i (it neither sends nor receives) or bring it back. */
void rtn_sim_set_alive(struct rtn_sim *s, uint32_t i, int alive);
/** Start station @p i's cycles at their first job (see rtn_tdma_set_lazy_begin). */
void rtn_sim_set_lazy_begin(struct rtn_sim *s, uint32_t i, int on);
/** How many times station @p i's engine ran: its thread's wake-ups. */
uint64_t rtn_sim_wakeups(const struct rtn_sim *s, uint32_t i);
/** The next @p frames station @p i sends leave @p stall_ns after their stamp (a stall). */
void rtn_sim_stall_frames(struct rtn_sim *s, uint32_t i, uint32_t frames, int64_t stall_ns);
/**
 * The next @p frames station @p i sends are handed over @p stall_ns after its
 * engine decided to send them (the thread stalled in between); a frame whose
 * hand-over deadline has then passed is refused, as the real port does.
 */
void rtn_sim_stall_handover(struct rtn_sim *s, uint32_t i, uint32_t frames, int64_t stall_ns);
/**
 * Every run of station @p i's engine that sends ends with a kick that keeps
 * its thread @p kick_ns: its next run starts no earlier (a copy-mode
 * socket's send() carries the frames through the lab's wire inline).
 */
void rtn_sim_kick_cost(struct rtn_sim *s, uint32_t i, int64_t kick_ns);
/**
 * Queue a frame on station @p i; @p stamp_off >= 0: its transmit stamp goes
 * there; @p expires_true > 0: the true time after which it must not start
 * on the wire (the engine gets it on the station's clock).
 */
int rtn_sim_enqueue(struct rtn_sim *s, uint32_t i, uint32_t slot, uint32_t prio,
		    const uint8_t *frame, uint32_t len, int32_t stamp_off, int64_t expires_true);
/**
 * Give station @p i @p count more copies of @p frame to send last, from
 * outside its queues (the engine's port tail, as a VNIC's ring); a slot takes
 * them only when its queue is empty and the frame fits it.
 */
int rtn_sim_tail(struct rtn_sim *s, uint32_t i, const uint8_t *frame, uint32_t len, uint32_t count);
/** Station @p i's tail frames sent, and the port calls out of turn (should stay 0). */
void rtn_sim_tail_stats(const struct rtn_sim *s, uint32_t i, uint64_t *sent, uint64_t *bad);
/** Run until true time @p t_true (ns since the simulation began). */
void rtn_sim_run_until(struct rtn_sim *s, int64_t t_true);
int64_t rtn_sim_now(const struct rtn_sim *s);
void rtn_sim_stats(const struct rtn_sim *s, uint32_t i, struct rtn_tdma_stats *out);
/** Frames station @p i received (oldest first); returns the count copied. */
uint32_t rtn_sim_rx_log(const struct rtn_sim *s, uint32_t i, struct rtn_sim_rx *out, uint32_t max);
/** Forget the receive log of every station. */
void rtn_sim_clear_logs(struct rtn_sim *s);
/** Hand @p frame to station @p i's engine as if received now (bad-input tests). */
int rtn_sim_inject(struct rtn_sim *s, uint32_t i, const uint8_t *frame, uint32_t len);
/**
 * Hand @p frame to station @p i's engine now, stamped as received @p age_ns
 * ago: a frame that waited in the receive ring while the thread did other work.
 */
int rtn_sim_inject_aged(struct rtn_sim *s, uint32_t i, const uint8_t *frame, uint32_t len,
			int64_t age_ns);

#endif
