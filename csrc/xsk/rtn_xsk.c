/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xsk.c
 * @brief AF_XDP socket of the real-time path: UMEM, socket, rings, frames.
 *
 * UMEM layout: the first half of the frames feeds the fill ring (RX), the
 * second half is a stack of free TX frames that the completion ring refills.
 * An RX frame goes straight back to the fill ring once it is consumed, so
 * neither direction ever allocates.  Past the two halves lie the frames
 * lent to the socket's owner (rtn_xsk_lent_area): a frame built there is
 * sent in place, and its completion is counted instead of freed.  The XDP
 * program in front of the socket and its maps are rtn_xsk_prog.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_xdp.h>

#include "rtn_core.h"
#include "rtn_time_inline.h"
#include "rtn_ipv4_inline.h"
#include "rtn_xsk_priv.h"
#include "rtn_xsk_stamp_priv.h"

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

/* ---- UMEM and socket ---- */

static int fill_ring_init(struct rtn_xsk *x)
{
	uint32_t n = x->frames / 2, idx, i;

	if (xsk_ring_prod__reserve(&x->fill, n, &idx) != n)
		return rtn_set_error(-ENOSPC, "%s: fill ring smaller than %u frames", x->ifname, n);
	for (i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&x->fill, idx + i) = (uint64_t)i * x->frame_size;
	xsk_ring_prod__submit(&x->fill, n);
	for (i = 0; i < n; i++)
		x->tx_free[i] = (uint64_t)(n + i) * x->frame_size;
	x->n_tx_free = n;
	return 0;
}

static int socket_error(struct rtn_xsk *x, int err, int zerocopy)
{
	switch (err) {
	case -EBUSY:
		return rtn_set_error(err, "%s: queue %u is already in use by another AF_XDP socket",
				     x->ifname, x->queue);
	case -EPERM:
		return rtn_set_error(err, "%s: AF_XDP sockets need CAP_NET_RAW (run as root)",
				     x->ifname);
	case -EINVAL:
		return rtn_set_error(err, "%s: cannot bind queue %u (does the queue exist?)",
				     x->ifname, x->queue);
	case -EOPNOTSUPP:
		if (zerocopy)
			return rtn_set_error(err,
					     "%s: driver has no AF_XDP zero-copy support "
					     "(copy mode works: zero-copy auto or off)",
					     x->ifname);
		/* fall through */
	default:
		return rtn_set_error(err, "%s: AF_XDP socket on queue %u failed: %s", x->ifname,
				     x->queue, strerror(-err));
	}
}

static void set_busy_poll(struct rtn_xsk *x)
{
	int one = 1, usecs = 20, budget = 64;

	/* Best effort: the knobs only help drivers with NAPI busy-poll support. */
	setsockopt(x->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one));
	setsockopt(x->fd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof(usecs));
	setsockopt(x->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget));
}

