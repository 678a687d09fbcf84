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
 * IPv4 and ARP go to the socket only where they are real-time (steer_ipv4(),
 * steer_arp()); the real-time UDP/IPv4 path is not replicated over two ports.
 *
 * If no socket is bound to the queue, the frame goes to Linux and is counted
 * per queue (rt_unbound), so a half-set-up station still talks IP and a NIC
 * that spreads the stack's frames over several queues shows it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "rtn_xsk_stamp_priv.h"

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

/*
 * Per receive queue: frames of the real-time path that arrived on a queue
 * with no AF_XDP socket bound (receive-side scaling put them there), passed
 * to Linux instead: the station never sees them, so they are counted here.
 */
#define RTN_QUEUES 64
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RTN_QUEUES);
	__type(key, __u32);
	__type(value, __u64);
} rt_unbound SEC(".maps");

/* ---- IPv4 on the real-time path (rtn_xsk_ip.c fills these) ---- */
/* UDP ports (host order) a real-time socket is bound to */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u8);
} rt_udp_ports SEC(".maps");

/* IPv4 multicast groups (host order) the station's UDP sockets joined */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u8);
} rt_ipv4_groups SEC(".maps");

/* ICMP echo identifiers (host order) of the station's pings in progress */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u16);
	__type(value, __u8);
} rt_icmp_ids SEC(".maps");

/* index 0: the station's real-time address (host order), 0 for none */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} rt_ipv4 SEC(".maps");

/*
 * The UDP datagrams arriving in fragments whose first fragment came to the
 * real-time path: their later fragments follow it (they have no port to
 * decide on).  Key: source address and identification, as the header has
 * them; least recently used ones give way.  The station's collectors
 * (rtn_ip_defrag.h) keep as few.
 */
struct rt_frag_key {
	__u32 saddr;
	__u16 id;
	__u16 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, struct rt_frag_key);
	__type(value, __u8);
} rt_ipv4_frags SEC(".maps");

/* sender IPv4 addresses (host order) the station is soliciting (rtroute solicit) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u8);
} rt_arp_solicit SEC(".maps");

/*
 * An ARP reply (Ethernet/IPv4, RFC 826) from an address the station is
 * soliciting: the one ARP frame the real-time path takes, every other stays
 * Linux's.
 */
static __always_inline int steer_arp(void *data, void *data_end)
{
	__u8 *a = data + sizeof(struct ethhdr);
	__u32 spa;

	if ((void *)(a + 28) > data_end)
		return 0;
	/* htype 1, ptype IPv4, hlen 6, plen 4, operation 2 (reply) */
	if (a[0] != 0 || a[1] != 1 || a[2] != 0x08 || a[3] != 0 || a[4] != 6 || a[5] != 4 ||
	    a[6] != 0 || a[7] != 2)
		return 0;
	spa = (__u32)a[14] << 24 | (__u32)a[15] << 16 | (__u32)a[16] << 8 | a[17];
	return bpf_map_lookup_elem(&rt_arp_solicit, &spa) != 0;
}

/*
 * Whether an IPv4 frame is real-time: UDP to a bound port at the station's
 * address, the limited broadcast or a multicast group a socket joined, an
 * ICMP echo request to the station's address, or the echo reply of a ping in progress.  Only what a real-time
 * socket asked for is taken from Linux (ARP, TCP, other ICMP and the rest
 * of UDP stay its own).  Headers are read only as far as the decision
 * needs; the station checks the rest (lengths, checksums, options) and
 * counts what is wrong.  A fragment past the first has no transport header
 * to decide on: it follows its datagram's first fragment (rt_ipv4_frags),
 * else it is Linux's; the fragments of anything but UDP are all Linux's,
 * which puts them together (a large ping).
 */
static __always_inline int steer_ipv4(void *data, void *data_end)
{
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct rt_frag_key fk = {};
	__u32 key = 0, *own, dst, ihl;
	__u16 port, frag;
	__u8 *l4, one = 1;

	if ((void *)(ip + 1) > data_end || ip->version != 4)
		return 0;
	own = bpf_map_lookup_elem(&rt_ipv4, &key);
	if (!own || !*own)
		return 0;
	frag = bpf_ntohs(ip->frag_off) & 0x3fff; /* MF and the offset */
	fk.saddr = ip->saddr;
	fk.id = ip->id;
	if (frag && ip->protocol != IPPROTO_UDP)
		return 0;
	if (frag & 0x1fff) {
		if (!bpf_map_lookup_elem(&rt_ipv4_frags, &fk))
			return 0;
		if (!(frag & 0x2000)) /* the last: its datagram is done */
			bpf_map_delete_elem(&rt_ipv4_frags, &fk);
		return 1;
	}
	ihl = ip->ihl * 4; /* 0..60: a bounded variable offset the verifier accepts */
	if (ihl < sizeof(*ip))
		return 0;
	l4 = (__u8 *)ip + ihl;
	if ((void *)(l4 + 8) > data_end)
		return 0;
	dst = bpf_ntohl(ip->daddr);
	if (ip->protocol == IPPROTO_UDP) {
		if (dst != *own && dst != 0xffffffff &&
		    ((dst >> 28) != 0xe || !bpf_map_lookup_elem(&rt_ipv4_groups, &dst)))
			return 0;
		port = (__u16)(l4[2] << 8 | l4[3]);
		if (!bpf_map_lookup_elem(&rt_udp_ports, &port))
			return 0;
		if (frag) /* a first fragment: the rest of its datagram follows it */
			bpf_map_update_elem(&rt_ipv4_frags, &fk, &one, BPF_ANY);
		return 1;
	}
	if (ip->protocol != IPPROTO_ICMP || dst != *own || l4[1] != 0)
		return 0;
	if (l4[0] == 8) /* echo request: the RT thread answers */
		return 1;
	port = (__u16)(l4[4] << 8 | l4[5]);
	return l4[0] == 0 && bpf_map_lookup_elem(&rt_icmp_ids, &port) != 0;
}

