// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_xsk_ip.c
 * @brief Fill the XDP program's IPv4 maps (rtn_xsk_ip.h).  A socket without
 *        our program loaded (none attached yet) has no maps: -ENOENT.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include "rtn_core.h"
#include "rtn_xsk_ip.h"
#include "rtn_xsk_priv.h"

static int map_fd(struct rtn_xsk *x, const char *name)
{
	int fd = x->obj ? bpf_object__find_map_fd_by_name(x->obj, name) : -1;

	return fd >= 0 ?
		       fd :
		       rtn_set_error(-ENOENT, "%s: the XDP program has no map %s", x->ifname, name);
}

static int set_key(struct rtn_xsk *x, const char *name, const void *key, int on)
{
	uint8_t one = 1;
	int fd = map_fd(x, name);

	if (fd < 0)
		return fd;
	if (on ? bpf_map_update_elem(fd, key, &one, BPF_ANY) :
		 (bpf_map_delete_elem(fd, key) && errno != ENOENT))
		return rtn_set_error(-errno, "%s: %s: %s", x->ifname, name, strerror(errno));
	return 0;
}

int rtn_xsk_udp_port(struct rtn_xsk *x, uint16_t port, int on)
{
	rtn_clear_error();
	return set_key(x, "rt_udp_ports", &port, on);
}

int rtn_xsk_ipv4_group(struct rtn_xsk *x, uint32_t group, int on)
{
	rtn_clear_error();
	return set_key(x, "rt_ipv4_groups", &group, on);
}

int rtn_xsk_icmp_id(struct rtn_xsk *x, uint16_t id, int on)
{
	rtn_clear_error();
	return set_key(x, "rt_icmp_ids", &id, on);
}

int rtn_xsk_arp_solicit(struct rtn_xsk *x, uint32_t ip, int on)
{
	rtn_clear_error();
	return set_key(x, "rt_arp_solicit", &ip, on);
}

int rtn_xsk_ipv4(struct rtn_xsk *x, uint32_t ip)
{
	uint32_t key = 0;
	int fd;

	rtn_clear_error();
	fd = map_fd(x, "rt_ipv4");
	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(fd, &key, &ip, BPF_ANY))
		return rtn_set_error(-errno, "%s: rt_ipv4: %s", x->ifname, strerror(errno));
	return 0;
}
