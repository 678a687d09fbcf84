/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file station_harness.h
 * @brief The station (rtn_station.c and the modules of rtn_station_priv.h)
 *        without AF_XDP, a real-time thread or a clock, for the station fuzz
 *        targets.
 *
 * The station's objects are linked as they are built (csrc/Makefile), and
 * their state is reached through the station's private headers and the
 * small reset functions of the objects it holds (rtn_nomac_reset,
 * rtn_probe_reset, rtn_vnic_reset, rtn_frer_reset, rtn_ip_reset); the TDMA
 * engine's state is saved and restored between inputs (tdma_snapshot.h).
 * What the station needs from the outside is replaced:
 * - rtn_xsk_*: a socket whose receive ring returns the frames the harness
 *   queued (each in a buffer of exactly its length, so a read past a frame
 *   is caught), and whose send checks and copies every frame it is given
 *   but those sent in place from the frames it lends the VNIC; two of
 *   them, the second a target may give the station as its second port
 *   (H.s->xsk_b, NULL after each reset); defined here, so the link takes
 *   these in place of rtn_xsk.o's;
 * - rtn_rt_*: never started (the harness calls what the RT thread would);
 *   defined here too, in place of rtn_rt.o's;
 * - rtn_now(): a virtual clock the harness moves (the clock port of
 *   rtn_time_inline.h: fuzz_clock_ns), so every input runs the same way
 *   again when libFuzzer replays it.
 * The VNIC's TAP is one end of a SOCK_SEQPACKET socket pair (a packet per
 * read and write, like a TAP); the harness holds the other end.  Channel
 * memory is moved from the memfd the station creates to heap buffers of
 * exactly the same size, so AddressSanitizer sees any access past it.
 *
 * station_reset() puts all of it back to the state after setup before each
 * input; it names every field an input can change, and must follow
 * struct rtn_station and the objects it holds when those change.
 */
#ifndef RTN_FUZZ_STATION_HARNESS_H
#define RTN_FUZZ_STATION_HARNESS_H

#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "rtn_core.h"
#include "rtn_ipv4_inline.h"
#include "rtn_nomac_priv.h"
#include "rtn_probe_priv.h"
#include "rtn_rt.h"
#include "rtn_station_priv.h"
#include "rtn_tdma.h"
#include "rtn_vnic_gso.h"
#include "rtn_vnic_priv.h"
#include "rtn_xsk.h"

/* the clock port (rtn_time_inline.h): the station's objects are built with
 * -DRTN_CLOCK_PORT=fuzz_clock_ns and read this */
int64_t fuzz_clock_ns;

#include "fuzz_input.h"
#include "tdma_snapshot.h"

#define STATION_T0 (1000 * RTN_NS_PER_SEC)
#define STATION_MAC                                \
	{                                          \
		0x02, 0x52, 0x54, 0x00, 0x00, 0x02 \
	}
#define XSK_FRAME_SIZE RTN_XSK_FRAME_SIZE /* the station's UMEM frames */
#define STUB_RX_MAX    512
#define N_CHANS	       5
#define STATION_IP     0x0a000002u /* 10.0.0.2: IPv4 to it reaches the UDP socket */

/* ---- the AF_XDP socket --------------------------------------------------- */

struct rtn_xsk {
	struct rtn_xsk_frame rx[STUB_RX_MAX];
	uint8_t *orig[STUB_RX_MAX]; /* the frames as received (the station strips R-TAGs in place) */
	uint8_t batch_end[STUB_RX_MAX]; /* a peek stops after this frame */
	uint32_t rx_n, rx_pos;
	int peeked;
	int tx_full; /* sends fail with -EAGAIN, as with a full TX ring */
	uint64_t tx_frames;
	uint8_t tx_copy[XSK_FRAME_SIZE];
	/* the frames kept past their peek (rtn_xsk_rx_keep) */
	uint32_t peek_at;	   /* rx[] index of the outstanding peek's first frame */
	uint8_t kept[STUB_RX_MAX]; /* frames kept and not yet given back */
};

/* The station's first port, and the second one a target may give it (H.s->xsk_b). */
static struct rtn_xsk stub_xsk, stub_xsk_b;

