// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_station_frer.c
 * @brief A station's second port and IEEE 802.1CB over its two wires: the
 *        replication of redundant streams on the way out, the elimination
 *        of duplicates on the way in, the stream table and its counters
 *        (see rtn_station_frer.h for what is redundant and why).
 *
 * Everything here runs on the RT thread but the open, the close and the
 * readers of the counters.  What arrives is hostile: a tag that does not
 * fit is counted, a stream beyond the table is counted, and the recovery
 * takes any sequence number.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_station_priv.h"

#define MACS_LEN 12 /* the R-TAG goes after the destination and source */

/* One received stream: its source MAC and (encapsulated) EtherType. */
struct frer_stream {
	uint8_t src[6];
	uint16_t ethertype;
	struct rtn_frer_rcvy r;
};

/* The station's 802.1CB: the second port's socket is the station's (s->xsk_b). */
struct station_frer {
	/* streams[0 .. n_streams - 1] are filled: the RT thread fills an entry,
	 * then publishes it by raising n_streams (release); readers acquire */
	uint32_t n_streams;
	struct frer_stream streams[RTN_STATION_FRER_STREAMS];
	struct rtn_frer_seqgen gen[65536];		   /* sequence generation per EtherType */
	uint8_t tx_buf[RTN_TDMA_FRAME_MAX + RTN_RTAG_LEN]; /* the tagged copy */
	struct rtn_station_frer_stats st;
};

int rtn_frer_open(struct rtn_station *s)
{
	struct station_frer *f = calloc(1, sizeof(*f));
	uint32_t history = s->o.frer_history ? s->o.frer_history : RTN_STATION_FRER_HISTORY;
	struct rtn_frer_rcvy probe;
	int rc;

	if (!f)
		return rtn_set_error(-ENOMEM, "FRER: out of memory");
	s->frer = f;
	/* the recovery's own check, once, so that no stream fails to start later */
	if (rtn_frer_rcvy_init(&probe, history, s->o.frer_reset_ms, 1))
		return rtn_set_error(-EINVAL,
				     "FRER history length %u (%d..%d) or reset timeout %u ms "
				     "(0..3600000) out of range",
				     history, RTN_FRER_HISTORY_MIN, RTN_FRER_HISTORY_MAX,
				     s->o.frer_reset_ms);
	f->st.history_len = history;
	s->skew_max = history / 2;
	f->st.reset_ms = s->o.frer_reset_ms;
	f->st.ports = 1;
	if (!s->o.xsk_b.ifname)
		return 0;
	rc = rtn_xsk_open(&s->o.xsk_b, &s->xsk_b);
	if (rc)
		return rc;
	rtn_xsk_defer_kick(s->xsk_b, 1);
	f->st.ports = 2;
	return 0;
}

void rtn_frer_close(struct rtn_station *s)
{
	rtn_xsk_close(s->xsk_b);
	s->xsk_b = NULL;
	free(s->frer);
	s->frer = NULL;
}

/* For the harnesses (csrc/fuzz/): no stream, the counters an input can move at zero. */
void rtn_frer_reset(struct rtn_station *s)
{
	struct station_frer *f = s->frer;

	f->n_streams = 0;
	memset(f->st.port, 0, sizeof(f->st.port));
	f->st.streams_refused = f->st.tx_redundant = 0;
}

/* ---- sending ---------------------------------------------------------------- */

/* A TDMA Sync (not tunnelled): the master's frame every schedule depends on. */
static int is_sync(const uint8_t *frame, uint32_t len)
{
	return len >= ETH_HLEN_RTN + RTMAC_HLEN + TDMA_HLEN &&
	       rtn_get_be16(frame + 14) == RTMAC_TYPE_TDMA && !(frame[17] & RTMAC_FLAG_TUNNEL) &&
	       rtn_get_be16(frame + 18) == TDMA_VERSION &&
	       rtn_get_be16(frame + 20) == TDMA_FRM_SYNC;
}

struct rtn_frer_seqgen *rtn_frer_tx_stream(struct rtn_station *s, const uint8_t *frame,
					   uint32_t len)
{
	uint16_t type;
	int i;

	if (!s->xsk_b || len < ETH_HLEN_RTN)
		return NULL;
	type = rtn_get_be16(frame + 12);
	if (type == ETH_RTMAC)
		return is_sync(frame, len) ? &s->frer->gen[type] : NULL;
	for (i = 0; i < RTN_STATION_MAX_CHANS; i++)
		if (s->live[i] && s->live[i]->redundant && s->live[i]->ethertype == type)
			return &s->frer->gen[type];
	return NULL;
}

