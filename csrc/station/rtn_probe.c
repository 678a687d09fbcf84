/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_probe.c
 * @brief Benchmark traffic made and measured by the station itself: the slot
 *        probe (TDMA), the rate generator (RFC 2544 trials under NoMAC) and
 *        the probe receiver (counts and one-way latency).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_probe_priv.h"
#include "rtn_station_priv.h"

struct rtn_probe {
	/* probe: one frame per occurrence of a slot, generated on the RT thread */
	int slot;
	uint16_t type;
	uint32_t len, seq;
	uint64_t sent;

	/* rate generator (RFC 2544 trials under NoMAC): frames due every interval */
	int64_t rate_interval_ns;
	int64_t rate_next; /* local time the next frame is due */
	uint64_t rate_left;
	int64_t rate_backlog_ns; /* how far behind schedule a frame may wait for room */
	uint8_t rate_dst[6];	 /* the generator's destination */

	/* probe receiver: counts and one-way latency of probe frames */
	uint16_t rx_type;
	uint64_t rx, rx_bytes;
	struct rtn_hist lat; /* receive stamp minus the sender's transmit stamp */
};

int rtn_probe_create(struct rtn_station *s)
{
	s->probe = calloc(1, sizeof(*s->probe));
	if (!s->probe)
		return rtn_set_error(-ENOMEM, "station: out of memory for the probes");
	s->probe->slot = -1;
	rtn_hist_init(&s->probe->lat, 0);
	return 0;
}

void rtn_probe_destroy(struct rtn_station *s)
{
	free(s->probe);
	s->probe = NULL;
}

void rtn_probe_reset(struct rtn_station *s, uint16_t rx_type)
{
	struct rtn_probe *p = s->probe;

	p->slot = -1;
	p->type = 0;
	p->len = 0;
	p->seq = 0;
	p->sent = 0;
	p->rate_interval_ns = p->rate_next = 0;
	p->rate_left = 0;
	p->rx_type = rx_type;
	p->rx = p->rx_bytes = 0;
	rtn_hist_init(&p->lat, 0);
}

static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/*
 * Benchmark traffic made on the RT thread itself: a frame with an application
 * header to @p dst, broadcast for the probe slot (one per occurrence, so slot
 * timing can be measured with no application in the loop) and the rate
 * generator's destination for RFC 2544 trials.
 */
static void build_probe(struct rtn_station *s, uint8_t *f, int64_t sched_global, const uint8_t *dst)
{
	struct rtn_probe *p = s->probe;
	memset(f, 0, p->len);
	memcpy(f, dst, 6);
	memcpy(f + 6, s->o.mac, 6);
	rtn_put_be16(f + 12, p->type);
	rtn_put_be32(f + 14, RTN_APP_MAGIC);
	rtn_put_be32(f + 18, ++p->seq);
	rtn_put_be64(f + 22, (uint64_t)sched_global);
}

/* TDMA: a probe frame for this occurrence of its slot, unless one is still queued. */
void rtn_probe_refill(struct rtn_station *s, struct rtn_tdma *e, uint32_t slot_id, int64_t now)
{
	struct rtn_probe *p = s->probe;
	uint8_t f[RTN_TDMA_FRAME_MAX];

	if (p->slot != (int)slot_id || rtn_tdma_queue_depth(e, slot_id))
		return;
	build_probe(s, f, now + rtn_tdma_clock_offset(e), broadcast);
	if (rtn_tdma_enqueue(e, slot_id, 0, f, p->len, RTN_APP_TX_OFF, RTN_TDMA_NEVER) == 0)
		p->sent++;
}

/*
 * The generator stands for an RFC 2544 tester, whose frames are offered on
 * schedule whether or not the thread that makes them got the CPU in time: a
 * frame due that finds the FIFO full may wait in the tester for room, keeping
 * its scheduled send time (stamped into it, so its latency counts the wait),
 * while it is less than rate_backlog_ns behind schedule; a frame further
 * behind that still finds no room is dropped and counted.
 * At exactly line rate the wire cannot make up time a stall took from the
 * sender, so the backlog a stall leaves stays for the rest of the trial: with
 * no wait, the FIFO's 2,048 frames (14 ms of 64-byte frames at 100 Mbit/s)
 * lost frames to every longer stall of this VM.  The bound is the caller's: a
 * sender that keeps up with only (1 - b/T) of the rate still passes a trial of
 * length T, so a benchmark keeps b within its search's resolution.
 *
 * NoMAC rate generator: queue every frame due up to @p horizon (local), so
 * one wake-up makes a batch (see PACE_AHEAD_NS).  Returns the time the next
 * frame is due (in the past while frames wait for room).
 */