/* every frame kept (the cost harness), not every other */
static int stub_keep_all;

int rtn_xsk_open(const struct rtn_xsk_opts *opts, struct rtn_xsk **out)
{
	*out = &stub_xsk;
	return 0;
}

void rtn_xsk_close(struct rtn_xsk *x)
{
}
int rtn_xsk_mode(const struct rtn_xsk *x)
{
	return RTN_XDP_MODE_SKB;
}
const char *rtn_xsk_fallback_reason(const struct rtn_xsk *x)
{
	return "";
}
int rtn_xsk_fd(const struct rtn_xsk *x)
{
	return -1;
}
uint32_t rtn_xsk_frame_size(const struct rtn_xsk *x)
{
	return XSK_FRAME_SIZE;
}
void rtn_xsk_defer_kick(struct rtn_xsk *x, int on)
{
}
void rtn_xsk_flush(struct rtn_xsk *x)
{
}
/*
 * The frames the stub lends, as the station's socket lends its VNIC: a
 * frame sent from them is not copied, and is done at the next count (the
 * real socket's completions come after the wake-up's kick).
 */
static uint8_t stub_lent[RTN_VNIC_TX_FRAMES][XSK_FRAME_SIZE] __attribute__((aligned(64)));
static uint64_t stub_lent_sent, stub_lent_done;

static int stub_lent_frame(const void *frame, uint32_t len)
{
	uintptr_t off = (uintptr_t)frame - (uintptr_t)stub_lent;

	return off < sizeof(stub_lent) && off % XSK_FRAME_SIZE + len <= XSK_FRAME_SIZE;
}

uint8_t *rtn_xsk_lent_area(struct rtn_xsk *x, uint32_t *n)
{
	*n = RTN_VNIC_TX_FRAMES;
	return &stub_lent[0][0];
}
uint64_t rtn_xsk_lent_sent(const struct rtn_xsk *x)
{
	return stub_lent_sent;
}
uint64_t rtn_xsk_lent_done(struct rtn_xsk *x)
{
	stub_lent_done = stub_lent_sent;
	return stub_lent_done;
}

int rtn_xsk_stats(const struct rtn_xsk *x, struct rtn_xsk_stats *out)
{
	memset(out, 0, sizeof(*out));
	return 0;
}

/* The checks of the real rtn_xsk_send_by(), plus: nothing longer than an Ethernet frame. */
int rtn_xsk_send_by(struct rtn_xsk *x, const void *frame, uint32_t len, int stamp_offset,
		    int64_t stamp_add, int64_t deadline, int64_t *tx_ts)
{
	if (len < 14 || len > XSK_FRAME_SIZE)
		return -EINVAL;
	if (stamp_offset >= 0 && (uint32_t)stamp_offset + 8 > len)
		return -EINVAL;
	if (fuzz_clock_ns > deadline)
		return -ETIME;
	if (len > RTN_TDMA_FRAME_MAX)
		fuzz_fail("the station sends a %u-byte frame (largest Ethernet frame %d)", len,
			  RTN_TDMA_FRAME_MAX);
	if (x->tx_full)
		return -EAGAIN;
	if (stub_lent_frame(frame, len)) { /* sent where it lies */
		stub_lent_sent++;
		if (stamp_offset >= 0)
			rtn_stamp_put((uint8_t *)frame, len, stamp_offset,
				      (uint64_t)(fuzz_clock_ns + stamp_add));
	} else {
		memcpy(x->tx_copy, frame, len);
		if (stamp_offset >= 0)
			rtn_stamp_put(x->tx_copy, len, stamp_offset,
				      (uint64_t)(fuzz_clock_ns + stamp_add));
	}
	x->tx_frames++;
	if (tx_ts)
		*tx_ts = fuzz_clock_ns;
	return 0;
}

int rtn_xsk_send_stamped(struct rtn_xsk *x, const void *frame, uint32_t len, int stamp_offset,
			 int64_t stamp_add, int64_t *tx_ts)
{
	return rtn_xsk_send_by(x, frame, len, stamp_offset, stamp_add, INT64_MAX, tx_ts);
}