static __always_inline void count_in(void *map, __u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(map, &idx);

	if (c)
		(*c)++;
}

/*
 * The receive timestamp, taken here, in the driver's receive path: the
 * closest AF_XDP gets to RTnet's stamp at interrupt entry.  bpf_ktime_get_ns()
 * is CLOCK_MONOTONIC, the stations' clock.  Where it travels is the
 * loader's choice (rtn_stamp_rx, rtn_xsk_stamp_priv.h): in the XDP metadata
 * area in front of the frame (copied to the UMEM in copy mode too), where a
 * driver without one leaves it out and the magic tells user space it is
 * there; or, on a kernel that refuses a program bpf_xdp_adjust_meta()
 * (6.18.44 does: "program of this type cannot use helper"), in front of the
 * frame's own bytes, which every steered frame then carries: one that
 * cannot have it goes to Linux instead (returns 0).  The verifier sees only
 * the chosen branch, so the refused helper is never in the program.
 */
const volatile __u32 rtn_stamp_rx = RTN_XSK_STAMP_META;

/* @p st, up to @p end, gets the stamp; 0 when it does not fit (the verifier's bound too). */
static __always_inline int put_stamp(struct rtn_rx_stamp *st, void *end)
{
	if ((void *)(st + 1) > end)
		return 0;
	st->magic = RTN_RX_STAMP_MAGIC;
	st->rx_ns = bpf_ktime_get_ns();
	return 1;
}

static __always_inline int stamp(struct xdp_md *ctx)
{
	if (rtn_stamp_rx == RTN_XSK_STAMP_META) {
		if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct rtn_rx_stamp)))
			return 1; /* driver without metadata: user space stamps at poll time */
		/* the compiler must not reuse a pointer into ctx across the helper */
		asm volatile("" : "+r"(ctx));
		put_stamp((void *)(long)ctx->data_meta, (void *)(long)ctx->data);
		return 1;
	}
	if (rtn_stamp_rx == RTN_XSK_STAMP_HEAD) {
		if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct rtn_rx_stamp)))
			return 0;
		asm volatile("" : "+r"(ctx));
		if (put_stamp((void *)(long)ctx->data, (void *)(long)ctx->data_end))
			return 1;
		/* cannot happen for a frame of 14 bytes or more: Linux gets it as it came */
		bpf_xdp_adjust_head(ctx, (int)sizeof(struct rtn_rx_stamp));
		return 0;
	}
	return 1;
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

/*
 * Whether a frame is the real-time path's: IPv4 and ARP as steer_ipv4() and
 * steer_arp() decide, everything else by its EtherType (steering_type()).
 */
static __always_inline int real_time(struct ethhdr *eth, void *data_end)
{
	__u16 proto = bpf_ntohs(eth->h_proto);

	if (proto == ETH_P_IP)
		return steer_ipv4(eth, data_end);
	if (proto == ETH_P_ARP)
		return steer_arp(eth, data_end);
	proto = steering_type(eth, data_end);
	return bpf_map_lookup_elem(&rt_ethertypes, &proto) != 0;
}

SEC("xdp")
int xdp_rtnet(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 queue;

	if ((void *)(eth + 1) > data_end)
		goto pass;
	if (!real_time(eth, data_end))
		goto pass;
	queue = ctx->rx_queue_index;
	if (!bpf_map_lookup_elem(&xsks_map, &queue)) {
		count_in(&rt_unbound, queue < RTN_QUEUES ? queue : RTN_QUEUES - 1);
		goto pass;
	}
	if (!stamp(ctx))
		goto pass;
	count_in(&rt_counters, 0);
	/* a socket gone since the lookup: Linux, unless the frame now carries the stamp */
	return bpf_redirect_map(&xsks_map, queue,
				rtn_stamp_rx == RTN_XSK_STAMP_HEAD ? XDP_DROP : XDP_PASS);
pass:
	count_in(&rt_counters, 1);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
