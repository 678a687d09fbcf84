/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_pingpong.c
 * @brief Busy-polling AF_XDP and UDP ping-pong (see rtn_pingpong.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "rtn_core.h"
#include "rtn_hist_inline.h"
#include "rtn_pingpong.h"
#include "rtn_time_inline.h"

#define PP_MAX_FRAME   2048
#define PP_SEQ_OFF_ETH 14

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void record(uint32_t i, uint32_t warmup, int64_t rtt, int64_t *rtts, struct rtn_hist *hist)
{
	if (i < warmup)
		return;
	rtts[i - warmup] = rtt;
	if (hist && rtt >= 0)
		rtn_hist_add(hist, rtt);
}

int rtn_pp_xsk_client(struct rtn_xsk *x, const uint8_t *tmpl, uint32_t len, uint32_t count,
		      uint32_t warmup, int timeout_us, int64_t *rtts, struct rtn_hist *hist,
		      struct rtn_pp_result *res)
{
	uint8_t frame[PP_MAX_FRAME], echo[PP_MAX_FRAME];
	int64_t tx_ts, rx_ts, deadline;
	uint32_t i;
	int n, err;

	rtn_clear_error();
	if (len < PP_SEQ_OFF_ETH + 4 || len > PP_MAX_FRAME)
		return rtn_set_error(-EINVAL, "ping frame length %u outside 18..%d", len,
				     PP_MAX_FRAME);
	memset(res, 0, sizeof(*res));
	memcpy(frame, tmpl, len);
	for (i = 0; i < warmup + count; i++) {
		put_be32(frame + PP_SEQ_OFF_ETH, i);
		do {
			err = rtn_xsk_send(x, frame, len, &tx_ts);
		} while (err == -EAGAIN);
		if (err)
			return err;
		res->sent++;
		deadline = tx_ts + (int64_t)timeout_us * RTN_NS_PER_US;
		for (;;) {
			n = rtn_xsk_recv(x, echo, sizeof(echo), &rx_ts, 0);
			if (n < 0)
				return n;
			if (n == 0) {
				if (rtn_now() < deadline)
					continue;
				res->lost++;
				record(i, warmup, -1, rtts, hist);
				break;
			}
			if (n >= (int)len && !memcmp(echo + 12, frame + 12, 2) &&
			    get_be32(echo + PP_SEQ_OFF_ETH) == i) {
				res->received++;
				record(i, warmup, rx_ts - tx_ts, rtts, hist);
				break;
			}
			res->stray++;
		}
	}
	return (int)res->received;
}

int rtn_pp_xsk_responder(struct rtn_xsk *x, uint32_t count, int idle_us, struct rtn_pp_result *res)
{
	uint8_t frame[PP_MAX_FRAME], mac[6];
	int64_t ts, last = rtn_now();
	int n, err;

	rtn_clear_error();
	memset(res, 0, sizeof(*res));
	while (res->sent < count) {
		n = rtn_xsk_recv(x, frame, sizeof(frame), &ts, 0);
		if (n < 0)
			return n;
		if (n == 0) {
			if (rtn_now() - last > (int64_t)idle_us * RTN_NS_PER_US)
				break;
			continue;
		}
		last = ts;
		res->received++;
		if (n < PP_SEQ_OFF_ETH + 4) {
			res->stray++;
			continue;
		}
		memcpy(mac, frame, 6);
		memcpy(frame, frame + 6, 6);
		memcpy(frame + 6, mac, 6);
		do {
			err = rtn_xsk_send(x, frame, n, NULL);
		} while (err == -EAGAIN);
		if (err)
			return err;
		res->sent++;
	}
	return (int)res->sent;
}

int rtn_pp_udp_client(int fd, uint32_t len, uint32_t count, uint32_t warmup, int timeout_us,
		      int64_t *rtts, struct rtn_hist *hist, struct rtn_pp_result *res)
{
	uint8_t msg[PP_MAX_FRAME], echo[PP_MAX_FRAME];
	int64_t tx_ts, rx_ts, deadline;
	uint32_t i;
	ssize_t n;

	rtn_clear_error();
	if (len < 4 || len > PP_MAX_FRAME)
		return rtn_set_error(-EINVAL, "ping payload length %u outside 4..%d", len,
				     PP_MAX_FRAME);
	memset(res, 0, sizeof(*res));
	memset(msg, 0, sizeof(msg));
	for (i = 0; i < warmup + count; i++) {
		put_be32(msg, i);
		tx_ts = rtn_now();
		if (send(fd, msg, len, 0) < 0)
			return rtn_set_error(-errno, "UDP send: %s", strerror(errno));
		res->sent++;
		deadline = tx_ts + (int64_t)timeout_us * RTN_NS_PER_US;
		for (;;) {
			n = recv(fd, echo, sizeof(echo), MSG_DONTWAIT);
			if (n < 0) {
				if (errno != EAGAIN && errno != EINTR && errno != ECONNREFUSED)
					return rtn_set_error(-errno, "UDP recv: %s",
							     strerror(errno));
				if (rtn_now() < deadline)
					continue;
				res->lost++;
				record(i, warmup, -1, rtts, hist);
				break;
			}
			rx_ts = rtn_now();
			if (n >= 4 && get_be32(echo) == i) {
				res->received++;
				record(i, warmup, rx_ts - tx_ts, rtts, hist);
				break;
			}
			res->stray++;
		}
	}
	return (int)res->received;
}

int rtn_pp_udp_responder(int fd, uint32_t count, int idle_us, struct rtn_pp_result *res)
{
	uint8_t msg[PP_MAX_FRAME];
	int64_t last = rtn_now();
	ssize_t n;

	rtn_clear_error();
	memset(res, 0, sizeof(*res));
	while (res->sent < count) {
		n = recv(fd, msg, sizeof(msg), MSG_DONTWAIT);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNREFUSED)
				return rtn_set_error(-errno, "UDP recv: %s", strerror(errno));
			if (rtn_now() - last > (int64_t)idle_us * RTN_NS_PER_US)
				break;
			continue;
		}
		last = rtn_now();
		res->received++;
		if (send(fd, msg, n, 0) < 0)
			return rtn_set_error(-errno, "UDP send: %s", strerror(errno));
		res->sent++;
	}
	return (int)res->sent;
}
