/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file cost_common.h
 * @brief The measuring bracket of the cost harnesses (cost_stages.c,
 *        cost_preload.c, cost_xsk.c): MEASURE(stmt) runs @c stmt with
 *        callgrind's collection on, once @c counting is set (after the
 *        warm-up), and counts the brackets in @c regions.  Each harness is
 *        a program of its own that includes this once.
 */
#ifndef RTN_BENCH_COST_COMMON_H
#define RTN_BENCH_COST_COMMON_H

#include <stdint.h>
#include <valgrind/callgrind.h>

static int counting; /* brackets are live (after the warm-up) */
static uint64_t regions;

#define MEASURE(stmt)                             \
	do {                                      \
		if (counting) {                   \
			regions++;                \
			CALLGRIND_TOGGLE_COLLECT; \
		}                                 \
		stmt;                             \
		if (counting)                     \
			CALLGRIND_TOGGLE_COLLECT; \
	} while (0)

#endif