int64_t rtn_probe_generate(struct rtn_station *s, const struct frame_sink *q, int64_t now,
			   int64_t horizon)
{
	struct rtn_probe *p = s->probe;

	while (p->rate_left && p->rate_next <= horizon) {
		struct frame_slot *f = q->slot(q->q);
		int64_t lag = now - p->rate_next;

		if (!f) {
			if (lag < p->rate_backlog_ns)
				break;
			s->st.nomac_drops++;
		} else {
			if (lag > s->st.generator_lag_max_ns)
				s->st.generator_lag_max_ns = lag;
			build_probe(s, f->data, p->rate_next, p->rate_dst);
			f->len = p->len;
			q->commit(q->q);
		}
		p->sent++;
		p->rate_left--;
		p->rate_next += p->rate_interval_ns;
	}
	return p->rate_left ? p->rate_next : INT64_MAX;
}

/* A received probe frame (@p rx_global: its receive time on the global clock) is counted here. */
int rtn_probe_rx_take(struct rtn_station *s, uint16_t type, const uint8_t *frame, uint32_t len,
		      int64_t rx_global)
{
	struct rtn_probe *p = s->probe;
	if (type != p->rx_type || len < ETH_HLEN_RTN + RTN_APP_HDR_LEN ||
	    rtn_get_be32(frame + ETH_HLEN_RTN) != RTN_APP_MAGIC)
		return 0;
	p->rx++;
	p->rx_bytes += len;
	/* the transmit stamp is the sender's word: saturate */
	rtn_hist_add(&p->lat,
		     rtn_sat_sub(rx_global, (int64_t)rtn_get_be64(frame + RTN_APP_TX_OFF)));
	return 1;
}

int rtn_station_set_probe(struct rtn_station *s, int slot_id, uint16_t ethertype, uint32_t len)
{
	struct rtn_probe *p = s->probe;
	rtn_clear_error();
	if (slot_id >= RTN_TDMA_MAX_SLOTS ||
	    (slot_id >= 0 && (len < 60 || len > RTN_TDMA_FRAME_MAX)))
		return rtn_set_error(-EINVAL, "probe: slot below %d and length 60..%d",
				     RTN_TDMA_MAX_SLOTS, RTN_TDMA_FRAME_MAX);
	if (slot_id >= 0 &&
	    (ethertype < 0x0600 || ethertype == ETH_RTMAC || ethertype == ETH_RTCFG))
		return rtn_set_error(-EINVAL, "probe: EtherType 0x%04x not allowed", ethertype);
	/* plain stores: the RT thread reads them at a slot start; a torn update costs one frame */
	p->type = ethertype;
	p->len = len;
	__atomic_store_n(&p->slot, slot_id, __ATOMIC_RELEASE);
	return 0;
}

uint64_t rtn_station_probe_sent(const struct rtn_station *s)
{
	const struct rtn_probe *p = s->probe;
	return p->sent;
}

int rtn_station_set_rate_probe(struct rtn_station *s, uint16_t ethertype, uint32_t len,
			       uint64_t rate_pps, uint64_t count, int64_t backlog_ns,
			       const uint8_t *dst)
{
	struct rtn_probe *p = s->probe;
	rtn_clear_error();
	if (!disc_ops(s)->rate_generator && count)
		return rtn_set_error(-EINVAL,
				     "rate probe: attach NoMAC first (TDMA sends in slots)");
	if (count && (len < 60 || len > RTN_TDMA_FRAME_MAX || rate_pps < 1 || rate_pps > 10000000))
		return rtn_set_error(-EINVAL,
				     "rate probe: length 60..%d and rate 1..10000000 frames/s",
				     RTN_TDMA_FRAME_MAX);
	if (backlog_ns < 0 || backlog_ns > RTN_RATE_BACKLOG_MAX_NS)
		return rtn_set_error(-EINVAL, "rate probe: backlog 0..%d ns",
				     RTN_RATE_BACKLOG_MAX_NS);
	p->type = ethertype;
	p->len = len;
	p->rate_interval_ns = count ? (int64_t)(1000000000ull / rate_pps) : 0;
	p->rate_next = rtn_station_local_now(s);
	p->rate_backlog_ns = backlog_ns;
	memcpy(p->rate_dst, dst ? dst : broadcast, 6);
	s->st.generator_lag_max_ns = 0; /* per run: the RT thread is idle on it */
	__atomic_store_n(&p->rate_left, count, __ATOMIC_RELEASE);
	efd_signal(s->efd);
	return 0;
}

void rtn_station_set_probe_rx(struct rtn_station *s, uint16_t ethertype)
{
	struct rtn_probe *p = s->probe;
	p->rx_type = ethertype;
}

void rtn_station_probe_rx(const struct rtn_station *s, uint64_t *frames, uint64_t *bytes,
			  uint64_t *generator_left)
{
	const struct rtn_probe *p = s->probe;
	*frames = p->rx;
	*bytes = p->rx_bytes;
	*generator_left = __atomic_load_n(&p->rate_left, __ATOMIC_ACQUIRE);
}

const struct rtn_hist *rtn_station_probe_latency(const struct rtn_station *s)
{
	const struct rtn_probe *p = s->probe;
	return &p->lat;
}