static int create_socket(struct rtn_xsk *x, const struct rtn_xsk_opts *o, int zerocopy)
{
	struct xsk_umem_config ucfg = {
		.fill_size = x->frames / 2,
		.comp_size = x->frames / 2,
		.frame_size = x->frame_size,
		.frame_headroom = 0,
		.flags = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = x->frames / 2,
		.tx_size = x->frames / 2,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = x->xdp_flags,
		.bind_flags = XDP_USE_NEED_WAKEUP | (zerocopy ? XDP_ZEROCOPY : XDP_COPY),
	};
	int err;

	x->lend_at = (uint64_t)x->frames * x->frame_size;
	x->area_size = (size_t)(x->frames + x->lend_frames) * x->frame_size;
	x->area = mmap(NULL, x->area_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		return rtn_set_error(-errno, "UMEM of %zu bytes: %s", x->area_size,
				     strerror(errno));
	}
	x->tx_free = calloc(x->frames / 2, sizeof(*x->tx_free));
	if (!x->tx_free)
		return rtn_set_error(-ENOMEM, "out of memory");

	err = xsk_umem__create(&x->umem, x->area, x->area_size, &x->fill, &x->comp, &ucfg);
	if (err) {
		x->umem = NULL;
		if (err == -EPERM)
			return rtn_set_error(err, "AF_XDP UMEM needs CAP_NET_RAW (run as root)");
		return rtn_set_error(err, "AF_XDP UMEM creation failed: %s", strerror(-err));
	}
	err = xsk_socket__create(&x->xsk, x->ifname, x->queue, x->umem, &x->rx, &x->tx, &scfg);
	if (err) {
		x->xsk = NULL;
		return socket_error(x, err, zerocopy);
	}
	x->fd = xsk_socket__fd(x->xsk);
	x->copy_mode = !zerocopy;

	err = fill_ring_init(x);
	if (err)
		return err;

	err = rtn_xsk_prog_add_socket(x);
	if (err)
		return err;
	if (x->busy_poll)
		set_busy_poll(x);
	return 0;
}
/* The socket and its UMEM registration, where they exist. */
static void delete_socket(struct rtn_xsk *x)
{
	if (x->xsk)
		xsk_socket__delete(x->xsk);
	x->xsk = NULL;
	x->fd = -1;
	if (x->umem)
		xsk_umem__delete(x->umem);
	x->umem = NULL;
}

/* The UMEM area and the free list of its TX frames, where they exist. */
static void free_area(struct rtn_xsk *x)
{
	if (x->area)
		munmap(x->area, x->area_size);
	x->area = NULL;
	free(x->tx_free);
	x->tx_free = NULL;
	x->n_tx_free = 0;
}

/* Undo create_socket() (also a half-done one), leaving the XDP program attached. */
static void release_socket(struct rtn_xsk *x)
{
	delete_socket(x);
	free_area(x);
}

int rtn_xsk_open(const struct rtn_xsk_opts *o, struct rtn_xsk **out)
{
	struct rtn_xsk *x;
	int err;

	rtn_clear_error();
	*out = NULL;
	if (!o->ifname || !o->ifname[0] || strlen(o->ifname) >= IF_NAMESIZE)
		return rtn_set_error(-EINVAL, "bad interface name");
	if (o->frames < 64 || (o->frames & (o->frames - 1)))
		return rtn_set_error(-EINVAL, "frames must be a power of two >= 64, not %u",
				     o->frames);
	if (o->lend_frames > RTN_XSK_MAX_LEND)
		return rtn_set_error(-EINVAL, "at most %u frames lent, not %u", RTN_XSK_MAX_LEND,
				     o->lend_frames);
	if (o->n_ethertypes > RTN_XSK_MAX_ETHERTYPES)
		return rtn_set_error(-EINVAL, "at most %d extra EtherTypes",
				     RTN_XSK_MAX_ETHERTYPES);
	if (o->zerocopy < RTN_XSK_COPY || o->zerocopy > RTN_XSK_ZC_AUTO)
		return rtn_set_error(-EINVAL, "bad zero-copy setting %d", o->zerocopy);
	if (o->mode < RTN_XDP_MODE_AUTO || o->mode > RTN_XDP_MODE_SKB)
		return rtn_set_error(-EINVAL, "bad XDP mode %d", o->mode);

	x = calloc(1, sizeof(*x));
	if (!x)
		return rtn_set_error(-ENOMEM, "out of memory");
	snprintf(x->ifname, sizeof(x->ifname), "%s", o->ifname);
	x->queue = o->queue;
	x->frames = o->frames;
	x->lend_frames = o->lend_frames;
	x->frame_size = RTN_XSK_FRAME_SIZE;
	x->busy_poll = o->busy_poll;
	x->fd = -1;
	x->prog_fd = -1;
	x->counters_fd = -1;
	x->unbound_fd = -1;
	x->open = 1;
	x->netns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);

	x->ifindex = if_nametoindex(o->ifname);
	if (!x->ifindex) {
		err = rtn_set_error(-ENODEV, "%s: no such interface", o->ifname);
		goto fail;
	}
	err = rtn_xsk_prog_load(x, o);
	if (err)
		goto fail;
	err = rtn_xsk_prog_attach(x, o->mode);
	if (err)
		goto fail;
	err = create_socket(x, o, o->zerocopy != RTN_XSK_COPY);
	if (err && o->zerocopy == RTN_XSK_ZC_AUTO) {
		/* No zero-copy on this driver (or queue): start over in copy mode. */
		release_socket(x);
		rtn_clear_error();
		err = create_socket(x, o, 0);
	}
	if (err)
		goto fail;
	err = rtn_xsk_prog_steer(x, o);
	if (err)
		goto fail;
	x->st.mode = x->mode;
	x->st.zerocopy = !x->copy_mode;
	x->st.xdp_stamps = x->xdp_stamps;
	*out = x;
	return 0;
