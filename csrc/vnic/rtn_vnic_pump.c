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
#include "rtn_vnic_gso.h"
#include "rtn_vnic_priv.h"

#define VNIC_RING 512 /* frames between the RT thread and a VNIC helper */
#define VNIC_PRIO 31  /* RTnet: NRT traffic is the lowest priority */
/* batched VNIC: the RT thread writes to the TAP only with this much time to spare */
#define VNIC_WRITE_SLACK_NS 100000
#define VNIC_WRITE_COST_NS  10000 /* budget per TAP write (netif_rx included) */

/* VNIC counters are bumped by the RT thread and the VNIC helper threads alike */
#define VSTAT_ADD(v, field, n) __atomic_fetch_add(&(v)->s->st.vnic.field, (n), __ATOMIC_RELAXED)

/* An SPSC ring of whole frames (VNIC <-> RT thread). */
struct frame_ring {
	uint32_t head __attribute__((aligned(64)));
	uint32_t tail __attribute__((aligned(64)));
	struct frame_slot slot[VNIC_RING];
};

struct rtn_vnic {
	struct rtn_station *s; /* its clock, eventfd, MAC and counters */
	int tap_fd;
	int mode;		     /* RTN_VNIC_BATCHED or RTN_VNIC_PER_PACKET */
	uint32_t slot;		     /* TDMA: the slot its frames go in */
	struct frame_ring *to_tap;   /* RT -> writer thread */
	struct frame_ring *from_tap; /* reader thread -> RT (per-packet mode) */
	int writer_efd, reader_stop_efd;
	pthread_t writer, reader;
	int writer_on, reader_on;
	volatile int stop;
	int tap_dead; /* the TAP went away: stop touching it */
	int overran;  /* the last TAP writes ran past a deadline */
	/*
	 * IFF_VNET_HDR: TAP reads are super-packets cut here into wire frames,
	 * TAP writes are merged segments.  Each buffer has one user: gso_buf
	 * the RT thread (batched), rd_buf the reader thread (per-packet),
	 * gro_buf whoever writes to the TAP (RT thread or writer thread).
	 */
	int vnet;
	uint8_t *gso_buf, *rd_buf, *gro_buf;
	struct rtn_gso_seg gso; /* the super-packet being sent, kept across slots */
	struct rtn_gro gro;
	uint8_t scratch[RTN_TDMA_FRAME_MAX + 8];
};

/* ---- ring helpers -------------------------------------------------------- */

static inline struct frame_slot *fr_prod(struct frame_ring *r)
{
	if (r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= VNIC_RING)
		return NULL;
	return &r->slot[r->head % VNIC_RING];
}

static inline void fr_commit(struct frame_ring *r)
{
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
}

static inline struct frame_slot *fr_peek(struct frame_ring *r)
{
	if (r->tail == __atomic_load_n(&r->head, __ATOMIC_ACQUIRE))
		return NULL;
	return &r->slot[r->tail % VNIC_RING];
}

static inline void fr_release(struct frame_ring *r)
{
	__atomic_store_n(&r->tail, r->tail + 1, __ATOMIC_RELEASE);
}

/*
 * A read or write error other than EAGAIN/EINTR means the TAP is gone
 * (EBADFD/EIO after the device was deleted).  Count it once and stop
 * touching the fd: polling a dead TAP returns POLLERR at once, which
 * would make the RT thread spin at real-time priority.
 */
static inline void tap_failed(struct rtn_vnic *v)
{
	if (!__atomic_exchange_n(&v->tap_dead, 1, __ATOMIC_ACQ_REL))
		VSTAT_ADD(v, tap_errors, 1);
}

static inline int tap_usable(const struct rtn_vnic *v)
{
	return !__atomic_load_n(&v->tap_dead, __ATOMIC_ACQUIRE);
}

/* ---- Linux -> wire ---------------------------------------------------------- */

static int rtn_vnic_encap(struct rtn_vnic *v, const uint8_t *inner, uint32_t len, uint8_t *out,
			  uint32_t cap)
{
	return rtn_rtmac_tunnel_encap(out, cap, inner, len, v->s->o.mac);
}

