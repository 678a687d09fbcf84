// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file cost_xsk.c
 * @brief The cost harness's AF_XDP part: the anchor (a minimal AF_XDP
 *        send/receive loop), the station's own socket code (rtn_xsk.c)
 *        on the same sockets, and the XDP program run by the kernel's
 *        BPF_PROG_TEST_RUN (tools/bench_cost.py).
 *
 * Usage:
 *   cost_xsk anchor|rtn_xsk_send|rtn_xsk_recv COUNT IF_TX IF_RX BPF_OBJ  (a veth pair)
 *   cost_xsk xdp_prog COUNT BPF_OBJ                     (no interface needed)
 *
 * Both socket stages open the station's sockets with rtn_xsk_open() (our
 * XDP program in SKB mode, EtherType 0x88B5 steered, copy mode: a veth
 * offers nothing else) on IF_TX and IF_RX, then send COUNT 64-byte frames
 * from one to the other.  Per frame, the send and the receive are each
 * bracketed by CALLGRIND_TOGGLE_COLLECT; waiting for the frame to arrive
 * (poll() on the receiving socket) is outside the brackets, so the count
 * does not depend on how fast the kernel delivers.  Callgrind sees user
 * space only: the kernel's share (the sendto() that transmits, the veth,
 * the XDP program, the copy into the UMEM) is in neither figure.
 *
 * The anchor does what any AF_XDP program must and nothing more, with
 * libxdp's ring helpers: reserve a TX descriptor, copy the frame into the
 * UMEM, submit, kick with sendto(), take back completed frames; on
 * receive, take the descriptor, copy the frame out, release it, give the
 * frame back to the fill ring.  rtn_xsk_* is what the station's RT thread
 * calls for the same work: rtn_xsk_send_by() and rtn_xsk_rx_peek() with
 * rtn_xsk_rx_release() (which also read CLOCK_MONOTONIC for stamps, inside
 * the count).
 *
 * xdp_prog: callgrind cannot see a BPF program.  This loads xdp_rtnet.bpf.o
 * as rtn_xsk_open() would, reports the verifier's translated program length
 * (BPF instructions, a static count) and the JIT image size, and runs the
 * program COUNT times on a fixed real-time frame and on a fixed IPv4 frame
 * it passes to Linux with BPF_PROG_TEST_RUN, reporting the kernel's mean
 * run time per frame: a timing, which moves from run to run.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "rtn_core.h"
#include "rtn_tdma_proto_inline.h"
#include "rtn_xsk_priv.h"
#include "cost_common.h"

#define FRAME_LEN   64
#define ETHERTYPE   0x88B5
#define WARMUP	    16
#define UMEM_FRAMES 256

enum { SEND, RECV };

static uint64_t syscalls_kick, polls;

static uint8_t frame[FRAME_LEN];
static uint8_t got[FRAME_LEN];

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "bench_cost: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(2);
}

static void make_frame(void)
{
	static const uint8_t dst[6] = { 0x02, 0x52, 0x54, 0x00, 0x00, 0x02 };
	static const uint8_t src[6] = { 0x02, 0x52, 0x54, 0x00, 0x00, 0x03 };
	int i;

	memcpy(frame, dst, 6);
	memcpy(frame + 6, src, 6);
	rtn_put_be16(frame + 12, ETHERTYPE);
	for (i = 14; i < FRAME_LEN; i++)
		frame[i] = (uint8_t)i;
}

static struct rtn_xsk *open_xsk(const char *ifname, const char *obj)
{
	struct rtn_xsk_opts o = { .ifname = ifname,
				  .bpf_obj_path = obj,
				  .mode = RTN_XDP_MODE_SKB,
				  .frames = UMEM_FRAMES,
				  .n_ethertypes = 1,
				  .ethertypes = { ETHERTYPE } };
	struct rtn_xsk *x;

	if (rtn_xsk_open(&o, &x))
		die("cannot open the AF_XDP socket", rtn_last_error());
	return x;
}

/* Outside the count: until the receiving socket has a frame (it always gets one). */
static void wait_rx(struct rtn_xsk *rx)
{
	struct pollfd p = { .fd = rx->fd, .events = POLLIN };

	polls += counting;
	if (poll(&p, 1, 2000) != 1)
		die("a frame sent did not arrive within 2 s", NULL);
}

/* ---- the anchor: the least an AF_XDP program does per frame ---------------- */