fail:
	rtn_xsk_close(x);
	return err;
}

/* Undo what rtn_xsk_open() did, step by step; the object itself stays. */
static void xsk_release(struct rtn_xsk *x)
{
	if (!x->open)
		return;
	/* Reverse order of rtn_xsk_open(); each step knows if it happened. */
	delete_socket(x);
	rtn_xsk_prog_release(x);
	free_area(x);
	if (x->netns_fd >= 0)
		close(x->netns_fd);
	x->netns_fd = -1;
	x->open = 0;
}

void rtn_xsk_close(struct rtn_xsk *x)
{
	if (!x)
		return;
	xsk_release(x);
	free(x);
}

int rtn_xsk_mode(const struct rtn_xsk *x)
{
	return x->mode;
}

const char *rtn_xsk_fallback_reason(const struct rtn_xsk *x)
{
	return x->fallback_reason;
}

int rtn_xsk_fd(const struct rtn_xsk *x)
{
	return x->fd;
}

uint32_t rtn_xsk_frame_size(const struct rtn_xsk *x)
{
	return x->frame_size;
}
int rtn_xsk_stats(const struct rtn_xsk *x, struct rtn_xsk_stats *out)
{
	rtn_clear_error();
	*out = x->st;
	out->tx_in_place = x->lent_sent;
	out->rx_kept = __atomic_load_n(&x->kept, __ATOMIC_RELAXED);
	if (x->open)
		rtn_xsk_prog_counters(x, out);
	return 0;
}

/* ---- data path ---- */

static inline void reap_completions(struct rtn_xsk *x)
{
	uint32_t idx, n, i;

	n = xsk_ring_cons__peek(&x->comp, x->frames / 2, &idx);
	for (i = 0; i < n; i++) {
		uint64_t addr = *xsk_ring_cons__comp_addr(&x->comp, idx + i);

		if (addr >= x->lend_at) /* the owner's: it counts them, in order */
			x->lent_done++;
		else
			x->tx_free[x->n_tx_free++] = addr;
	}
	if (n)
		xsk_ring_cons__release(&x->comp, n);
}

/* Descriptors submitted to the TX ring that the kernel has not taken yet. */
static inline uint32_t tx_unconsumed(const struct rtn_xsk *x)
{
	return *x->tx.producer - __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE);
}

/*
 * Copy mode transmits only inside the syscall, whatever the flag says, and
 * at most the kernel's per-call budget (32 frames) before it answers EAGAIN:
 * call again while that happens and the kernel keeps taking descriptors, so
 * a whole batch leaves in this kick instead of 32 frames per wake-up.
 *
 * The budget is left at 32 (XDP_MAX_TX_SKB_BUDGET could raise it).  A call's
 * frames leave back to back through veth and the peer's XDP program while
 * timer interrupts on that CPU can wait: on the lab VM one call taking a
 * whole 1 Gbit/s window (about 70 frames) held them off 100 to 400 us some
 * 2,000 times in 5 s of a VNIC TCP flow (the stall detector's records,
 * against 2 to 7 in 5 s idle), and a raw flood in calls of 64 frames 4,094
 * times against 27 in calls of 16.  In calls of 32 the flow left 21 to 23
 * (16: 32 to 76).  The extra calls cost: the VNIC's CPU per byte at 1000
 * Mbit/s modelled was 4.1 to 4.3 s/GB in calls of 32, 3.6 to 4.0 in one
 * call, 4.7 to 4.9 in calls of 16.  A kernel that takes nothing (the device
 * is busy) ends the loop; the next kick retries.
 */