int rtn_xsk_send(struct rtn_xsk *x, const void *frame, uint32_t len, int64_t *tx_ts)
{
	return rtn_xsk_send_stamped(x, frame, len, -1, 0, tx_ts);
}

int rtn_xsk_recv(struct rtn_xsk *x, void *buf, uint32_t cap, int64_t *rx_ts, int timeout_us)
{
	return -ENOSYS;
}

int rtn_xsk_rx_peek(struct rtn_xsk *x, struct rtn_xsk_frame *frames, uint32_t max, int64_t *rx_ts)
{
	uint32_t n = 0;

	if (x->peeked)
		fuzz_fail("rtn_xsk_rx_peek again without rtn_xsk_rx_release");
	if (rx_ts)
		*rx_ts = fuzz_clock_ns;
	x->peek_at = x->rx_pos;
	while (n < max && x->rx_pos < x->rx_n) {
		frames[n++] = x->rx[x->rx_pos]; /* index: its place in rx[] (see rtn_xsk_rx_keep) */
		if (x->batch_end[x->rx_pos++])
			break;
	}
	x->peeked = n > 0;
	return (int)n;
}

void rtn_xsk_rx_release(struct rtn_xsk *x)
{
	x->peeked = 0;
}

/* The next frame as it is now, not taken; a bad descriptor has no bytes (NULL). */
const uint8_t *rtn_xsk_rx_next(struct rtn_xsk *x, uint32_t *len, int64_t *rx_ts)
{
	if (x->peeked || x->rx_pos >= x->rx_n || !x->rx[x->rx_pos].data)
		return NULL;
	*len = x->rx[x->rx_pos].len;
	if (rx_ts)
		*rx_ts = x->rx[x->rx_pos].rx_ts;
	return x->rx[x->rx_pos].data;
}

/*
 * Every other frame is kept and the rest refused, as by a UMEM that lent all
 * it may, so both ways to the TAP run (keep_all: every frame, as a real
 * socket with frames to lend does); a give-back must name a kept frame,
 * once.  The frames stay allocated until the next input, after the pump
 * (rtn_vnic_write_all) wrote them.
 */
int rtn_xsk_rx_keep(struct rtn_xsk *x, const struct rtn_xsk_frame *f, uint64_t *addr)
{
	uint32_t i = f->index; /* the stub's frames carry their place in rx[] */

	if (!x->peeked || i < x->peek_at || i >= x->rx_pos || !f->data || x->kept[i])
		fuzz_fail("rtn_xsk_rx_keep of a frame not in the peek");
	if ((i & 1) && !stub_keep_all)
		return -ENOBUFS;
	x->kept[i] = 1;
	*addr = i;
	return 0;
}

void rtn_xsk_rx_give_back(struct rtn_xsk *x, uint64_t addr)
{
	if (addr >= STUB_RX_MAX || !x->kept[addr])
		fuzz_fail("rtn_xsk_rx_give_back of frame %llu, which is not kept",
			  (unsigned long long)addr);
	x->kept[addr] = 0;
}

/* The XDP program's IPv4 maps (rtn_xsk_ip.c): nothing to steer without a kernel. */
int rtn_xsk_udp_port(struct rtn_xsk *x, uint16_t port, int on)
{
	return 0;
}
int rtn_xsk_ipv4(struct rtn_xsk *x, uint32_t ip)
{
	return 0;
}
int rtn_xsk_icmp_id(struct rtn_xsk *x, uint16_t id, int on)
{
	return 0;
}
int rtn_xsk_ipv4_group(struct rtn_xsk *x, uint32_t group, int on)
{
	return 0;
}
int rtn_xsk_arp_solicit(struct rtn_xsk *x, uint32_t ip, int on)
{
	return 0;
}

/*
 * Queue a frame received on @p x (copied to a buffer of exactly @p len
 * bytes; NULL: a bad descriptor).
 */