static void anchor_send(struct rtn_xsk *x)
{
	uint32_t idx, n, i;
	uint64_t addr;

	n = xsk_ring_cons__peek(&x->comp, UMEM_FRAMES, &idx);
	for (i = 0; i < n; i++)
		x->tx_free[x->n_tx_free++] = *xsk_ring_cons__comp_addr(&x->comp, idx + i);
	if (n)
		xsk_ring_cons__release(&x->comp, n);
	if (!x->n_tx_free || xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1)
		die("the anchor's TX ring is full", NULL);
	addr = x->tx_free[--x->n_tx_free];
	memcpy(xsk_umem__get_data(x->area, addr), frame, FRAME_LEN);
	xsk_ring_prod__tx_desc(&x->tx, idx)->addr = addr;
	xsk_ring_prod__tx_desc(&x->tx, idx)->len = FRAME_LEN;
	xsk_ring_prod__submit(&x->tx, 1);
	sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
}

static uint32_t anchor_recv(struct rtn_xsk *x)
{
	uint32_t idx, fidx, len = 0;
	const struct xdp_desc *d;

	if (xsk_ring_cons__peek(&x->rx, 1, &idx) != 1)
		return 0;
	d = xsk_ring_cons__rx_desc(&x->rx, idx);
	len = d->len < FRAME_LEN ? d->len : FRAME_LEN;
	memcpy(got, xsk_umem__get_data(x->area, d->addr), len);
	if (xsk_ring_prod__reserve(&x->fill, 1, &fidx) == 1) {
		*xsk_ring_prod__fill_addr(&x->fill, fidx) = xsk_umem__extract_addr(d->addr);
		xsk_ring_prod__submit(&x->fill, 1);
	}
	xsk_ring_cons__release(&x->rx, 1);
	return len;
}

static void run_anchor(struct rtn_xsk *tx, struct rtn_xsk *rx, uint32_t n)
{
	uint32_t i, len;

	for (i = 0; i < n; i++) {
		MEASURE(anchor_send(tx));
		syscalls_kick += counting;
		wait_rx(rx);
		MEASURE(len = anchor_recv(rx));
		if (len != FRAME_LEN)
			die("the anchor received a frame of another length", NULL);
	}
}

/* ---- the station's socket code on the same path ----------------------------- */

static void run_rtn_xsk(struct rtn_xsk *tx, struct rtn_xsk *rx, uint32_t n, int side)
{
	struct rtn_xsk_frame fr[64];
	int64_t ts;
	uint32_t i;
	int rc, k;

	for (i = 0; i < n; i++) {
		if (side == SEND)
			MEASURE(rc = rtn_xsk_send_by(tx, frame, FRAME_LEN, -1, 0, INT64_MAX, NULL));
		else
			rc = rtn_xsk_send_by(tx, frame, FRAME_LEN, -1, 0, INT64_MAX, NULL);
		if (rc)
			die("rtn_xsk_send_by failed", rtn_last_error());
		wait_rx(rx);
		if (side == RECV)
			MEASURE(k = rtn_xsk_rx_peek(rx, fr, 64, &ts); rtn_xsk_rx_release(rx));
		else
			k = rtn_xsk_rx_peek(rx, fr, 64, &ts), rtn_xsk_rx_release(rx);
		if (k != 1 || fr[0].len != FRAME_LEN)
			die("rtn_xsk_rx_peek did not return the frame", NULL);
	}
}

/* ---- the XDP program, by the kernel's test run ------------------------------- */

static double test_run(int prog_fd, const uint8_t *data, uint32_t len, uint32_t repeat,
		       uint32_t *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = data, .data_size_in = len, .repeat = repeat);

	if (bpf_prog_test_run_opts(prog_fd, &o))
		die("BPF_PROG_TEST_RUN failed", strerror(errno));
	*retval = o.retval;
	return o.duration; /* the kernel's mean over the repeats, ns */
}

