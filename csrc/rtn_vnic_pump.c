/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_pump.c
 * @brief The VNIC's pump between the wire and a TAP device: TAP reads and
 *        writes, the reader and writer helper threads of the per-packet mode,
 *        their frame rings, and segmentation (GSO) and merging (GRO) when the
 *        TAP has a vnet header.
 *
 * Batched mode: the RT thread itself reads the TAP into the discipline's
 * queue (a slot's budget at a time under TDMA) and writes received frames to
 * the TAP when its next deadline leaves time.  Per-packet mode: a reader
 * thread hands every packet over through a ring and wakes the RT thread; a
 * writer thread, woken by the RT thread, writes what was received.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "rtn_core.h"
#include "rtn_station_priv.h"

/* ---- Linux -> wire ---------------------------------------------------------- */

int rtn_vnic_encap(struct rtn_station *s, const uint8_t *inner, uint32_t len, uint8_t *out,
		   uint32_t cap)
{
	return rtn_rtmac_tunnel_encap(out, cap, inner, len, s->o.mac);
}


/* One read from the TAP, without blocking, counted.  0: none waiting, or the TAP died. */
static ssize_t tap_read(struct rtn_station *s, uint8_t *buf, size_t cap)
{
	ssize_t n = read(s->tap_fd, buf, cap);

	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			tap_failed(s);
		return 0;
	}
	VSTAT_ADD(s, tap_reads, 1);
	return n;
}

/*
 * The next frame for the wire, into @p inner: the rest of the super-packet
 * read earlier (so a slot's budget never cuts one short), else a new read.
 * Returns its length, 0 if the TAP has nothing (or died), -1 if a malformed
 * packet was counted and dropped (call again).
 */
int rtn_vnic_pull(struct rtn_station *s, uint8_t *inner, uint32_t cap)
{
	int n;

	if (!s->vnet) {
		n = (int)tap_read(s, inner, cap);
	} else {
		if (!rtn_gso_left(&s->gso)) {
			ssize_t r = tap_read(s, s->gso_buf, RTN_GSO_BUF);

			if (!r)
				return 0;
			if (rtn_gso_begin(&s->gso, s->gso_buf, (uint32_t)r, cap) < 0) {
				VSTAT_ADD(s, tx_bad, 1);
				return -1;
			}
		}
		n = rtn_gso_next(&s->gso, inner, cap);
		if (n <= 0) {	/* cannot happen: rtn_gso_begin checked the sizes */
			s->gso.index = s->gso.nseg;
			VSTAT_ADD(s, tx_bad, 1);
			return -1;
		}
	}
	if (n > 0) {
		VSTAT_ADD(s, tap_rx, 1);
		VSTAT_ADD(s, tap_rx_bytes, n);
	}
	return n;
}

/*
 * The batched VNIC's next wire frame: the TAP's next packet (or segment of a
 * super-packet), encapsulated into @p out.  Its length, 0 when the TAP has
 * nothing, or -1 for a packet dropped (and counted).
 */
int rtn_vnic_next_frame(struct rtn_station *s, uint8_t *out, uint32_t cap)
{
	uint8_t inner[RTN_TDMA_FRAME_MAX];
	int n = rtn_vnic_pull(s, inner, sizeof(inner)), len;

	if (n <= 0)
		return n;	/* a bad packet is counted by rtn_vnic_pull */
	len = rtn_vnic_encap(s, inner, n, out, cap);
	if (len < 0) {
		VSTAT_ADD(s, tx_dropped, 1);
		return -1;
	}
	return len;
}

/*
 * Batched VNIC: pull from the TAP into the queue of @p queue_slot, at the
 * lowest priority, until the wire-time budget of the running occurrence of
 * @p slot_id (that queue's slot, a joint one, or an RT slot) is used.  Frames already
 * queued there (real-time ones first) count against the budget first, so a
 * VNIC frame only takes wire time that nothing queued before the slot opened
 * wanted.
 */
void rtn_vnic_refill(struct rtn_station *s, struct rtn_tdma *e, uint32_t slot_id,
		     uint32_t queue_slot, int64_t now)
{
	uint32_t size = rtn_tdma_slot_size(e, queue_slot);
	int64_t budget = rtn_tdma_slot_budget(e, slot_id, now);
	int64_t queued = 0;
	uint32_t depth = rtn_tdma_queue_depth(e, queue_slot);

	queued = (int64_t)depth * rtn_wire_time_ns(size + ETH_HLEN_RTN, s->tdma_cfg.link_rate_mbps);
	while (queued < budget && depth < RTN_TDMA_QUEUE_MAX && tap_usable(s)) {
		int len = rtn_vnic_next_frame(s, s->scratch, sizeof(s->scratch));

		if (!len)
			break;
		if (len < 0)
			continue;
		if (rtn_tdma_enqueue(e, queue_slot, VNIC_PRIO, s->scratch, len, -1) < 0) {
			VSTAT_ADD(s, tx_dropped, 1);
			continue;
		}
		depth++;
		queued += rtn_wire_time_ns(len, s->tdma_cfg.link_rate_mbps);
	}
}