/* One read from the TAP, without blocking, counted.  0: none waiting, or the TAP died. */
static ssize_t tap_read(struct rtn_vnic *v, uint8_t *buf, size_t cap)
{
	ssize_t n = read(v->tap_fd, buf, cap);

	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			tap_failed(v);
		return 0;
	}
	VSTAT_ADD(v, tap_reads, 1);
	return n;
}

/*
 * The next frame for the wire, into @p inner: the rest of the super-packet
 * read earlier (so a slot's budget never cuts one short), else a new read.
 * Returns its length, 0 if the TAP has nothing (or died), -1 if a malformed
 * packet was counted and dropped (call again).
 */
static int rtn_vnic_pull(struct rtn_vnic *v, uint8_t *inner, uint32_t cap)
{
	int n;

	if (!v->vnet) {
		n = (int)tap_read(v, inner, cap);
	} else {
		if (!rtn_gso_left(&v->gso)) {
			ssize_t r = tap_read(v, v->gso_buf, RTN_GSO_BUF);

			if (!r)
				return 0;
			if (rtn_gso_begin(&v->gso, v->gso_buf, (uint32_t)r, cap) < 0) {
				VSTAT_ADD(v, tx_bad, 1);
				return -1;
			}
		}
		n = rtn_gso_next(&v->gso, inner, cap);
		if (n <= 0) { /* cannot happen: rtn_gso_begin checked the sizes */
			v->gso.index = v->gso.nseg;
			VSTAT_ADD(v, tx_bad, 1);
			return -1;
		}
	}
	if (n > 0) {
		VSTAT_ADD(v, tap_rx, 1);
		VSTAT_ADD(v, tap_rx_bytes, n);
	}
	return n;
}

/*
 * The batched VNIC's next wire frame: the TAP's next packet (or segment of a
 * super-packet), encapsulated into @p out.  Its length, 0 when the TAP has
 * nothing, or -1 for a packet dropped (and counted).
 */
