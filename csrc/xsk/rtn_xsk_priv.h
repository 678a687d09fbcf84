/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xsk_priv.h
 * @brief The AF_XDP socket's state, shared by its parts: rtn_xsk.c (UMEM,
 *        socket, rings and the frame functions) and rtn_xsk_prog.c (the XDP
 *        program and its maps).  Not part of the API.
 */
#ifndef RTN_XSK_PRIV_H
#define RTN_XSK_PRIV_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>
#include <xdp/xsk.h>

#include "rtn_xsk.h"

/* Entries of the XDP program's per-queue maps (xsks_map, rt_unbound). */
#define RTN_XSK_QUEUES 64

struct bpf_object;

struct rtn_xsk {
	char ifname[IF_NAMESIZE];
	int ifindex;
	uint32_t queue;
	int netns_fd; /* namespace the socket lives in, for detach */
	int open;

	struct bpf_object *obj;
	int prog_fd;
	uint32_t xdp_flags; /* mode flag used at attach (for detach) */
	int attached;
	int mode;
	char fallback_reason[160];
	int xdp_stamps; /* where the program puts the receive stamp: RTN_XSK_STAMP_* */
	int counters_fd;
	int unbound_fd;	    /* rt_unbound: per queue, frames with no socket */
	char pin_path[256]; /* pinned rt_ethertypes, removed on close */

	void *area;
	size_t area_size;
	int defer_kick; /* submit now, kick once in rtn_xsk_flush() */
	int kick_pending;
	int pending_stamped; /* the frames waiting for that kick carry stamps */
	uint32_t frame_size;
	uint32_t frames;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	int fd;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	int copy_mode;
	int busy_poll;

	uint64_t *tx_free; /* stack of free TX frame addresses */
	uint32_t n_tx_free;
	uint32_t lend_frames; /* frames past the two halves, their owner's (rtn_xsk_lent_area) */
	uint64_t lend_at;     /* UMEM address of the first */
	uint64_t lent_sent, lent_done;

	uint32_t peek_idx; /* RX ring index of an outstanding peek */
	uint32_t peek_n;
	uint64_t peek_kept; /* frames of that peek kept out of the fill ring (bit = index) */
	uint32_t kept;	    /* frames kept and not yet given back */

	struct rtn_xsk_stats st;
};

/*
 * rtn_xsk_prog.c.  Each returns 0 or a negative errno with rtn_set_error()
 * called; each undo step knows whether its step happened.
 */

/** Open and load the XDP object. */
int rtn_xsk_prog_load(struct rtn_xsk *x, const struct rtn_xsk_opts *o);
/**
 * Open and load the XDP object at @p path, its program stamping received
 * frames where the kernel lets it (*@p stamps: RTN_XSK_STAMP_META, else
 * _HEAD, else _NONE; rtn_xsk_stamp_priv.h).  The object, or NULL when it
 * could not be opened; *@p err is 0 or the last load's negative errno (the
 * object is then still to be closed).
 */
struct bpf_object *rtn_xdp_obj_load(const char *path, int *stamps, int *err);
/*
 * Fill rt_ethertypes (and pin it if asked): the program steers the real-time
 * EtherTypes from then on.  Only once the socket is in xsks_map: a frame
 * steered before would find no socket and be counted in rt_unbound, which
 * is there for frames receive-side scaling puts on another queue (a guest's
 * zero-copy bind took some 280 ms, seven Syncs, and the count was not 0).
 */
int rtn_xsk_prog_steer(struct rtn_xsk *x, const struct rtn_xsk_opts *o);
/** Attach the loaded program in @p mode (RTN_XDP_MODE_*); AUTO falls back to SKB. */
int rtn_xsk_prog_attach(struct rtn_xsk *x, int mode);
/** Enter the socket (x->fd) in xsks_map[x->queue], so the program steers to it. */
int rtn_xsk_prog_add_socket(struct rtn_xsk *x);
/** Detach our program, unpin rt_ethertypes and close the object. */
void rtn_xsk_prog_release(struct rtn_xsk *x);
/** Add the program's per-CPU counters (rt_counters) to @p out. */
void rtn_xsk_prog_counters(const struct rtn_xsk *x, struct rtn_xsk_stats *out);

#endif