/* Per-packet VNIC: whatever the reader thread handed over. */
void rtn_vnic_take_from_reader(struct rtn_station *s)
{
	struct frame_slot *f;

	while ((f = fr_peek(s->from_tap))) {
		int len = rtn_vnic_encap(s, f->data, f->len, s->scratch, sizeof(s->scratch));

		if (len < 0 || disc_ops(s)->enqueue(s, s->scratch, len) < 0)
			VSTAT_ADD(s, tx_dropped, 1);
		fr_release(s->from_tap);
	}
}
/* ---- wire -> Linux ---------------------------------------------------------- */

void rtn_vnic_rx(struct rtn_station *s, const uint8_t *frame, uint32_t len)
{
	struct frame_slot *f;
	int n;

	if (!s->vnic_live)
		return;
	f = fr_prod(s->to_tap);
	if (!f) {
		VSTAT_ADD(s, rx_dropped, 1);
		return;
	}
	n = rtn_rtmac_tunnel_decap(f->data, sizeof(f->data), frame, len);
	/*
	 * The inner type must be an EtherType (RTnet stores h_proto there) and
	 * something must follow the header: Linux would drop anything else
	 * silently, so count it here where it can be seen.
	 */
	if (n <= ETH_HLEN_RTN || rtn_get_be16(f->data + 12) < 0x0600) {
		VSTAT_ADD(s, rx_bad, 1);
		return;
	}
	f->len = n;
	fr_commit(s->to_tap);
	s->tunnel_rx_at = rtn_now();
	s->tunnel_rx_n++;
}

/*
 * With a vnet header: the frame at the ring's tail and the segments of the
 * same TCP flow right behind it, merged into s->gro.  Returns the frames
 * taken (at most @p max); their count and bytes in *segs and *bytes.
 */
static uint32_t gro_collect(struct rtn_station *s, uint32_t max, uint32_t *segs, uint64_t *bytes)
{
	struct frame_slot *f = fr_peek(s->to_tap);
	uint32_t n = 1;
	int open = rtn_gro_begin(&s->gro, f->data, f->len);

	*bytes = f->len;
	fr_release(s->to_tap);
	while (open > 0 && n < max && (f = fr_peek(s->to_tap)) &&
	       rtn_gro_append(&s->gro, f->data, f->len)) {
		*bytes += f->len;
		fr_release(s->to_tap);
		n++;
	}
	*segs = open < 0 ? 0 : s->gro.nseg;
	return n;
}

/* Write up to @p max received frames to the TAP; returns how many were taken. */
static uint32_t write_to_tap(struct rtn_station *s, uint32_t max)
{
	struct frame_slot *f;
	uint32_t n = 0;

	while (n < max && (f = fr_peek(s->to_tap))) {
		const uint8_t *buf = f->data;
		uint32_t len = f->len, segs = 1;
		uint64_t bytes = f->len;
		ssize_t w;

		if (s->vnet) {
			n += gro_collect(s, max - n, &segs, &bytes);
			if (!segs) {	/* larger than a super-packet: cannot be */
				VSTAT_ADD(s, rx_dropped, 1);
				continue;
			}
			len = rtn_gro_finish(&s->gro);
			buf = s->gro.out;
		}
		w = tap_usable(s) ? write(s->tap_fd, buf, len) : -1;
		if (w < 0) {
			/* a dead TAP, or a full one (EAGAIN): the frames are lost */
			if (tap_usable(s) && errno != EAGAIN && errno != EINTR)
				tap_failed(s);
			VSTAT_ADD(s, rx_dropped, segs);
		} else {
			VSTAT_ADD(s, tap_writes, 1);
			VSTAT_ADD(s, tap_tx, segs);
			VSTAT_ADD(s, tap_tx_bytes, bytes);
		}
		if (!s->vnet) {
			fr_release(s->to_tap);
			n++;
		}
	}
	return n;
}

/*
 * Batched mode, wire -> Linux: the RT thread writes received frames to the
 * TAP itself, but only when its next deadline is far enough away that the
 * writes (a few microseconds each) cannot delay real-time work; otherwise
 * they wait in the ring for a later wake-up.  No helper thread, so no
 * context switch per batch.
 */
