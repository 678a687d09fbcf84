/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_app_priv.h
 * @brief The application side of a channel (rtn_app.h) as its own .c files
 *        share it: the channel's state and the two halves of a send.
 */
#ifndef RTN_APP_PRIV_H
#define RTN_APP_PRIV_H

#include <stdint.h>
#include "rtn_app.h"
#include "rtn_app_hdr.h"
#include "rtn_chan.h"
#include "rtn_stages.h"

struct rtn_app_chan {
	struct rtn_chan_shm *shm;
	uint64_t size;
	uint32_t depth; /* checked at attach; never read back from the shared page */
	int memfd;
	int kickfd;
	int ctlfd;    /* control connection, -1 when attached */
	int notifyfd; /* the station writes it for an armed reader (rtn_app_fd()), or -1 */
	int32_t channel;
	uint32_t next_seq;
	uint64_t tx_sent;
	uint64_t tx_full;
	uint64_t kicks;
	uint64_t rx_received;
	uint64_t rx_bad_hdr;
	/* a UDP socket (rtn_app_udp.c): its port and flags, read once at attach */
	uint16_t udp_port, udp_flags;
	uint64_t tx_unreachable; /* sendto() found no neighbour (-EHOSTUNREACH) */
	/* cycle length learnt from two publications, for slaves that publish 0 */
	uint32_t learn_no;
	int64_t learn_start_os;
	int64_t learnt_cycle_ns;
	struct rtn_stages stages; /* of the received messages, the take included */
};

/**
 * The next free TX ring slot, or NULL with the error in *@p rc: -ENOTCONN
 * once the station went away, -ENOBUFS (counted) when the ring is full.
 */
struct rtn_msg *rtn_app_tx_slot(struct rtn_app_chan *ch, int *rc);
/** The same for @p n slots in a row (a datagram's fragments): the first of them. */
struct rtn_msg *rtn_app_tx_slots(struct rtn_app_chan *ch, uint32_t n, int *rc);

/**
 * Where a received UDP datagram's payload starts in @p frame (@p len bytes
 * of shared memory, so checked again), its sender in *@p udp (may be NULL),
 * and the RTNX header's seq in *@p hdr of a stamped socket.  -1 for a
 * frame that is no sound datagram (the caller counts it).
 */
int rtn_app_udp_payload(const struct rtn_app_chan *ch, const uint8_t *frame, uint32_t len,
			struct rtn_app_stamps *hdr, struct rtn_app_udp_info *udp);

/** Commit the slot rtn_app_tx_slot() gave, and kick a NoMAC station that wants it. */
void rtn_app_tx_commit(struct rtn_app_chan *ch);
/** Commit the @p n slots rtn_app_tx_slots() gave, all at once. */
void rtn_app_tx_commit_n(struct rtn_app_chan *ch, uint32_t n);

struct sockaddr;
/**
 * The socket port of rtn_app_open(): connect() to the station daemon's
 * control socket (rtn_app_connect.c).  A harness links its own instead.
 */
int rtn_app_connect(int fd, const struct sockaddr *sa, unsigned int len);

#endif