static inline void stub_rx_add_to(struct rtn_xsk *x, const uint8_t *data, uint32_t len,
				  int64_t rx_ts, int end_batch)
{
	if (x->rx_n >= STUB_RX_MAX)
		return;
	x->rx[x->rx_n] = (struct rtn_xsk_frame){ .data = data ? fuzz_exact_copy(data, len) : NULL,
						 .len = data ? len : 0,
						 .rx_ts = rx_ts,
						 .kernel_ts = rx_ts != 0,
						 .index = x->rx_n };
	x->orig[x->rx_n] = data ? fuzz_exact_copy(data, len) : NULL;
	x->batch_end[x->rx_n++] = (uint8_t)end_batch;
}

/* Queue a frame received on the first port. */
static inline void stub_rx_add(const uint8_t *data, uint32_t len, int64_t rx_ts, int end_batch)
{
	stub_rx_add_to(&stub_xsk, data, len, rx_ts, end_batch);
}

FUZZ_UNTRACED static void stub_rx_clear_one(struct rtn_xsk *x)
{
	uint32_t i;

	for (i = 0; i < x->rx_n; i++) {
		free(x->rx[i].data);
		free(x->orig[i]);
	}
	x->rx_n = x->rx_pos = 0;
	x->peeked = 0;
}

FUZZ_UNTRACED static void stub_rx_clear(void)
{
	stub_rx_clear_one(&stub_xsk);
	stub_rx_clear_one(&stub_xsk_b);
}

/* ---- the real-time thread: never started ---------------------------------- */

int rtn_rt_start(const struct rtn_rt_opts *o, rtn_rt_body_fn body, void *arg, struct rtn_rt **out)
{
	return -ENOSYS;
}

int rtn_rt_should_stop(const struct rtn_rt *rt)
{
	return 1;
}
int rtn_rt_stop(struct rtn_rt *rt, struct rtn_rt_stats *final)
{
	return 0;
}

void rtn_rt_read_stats(const struct rtn_rt *rt, struct rtn_rt_stats *out)
{
	memset(out, 0, sizeof(*out));
}

/* ---- one station, set up once ---------------------------------------------- */

enum { DISC_TDMA_SLAVE, DISC_TDMA_MASTER, DISC_NOMAC, DISC_NONE };

/*
 * Two channels share an EtherType: a frame of it goes to both; the last two
 * are UDP sockets sharing a port (one program's, as Linux's SO_REUSEPORT),
 * whose peers the input may write into their memory (rtn_chan_udp.peer).
 */
static const struct rtn_chan_opts chan_opts[N_CHANS] = {
	{ .ethertype = 0x88B5, .slot = 0, .prio = 0, .max_size = 1514, .depth = 4 },
	{ .ethertype = 0x88B6,
	  .slot = 2,
	  .prio = 5,
	  .max_size = 200,
	  .depth = 2,
	  .lifetime_ns = 2000000 }, /* the input's scheduled times expire some */
	{ .ethertype = 0x88B5, .slot = 1, .prio = 31, .max_size = RTN_CHAN_MSG_MAX, .depth = 1 },
	{ .ethertype = RTN_ETH_P_IPV4,
	  .slot = 0,
	  .prio = 3,
	  .max_size = 1514,
	  .depth = 2,
	  .udp_port = 5000,
	  .udp_flags = RTN_UDP_F_STAMPED,
	  .udp_share = RTN_UDP_SHARE_ADDR | RTN_UDP_SHARE_PORT,
	  .udp_owner = 7,
	  .lifetime_ns = 500000 },
	{ .ethertype = RTN_ETH_P_IPV4,
	  .slot = 1,
	  .prio = 4,
	  .max_size = 1514,
	  .depth = 2,
	  .udp_port = 5000,
	  .udp_flags = RTN_UDP_F_STAMPED,
	  .udp_share = RTN_UDP_SHARE_PORT,
	  .udp_owner = 7 },
};

struct harness {
	struct rtn_station *s;
	struct rtn_capture *cap;    /* room for every frame of one input */
	struct rtn_tdma *engine[2]; /* slave, master */
	struct rtn_tdma *engine_saved[2];
	struct rtn_tdma_cfg cfg[2];
	struct rtn_chan_shm *shm_saved[N_CHANS];
	uint64_t shm_size[N_CHANS];
	int tap_peer; /* the harness's end of the VNIC's "TAP" */
};

