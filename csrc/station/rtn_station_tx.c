// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_station_tx.c
 * @brief The bottom of the station: the clock model's local time and
 *        sending with stamps in it, which the disciplines (the TDMA
 *        engine's port, NoMAC) call.  It calls nothing of the station above
 *        it: only the second port's FRER and the capture.
 */
#include "rtn_core.h"
#include "rtn_station_priv.h"

int64_t rtn_station_local_now(const struct rtn_station *s)
{
	return local_of(s, rtn_now());
}

/*
 * Sending, for the TDMA engine (its port) and NoMAC alike: stamps in local
 * time, converted from the socket's OS time.
 */
int rtn_station_send(void *arg, uint8_t *frame, uint32_t len, int32_t stamp_off, int64_t stamp_add,
		     int64_t sched, int64_t deadline, int64_t *tx_local)
{
	struct rtn_station *s = arg;
	int64_t os = rtn_now(), delta = local_of(s, os) - os, tx;
	int64_t deadline_os = deadline == INT64_MAX ? INT64_MAX : rtn_sat_sub(deadline, delta);
	struct rtn_frer_seqgen *gen = rtn_frer_tx_stream(s, frame, len);
	const uint8_t *sent = frame;
	int rc;

	if (gen) /* a redundant stream: tagged, on both ports */
		rc = rtn_frer_send(s, gen, frame, len, &stamp_off, rtn_sat_add(stamp_add, delta),
				   deadline_os, &tx, &sent, &len);
	else
		rc = rtn_xsk_send_by(s->xsk, frame, len, stamp_off, rtn_sat_add(stamp_add, delta),
				     deadline_os, &tx);
	if (rc < 0)
		return rc;
	/*
	 * Two ports: the copies leave at their rings' kicks, port A's batch
	 * before port B's, so a batch puts that many frames between a frame's
	 * two copies.  Kept under half the history, a receiver configured alike
	 * never finds the second copy rogue: discarded, it would lose the frame
	 * whenever wire A lost the first.  Untagged frames are kicked at the same
	 * cadence, so that a two-port station's one-port streams leave as its
	 * redundant ones do (c-frer compares the two on the same stations).
	 */
	if (s->xsk_b && ++s->unkicked >= s->skew_max)
		station_flush(s);
	if (s->cap) /* with the stamp the socket wrote into the frame */
		rtn_capture_tx(s, sent, len, stamp_off,
			       (uint64_t)rtn_sat_add(tx, rtn_sat_add(stamp_add, delta)), sched, tx);
	*tx_local = tx + delta;
	return 0;
}
