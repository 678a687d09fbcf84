// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file xdp_rtnet.bpf.c
 * @brief XDP program of the real-time path: steer RTnet EtherTypes to AF_XDP.
 *
 * Only frames whose EtherType is listed in rt_ethertypes (behind an R-TAG:
 * the encapsulated one) go to the AF_XDP socket bound to the receiving queue; everything else (IP, ARP, ...) goes
 * on to the Linux stack.  libxdp's default program redirects every frame of
 * the queue, which would cut the station off from Linux networking.
 *
 * If no socket is bound to the queue, bpf_redirect_map() falls back to
 * XDP_PASS, so a half-set-up station still talks IP.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

/* key: EtherType in host order; value: unused flag (1) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u16);
	__type(value, __u8);
} rt_ethertypes SEC(".maps");

/* index 0: redirected to AF_XDP, 1: passed to the stack */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} rt_counters SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&rt_counters, &idx);

	if (c)
		(*c)++;
}

/*
 * The receive timestamp, taken here, in the driver's receive path: the
 * closest AF_XDP gets to RTnet's stamp at interrupt entry.  It travels in the
 * XDP metadata area in front of the frame (copied to the UMEM in copy mode
 * too); the magic tells user space it is there.  bpf_ktime_get_ns() is
 * CLOCK_MONOTONIC, the stations' clock.
 */
struct rtn_rx_meta {
	__u64 magic;
	__u64 rx_ns;
};
#define RTN_RX_META_MAGIC 0x52544e5852584d31ULL	/* "RTNXRXM1" */

static __always_inline void stamp(struct xdp_md *ctx)
{
	struct rtn_rx_meta *meta;
	void *data;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*meta)))
		return;	/* driver without metadata: user space stamps at poll time */
	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(meta + 1) > data)
		return;
	meta->magic = RTN_RX_META_MAGIC;
	meta->rx_ns = bpf_ktime_get_ns();
}

/*
 * The EtherType that decides: a frame's own, or for an IEEE 802.1CB R-TAG
 * (0xF1C1: 2 reserved bytes, the sequence number, then the EtherType it
 * encapsulates at offset 16) the encapsulated one, so a tagged copy of a
 * real-time frame goes where the untagged frame would.  A tag cut short
 * decides nothing (0 is never in rt_ethertypes).
 */
#define RTAG_ETHERTYPE 0xF1C1

static __always_inline __u16 steering_type(struct ethhdr *eth, void *data_end)
{
	__u16 proto = bpf_ntohs(eth->h_proto);
	__be16 *inner = (__be16 *)((__u8 *)(eth + 1) + 4);

	if (proto != RTAG_ETHERTYPE)
		return proto;
	if ((void *)(inner + 1) > data_end)
		return 0;
	return bpf_ntohs(*inner);
}

SEC("xdp")
int xdp_rtnet(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u16 proto;

	if ((void *)(eth + 1) > data_end)
		goto pass;
	proto = steering_type(eth, data_end);
	if (!bpf_map_lookup_elem(&rt_ethertypes, &proto))
		goto pass;
	count(0);
	stamp(ctx);
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
pass:
	count(1);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