static void kick_tx(struct rtn_xsk *x)
{
	uint32_t left;

	if (!x->copy_mode && !xsk_ring_prod__needs_wakeup(&x->tx))
		return;
	left = tx_unconsumed(x);
	do {
		uint32_t before = left;

		x->st.tx_kicks++;
		if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0 ||
		    (errno != EAGAIN && errno != EBUSY))
			return;
		left = tx_unconsumed(x);
		if (left >= before)
			return;
	} while (left && x->copy_mode);
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = v & 0xff;
		v >>= 8;
	}
}

/*
 * Whether @p frame lies wholly inside one lent frame (sent in place).  A
 * pointer anywhere else, into the RX half included, is copied as always.
 */
static inline int lent_frame(const struct rtn_xsk *x, const void *frame, uint32_t len)
{
	const uint8_t *lent = (const uint8_t *)x->area + x->lend_at;
	uintptr_t off = (uintptr_t)frame - (uintptr_t)lent;

	return x->lend_frames && (const uint8_t *)frame >= lent &&
	       off < (uintptr_t)x->lend_frames * x->frame_size &&
	       off % x->frame_size + len <= x->frame_size;
}

uint8_t *rtn_xsk_lent_area(struct rtn_xsk *x, uint32_t *n)
{
	*n = x->open && x->area ? x->lend_frames : 0;
	return *n ? (uint8_t *)x->area + x->lend_at : NULL;
}

uint64_t rtn_xsk_lent_sent(const struct rtn_xsk *x)
{
	return x->lent_sent;
}

uint64_t rtn_xsk_lent_done(struct rtn_xsk *x)
{
	if (x->open)
		reap_completions(x);
	return x->lent_done;
}

int rtn_xsk_send_by(struct rtn_xsk *x, const void *frame, uint32_t len, int stamp_offset,
		    int64_t stamp_add, int64_t deadline, int64_t *tx_ts)
{
	struct xdp_desc *desc;
	uint64_t addr;
	uint32_t idx;
	uint8_t *data;
	int64_t now;
	int in_place;

	rtn_clear_error();
	if (!x->open)
		return rtn_set_error(-EBADF, "AF_XDP socket is closed");
	if (len < 14 || len > x->frame_size)
		return rtn_set_error(-EINVAL, "frame length %u outside 14..%u", len, x->frame_size);
	if (stamp_offset >= 0 && (uint32_t)stamp_offset + 8 > len)
		return rtn_set_error(-EINVAL, "timestamp at %d does not fit a %u-byte frame",
				     stamp_offset, len);
	/*
	 * A stamp says when its frame left, and it is read when the frame is
	 * placed; with kicks deferred, a kick's frames leave in ring order.  An
	 * unstamped batch placed after a stamp and before its kick (a window's
	 * frames after the Sync), or ahead of it in the kick, would make the
	 * stamp early by the copying and sending of that batch: a master's Sync
	 * 20 us early under a 1 Gbit/s window, and its slaves' clocks as far
	 * behind.  So stamped frames are never batched with unstamped ones: a
	 * pending batch of the other kind is kicked first.
	 */
	if (x->kick_pending && x->pending_stamped != (stamp_offset >= 0))
		rtn_xsk_flush(x);
	in_place = lent_frame(x, frame, len);
	reap_completions(x);
	if (!x->n_tx_free && !in_place) {
		kick_tx(x);
		reap_completions(x);
	}
	/*
	 * The stamp is read before the ring slot is taken (a reserved slot
	 * cannot be given back), so that a frame whose time has passed (the
	 * thread stalled after deciding to send it) is refused whole.
	 */
	now = rtn_now();
	if (now > deadline)
		return -ETIME;
	if ((!x->n_tx_free && !in_place) || xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1) {
		x->st.tx_ring_full++;
		kick_tx(x);
		return -EAGAIN;
	}
	if (in_place) {
		data = (uint8_t *)frame;
		addr = (uint64_t)(data - (uint8_t *)x->area);
		x->lent_sent++;
	} else {
		addr = x->tx_free[--x->n_tx_free];
		data = xsk_umem__get_data(x->area, addr);
		memcpy(data, frame, len);
	}
	desc = xsk_ring_prod__tx_desc(&x->tx, idx);
	desc->addr = addr;
	desc->len = len;
	desc->options = 0;
	if (stamp_offset >= 0) /* into a UDP datagram: its checksum follows (RFC 1624) */
		rtn_stamp_put(data, len, stamp_offset, (uint64_t)rtn_sat_add(now, stamp_add));
	xsk_ring_prod__submit(&x->tx, 1);
	if (x->defer_kick) {
		x->kick_pending = 1;
		x->pending_stamped = stamp_offset >= 0;
	} else
		kick_tx(x);
	reap_completions(x);
	x->st.tx_frames++;
	x->st.tx_bytes += len;
	if (tx_ts)
		*tx_ts = now;
	return 0;
}

