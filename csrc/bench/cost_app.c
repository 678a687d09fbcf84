// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file cost_app.c
 * @brief The application library (rtn_app.o) for the cost harness, on a
 *        virtual clock: the send and receive paths stamp messages with
 *        rtn_now(), and a clock read whose cost depends on the kernel's
 *        clock source would make the count differ between machines.  The
 *        harness's rtn_app.o is built with -DRTN_CLOCK_PORT=cost_app_clock_ns
 *        (csrc/Makefile); the production library reads CLOCK_MONOTONIC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "rtn_app_priv.h"
#include "rtn_core.h"
#include "rtn_time_inline.h"
#include "cost_app.h"

int64_t cost_app_clock_ns = 1000 * RTN_NS_PER_SEC;

/*
 * Attach to a channel whose memory the harness already holds: rtn_app_attach()
 * checks a memfd with a copy of the header, then the library is pointed at
 * the harness's memory, which the station's side uses too.
 */
struct rtn_app_chan *cost_app_attach(struct rtn_chan_shm *shm, uint64_t size)
{
	struct rtn_app_chan *ch;
	int fd = memfd_create("cost-channel", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    pwrite(fd, shm, sizeof(*shm), 0) != (ssize_t)sizeof(*shm) ||
	    rtn_app_attach(fd, -1, &ch)) {
		fprintf(stderr, "bench_cost: cannot attach to the channel: %s\n", rtn_last_error());
		exit(2);
	}
	munmap(ch->shm, ch->size);
	ch->shm = shm;
	return ch;
}

uint64_t cost_app_kicks(const struct rtn_app_chan *ch)
{
	return ch->kicks;
}
