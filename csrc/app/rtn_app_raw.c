// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_app_raw.c
 * @brief Sending a whole Ethernet frame the caller built, without an
 *        application header: for the station daemon's own protocols (RTcfg)
 *        whose frames are defined by someone else's format.
 */
#include <errno.h>
#include <string.h>
#include "rtn_app.h"
#include "rtn_app_hdr.h"
#include "rtn_app_priv.h"
#include "rtn_chan_inline.h"
#include "rtn_core.h"

int rtn_app_send_raw(struct rtn_app_chan *ch, const void *frame, uint32_t len)
{
	const uint8_t *f = frame;
	/* read once: the shared page may change under us */
	uint32_t max = __atomic_load_n(&ch->shm->max_size, __ATOMIC_RELAXED);
	struct rtn_app_stamps hdr;
	uint16_t type, want = __atomic_load_n(&ch->shm->ethertype, __ATOMIC_RELAXED);
	struct rtn_msg *m;
	int rc = 0;

	rtn_clear_error();
	if (max > RTN_CHAN_MSG_MAX)
		max = RTN_CHAN_MSG_MAX;
	if (len < RTN_APP_ETH_HLEN || len > max)
		return rtn_set_error(-EINVAL, "raw frame of %u bytes: the channel carries %d..%u",
				     len, RTN_APP_ETH_HLEN, max);
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type != want)
		return rtn_set_error(-EINVAL,
				     "raw frame of EtherType 0x%04x on a channel of 0x%04x", type,
				     want);
	/* the station would take it for an application message and stamp it */
	if (rtn_app_hdr_parse(f, len, &hdr) != 0)
		return rtn_set_error(-EINVAL, "raw frame starts like an application header");
	m = rtn_app_tx_slot(ch, &rc);
	if (!m)
		return rc;
	/* the caller's frame as it is: no application header, so nothing gets stamped into it */
	memcpy(m->frame, frame, len);
	m->len = len;
	m->seq = 0;
	m->sched_ns = m->handover_ns = rtn_app_global_now(ch);
	m->pickup_ns = m->tx_ns = m->rx_ns = m->rx_rt_ns = 0;
	m->flags = 0;
	rtn_app_tx_commit(ch);
	return 0;
}
