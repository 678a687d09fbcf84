// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_app_chan.c
 * @brief Fuzz target: what the application library reads from a channel's
 *        shared memory (rtn_app_attach, send, recv, cycle waits, stats,
 *        subscribe in rtn_app.c, raw sends in rtn_app_raw.c), with the
 *        memory written by a hostile or broken station.
 *
 * Input: the size of the memory (right, one byte short, shorter than a
 * header, twice as large), up to four writes into the header before
 * rtn_app_attach() checks it, then operations: write any bytes anywhere in
 * the memory, the station delivers a message or publishes a cycle, the
 * application sends, receives (into a buffer of exactly the size it
 * offers), reads cycle information, waits for a cycle (never blocking),
 * reads its stats or subscribes.  After attach the memory is moved to a
 * heap buffer of exactly its size, so any read past it is reported.
 * A delivered message may be flagged as a piece of a chain (rtn_chan.h),
 * which the library reads as one datagram when it is sound.
 * Checked besides the sanitizers: results are 0, a count or one of the
 * documented errors; a received payload is never longer than a chain can
 * carry; no descriptor is left open.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include "rtn_app.h"
#include "rtn_app_priv.h"
#include "rtn_core.h"
#include "rtn_time_inline.h"
#include "app_harness.h"

/* a virtual clock, the library's clock port (rtn_app.o is built with
 * -DRTN_CLOCK_PORT=fuzz_clock_ns): the same input runs the same way again */
int64_t fuzz_clock_ns = 1000 * RTN_NS_PER_SEC;

enum {
	OP_POKE,
	OP_DELIVER,
	OP_PUBLISH,
	OP_SEND,
	OP_RECV,
	OP_CYCLE_INFO,
	OP_WAIT_CYCLE,
	OP_STATS,
	OP_SUBSCRIBE,
	OP_SEND_RAW,
	OP_KINDS
};

/* what one message or a chain of them can carry (a datagram put together from fragments) */
#define MAX_PAYLOAD (RTN_CHAN_CHAIN_MAX - RTN_APP_ETH_HLEN)

static uint8_t *shm_bytes(struct rtn_app_chan *ch)
{
	return (uint8_t *)ch->shm;
}

/* The station's side, using only its own idea of the geometry (depth APP_DEPTH). */
static void station_deliver(struct rtn_app_chan *ch, struct fuzz_in *in)
{
	struct rtn_chan_shm *shm = ch->shm;
	uint32_t head = shm->rx.head, len = fuzz_u16(in) % (RTN_CHAN_MSG_MAX + 1);
	struct rtn_msg *m = (struct rtn_msg *)(shm + 1) + APP_DEPTH + (head & (APP_DEPTH - 1));
	size_t got;
	const uint8_t *p = fuzz_span(in, len, &got);

	if ((uint64_t)((uint8_t *)(m + 1) - shm_bytes(ch)) > ch->size)
		return; /* a memory larger than needed still has the station's layout */
	memset(m->frame, 0, sizeof(m->frame));
	memcpy(m->frame, p, got);
	m->len = len;
	m->seq = fuzz_u32(in);
	m->sched_ns = (int64_t)fuzz_u64(in);
	m->tx_ns = (int64_t)fuzz_u64(in);
	m->rx_ns = fuzz_clock_ns;
	/* a piece of a chain (a datagram put together from fragments) or not, sound or broken */
	m->flags = fuzz_u8(in) & RTN_MSG_MORE;
	__atomic_store_n(&shm->rx.head, head + 1, __ATOMIC_RELEASE);
}

static void station_publish(struct rtn_app_chan *ch, struct fuzz_in *in)
{
	struct rtn_chan_shm *shm = ch->shm;

	shm->cycle_no = fuzz_u32(in);
	shm->cycle_start_global = (int64_t)fuzz_u64(in);
	shm->cycle_ns = (int64_t)fuzz_u64(in);
	shm->clock_offset = (int64_t)fuzz_u64(in);
	shm->cycle_start_os = (int64_t)fuzz_u64(in);
	__atomic_store_n(&shm->cycle_seq, shm->cycle_seq + 1, __ATOMIC_RELEASE);
}