void rtn_vnic_write_direct(struct rtn_station *s, int64_t next_local)
{
	int64_t slack = next_local == INT64_MAX ? INT64_MAX
						 : next_local - rtn_station_local_now(s);

	if (slack <= VNIC_WRITE_SLACK_NS)
		return;
	write_to_tap(s, (uint32_t)(slack == INT64_MAX ? VNIC_RING
				   : (slack - VNIC_WRITE_SLACK_NS) / VNIC_WRITE_COST_NS + 1));
	/* the budget is an estimate: count every time the writes ran into real-time work */
	if (next_local != INT64_MAX && rtn_station_local_now(s) > next_local) {
		s->st.vnic_overruns++;
		s->vnic_overran = 1;
	}
}

/* Per-packet mode, wire -> Linux: a helper thread woken by the RT thread. */
static void *vnic_writer(void *arg)
{
	struct rtn_station *s = arg;

	pthread_setname_np(pthread_self(), "rtnet-vnic-wr");
	while (!s->vnic_stop) {
		struct pollfd p = { .fd = s->writer_efd, .events = POLLIN };

		if (poll(&p, 1, 200) > 0)
			efd_drain(s->writer_efd);
		write_to_tap(s, VNIC_RING);
	}
	return NULL;
}

/*
 * Per-packet mode with a vnet header: one read, its segments into the ring,
 * one wake-up for all of them.  What the ring has no room for is dropped.
 */
static void reader_segment(struct rtn_station *s)
{
	struct rtn_gso_seg g;
	struct frame_slot *f;
	ssize_t n = read(s->tap_fd, s->rd_buf, RTN_GSO_BUF);
	int len;

	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			tap_failed(s);
		return;
	}
	VSTAT_ADD(s, tap_reads, 1);
	if (rtn_gso_begin(&g, s->rd_buf, (uint32_t)n, RTN_TDMA_FRAME_MAX) < 0) {
		VSTAT_ADD(s, tx_bad, 1);
		return;
	}
	while (rtn_gso_left(&g)) {
		f = fr_prod(s->from_tap);
		if (!f) {
			VSTAT_ADD(s, tx_dropped, rtn_gso_left(&g));
			break;
		}
		len = rtn_gso_next(&g, f->data, sizeof(f->data));
		if (len <= 0)
			break;
		f->len = (uint32_t)len;
		VSTAT_ADD(s, tap_rx, 1);
		VSTAT_ADD(s, tap_rx_bytes, len);
		fr_commit(s->from_tap);
	}
	efd_signal(s->efd);
}

/* Per-packet mode: one wake-up of the RT thread for every packet. */
static void *vnic_reader(void *arg)
{
	struct rtn_station *s = arg;

	pthread_setname_np(pthread_self(), "rtnet-vnic-rd");
	while (!s->vnic_stop && tap_usable(s)) {
		struct pollfd p[2] = { { .fd = s->tap_fd, .events = POLLIN },
				       { .fd = s->reader_stop_efd, .events = POLLIN } };
		struct frame_slot *f;
		ssize_t n;

		if (poll(p, 2, 200) <= 0 || !(p[0].revents & POLLIN)) {
			if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
				tap_failed(s);
				break;	/* TAP deleted under us */
			}
			continue;
		}
		if (s->vnet) {
			reader_segment(s);
			continue;
		}
		f = fr_prod(s->from_tap);
		if (!f) {
			uint8_t sink[RTN_TDMA_FRAME_MAX];

			if (read(s->tap_fd, sink, sizeof(sink)) > 0)
				VSTAT_ADD(s, tx_dropped, 1);
			continue;
		}
		n = read(s->tap_fd, f->data, sizeof(f->data));
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			tap_failed(s);
			break;
		}
		if (n <= 0)
			continue;
		f->len = n;
		VSTAT_ADD(s, tap_reads, 1);
		VSTAT_ADD(s, tap_rx, 1);
		VSTAT_ADD(s, tap_rx_bytes, n);
		fr_commit(s->from_tap);
		efd_signal(s->efd);
	}
	return NULL;
}
/* ---- attach and detach ------------------------------------------------------ */

void rtn_vnic_release(struct rtn_station *s)
{
	s->vnic_stop = 1;
	if (s->reader_on) {
		efd_signal(s->reader_stop_efd);
		pthread_join(s->reader, NULL);
	}
	if (s->writer_on) {
		efd_signal(s->writer_efd);
		pthread_join(s->writer, NULL);
	}
	s->reader_on = s->writer_on = 0;
	if (s->tap_fd >= 0)
		close(s->tap_fd);
	if (s->writer_efd >= 0)
		close(s->writer_efd);
	if (s->reader_stop_efd >= 0)
		close(s->reader_stop_efd);
	s->tap_fd = s->writer_efd = s->reader_stop_efd = -1;
	free(s->to_tap);
	free(s->from_tap);
	s->to_tap = s->from_tap = NULL;
	free(s->gso_buf);
	free(s->rd_buf);
	free(s->gro_buf);
	s->gso_buf = s->rd_buf = s->gro_buf = NULL;
	s->vnet = 0;
}

