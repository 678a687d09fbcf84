/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file app_harness.h
 * @brief What the application library fuzz targets share: a channel memory
 *        image as a station makes it, and a check that an input left no
 *        file descriptor open.
 */
#ifndef RTN_FUZZ_APP_HARNESS_H
#define RTN_FUZZ_APP_HARNESS_H

#include <sys/mman.h>
#include <unistd.h>
#include "rtn_chan_inline.h"
#include "fuzz_input.h"

#define APP_DEPTH     4
#define APP_ETHERTYPE 0x88B5

/* The header rtn_station_chan_open() writes. */
static inline void app_shm_init(struct rtn_chan_shm *shm)
{
	static const uint8_t mac[6] = { 0x02, 0x52, 0x54, 0x00, 0x00, 0x02 };

	memset(shm, 0, sizeof(*shm));
	shm->magic = RTN_CHAN_MAGIC;
	shm->version = RTN_CHAN_VERSION;
	shm->depth = APP_DEPTH;
	shm->ethertype = APP_ETHERTYPE;
	shm->max_size = 1514;
	memcpy(shm->station_mac, mac, 6);
	shm->tx.size = shm->rx.size = APP_DEPTH;
	shm->alive = 1;
}

/* A memfd holding a fresh channel of depth APP_DEPTH, as a station hands out. */
static inline int app_channel_memfd(void)
{
	uint64_t size = rtn_chan_shm_size(APP_DEPTH);
	int fd = memfd_create("fuzz-channel", MFD_CLOEXEC);
	struct rtn_chan_shm shm;

	app_shm_init(&shm);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    pwrite(fd, &shm, sizeof(shm), 0) != (ssize_t)sizeof(shm))
		fuzz_fail("cannot make channel memory: %s", strerror(errno));
	return fd;
}

/* The lowest free descriptor number: the same before and after an input, or it leaked one. */
static inline int lowest_free_fd(void)
{
	int fd = dup(2);

	if (fd < 0)
		fuzz_fail("dup: %s", strerror(errno));
	close(fd);
	return fd;
}

#endif
