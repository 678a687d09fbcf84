/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_flood.c
 * @brief Raw AF_XDP flood and counter: the path's ceiling (see rtn_flood.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include "rtn_core.h"
#include "rtn_flood.h"
#include "rtn_tdma_proto_inline.h" /* rtn_get_be16 */
#include "rtn_time_inline.h"
#include "rtn_xsk_priv.h"
#include "rtn_xsk_stamp_priv.h"

/*
 * The socket's rings and UMEM, driven here instead of by rtn_xsk.c.  Its
 * layout holds: frames [0, frames/2) are the fill ring's (all handed to it
 * at open), frames [frames/2, frames) are TX frames.
 */
struct rings {
	struct xsk_ring_prod *fill, *tx;
	struct xsk_ring_cons *comp, *rx;
	uint8_t *area;
	uint64_t area_size;
	uint32_t frame_size, frames;
	uint32_t rx_skip; /* the XDP program's stamp in front of each received frame */
	int fd, copy_mode;
};

static int take_rings(struct rtn_xsk *x, struct rings *r)
{
	if (!x->open)
		return -EBADF;
	*r = (struct rings){ .fill = &x->fill,
			     .tx = &x->tx,
			     .comp = &x->comp,
			     .rx = &x->rx,
			     .area = x->area,
			     .area_size = x->area_size,
			     .frame_size = x->frame_size,
			     .frames = x->frames,
			     .rx_skip = rtn_rx_stamp_in_frame(x->xdp_stamps),
			     .fd = x->fd,
			     .copy_mode = x->copy_mode };
	return 0;
}

static uint32_t reap(struct rings *r)
{
	uint32_t idx, n = xsk_ring_cons__peek(r->comp, r->frames / 2, &idx);

	if (n)
		xsk_ring_cons__release(r->comp, n);
	return n;
}

int rtn_flood_tx(struct rtn_xsk *x, const uint8_t *frame, uint32_t len, uint32_t batch,
		 int64_t duration_ns, struct rtn_flood_result *out)
{
	struct rings r;
	uint32_t n_tx, next = 0, in_flight = 0, i, idx;
	int64_t end;

	rtn_clear_error();
	memset(out, 0, sizeof(*out));
	if (take_rings(x, &r))
		return rtn_set_error(-EBADF, "flood: AF_XDP socket is closed");
	if (len < 14 || len > r.frame_size || batch < 1 || batch > RTN_FLOOD_BATCH_MAX ||
	    duration_ns <= 0)
		return rtn_set_error(-EINVAL,
				     "flood: frame 14..%u bytes, batch 1..%d, duration > 0",
				     r.frame_size, RTN_FLOOD_BATCH_MAX);
	/* the TX half of the UMEM holds the frame once; descriptors cycle through it */
	n_tx = r.frames / 2;
	for (i = 0; i < n_tx; i++)
		memcpy(r.area + (uint64_t)(n_tx + i) * r.frame_size, frame, len);
	out->first_ns = rtn_now();
	end = out->first_ns + duration_ns;
	while (rtn_now() < end) {
		uint32_t room, want, got;

		in_flight -= reap(&r);
		room = n_tx - in_flight;
		want = room < batch ? room : batch;
		got = want ? xsk_ring_prod__reserve(r.tx, want, &idx) : 0;
		for (i = 0; i < got; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(r.tx, idx + i);

			d->addr = (uint64_t)(n_tx + next) * r.frame_size;
			d->len = len;
			d->options = 0;
			next = (next + 1) % n_tx;
		}
		if (got) {
			xsk_ring_prod__submit(r.tx, got);
			in_flight += got;
			out->frames += got;
		}
		if (r.copy_mode || xsk_ring_prod__needs_wakeup(r.tx)) {
			sendto(r.fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
			out->kicks++;
		}
	}
	/* what the kernel did not complete was not sent */
	for (i = 0; i < 1000 && in_flight; i++) {
		sendto(r.fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
		in_flight -= reap(&r);
	}
	out->frames -= in_flight;
	out->last_ns = rtn_now();
	return 0;
}

int rtn_flood_rx(struct rtn_xsk *x, uint16_t ethertype, int64_t idle_ns, int64_t max_ns,
		 struct rtn_flood_result *out)
{
	struct rings r;
	int64_t start, now, last = 0;

	rtn_clear_error();
	memset(out, 0, sizeof(*out));
	if (take_rings(x, &r))
		return rtn_set_error(-EBADF, "flood: AF_XDP socket is closed");
	if (idle_ns <= 0 || max_ns <= 0)
		return rtn_set_error(-EINVAL, "flood: idle and max times must be > 0");
	start = rtn_now();
	for (;;) {
		uint32_t idx, fidx, n, got, i;

		n = xsk_ring_cons__peek(r.rx, 64, &idx);
		now = rtn_now();
		if (!n) {
			if (now - start >= max_ns || (last && now - last >= idle_ns))
				break;
			recvfrom(r.fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
			out->kicks++;
			continue;
		}
		got = xsk_ring_prod__reserve(r.fill, n, &fidx);
		for (i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(r.rx, idx + i);
			uint64_t a = xsk_umem__add_offset_to_addr(d->addr);

			/* the kernel's descriptor, checked like any input */
			if (a < r.area_size && d->len >= 14 + r.rx_skip &&
			    a + d->len <= r.area_size &&
			    rtn_get_be16(r.area + a + r.rx_skip + 12) == ethertype)
				out->frames++;
			else
				out->other++;
			if (i < got)
				*xsk_ring_prod__fill_addr(r.fill, fidx + i) =
					xsk_umem__extract_addr(d->addr);
		}
		if (got)
			xsk_ring_prod__submit(r.fill, got);
		xsk_ring_cons__release(r.rx, n);
		if (!out->first_ns)
			out->first_ns = now;
		last = now;
	}
	out->last_ns = last;
	return 0;
}