static struct harness H;

static void harness_slot(struct rtn_tdma_cfg *c, uint32_t id, int64_t offset, uint32_t size,
			 int64_t window)
{
	c->slots[c->n_slots++] = (struct rtn_tdma_slot_cfg){ .id = (int32_t)id,
							     .offset_ns = offset,
							     .phasing = 1,
							     .period = 1,
							     .size = size,
							     .joint = -1,
							     .window_ns = window };
}

/* Channel memory on the heap: same size and contents as the memfd the station made. */
static void move_chan_to_heap(int id, int memfd, int kickfd)
{
	struct chan *c = &H.s->chans[id];
	struct rtn_chan_shm *heap = malloc(c->size);

	if (!heap)
		fuzz_fail("out of memory for channel memory");
	memcpy(heap, c->shm, c->size);
	munmap(c->shm, c->size);
	close(memfd);
	close(kickfd);
	c->shm = heap;
	H.shm_saved[id] = (struct rtn_chan_shm *)fuzz_exact_copy(heap, c->size);
	H.shm_size[id] = c->size;
}

static void station_setup(void)
{
	struct rtn_station_opts o = { .mac = STATION_MAC, .link_rate_mbps = 100 };
	struct rtn_tdma_port port;
	int i, sv[2];

	fuzz_clock_ns = STATION_T0;
	if (rtn_station_open(&o, &H.s))
		fuzz_fail("cannot open the station: %s", rtn_last_error());
	port = rtn_station_tdma_port(H.s);

	/* slave: RTnet slots, 0 and 2 for the channels, 1 for the VNIC */
	rtn_tdma_cfg_init(&H.cfg[0], RTN_TDMA_ROLE_SLAVE);
	H.cfg[0].cal_rounds = 0;
	harness_slot(&H.cfg[0], 0, 200000, 1500, 0);
	harness_slot(&H.cfg[0], 1, 400000, 1500, 0);
	harness_slot(&H.cfg[0], 2, 700000, 200, 0);
	/* master: sends at once (no listening); the VNIC's slot is a transmit window */
	rtn_tdma_cfg_init(&H.cfg[1], RTN_TDMA_ROLE_MASTER);
	H.cfg[1].listen_cycles = 0;
	harness_slot(&H.cfg[1], 0, 100000, 1500, 0);
	harness_slot(&H.cfg[1], 1, 300000, 1500, 300000);
	harness_slot(&H.cfg[1], 2, 700000, 200, 0);
	for (i = 0; i < 2; i++) {
		if (rtn_tdma_create(o.mac, &port, &H.engine[i]) ||
		    rtn_tdma_start(H.engine[i], &H.cfg[i], STATION_T0))
			fuzz_fail("cannot start a TDMA engine: %s", rtn_last_error());
		H.engine_saved[i] = tdma_snapshot_save(H.engine[i]);
	}

	if (rtn_capture_create(RTN_CAP_SNAP_MAX, STUB_RX_MAX, &H.cap))
		fuzz_fail("cannot create the capture ring: %s", rtn_last_error());

	if (rtn_station_set_ipv4(H.s, STATION_IP, 0, 0))
		fuzz_fail("cannot set the station's address: %s", rtn_last_error());
	for (i = 0; i < N_CHANS; i++) {
		int memfd, kickfd, id = rtn_station_chan_open(H.s, &chan_opts[i], &memfd, &kickfd);

		if (id != i)
			fuzz_fail("channel %d: %s", i, rtn_last_error());
		move_chan_to_heap(id, memfd, kickfd);
	}

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		fuzz_fail("socketpair: %s", strerror(errno));
	if (rtn_station_vnic_attach(H.s, sv[0], RTN_VNIC_BATCHED, 1))
		fuzz_fail("cannot attach the VNIC: %s", rtn_last_error());
	close(sv[0]);
	H.tap_peer = sv[1];
}

FUZZ_UNTRACED static void drain_socket(int fd)
{
	static uint8_t sink[RTN_GSO_BUF];

	while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) >= 0)
		;
}

