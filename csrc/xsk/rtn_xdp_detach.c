/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xdp_detach.c
 * @brief Crash recovery: detach a left-over XDP program (see rtn_xdp_detach.h).
 *
 * A station attaches its program with XDP_FLAGS_UPDATE_IF_NOEXIST, so a
 * program left behind by a killed daemon makes the next start fail with
 * EBUSY; the daemon calls this only after it has made sure no live daemon
 * owns the device (PID file).
 */
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rtn_core.h"
#include "rtn_xdp_detach.h"

/*
 * The XDP programs on @p ifname, in driver and in SKB mode, counted; with
 * @p detach each one found is detached as well.  Counting fails on a query
 * that fails; detaching passes over it, to remove what it can.
 */
static int walk_attached(const char *ifname, int detach)
{
	static const unsigned int modes[] = { XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE };
	int ifindex = if_nametoindex(ifname);
	unsigned int i, id;
	int n = 0, err;

	rtn_clear_error();
	if (!ifindex)
		return rtn_set_error(-ENODEV, "%s: no such interface", ifname);
	for (i = 0; i < 2; i++) {
		id = 0;
		err = bpf_xdp_query_id(ifindex, modes[i], &id);
		if (err && !detach)
			return rtn_set_error(err, "%s: query XDP program: %s", ifname,
					     strerror(-err));
		if (err || !id)
			continue;
		err = detach ? bpf_xdp_detach(ifindex, modes[i], NULL) : 0;
		if (err)
			return rtn_set_error(err, "%s: detach XDP program %u: %s", ifname, id,
					     strerror(-err));
		n++;
	}
	return n;
}

int rtn_xdp_attached(const char *ifname)
{
	return walk_attached(ifname, 0);
}

int rtn_xdp_detach(const char *ifname)
{
	return walk_attached(ifname, 1);
}