static int rtn_vnic_next_frame(struct rtn_vnic *v, uint8_t *out, uint32_t cap)
{
	uint8_t inner[RTN_TDMA_FRAME_MAX];
	int n = rtn_vnic_pull(v, inner, sizeof(inner)), len;

	if (n <= 0)
		return n; /* a bad packet is counted by rtn_vnic_pull */
	len = rtn_vnic_encap(v, inner, n, out, cap);
	if (len < 0) {
		VSTAT_ADD(v, tx_dropped, 1);
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
void rtn_vnic_refill(struct rtn_vnic *v, struct rtn_tdma *e, uint32_t slot_id, int64_t now,
		     uint32_t link_rate_mbps)
{
	uint32_t queue_slot, size, depth;
	int64_t budget, queued;

	if (v->mode != RTN_VNIC_BATCHED)
		return;
	if (rtn_tdma_shares_queue(e, slot_id, v->slot))
		queue_slot = v->slot;
	else if (rtn_tdma_slot_size(e, slot_id) >= rtn_tdma_slot_size(e, v->slot))
		queue_slot =
			slot_id; /* what the RT frames leave of this occurrence: VNIC frames fit it */
	else
		return;
	size = rtn_tdma_slot_size(e, queue_slot);
	budget = rtn_tdma_slot_budget(e, slot_id, now);
	depth = rtn_tdma_queue_depth(e, queue_slot);
	queued = (int64_t)depth * rtn_wire_time_ns(size + ETH_HLEN_RTN, link_rate_mbps);
	while (queued < budget && depth < RTN_TDMA_QUEUE_MAX && tap_usable(v)) {
		int len = rtn_vnic_next_frame(v, v->scratch, sizeof(v->scratch));

		if (!len)
			break;
		if (len < 0)
			continue;
		if (rtn_tdma_enqueue(e, queue_slot, VNIC_PRIO, v->scratch, len, -1) < 0) {
			VSTAT_ADD(v, tx_dropped, 1);
			continue;
		}
		depth++;
		queued += rtn_wire_time_ns(len, link_rate_mbps);
	}
}

/* Batched VNIC: the TAP's frames into @p q (NoMAC's FIFO) while it has room. */
void rtn_vnic_fill(struct rtn_vnic *v, const struct frame_sink *q)
{
	struct frame_slot *f;

	if (v->mode != RTN_VNIC_BATCHED)
		return;
	while ((f = q->slot(q->q)) && tap_usable(v)) {
		int len = rtn_vnic_next_frame(v, f->data, RTN_TDMA_FRAME_MAX);

		if (!len)
			break;
		if (len < 0)
			continue;
		f->len = len;
		q->commit(q->q);
	}
}

/* Per-packet VNIC: whatever the reader thread handed over, to the discipline's @p queue. */
void rtn_vnic_take(struct rtn_vnic *v, rtn_vnic_queue_fn queue, void *priv)
{
	struct frame_slot *f;

	if (v->mode != RTN_VNIC_PER_PACKET)
		return;
	while ((f = fr_peek(v->from_tap))) {
		int len = rtn_vnic_encap(v, f->data, f->len, v->scratch, sizeof(v->scratch));

		if (len < 0 || queue(priv, v->slot, VNIC_PRIO, v->scratch, len) < 0)
			VSTAT_ADD(v, tx_dropped, 1);
		fr_release(v->from_tap);
	}
}

/* ---- wire -> Linux ---------------------------------------------------------- */

int rtn_vnic_rx(struct rtn_vnic *v, const uint8_t *frame, uint32_t len)
{
	struct frame_slot *f = fr_prod(v->to_tap);
	int n;

	if (!f) {
		VSTAT_ADD(v, rx_dropped, 1);
		return 0;
	}
	n = rtn_rtmac_tunnel_decap(f->data, sizeof(f->data), frame, len);
	/*
	 * The inner type must be an EtherType (RTnet stores h_proto there) and
	 * something must follow the header: Linux would drop anything else
	 * silently, so count it here where it can be seen.
	 */
	if (n <= ETH_HLEN_RTN || rtn_get_be16(f->data + 12) < 0x0600) {
		VSTAT_ADD(v, rx_bad, 1);
		return 0;
	}
	f->len = n;
	fr_commit(v->to_tap);
	return 1;
}

/* A tunnel frame with a bad RTmac header: the VNIC's loss. */
void rtn_vnic_rx_bad(struct rtn_vnic *v)
{
	VSTAT_ADD(v, rx_bad, 1);
}

/* Frames were queued for the TAP in this round: the per-packet writer takes them. */
void rtn_vnic_rx_done(struct rtn_vnic *v)
{
	if (v->writer_on)
		efd_signal(v->writer_efd);
}

/*
 * With a vnet header: the frame at the ring's tail and the segments of the
 * same TCP flow right behind it, merged into v->gro.  Returns the frames
 * taken (at most @p max); their count and bytes in *segs and *bytes.
 */
static uint32_t gro_collect(struct rtn_vnic *v, uint32_t max, uint32_t *segs, uint64_t *bytes)
{
	struct frame_slot *f = fr_peek(v->to_tap);
	uint32_t n = 1;
	int open = rtn_gro_begin(&v->gro, f->data, f->len);

	*bytes = f->len;
	fr_release(v->to_tap);
	while (open > 0 && n < max && (f = fr_peek(v->to_tap)) &&
	       rtn_gro_append(&v->gro, f->data, f->len)) {
		*bytes += f->len;
		fr_release(v->to_tap);
		n++;
	}
	*segs = open < 0 ? 0 : v->gro.nseg;
	return n;
}

/* Write up to @p max received frames to the TAP; returns how many were taken. */
static uint32_t write_to_tap(struct rtn_vnic *v, uint32_t max)
{
	struct frame_slot *f;
	uint32_t n = 0;

	while (n < max && (f = fr_peek(v->to_tap))) {
		const uint8_t *buf = f->data;
		uint32_t len = f->len, segs = 1;
		uint64_t bytes = f->len;
		ssize_t w;

		if (v->vnet) {
			n += gro_collect(v, max - n, &segs, &bytes);
			if (!segs) { /* larger than a super-packet: cannot be */
				VSTAT_ADD(v, rx_dropped, 1);
				continue;
			}
			len = rtn_gro_finish(&v->gro);
			buf = v->gro.out;
		}
		w = tap_usable(v) ? write(v->tap_fd, buf, len) : -1;
		if (w < 0) {
			/* a dead TAP, or a full one (EAGAIN): the frames are lost */
			if (tap_usable(v) && errno != EAGAIN && errno != EINTR)
				tap_failed(v);
			VSTAT_ADD(v, rx_dropped, segs);
		} else {
			VSTAT_ADD(v, tap_writes, 1);
			VSTAT_ADD(v, tap_tx, segs);
			VSTAT_ADD(v, tap_tx_bytes, bytes);
		}
		if (!v->vnet) {
			fr_release(v->to_tap);
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
void rtn_vnic_flush(struct rtn_vnic *v, int64_t next_local)
{
	int64_t slack;

	if (v->mode != RTN_VNIC_BATCHED)
		return;
	slack = next_local == INT64_MAX ? INT64_MAX : next_local - rtn_station_local_now(v->s);
	if (slack <= VNIC_WRITE_SLACK_NS)
		return;
	write_to_tap(v, (uint32_t)(slack == INT64_MAX ?
					   VNIC_RING :
					   (slack - VNIC_WRITE_SLACK_NS) / VNIC_WRITE_COST_NS + 1));
	/* the budget is an estimate: count every time the writes ran into real-time work */
	if (next_local != INT64_MAX && rtn_station_local_now(v->s) > next_local) {
		v->s->st.vnic_overruns++;
		v->overran = 1;
	}
}

int rtn_vnic_overran(struct rtn_vnic *v)
{
	int was = v->overran;

	v->overran = 0;
	return was;
}

int rtn_vnic_paced(const struct rtn_vnic *v)
{
	return v->mode == RTN_VNIC_BATCHED;
}

int rtn_vnic_watch_fd(const struct rtn_vnic *v)
{
	return v->mode == RTN_VNIC_BATCHED && tap_usable(v) ? v->tap_fd : -1;
}

void rtn_vnic_kicked(struct rtn_vnic *v)
{
	if (v->mode == RTN_VNIC_PER_PACKET)
		VSTAT_ADD(v, wakeups, 1);
}

void rtn_vnic_tap_events(struct rtn_vnic *v, short revents)
{
	if (revents & POLLIN)
		VSTAT_ADD(v, wakeups, 1);
	if (revents & (POLLERR | POLLHUP | POLLNVAL))
		tap_failed(v);
}

int rtn_vnic_mode(const struct rtn_vnic *v)
{
	return v ? v->mode : RTN_VNIC_OFF;
}

/* Per-packet mode, wire -> Linux: a helper thread woken by the RT thread. */
static void *vnic_writer(void *arg)
{
	struct rtn_vnic *v = arg;

	pthread_setname_np(pthread_self(), "rtnet-vnic-wr");
	while (!v->stop) {
		struct pollfd p = { .fd = v->writer_efd, .events = POLLIN };

		if (poll(&p, 1, 200) > 0)
			efd_drain(v->writer_efd);
		write_to_tap(v, VNIC_RING);
	}
	return NULL;
}

/*
 * Per-packet mode with a vnet header: one read, its segments into the ring,
 * one wake-up for all of them.  What the ring has no room for is dropped.
 */
static void reader_segment(struct rtn_vnic *v)
{
	struct rtn_gso_seg g;
	struct frame_slot *f;
	ssize_t n = read(v->tap_fd, v->rd_buf, RTN_GSO_BUF);
	int len;

	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			tap_failed(v);
		return;
	}
	VSTAT_ADD(v, tap_reads, 1);
	if (rtn_gso_begin(&g, v->rd_buf, (uint32_t)n, RTN_TDMA_FRAME_MAX) < 0) {
		VSTAT_ADD(v, tx_bad, 1);
		return;
	}
	while (rtn_gso_left(&g)) {
		f = fr_prod(v->from_tap);
		if (!f) {
			VSTAT_ADD(v, tx_dropped, rtn_gso_left(&g));
			break;
		}
		len = rtn_gso_next(&g, f->data, sizeof(f->data));
		if (len <= 0)
			break;
		f->len = (uint32_t)len;
		VSTAT_ADD(v, tap_rx, 1);
		VSTAT_ADD(v, tap_rx_bytes, len);
		fr_commit(v->from_tap);
	}
	efd_signal(v->s->efd);
}

/* Per-packet mode: one wake-up of the RT thread for every packet. */
static void *vnic_reader(void *arg)
{
	struct rtn_vnic *v = arg;

	pthread_setname_np(pthread_self(), "rtnet-vnic-rd");
	while (!v->stop && tap_usable(v)) {
		struct pollfd p[2] = { { .fd = v->tap_fd, .events = POLLIN },
				       { .fd = v->reader_stop_efd, .events = POLLIN } };
		struct frame_slot *f;
		ssize_t n;

		if (poll(p, 2, 200) <= 0 || !(p[0].revents & POLLIN)) {
			if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
				tap_failed(v);
				break; /* TAP deleted under us */
			}
			continue;
		}
		if (v->vnet) {
			reader_segment(v);
			continue;
		}
		f = fr_prod(v->from_tap);
		if (!f) {
			uint8_t sink[RTN_TDMA_FRAME_MAX];

			if (read(v->tap_fd, sink, sizeof(sink)) > 0)
				VSTAT_ADD(v, tx_dropped, 1);
			continue;
		}
		n = read(v->tap_fd, f->data, sizeof(f->data));
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			tap_failed(v);
			break;
		}
		if (n <= 0)
			continue;
		f->len = n;
		VSTAT_ADD(v, tap_reads, 1);
		VSTAT_ADD(v, tap_rx, 1);
		VSTAT_ADD(v, tap_rx_bytes, n);
		fr_commit(v->from_tap);
		efd_signal(v->s->efd);
	}
	return NULL;
}
/* ---- attach and detach ------------------------------------------------------ */

void rtn_vnic_destroy(struct rtn_vnic *v)
{
	if (!v)
		return;
	v->stop = 1;
	if (v->reader_on) {
		efd_signal(v->reader_stop_efd);
		pthread_join(v->reader, NULL);
	}
	if (v->writer_on) {
		efd_signal(v->writer_efd);
		pthread_join(v->writer, NULL);
	}
	if (v->tap_fd >= 0)
		close(v->tap_fd);
	if (v->writer_efd >= 0)
		close(v->writer_efd);
	if (v->reader_stop_efd >= 0)
		close(v->reader_stop_efd);
	free(v->to_tap);
	free(v->from_tap);
	free(v->gso_buf);
	free(v->rd_buf);
	free(v->gro_buf);
	free(v);
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
		return 0; /* not a TAP (a test's socket), or one without the header */
	if (ioctl(fd, TUNGETVNETHDRSZ, &sz) < 0 || sz != RTN_VNET_HDR_LEN)
		return rtn_set_error(-EINVAL,
				     "VNIC: TAP vnet header of %d bytes, only %d supported", sz,
				     RTN_VNET_HDR_LEN);
	return 1;
}

/* A VNIC on @p tap_fd (duplicated), its rings and buffers; its threads not yet started. */
static int vnic_create(struct rtn_station *s, int tap_fd, int mode, uint32_t slot,
		       struct rtn_vnic **out)
{
	struct rtn_vnic *v = aligned_alloc(64, (sizeof(*v) + 63) & ~(size_t)63);
	int rc;

	if (!v)
		return rtn_set_error(-ENOMEM, "VNIC: out of memory");
	memset(v, 0, sizeof(*v));
	v->s = s;
	v->mode = mode;
	v->slot = slot;
	v->tap_fd = fcntl(tap_fd, F_DUPFD_CLOEXEC, 0);
	v->writer_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	v->reader_stop_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	v->to_tap = aligned_alloc(64, sizeof(struct frame_ring));
	v->from_tap = aligned_alloc(64, sizeof(struct frame_ring));
	if (v->tap_fd < 0 || v->writer_efd < 0 || v->reader_stop_efd < 0 || !v->to_tap ||
	    !v->from_tap) {
		rc = rtn_set_error(-ENOMEM, "VNIC: cannot allocate its rings and descriptors");
		goto fail;
	}
	rc = tap_has_vnet_hdr(v->tap_fd);
	if (rc < 0)
		goto fail;
	v->vnet = rc;
	if (v->vnet) {
		v->gso_buf = malloc(RTN_GSO_BUF);
		v->rd_buf = malloc(RTN_GSO_BUF);
		v->gro_buf = malloc(RTN_GSO_BUF);
		if (!v->gso_buf || !v->rd_buf || !v->gro_buf) {
			rc = rtn_set_error(-ENOMEM, "VNIC: cannot allocate its GSO buffers");
			goto fail;
		}
		rtn_gro_init(&v->gro, v->gro_buf, RTN_GSO_BUF);
	}
	fcntl(v->tap_fd, F_SETFL, fcntl(v->tap_fd, F_GETFL) | O_NONBLOCK);
	memset(v->to_tap, 0, sizeof(struct frame_ring));
	memset(v->from_tap, 0, sizeof(struct frame_ring));
	*out = v;
	return 0;
fail:
	rtn_vnic_destroy(v);
	return rc;
}

/* ---- for the harnesses (csrc/fuzz/) ------------------------------------------- */

/*
 * Back to the state after attach, in @p mode on @p slot, with or without
 * a vnet header (the GSO buffers allocated when missing, as attach does for
 * a TAP with IFF_VNET_HDR): empty rings, no GSO packet in flight, nothing
 * unread on the TAP.
 */
int rtn_vnic_reset(struct rtn_vnic *v, int mode, uint32_t slot, int vnet)
{
	if (!v->gso_buf)
		v->gso_buf = malloc(RTN_GSO_BUF);
	if (!v->rd_buf)
		v->rd_buf = malloc(RTN_GSO_BUF);
	if (!v->gro_buf)
		v->gro_buf = malloc(RTN_GSO_BUF);
	if (!v->gso_buf || !v->rd_buf || !v->gro_buf)
		return rtn_set_error(-ENOMEM, "VNIC: cannot allocate its GSO buffers");
	v->mode = mode;
	v->slot = slot;
	v->to_tap->head = v->to_tap->tail = 0;
	v->from_tap->head = v->from_tap->tail = 0;
	v->tap_dead = 0;
	v->overran = 0;
	v->vnet = vnet;
	memset(&v->gso, 0, sizeof(v->gso));
	rtn_gro_init(&v->gro, v->gro_buf, RTN_GSO_BUF);
	while (read(v->tap_fd, v->rd_buf, RTN_GSO_BUF) >= 0)
		;
	return 0;
}

/* Write everything the RT thread queued for the TAP now; how many frames were taken. */
uint32_t rtn_vnic_write_all(struct rtn_vnic *v)
{
	return write_to_tap(v, VNIC_RING);
}

/* On the RT thread: the VNIC it uses from now on (NULL: none). */
static void vnic_go_live(struct rtn_station *s, uintptr_t v)
{
	s->vnic = (struct rtn_vnic *)v;
}

int rtn_station_vnic_attach(struct rtn_station *s, int tap_fd, int mode, uint32_t slot)
{
	struct rtn_vnic *v = NULL;
	int rc = 0;

	rtn_clear_error();
	if (mode != RTN_VNIC_BATCHED && mode != RTN_VNIC_PER_PACKET)
		return rtn_set_error(-EINVAL, "VNIC mode must be batched or per-packet");
	if (slot >= RTN_TDMA_MAX_SLOTS)
		return rtn_set_error(-EINVAL, "VNIC slot %u out of range", slot);
	pthread_mutex_lock(&s->ctl_lock);
	if (s->vnic_ctl) {
		rc = rtn_set_error(-EBUSY, "a VNIC is already attached");
		goto out;
	}
	rc = vnic_create(s, tap_fd, mode, slot, &v);
	if (rc)
		goto out;
	/* batched: the RT thread does both directions itself (rtn_vnic_flush) */
	if (mode == RTN_VNIC_PER_PACKET) {
		if (pthread_create(&v->writer, NULL, vnic_writer, v) == 0)
			v->writer_on = 1;
		if (pthread_create(&v->reader, NULL, vnic_reader, v) == 0)
			v->reader_on = 1;
	}
	if (mode == RTN_VNIC_PER_PACKET && (!v->writer_on || !v->reader_on)) {
		rc = rtn_set_error(-EAGAIN, "VNIC: cannot start its threads");
		rtn_vnic_destroy(v);
		goto out;
	}
	s->vnic_ctl = v;
	rtn_station_post(s, vnic_go_live, (uintptr_t)v);
out:
	pthread_mutex_unlock(&s->ctl_lock);
	return rc;
}

int rtn_station_vnic_detach(struct rtn_station *s)
{
	rtn_clear_error();
	pthread_mutex_lock(&s->ctl_lock);
	rtn_station_post(s, vnic_go_live, 0);
	rtn_vnic_destroy(s->vnic_ctl);
	s->vnic_ctl = NULL;
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}
