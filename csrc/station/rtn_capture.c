/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_capture.c
 * @brief The capture ring (rtn_capture.h) and the station's capture: the
 *        control thread switches it on and off through the mailbox, the RT
 *        thread mirrors its frames into it (rtn_capture_tx/rx).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_capture.h"
#include "rtn_ipv4_inline.h"
#include "rtn_core.h"
#include "rtn_station_priv.h"
#include "rtn_tdma_proto_inline.h"

struct rtn_capture {
	/* written by the producer (the RT thread) */
	uint32_t head __attribute__((aligned(64)));
	/* written by the consumer (the control thread) */
	uint32_t tail __attribute__((aligned(64)));
	uint32_t depth; /* a power of two */
	uint32_t snaplen;
	/* bytes per entry: a header and snaplen bytes, 8-aligned */
	uint32_t stride;
	/* producer only; the consumer reads them with relaxed loads */
	uint64_t frames;
	uint64_t drops;
	uint8_t *entries;
};

int rtn_capture_create(uint32_t snaplen, uint32_t depth, struct rtn_capture **out)
{
	struct rtn_capture *c;

	rtn_clear_error();
	*out = NULL;
	if (snaplen < RTN_CAP_SNAP_MIN || snaplen > RTN_CAP_SNAP_MAX)
		return rtn_set_error(-EINVAL, "capture: snap length %u outside %u..%u", snaplen,
				     RTN_CAP_SNAP_MIN, RTN_CAP_SNAP_MAX);
	if (depth < 2 || depth > RTN_CAP_DEPTH_MAX || (depth & (depth - 1)))
		return rtn_set_error(-EINVAL, "capture: depth %u is not a power of two in 2..%u",
				     depth, RTN_CAP_DEPTH_MAX);
	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (!c)
		return rtn_set_error(-ENOMEM, "capture: out of memory");
	memset(c, 0, sizeof(*c));
	c->depth = depth;
	c->snaplen = snaplen;
	c->stride = (uint32_t)((sizeof(struct rtn_cap_hdr) + snaplen + 7) & ~7u);
	/* touched now, so the RT thread never takes a page fault on a fresh entry */
	c->entries = malloc((size_t)depth * c->stride);
	if (!c->entries) {
		free(c);
		return rtn_set_error(-ENOMEM, "capture: out of memory for %u entries", depth);
	}
	memset(c->entries, 0, (size_t)depth * c->stride);
	*out = c;
	return 0;
}

void rtn_capture_destroy(struct rtn_capture *c)
{
	if (!c)
		return;
	free(c->entries);
	free(c);
}

static struct rtn_cap_hdr *cap_entry(const struct rtn_capture *c, uint32_t idx)
{
	return (struct rtn_cap_hdr *)(c->entries + (size_t)(idx & (c->depth - 1)) * c->stride);
}

int rtn_capture_put(struct rtn_capture *c, const struct rtn_cap_hdr *h, const uint8_t *frame,
		    uint32_t len, int32_t stamp_off, uint64_t stamp)
{
	uint32_t head = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
	uint32_t tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
	uint32_t kept = len < c->snaplen ? len : c->snaplen;
	struct rtn_cap_hdr *e;
	uint8_t *data;

	if (head - tail >= c->depth) {
		__atomic_store_n(&c->drops, c->drops + 1, __ATOMIC_RELAXED);
		return -1;
	}
	e = cap_entry(c, head);
	data = (uint8_t *)(e + 1);
	*e = *h;
	e->orig_len = len;
	e->cap_len = kept;
	if (kept)
		memcpy(data, frame, kept);
	if (stamp_off >= 0 && (uint32_t)stamp_off + 8 <= kept)
		rtn_stamp_put(data, kept, stamp_off, stamp); /* as the socket wrote it */
	__atomic_store_n(&c->frames, c->frames + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->head, head + 1, __ATOMIC_RELEASE);
	return 0;
}

int rtn_capture_read(struct rtn_capture *c, struct rtn_cap_rec *out, uint32_t max)
{
	uint32_t tail = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);
	uint32_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint32_t n = 0;

	while (n < max && tail != head) {
		const struct rtn_cap_hdr *e = cap_entry(c, tail);

		out[n].h = *e;
		if (out[n].h.cap_len > c->snaplen)
			out[n].h.cap_len = c->snaplen; /* cannot happen: the producer clamps */
		memcpy(out[n].data, e + 1, out[n].h.cap_len);
		n++;
		tail++;
	}
	__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	return (int)n;
}

void rtn_capture_counts(const struct rtn_capture *c, uint64_t *frames, uint64_t *drops)
{
	*frames = __atomic_load_n(&c->frames, __ATOMIC_RELAXED);
	*drops = __atomic_load_n(&c->drops, __ATOMIC_RELAXED);
}

/* ---- the station's capture ------------------------------------------------ */

/* The segment's global time of a local time (TDMA's clock offset; none without TDMA). */
static int64_t cap_global(const struct rtn_station *s, int64_t local)
{
	return s->tdma ? rtn_sat_add(local, rtn_tdma_clock_offset(s->tdma)) : local;
}

static void cap_count(struct rtn_station *s, int rc)
{
	if (rc == 0)
		s->st.capture_frames++;
	else
		s->st.capture_drops++;
}

void rtn_capture_tx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int32_t stamp_off,
		    uint64_t stamp, int64_t sched_local, int64_t tx_os)
{
	struct rtn_cap_hdr h = { .dir = RTN_CAP_TX, .os_ns = tx_os };

	if (sched_local) {
		h.flags = RTN_CAP_F_SCHED;
		h.sched_ns = cap_global(s, sched_local);
	}
	h.stamp_ns = cap_global(s, local_of(s, tx_os));
	cap_count(s, rtn_capture_put(s->cap, &h, frame, len, stamp_off, stamp));
}

void rtn_capture_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len, int64_t rx_os,
		    int xdp_stamp)
{
	struct rtn_cap_hdr h = { .dir = RTN_CAP_RX, .os_ns = rx_os };

	h.flags = xdp_stamp ? RTN_CAP_F_XDP_STAMP : 0;
	h.stamp_ns = cap_global(s, local_of(s, rx_os));
	cap_count(s, rtn_capture_put(s->cap, &h, frame, len, -1, 0));
}

/* On the RT thread: the ring it mirrors frames into from now on (NULL: none). */
static void set_capture(struct rtn_station *s, uintptr_t ring)
{
	s->cap = (struct rtn_capture *)ring;
}

int rtn_station_capture_start(struct rtn_station *s, uint32_t snaplen, uint32_t depth)
{
	struct rtn_capture *c;
	int rc;

	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	if (s->cap) {
		rc = rtn_set_error(-EBUSY, "a capture is already running on this station");
		goto out;
	}
	rc = rtn_capture_create(snaplen, depth, &c);
	if (rc == 0)
		rtn_station_post(s, set_capture, (uintptr_t)c);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_capture_stop(struct rtn_station *s)
{
	struct rtn_capture *c;

	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	c = s->cap;
	if (c) {
		/* once the RT thread has run the command, it no longer touches the ring */
		rtn_station_post(s, set_capture, 0);
		rtn_capture_destroy(c);
	}
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

int rtn_station_capture_read(struct rtn_station *s, struct rtn_cap_rec *out, uint32_t max)
{
	int rc;

	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	if (s->cap)
		rc = rtn_capture_read(s->cap, out, max);
	else
		rc = rtn_set_error(-ENOENT, "no capture is running on this station");
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}