int rtn_xsk_send_stamped(struct rtn_xsk *x, const void *frame, uint32_t len, int stamp_offset,
			 int64_t stamp_add, int64_t *tx_ts)
{
	return rtn_xsk_send_by(x, frame, len, stamp_offset, stamp_add, INT64_MAX, tx_ts);
}

void rtn_xsk_defer_kick(struct rtn_xsk *x, int on)
{
	x->defer_kick = on;
	if (!on)
		rtn_xsk_flush(x);
}

void rtn_xsk_flush(struct rtn_xsk *x)
{
	if (x->kick_pending && x->open) {
		x->kick_pending = 0;
		kick_tx(x);
		reap_completions(x);
	}
}

int rtn_xsk_send(struct rtn_xsk *x, const void *frame, uint32_t len, int64_t *tx_ts)
{
	rtn_clear_error();
	return rtn_xsk_send_stamped(x, frame, len, -1, 0, tx_ts);
}

static inline void refill(struct rtn_xsk *x, uint64_t addr)
{
	uint32_t idx;

	if (xsk_ring_prod__reserve(&x->fill, 1, &idx) != 1) {
		x->st.fill_fail++;
		return;
	}
	*xsk_ring_prod__fill_addr(&x->fill, idx) = xsk_umem__extract_addr(addr);
	xsk_ring_prod__submit(&x->fill, 1);
}

/*
 * The @p n RX descriptors from @p rx_idx on back to the fill ring, in one
 * submit, but for those @p kept marks (bit i: descriptor rx_idx + i).
 */
static void refill_batch(struct rtn_xsk *x, uint32_t rx_idx, uint32_t n, uint64_t kept)
{
	uint32_t want = kept ? n - (uint32_t)__builtin_popcountll(kept) : n, idx, got, i, put = 0;

	got = xsk_ring_prod__reserve(&x->fill, want, &idx);
	if (!kept) /* the common case: nothing lent */
		for (i = 0; i < got; i++)
			*xsk_ring_prod__fill_addr(&x->fill, idx + i) = xsk_umem__extract_addr(
				xsk_ring_cons__rx_desc(&x->rx, rx_idx + i)->addr);
	else
		for (i = 0; i < n && put < got; i++)
			if (!(kept >> i & 1))
				*xsk_ring_prod__fill_addr(&x->fill, idx + put++) =
					xsk_umem__extract_addr(
						xsk_ring_cons__rx_desc(&x->rx, rx_idx + i)->addr);
	if (got)
		xsk_ring_prod__submit(&x->fill, got);
	x->st.fill_fail += want - got;
}