struct station_mode {
	int disc; /* DISC_* */
	int vnic_live;
	int vnet; /* the TAP has IFF_VNET_HDR */
	uint16_t probe_rx_type;
	int tx_full;
};

/* Back to the state after station_setup(), in @p m's configuration. */
FUZZ_UNTRACED static void station_reset(const struct station_mode *m)
{
	struct rtn_station *s = H.s;
	int i;

	if (!s)
		station_setup();
	s = H.s;
	fuzz_clock_ns = STATION_T0;
	stub_rx_clear();
	stub_xsk.tx_full = stub_xsk_b.tx_full = m->tx_full;
	stub_xsk.tx_frames = stub_xsk_b.tx_frames = 0;
	s->xsk_b = NULL; /* one port, unless the target gives it the second */

	memset(&s->st, 0, sizeof(s->st));
	/* the stream table (one port: the sequence generators are never used) */
	rtn_frer_reset(s);
	rtn_ip_reset(s);
	s->tdma = NULL;
	s->ops = &rtn_disc_none_ops;
	s->disc_priv = NULL;
	if (m->disc == DISC_TDMA_SLAVE || m->disc == DISC_TDMA_MASTER) {
		int k = m->disc == DISC_TDMA_MASTER;

		tdma_snapshot_restore(H.engine[k], H.engine_saved[k]);
		s->tdma = H.engine[k];
		s->tdma_cfg = H.cfg[k];
		s->ops = &rtn_disc_tdma_ops;
		s->disc_priv = s;
	} else if (m->disc == DISC_NOMAC) {
		s->ops = &rtn_disc_nomac_ops;
		s->disc_priv = s->nomac;
	}
	rtn_nomac_reset(s);
	rtn_probe_reset(s, m->probe_rx_type);

	s->rx_woke = 0;
	s->rx_light = 0;
	s->tunnel_rx_n = 0;
	s->tunnel_rx_avg = 0;
	s->tunnel_rx_at = 0;
	s->vnic = m->vnic_live ? s->vnic_ctl : NULL;
	if (rtn_vnic_reset(s->vnic_ctl, RTN_VNIC_BATCHED, 1, m->vnet))
		fuzz_fail("cannot reset the VNIC: %s", rtn_last_error());
	/* rtn_vnic_reset dropped the loans */
	memset(stub_xsk.kept, 0, sizeof(stub_xsk.kept));
	memset(stub_xsk_b.kept, 0, sizeof(stub_xsk_b.kept));
	drain_socket(H.tap_peer);

	for (i = 0; i < N_CHANS; i++) {
		struct chan *c = &s->chans[i];

		memcpy(c->shm, H.shm_saved[i], H.shm_size[i]);
		c->tx_msgs = c->tx_drops = c->tx_expired = c->rx_msgs = c->rx_drops =
			c->ring_errors = 0;
		s->live[i] = c;
		c->shm->kick_wanted = s->ops->kick_senders;
	}
	if (s->tdma)
		rtn_tdma_set_lazy_begin(s->tdma, 0); /* channels listen to cycle starts */
}

/* ---- the application's end of a channel, trusting only its own geometry ----- */

static inline struct rtn_msg *app_msgs(int id, int rx)
{
	return (struct rtn_msg *)(H.s->chans[id].shm + 1) + (rx ? chan_opts[id].depth : 0);
}

