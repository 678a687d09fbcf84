/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file cost_app.h
 * @brief What the cost harness needs from its build of the application
 *        library (cost_app.c).
 */
#ifndef RTN_BENCH_COST_APP_H
#define RTN_BENCH_COST_APP_H

#include <stdint.h>
#include "rtn_app.h"
#include "rtn_chan.h"

extern int64_t cost_app_clock_ns;

struct rtn_app_chan *cost_app_attach(struct rtn_chan_shm *shm, uint64_t size);
uint64_t cost_app_kicks(const struct rtn_app_chan *ch);

#endif