int rtn_frer_send(struct rtn_station *s, struct rtn_frer_seqgen *gen, const uint8_t *frame,
		  uint32_t len, int32_t *stamp_off, int64_t stamp_add, int64_t deadline_os,
		  int64_t *tx_os, const uint8_t **tagged, uint32_t *tagged_len)
{
	struct station_frer *f = s->frer;
	struct rtn_frer_seqgen before = *gen;
	int32_t off = *stamp_off >= 0 ? *stamp_off + RTN_RTAG_LEN : -1;
	int n, rc0, rc1;
	int64_t tx0 = 0, tx1 = 0;

	if (len > RTN_TDMA_FRAME_MAX)
		return -EMSGSIZE;
	memcpy(f->tx_buf, frame, len);
	n = rtn_rtag_insert(f->tx_buf, sizeof(f->tx_buf), len, rtn_frer_seqgen_next(gen));
	if (n < 0)
		return n;
	rc0 = rtn_xsk_send_by(s->xsk, f->tx_buf, (uint32_t)n, off, stamp_add, deadline_os, &tx0);
	if (rc0 == -ETIME) {
		/* too late for the first copy, so for the second: the number was not used */
		*gen = before;
		return rc0;
	}
	/* a Sync's second stamp is taken once the first copy is on its way (see the header) */
	if (off >= 0 && rtn_get_be16(frame + 12) == ETH_RTMAC)
		rtn_xsk_flush(s->xsk);
	/*
	 * The deadline is the pair's: once the first copy went, the second goes
	 * too, even if a stall made it late since.  Refused, it would be lost
	 * whenever the first wire is down, which is what redundancy is for.
	 */
	rc1 = rtn_xsk_send_stamped(s->xsk_b, f->tx_buf, (uint32_t)n, off, stamp_add, &tx1);
	f->st.tx_redundant++;
	f->st.port[0].tx_copies += rc0 == 0;
	f->st.port[0].tx_errors += rc0 != 0;
	f->st.port[1].tx_copies += rc1 == 0;
	f->st.port[1].tx_errors += rc1 != 0;
	if (rc0 && rc1)
		return rc0;
	*tx_os = rc0 == 0 ? tx0 : tx1;
	*stamp_off = off;
	*tagged = f->tx_buf;
	*tagged_len = (uint32_t)n;
	return 0;
}

/* ---- receiving -------------------------------------------------------------- */

static struct frer_stream *find_stream(struct station_frer *f, const uint8_t *src, uint16_t type)
{
	uint32_t i;

	for (i = 0; i < f->n_streams; i++)
		if (f->streams[i].ethertype == type && !memcmp(f->streams[i].src, src, 6))
			return &f->streams[i];
	return NULL;
}

static struct frer_stream *add_stream(struct rtn_station *s, const uint8_t *src, uint16_t type)
{
	struct station_frer *f = s->frer;
	struct frer_stream *st;

	if (f->n_streams == RTN_STATION_FRER_STREAMS)
		return NULL;
	st = &f->streams[f->n_streams];
	memcpy(st->src, src, 6);
	st->ethertype = type;
	/* checked at open: cannot fail */
	rtn_frer_rcvy_init(&st->r, f->st.history_len, f->st.reset_ms, 1);
	__atomic_store_n(&f->n_streams, f->n_streams + 1, __ATOMIC_RELEASE);
	return st;
}

int rtn_frer_rx(struct rtn_station *s, uint32_t port, uint8_t *frame, uint32_t *len, int64_t rx_os)
{
	struct station_frer *f = s->frer;
	struct rtn_station_port_stats *ps = &f->st.port[port];
	struct frer_stream *st;
	int32_t seq;
	int n;

	ps->rx_frames++;
	if (*len < ETH_HLEN_RTN || rtn_get_be16(frame + 12) != RTN_RTAG_ETHERTYPE) {
		ps->rx_untagged++;
		if (port != 0)
			return 0;
		/* untagged on port 0: as ever; a stream that is tagged counts it */
		if (f->n_streams && *len >= ETH_HLEN_RTN &&
		    (st = find_stream(f, frame + 6, rtn_get_be16(frame + 12))))
			rtn_frer_recover(&st->r, port, RTN_RTAG_NONE, rx_os);
		return 1;
	}
	n = rtn_rtag_strip(frame, *len, &seq);
	if (n < 0) {
		ps->bad_tags++;
		return 0;
	}
	ps->rx_tagged++;
	*len = (uint32_t)n;
	st = find_stream(f, frame + 6, rtn_get_be16(frame + 12));
	if (!st && !(st = add_stream(s, frame + 6, rtn_get_be16(frame + 12)))) {
		f->st.streams_refused++;
		return 0;
	}
	return rtn_frer_recover(&st->r, port, seq, rx_os) == 1;
}

/* ---- counters (control thread) ------------------------------------------------ */

void rtn_station_frer_stats(const struct rtn_station *s, struct rtn_station_frer_stats *out)
{
	*out = s->frer->st;
	out->streams = __atomic_load_n(&s->frer->n_streams, __ATOMIC_ACQUIRE);
}

int rtn_station_frer_stream(const struct rtn_station *s, uint32_t i,
			    struct rtn_station_frer_stream *out)
{
	const struct frer_stream *st;

	rtn_clear_error();
	if (i >= __atomic_load_n(&s->frer->n_streams, __ATOMIC_ACQUIRE))
		return -ENOENT;
	st = &s->frer->streams[i];
	memcpy(out->src, st->src, 6);
	out->ethertype = st->ethertype;
	out->total = st->r.total;
	memcpy(out->port, st->r.port, sizeof(out->port));
	out->lost = st->r.lost;
	out->resets = st->r.resets;
	return 0;
}

int rtn_station_port_xsk_stats(const struct rtn_station *s, uint32_t port,
			       struct rtn_xsk_stats *out)
{
	rtn_clear_error();
	if (port == 0)
		return rtn_xsk_stats(s->xsk, out);
	if (port == 1 && s->xsk_b)
		return rtn_xsk_stats(s->xsk_b, out);
	memset(out, 0, sizeof(*out));
	return -ENOENT;
}