/* Commit one message to channel @p id's TX ring as rtn_app_send() does; 0 if full. */
static inline int app_send(int id, const uint8_t *frame, uint32_t len)
{
	struct rtn_chan_shm *shm = H.s->chans[id].shm;
	uint32_t depth = chan_opts[id].depth, head = shm->tx.head;
	struct rtn_msg *m;

	if (head - __atomic_load_n(&shm->tx.tail, __ATOMIC_ACQUIRE) >= depth)
		return 0;
	m = &app_msgs(id, 0)[head & (depth - 1)];
	if (len > sizeof(m->frame))
		len = sizeof(m->frame);
	memcpy(m->frame, frame, len);
	m->len = len;
	m->seq = head;
	m->sched_ns = m->tx_ns = m->rx_ns = 0;
	__atomic_store_n(&shm->tx.head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

/*
 * Take everything from channel @p id's RX ring as the application would;
 * with @p check, also judge what the station committed (only meaningful
 * while the input has not written into the channel memory itself).
 */
static inline void app_drain(int id, int check)
{
	struct rtn_chan_shm *shm = H.s->chans[id].shm;
	uint32_t depth = chan_opts[id].depth;
	uint32_t tail = shm->rx.tail, head = __atomic_load_n(&shm->rx.head, __ATOMIC_ACQUIRE);

	if (check && head - tail > depth)
		fuzz_fail("channel %d: the station committed %u messages to a ring of %u", id,
			  head - tail, depth);
	while (check && tail != head) {
		static uint8_t whole[RTN_CHAN_CHAIN_MAX];
		const struct rtn_msg *m = &app_msgs(id, 1)[tail & (depth - 1)];
		uint32_t len = 0, pieces = 0;

		/*
		 * One message, or a chain a datagram put together from its
		 * fragments came in: full pieces flagged RTN_MSG_MORE, then the
		 * last, all committed at once (rtn_chan.h).
		 */
		for (;;) {
			const struct rtn_msg *q = &app_msgs(id, 1)[(tail + pieces) & (depth - 1)];
			int more = q->flags & RTN_MSG_MORE;

			if (q->len > RTN_CHAN_MSG_MAX || (more && q->len != RTN_CHAN_MSG_MAX) ||
			    len + q->len > sizeof(whole) || tail + pieces == head)
				fuzz_fail("channel %d: a broken chain from the station", id);
			memcpy(whole + len, q->frame, q->len);
			len += q->len;
			pieces++;
			if (!more)
				break;
		}
		if (len < ETH_HLEN_RTN || (pieces == 1 && len > RTN_CHAN_MSG_MAX))
			fuzz_fail("channel %d: received message of %u bytes", id, m->len);
		if (rtn_get_be16(m->frame + 12) != chan_opts[id].ethertype)
			fuzz_fail("channel %d: received EtherType 0x%04x", id,
				  rtn_get_be16(m->frame + 12));
		if (chan_opts[id].udp_port) {
			/* a UDP socket gets sound datagrams to its port, nothing else */
			struct rtn_ip_pkt p;

			if (rtn_ip_parse(whole, len, &p) != RTN_IP_UDP ||
			    p.dport != chan_opts[id].udp_port)
				fuzz_fail("channel %d: received a datagram that is not its own",
					  id);
		} else if (pieces > 1) {
			fuzz_fail("channel %d: a chain to a channel that is no UDP socket", id);
		}
		tail += pieces;
	}
	__atomic_store_n(&shm->rx.tail, head, __ATOMIC_RELEASE);
}

/*
 * Check the packets the station wrote to its TAP and take them out: with a
 * vnet header, a merged packet must be one the segmentation side accepts.
 */
static inline void tap_drain_check(int vnet)
{
	static uint8_t pkt[RTN_GSO_BUF + 1];
	ssize_t n;

	while ((n = recv(H.tap_peer, pkt, sizeof(pkt), MSG_DONTWAIT)) >= 0) {
		struct rtn_vnet_hdr vh;
		struct rtn_gso_seg g;
		int k;

		if (!vnet) {
			if (n <= ETH_HLEN_RTN || n > RTN_TDMA_FRAME_MAX)
				fuzz_fail("the station wrote a %zd-byte frame to its TAP", n);
			continue;
		}
		if (n < RTN_VNET_HDR_LEN + ETH_HLEN_RTN || n > RTN_GSO_BUF)
			fuzz_fail("the station wrote a %zd-byte packet to its TAP", n);
		memcpy(&vh, pkt, sizeof(vh));
		if (vh.gso_type == RTN_VNET_GSO_NONE)
			continue;
		k = rtn_gso_begin(&g, pkt, (uint32_t)n, RTN_GSO_MAX);
		if (k < 2)
			fuzz_fail("the station wrote a merged packet that does not segment (%d)",
				  k);
	}
}

#endif