static inline int desc_ok(struct rtn_xsk *x, const struct xdp_desc *d)
{
	uint64_t a = xsk_umem__add_offset_to_addr(d->addr);

	return a < x->area_size && d->len <= x->frame_size && a + d->len <= x->area_size;
}

static inline void wake_rx(struct rtn_xsk *x)
{
	/* Needed when the kernel ran out of fill entries, and drives busy polling. */
	if (x->busy_poll || xsk_ring_prod__needs_wakeup(&x->fill))
		recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

/*
 * The frame RX descriptor @p d (desc_ok()) holds, its length in *len, and
 * in *stamped whether the XDP program's stamp came with it (then in
 * *stamp).  In the metadata area it lies in the same UMEM chunk in front of
 * the frame, where the driver kept one; in front of the frame's bytes it is
 * in every frame the program steered, and is cut off here.
 */
static uint8_t *desc_frame(const struct rtn_xsk *x, const struct xdp_desc *d, uint32_t *len,
			   int64_t *stamp, int *stamped)
{
	uint8_t *data = xsk_umem__get_data(x->area, d->addr);
	uint32_t in_frame = rtn_rx_stamp_in_frame(x->xdp_stamps);
	struct rtn_rx_stamp st;

	*len = d->len;
	*stamped = 0;
	if (x->xdp_stamps == RTN_XSK_STAMP_NONE)
		return data;
	/* in the metadata area: the frame's offset inside its (aligned) chunk leaves room */
	if (in_frame ? d->len < in_frame : (d->addr & (x->frame_size - 1)) < sizeof(st))
		return data;
	memcpy(&st, in_frame ? data : data - sizeof(st), sizeof(st));
	if (st.magic != RTN_RX_STAMP_MAGIC)
		return data;
	*stamp = (int64_t)st.rx_ns;
	*stamped = 1;
	*len -= in_frame;
	return data + in_frame;
}

int rtn_xsk_recv(struct rtn_xsk *x, void *buf, uint32_t cap, int64_t *rx_ts, int timeout_us)
{
	const struct xdp_desc *d;
	int64_t deadline = 0, now;
	uint32_t idx, n;
	int ret;

	rtn_clear_error();
	if (!x->open)
		return rtn_set_error(-EBADF, "AF_XDP socket is closed");
	if (x->peek_n)
		return rtn_set_error(-EBUSY, "rtn_xsk_rx_release() missing after a peek");
	if (timeout_us > 0)
		deadline = rtn_now() + (int64_t)timeout_us * RTN_NS_PER_US;
	for (;;) {
		if (xsk_ring_cons__peek(&x->rx, 1, &idx) == 1)
			break;
		x->st.rx_empty_polls++;
		if (timeout_us == 0) {
			wake_rx(x);
			return 0;
		}
		if (timeout_us > 0) {
			now = rtn_now();
			if (now >= deadline)
				return 0;
		}
		if (x->busy_poll) {
			wake_rx(x);
		} else {
			struct pollfd pfd = { .fd = x->fd, .events = POLLIN };
			struct timespec ts, *tsp = NULL;

			if (timeout_us > 0) {
				ts = rtn_ns_to_ts(deadline - now);
				tsp = &ts;
			}
			if (ppoll(&pfd, 1, tsp, NULL) < 0 && errno != EINTR)
				return rtn_set_error(-errno, "poll on AF_XDP socket: %s",
						     strerror(errno));
		}
	}
	now = rtn_now();
	d = xsk_ring_cons__rx_desc(&x->rx, idx);
	if (!desc_ok(x, d)) {
		x->st.invalid_desc++;
		ret = -EIO;
		rtn_set_error(ret, "invalid RX descriptor addr %llu len %u",
			      (unsigned long long)d->addr, d->len);
	} else {
		/* the XDP stamp is counted; the caller gets the time the frame was
		 * taken (the ping-pong benchmarks time the whole path) */
		int64_t stamp;
		uint32_t len;
		int stamped;
		const uint8_t *data = desc_frame(x, d, &len, &stamp, &stamped);

		n = len;
		if (n > cap) {
			x->st.truncated++;
			n = cap;
		}
		memcpy(buf, data, n);
		x->st.rx_kernel_ts += (uint64_t)stamped;
		x->st.rx_frames++;
		x->st.rx_bytes += len;
		ret = n;
	}
	refill(x, d->addr);
	xsk_ring_cons__release(&x->rx, 1);
	if (rx_ts)
		*rx_ts = now;
	return ret;
}

int rtn_xsk_rx_peek(struct rtn_xsk *x, struct rtn_xsk_frame *frames, uint32_t max, int64_t *rx_ts)
{
	const struct xdp_desc *d;
	uint32_t idx, n, i;

	rtn_clear_error();
	if (!x->open)
		return rtn_set_error(-EBADF, "AF_XDP socket is closed");
	if (x->peek_n)
		return rtn_set_error(-EBUSY, "rtn_xsk_rx_release() missing after a peek");
	n = xsk_ring_cons__peek(&x->rx, max, &idx);
	if (!n) {
		x->st.rx_empty_polls++;
		wake_rx(x);
		return 0;
	}
	if (rx_ts)
		*rx_ts = rtn_now();
	for (i = 0; i < n; i++) {
		d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
		frames[i].kernel_ts = 0;
		if (!desc_ok(x, d)) {
			x->st.invalid_desc++;
			frames[i].data = NULL;
			frames[i].len = 0;
			continue;
		}
		frames[i].rx_ts = rx_ts ? *rx_ts : 0; /* the poll time, unless stamped */
		frames[i].data =
			desc_frame(x, d, &frames[i].len, &frames[i].rx_ts, &frames[i].kernel_ts);
		x->st.rx_kernel_ts += (uint64_t)frames[i].kernel_ts;
		frames[i].index = i;
		x->st.rx_frames++;
		x->st.rx_bytes += frames[i].len;
	}
	x->peek_idx = idx;
	x->peek_n = n;
	return n;
}

void rtn_xsk_rx_release(struct rtn_xsk *x)
{
	if (!x->peek_n)
		return;
	refill_batch(x, x->peek_idx, x->peek_n, x->peek_kept);
	xsk_ring_cons__release(&x->rx, x->peek_n);
	x->peek_n = 0;
	x->peek_kept = 0;
}

const uint8_t *rtn_xsk_rx_next(struct rtn_xsk *x, uint32_t *len, int64_t *rx_ts)
{
	struct xdp_desc d;
	int64_t stamp = 0;
	int stamped;
	uint8_t *data;
	uint32_t idx;

	if (!x->open || x->peek_n || xsk_ring_cons__peek(&x->rx, 1, &idx) != 1)
		return NULL;
	d = *xsk_ring_cons__rx_desc(&x->rx, idx);
	xsk_ring_cons__cancel(&x->rx, 1);
	if (!desc_ok(x, &d))
		return NULL;
	/* a look, not a take: the stamp is counted when the frame is taken */
	data = desc_frame(x, &d, len, &stamp, &stamped);
	if (rx_ts)
		*rx_ts = stamped ? stamp : 0;
	return data;
}

int rtn_xsk_rx_keep(struct rtn_xsk *x, const struct rtn_xsk_frame *f, uint64_t *addr)
{
	uint32_t i = f->index;

	if (i >= x->peek_n || i >= 64 || !f->data || x->peek_kept >> i & 1)
		return -EINVAL;
	if (x->kept >= x->frames / 8) /* a quarter of the fill ring's frames/2 */
		return -ENOBUFS;
	*addr = xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&x->rx, x->peek_idx + i)->addr);
	x->peek_kept |= 1ull << i;
	__atomic_store_n(&x->kept, x->kept + 1, __ATOMIC_RELAXED); /* read by rtn_xsk_stats */
	return 0;
}

void rtn_xsk_rx_give_back(struct rtn_xsk *x, uint64_t addr)
{
	if (x->kept)
		__atomic_store_n(&x->kept, x->kept - 1, __ATOMIC_RELAXED);
	refill(x, addr);
}