/*
 * Whether the TAP delivers and takes a vnet header (IFF_VNET_HDR), asked of
 * the device itself so the caller's API stays the same.  0 no, 1 yes, or a
 * negative errno for a header size other than the 10-byte virtio_net_hdr.
 */
static int tap_has_vnet_hdr(int fd)
{
	struct ifreq ifr;
	int sz = 0;

	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr) < 0 || !(ifr.ifr_flags & IFF_VNET_HDR))
		return 0;	/* not a TAP (a test's socket), or one without the header */
	if (ioctl(fd, TUNGETVNETHDRSZ, &sz) < 0 || sz != RTN_VNET_HDR_LEN)
		return rtn_set_error(-EINVAL, "VNIC: TAP vnet header of %d bytes, only %d supported",
				     sz, RTN_VNET_HDR_LEN);
	return 1;
}

int rtn_station_vnic_attach(struct rtn_station *s, int tap_fd, int mode, uint32_t slot)
{
	int rc = 0;

	rtn_clear_error();
	if (mode != RTN_VNIC_BATCHED && mode != RTN_VNIC_PER_PACKET)
		return rtn_set_error(-EINVAL, "VNIC mode must be batched or per-packet");
	if (slot >= RTN_TDMA_MAX_SLOTS)
		return rtn_set_error(-EINVAL, "VNIC slot %u out of range", slot);
	pthread_mutex_lock(&s->ctl_lock);
	if (s->tap_fd >= 0) {
		rc = rtn_set_error(-EBUSY, "a VNIC is already attached");
		goto out;
	}
	s->tap_fd = fcntl(tap_fd, F_DUPFD_CLOEXEC, 0);
	s->writer_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->reader_stop_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->to_tap = aligned_alloc(64, sizeof(struct frame_ring));
	s->from_tap = aligned_alloc(64, sizeof(struct frame_ring));
	if (s->tap_fd < 0 || s->writer_efd < 0 || s->reader_stop_efd < 0 ||
	    !s->to_tap || !s->from_tap) {
		rc = rtn_set_error(-ENOMEM, "VNIC: cannot allocate its rings and descriptors");
		rtn_vnic_release(s);
		goto out;
	}
	rc = tap_has_vnet_hdr(s->tap_fd);
	if (rc < 0) {
		rtn_vnic_release(s);
		goto out;
	}
	s->vnet = rc;
	rc = 0;
	if (s->vnet) {
		s->gso_buf = malloc(RTN_GSO_BUF);
		s->rd_buf = malloc(RTN_GSO_BUF);
		s->gro_buf = malloc(RTN_GSO_BUF);
		if (!s->gso_buf || !s->rd_buf || !s->gro_buf) {
			rc = rtn_set_error(-ENOMEM, "VNIC: cannot allocate its GSO buffers");
			rtn_vnic_release(s);
			goto out;
		}
		memset(&s->gso, 0, sizeof(s->gso));
		rtn_gro_init(&s->gro, s->gro_buf, RTN_GSO_BUF);
	}
	fcntl(s->tap_fd, F_SETFL, fcntl(s->tap_fd, F_GETFL) | O_NONBLOCK);
	memset(s->to_tap, 0, sizeof(struct frame_ring));
	memset(s->from_tap, 0, sizeof(struct frame_ring));
	s->vnic_mode = mode;
	s->vnic_slot = slot;
	s->vnic_stop = 0;
	s->tap_dead = 0;
	/* batched: the RT thread does both directions itself (vnic_write_direct) */
	if (mode == RTN_VNIC_PER_PACKET) {
		if (pthread_create(&s->writer, NULL, vnic_writer, s) == 0)
			s->writer_on = 1;
		if (pthread_create(&s->reader, NULL, vnic_reader, s) == 0)
			s->reader_on = 1;
	}
	if (mode == RTN_VNIC_PER_PACKET && (!s->writer_on || !s->reader_on)) {
		rc = rtn_set_error(-EAGAIN, "VNIC: cannot start its threads");
		rtn_vnic_release(s);
		goto out;
	}
	rtn_station_post(s, CMD_VNIC_ATTACH, 0);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_vnic_detach(struct rtn_station *s)
{
	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	rtn_station_post(s, CMD_VNIC_DETACH, 0);
	rtn_vnic_release(s);
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}