static int run_xdp_prog(uint32_t n, const char *obj_path)
{
	struct bpf_prog_info info = { 0 };
	uint32_t info_len = sizeof(info), rt_ret, ip_ret;
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *types;
	uint8_t ip[FRAME_LEN];
	double rt_ns, ip_ns;
	uint8_t one = 1;
	uint16_t key;
	int fd, stamps, err;

	obj = rtn_xdp_obj_load(obj_path, &stamps, &err);
	if (!obj || err)
		die("cannot load the XDP program", obj_path);
	prog = bpf_object__find_program_by_name(obj, "xdp_rtnet");
	types = bpf_object__find_map_by_name(obj, "rt_ethertypes");
	if (!prog || !types)
		die("xdp_rtnet or rt_ethertypes missing in", obj_path);
	fd = bpf_program__fd(prog);
	key = ETHERTYPE;
	if (bpf_map_update_elem(bpf_map__fd(types), &key, &one, BPF_ANY))
		die("cannot fill rt_ethertypes", strerror(errno));
	if (bpf_obj_get_info_by_fd(fd, &info, &info_len))
		die("cannot read the program's info", strerror(errno));
	/* IPv4/UDP to nobody's port: the program looks at it and passes it to Linux */
	memcpy(ip, frame, FRAME_LEN);
	rtn_put_be16(ip + 12, 0x0800);
	memset(ip + 14, 0, 20);
	ip[14] = 0x45;
	ip[23] = 17;
	rt_ns = test_run(fd, frame, FRAME_LEN, n, &rt_ret);
	ip_ns = test_run(fd, ip, FRAME_LEN, n, &ip_ret);
	printf("{\"stage\": \"xdp_prog\", \"rounds\": %u, \"xlated_insns\": %u, "
	       "\"jited_bytes\": %u, \"rt_frame_ns\": %.1f, \"rt_frame_retval\": %u, "
	       "\"ipv4_frame_ns\": %.1f, \"ipv4_frame_retval\": %u, \"stamps\": %d}\n",
	       n, info.xlated_prog_len / 8, info.jited_prog_len, rt_ns, rt_ret, ip_ns, ip_ret,
	       stamps);
	bpf_object__close(obj);
	return 0;
}

int main(int argc, char **argv)
{
	struct rtn_xsk *tx, *rx;
	uint64_t kicks, empty;
	char counters[96];
	unsigned long n = 0;
	char *end = NULL;
	int anchor, side;

	if (argc >= 3)
		n = strtoul(argv[2], &end, 10);
	if (!n || !end || *end || n > 1000000)
		argc = 0;
	make_frame();
	if (argc == 4 && !strcmp(argv[1], "xdp_prog"))
		return run_xdp_prog((uint32_t)n, argv[3]);
	if (argc != 6 || (strcmp(argv[1], "anchor") && strcmp(argv[1], "rtn_xsk_send") &&
			  strcmp(argv[1], "rtn_xsk_recv"))) {
		fprintf(stderr,
			"usage: cost_xsk anchor|rtn_xsk_send|rtn_xsk_recv COUNT IF_TX IF_RX "
			"BPF_OBJ\n       cost_xsk xdp_prog COUNT BPF_OBJ   (COUNT 1..1000000)\n");
		return 2;
	}
	anchor = !strcmp(argv[1], "anchor");
	side = strcmp(argv[1], "rtn_xsk_send") ? RECV : SEND;
	tx = open_xsk(argv[3], argv[5]);
	rx = open_xsk(argv[4], argv[5]);
	if (anchor)
		run_anchor(tx, rx, WARMUP);
	else
		run_rtn_xsk(tx, rx, WARMUP, side);
	kicks = tx->st.tx_kicks;
	empty = rx->st.rx_empty_polls;
	counting = 1;
	if (anchor)
		run_anchor(tx, rx, (uint32_t)n);
	else
		run_rtn_xsk(tx, rx, (uint32_t)n, side);
	counting = 0;
	/*
	 * The counters of the side measured: sendto() kicks (the anchor's, or
	 * rtn_xsk's tx_kicks); on receive, peeks that found the ring empty
	 * (each may cost a recvfrom() wake-up; the wait before is uncounted).
	 */
	if (anchor)
		snprintf(counters, sizeof(counters), "\"sendto_kicks\": %llu",
			 (unsigned long long)syscalls_kick);
	else if (side == SEND)
		snprintf(counters, sizeof(counters), "\"sendto_kicks\": %llu",
			 (unsigned long long)(tx->st.tx_kicks - kicks));
	else
		snprintf(counters, sizeof(counters), "\"empty_rx_peeks\": %llu",
			 (unsigned long long)(rx->st.rx_empty_polls - empty));
	printf("{\"stage\": \"%s\", \"rounds\": %lu, \"units\": %lu, \"unit\": \"frame\", "
	       "\"regions\": %llu, \"counters\": {%s, \"poll_waits_uncounted\": %llu}}\n",
	       argv[1], n, n, (unsigned long long)regions, counters, (unsigned long long)polls);
	rtn_xsk_close(tx);
	rtn_xsk_close(rx);
	return 0;
}
