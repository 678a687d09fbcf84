/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_vnic_gso.h
 * @brief TCP segmentation and receive coalescing for the VNIC's TAP
 *        (IFF_VNET_HDR), as pure frame logic: no syscalls, no allocation.
 *
 * With IFF_VNET_HDR every TAP read and write starts with a struct
 * virtio_net_hdr.  Linux -> wire: a read may return a TCP super-packet of up
 * to 64 KB (gso_type TCPV4/TCPV6) or a frame whose checksum is left to us
 * (NEEDS_CSUM); rtn_gso_begin()/rtn_gso_next() cut it into ordinary
 * MTU-sized frames with complete checksums, so the wire format does not
 * change.  Wire -> Linux: rtn_gro_begin()/append()/finish() merge
 * consecutive in-order segments of one TCP/IPv4 flow into one super-packet
 * that a single TAP write hands to Linux (CHECKSUM_PARTIAL convention).
 */
#ifndef RTN_VNIC_GSO_H
#define RTN_VNIC_GSO_H

#include <stdint.h>

/* struct virtio_net_hdr (linux/virtio_net.h), the TAP's default 10 bytes */
#define RTN_VNET_HDR_LEN      10
#define RTN_VNET_F_NEEDS_CSUM 1
#define RTN_VNET_GSO_NONE     0
#define RTN_VNET_GSO_TCPV4    1
#define RTN_VNET_GSO_UDP      3
#define RTN_VNET_GSO_TCPV6    4
#define RTN_VNET_GSO_ECN      0x80

/*
 * Largest super-packet a TAP read returns (the tun driver's GSO limit), and
 * the buffer for one: virtio header + RTN_GSO_MAX + 256 bytes of headers
 * (rtn_vnic_gso.c checks the sum).
 */
#define RTN_GSO_MAX 65536
#define RTN_GSO_BUF 65802

/*
 * Fields in host byte order: the tun driver uses the legacy (native)
 * endianness unless TUNSETVNETLE is set, which we do not.
 */
struct rtn_vnet_hdr {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
};

/* Cursor over one packet read from the TAP (Linux -> wire). */
struct rtn_gso_seg {
	uint8_t *pkt; /* the frame after the vnet header (checksums fixed in place) */
	uint32_t len;
	uint32_t l3, l4, hdr_len; /* offsets of IP and TCP, length of all headers */
	uint32_t mss;		  /* payload per segment (gso_size) */
	uint32_t off;		  /* next payload byte to send */
	uint32_t index;		  /* next segment */
	uint32_t nseg;
	int32_t gso; /* 0: a single frame, passed on as it is */
	int32_t v6;
};

/*
 * Start on @p buf (vnet header + frame, @p len bytes in all).  Segments will
 * be at most @p max_frame bytes.  Returns the number of frames it yields
 * (>= 1), or -EINVAL for a malformed packet (bad header, gso_size 0,
 * hdr_len beyond the frame, unknown gso_type) and -EMSGSIZE for segments
 * (or a single frame) larger than @p max_frame: the caller counts and drops
 * those.  No error
 * message is recorded: this runs per packet on the VNIC pump thread.
 */
int rtn_gso_begin(struct rtn_gso_seg *g, uint8_t *buf, uint32_t len, uint32_t max_frame);
/*
 * In place: a TAP read scattered straight into the frames the segments
 * leave in.  The vnet header at @p vnet, then @p len bytes of packet: the
 * first @p hdr_len + @p mss of them at @p first, each further @p mss bytes
 * at the next frame's @p hdr_len (the layout the caller guessed, as the
 * last super-packet was cut).  Returns the number of segments when the
 * packet lies as laid out (a TCP super-packet with that header length and
 * gso_size, or any packet that fits in the first frame), the errors of
 * rtn_gso_begin() for a bad packet wholly in the first frame, and 0 for
 * any other: the caller gathers it and uses rtn_gso_begin().
 */
int rtn_gso_begin_scattered(struct rtn_gso_seg *g, const uint8_t *vnet, uint8_t *first,
			    uint32_t len, uint32_t max_frame, uint32_t hdr_len, uint32_t mss);
/*
 * Make segment @p index of a scattered packet a whole frame where it lies,
 * at @p frame (the first segment's is @p first itself): the headers copied
 * from the first segment's, fixed, checksums computed.  The first segment's
 * headers are the others' template, so it is done last.  Returns its
 * length, or -EINVAL.
 */
int rtn_gso_fix_in_place(const struct rtn_gso_seg *g, uint32_t index, uint8_t *frame);
/* Write the next frame to @p out; returns its length, 0 when done, -ENOSPC if @p cap is short. */
int rtn_gso_next(struct rtn_gso_seg *g, uint8_t *out, uint32_t cap);
/* Frames left to send. */
uint32_t rtn_gso_left(const struct rtn_gso_seg *g);

/*
 * One super-packet being built (wire -> Linux), gathered rather than copied:
 * the vnet header and the first segment's headers (fixed up by finish) are
 * the only bytes it holds; the payloads stay where the caller keeps the
 * frames, which must not move until the write (one writev of the pieces).
 */
#define RTN_GRO_HEAD	 104 /* vnet header, Ethernet, IPv4, TCP with options */
#define RTN_GRO_MAX_SEGS 64  /* pieces of one write, as IOV_MAX allows */

struct rtn_gro_piece {
	const uint8_t *base;
	uint32_t len;
};

struct rtn_gro {
	uint8_t head[RTN_GRO_HEAD]; /* vnet header, then the first segment's headers */
	uint32_t head_len;	    /* bytes of head written (the vnet header at least) */
	struct rtn_gro_piece piece[RTN_GRO_MAX_SEGS]; /* the rest, in order */
	uint32_t len;				      /* frame bytes after the vnet header */
	uint32_t l3, l4, hdr_len;
	uint32_t mss; /* payload of the first segment */
	uint32_t nseg;
	uint32_t next_seq;
	int32_t open;	 /* later segments may still join */
	int32_t csum_ok; /* the first segment's TCP checksum was verified */
};

void rtn_gro_init(struct rtn_gro *g);
/*
 * Start a new packet with @p frame (kept by reference until the write).
 * Returns 1 if later segments may join it, 0 if it goes to Linux alone (not
 * TCP/IPv4, no payload, other flags, or a bad TCP checksum: Linux then drops
 * and counts it), -EMSGSIZE if it is larger than a super-packet.
 */
int rtn_gro_begin(struct rtn_gro *g, const uint8_t *frame, uint32_t len);
/* Append @p frame if it continues the packet; 1 taken, 0 not (finish, then begin with it). */
int rtn_gro_append(struct rtn_gro *g, const uint8_t *frame, uint32_t len);
/*
 * Fix the headers and write the vnet header; returns the bytes of the write
 * (g->head's head_len bytes, then the pieces).  A TCP/IPv4 packet whose
 * checksums were verified here, merged or lone, goes with NEEDS_CSUM
 * (CHECKSUM_PARTIAL), which Linux trusts, so it does not sum it again;
 * anything else goes as it came, unmarked, and Linux checks it itself.
 */
uint32_t rtn_gro_finish(struct rtn_gro *g);
/* The finished write as one buffer (tests, fuzzing): its length, or 0 if @p cap is short. */
uint32_t rtn_gro_flatten(const struct rtn_gro *g, uint8_t *out, uint32_t cap);

/* Internet checksum helpers (for tests): 1 if the TCP/UDP checksum of @p frame is valid. */
int rtn_l4_csum_ok(const uint8_t *frame, uint32_t len);

#endif