static void operate(struct rtn_app_chan *ch, struct fuzz_in *in, uint8_t op)
{
	static const uint8_t dst[6] = { 0x02, 0x52, 0x54, 0x00, 0x00, 0x03 };
	struct rtn_app_waitinfo wi;
	struct rtn_app_msg_info info;
	struct rtn_app_sample samples[8];
	struct rtn_app_stats st;
	int rc;

	switch (op) {
	case OP_POKE: {
		uint32_t off = fuzz_u16(in);
		size_t got;
		const uint8_t *p;

		/* half the writes aim at the header (geometry, ring indexes, cycle), half anywhere */
		off = off & 0x8000 ? (off & 0x7fff) % sizeof(struct rtn_chan_shm) : off % ch->size;
		p = fuzz_span(in, fuzz_u8(in) % 17, &got);
		if (off + got > ch->size)
			got = ch->size - off;
		memcpy(shm_bytes(ch) + off, p, got);
		break;
	}
	case OP_DELIVER:
		station_deliver(ch, in);
		break;
	case OP_PUBLISH:
		station_publish(ch, in);
		break;
	case OP_SEND: {
		uint32_t len = fuzz_u16(in) % (RTN_CHAN_MSG_MAX + 8);
		uint8_t *payload = malloc(len ? len : 1);
		int64_t sched = fuzz_u8(in) & 1 ? RTN_APP_SCHED_NOW : (int64_t)fuzz_u64(in);
		uint32_t seq;

		memset(payload, 0xa5, len);
		rc = rtn_app_send(ch, dst, payload, len, sched, &seq);
		free(payload);
		if (rc && rc != -ENOBUFS && rc != -EMSGSIZE && rc != -ENOTCONN)
			fuzz_fail("rtn_app_send returned %d", rc);
		break;
	}
	case OP_SEND_RAW: {
		uint32_t len = fuzz_u16(in) % (RTN_CHAN_MSG_MAX + 8);
		uint8_t *frame = calloc(1, len ? len : 1);
		size_t got;
		const uint8_t *p = fuzz_span(in, len < 64 ? len : 64, &got);

		memcpy(frame, p, got);
		if (len >= RTN_APP_ETH_HLEN && fuzz_u8(in) & 1) { /* mostly the right type */
			frame[12] = ch->shm->ethertype >> 8;
			frame[13] = ch->shm->ethertype & 0xff;
		}
		rc = rtn_app_send_raw(ch, frame, len);
		free(frame);
		if (rc && rc != -ENOBUFS && rc != -EINVAL && rc != -ENOTCONN)
			fuzz_fail("rtn_app_send_raw returned %d", rc);
		break;
	}
	case OP_RECV: {
		uint32_t cap = fuzz_u16(in) % 4097;
		uint8_t *buf = malloc(cap ? cap : 1);

		rc = rtn_app_recv(ch, buf, cap, &info, 0);
		free(buf);
		if (rc >= 0 &&
		    ((uint32_t)rc > cap || (uint32_t)rc > MAX_PAYLOAD || info.len < (uint32_t)rc))
			fuzz_fail(
				"rtn_app_recv returned %d bytes (buffer %u, payload %u, frames carry %d)",
				rc, cap, info.len, MAX_PAYLOAD);
		if (info.len > MAX_PAYLOAD && rc >= 0)
			fuzz_fail("rtn_app_recv reports a %u-byte payload", info.len);
		if (rc < 0 && rc != -EAGAIN && rc != -ENOTCONN)
			fuzz_fail("rtn_app_recv returned %d", rc);
		break;
	}
	case OP_CYCLE_INFO:
		rc = rtn_app_cycle_info(ch, &wi);
		if (rc && rc != -EAGAIN)
			fuzz_fail("rtn_app_cycle_info returned %d", rc);
		(void)rtn_app_global_now(ch);
		break;
	case OP_WAIT_CYCLE:
		rc = rtn_app_wait_cycle(ch, &wi, 0);
		if (rc && rc != -ETIMEDOUT && rc != -ENOTCONN)
			fuzz_fail("rtn_app_wait_cycle returned %d", rc);
		break;
	case OP_STATS:
		rtn_app_stats(ch, &st);
		break;
	case OP_SUBSCRIBE: {
		uint32_t n = fuzz_u8(in) % 9;

		rc = rtn_app_subscribe(ch, samples, n, 0);
		if (rc > (int)n || (rc < 0 && rc != -ENOTCONN))
			fuzz_fail("rtn_app_subscribe of %u returned %d", n, rc);
		break;
	}
	}
	fuzz_clock_ns += 1000 * fuzz_u8(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int memfd = -1, kickfd = -1;
	static struct rtn_chan_shm pristine;
	const uint64_t full = rtn_chan_shm_size(APP_DEPTH);
	const uint64_t sizes[4] = { full, full - 1, sizeof(struct rtn_chan_shm) - 1, 2 * full };
	struct fuzz_in in = fuzz_in_make(data, size);
	uint64_t mem_size = sizes[fuzz_u8(&in) & 3];
	uint32_t pre = fuzz_u8(&in) % 5, i, ops = 0;
	struct rtn_app_chan *ch = NULL;
	struct rtn_chan_shm *heap;
	int before, fd, kick, rc;

	if (memfd < 0) {
		memfd = memfd_create("fuzz-channel", MFD_CLOEXEC);
		kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (memfd < 0 || kickfd < 0)
			fuzz_fail("cannot make channel memory: %s", strerror(errno));
		app_shm_init(&pristine);
	}
	before = lowest_free_fd();
	fuzz_clock_ns = 1000 * RTN_NS_PER_SEC;
	/* the memory as the station left it, zeros after the header */
	if (ftruncate(memfd, 0) < 0 || ftruncate(memfd, (off_t)mem_size) < 0 ||
	    pwrite(memfd, &pristine, sizeof(pristine) < mem_size ? sizeof(pristine) : mem_size, 0) <
		    0)
		fuzz_fail("cannot reset channel memory: %s", strerror(errno));
	for (i = 0; i < pre; i++) {
		uint8_t b[8];
		uint32_t off = fuzz_u16(&in) % sizeof(struct rtn_chan_shm);
		size_t n = fuzz_bytes(&in, b, 1 + fuzz_u8(&in) % 8);

		if (pwrite(memfd, b, n, off) < 0)
			fuzz_fail("pwrite: %s", strerror(errno));
	}

	fd = dup(memfd);
	kick = dup(kickfd);
	rc = rtn_app_attach(fd, kick, &ch);
	if (rc < 0) {
		if (rc != -EINVAL && rc != -EPROTO)
			fuzz_fail("rtn_app_attach returned %d: %s", rc, rtn_last_error());
		close(fd); /* on failure they stay the caller's */
		close(kick);
	} else {
		if (ch->size != mem_size)
			fuzz_fail("attached %llu bytes of a %llu-byte memory",
				  (unsigned long long)ch->size, (unsigned long long)mem_size);
		heap = malloc(ch->size);
		memcpy(heap, ch->shm, ch->size);
		munmap(ch->shm, ch->size);
		ch->shm = heap;
		while (fuzz_more(&in) && ops++ < 128)
			operate(ch, &in, fuzz_u8(&in) % OP_KINDS);
		/* rtn_app_close() without the munmap: the memory is on the heap now */
		free(ch->shm);
		close(ch->memfd);
		close(ch->kickfd);
		free(ch);
	}
	if (lowest_free_fd() != before)
		fuzz_fail("an input left a descriptor open");
	return 0;
}
