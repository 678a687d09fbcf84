/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_wakeboard.h
 * @brief When the process's RT threads wake next, for the helper threads
 *        whose system calls would hold a CPU across one of those wake-ups.
 *
 * On a kernel without full preemption (PREEMPT_NONE or VOLUNTARY, Debian's
 * default among them) a woken SCHED_FIFO thread waits until whatever runs
 * on its CPU leaves the kernel.  A VNIC pump's TAP write runs Linux's TCP
 * receive for a merged super-packet inside the system call, tens of
 * microseconds.  So each RT thread posts its next deadline here, and a
 * helper about to start a long system call waits until a deadline that
 * close has passed.  Measured with tools/bench_sched_delay.py (a 1 Gbit/s
 * VNIC TCP flow on the lab VM, 3 s traced, three runs each, interleaved):
 * the RT wake-ups that waited more than 15 us for a pump to leave the CPU
 * went from 268, 309, 268 to 84, 105, 104, all those waiting more than
 * 15 us from 344..450 to 178..205, p99 from 25..31 to 23..25 us; TCP
 * 793..809 Mbit/s either way.
 *
 * An RT thread pinned to a CPU posts that CPU too, and a helper asks only
 * about the CPUs it may run on: a pump kept off the RT threads' CPU
 * (vnic bench's placement, an isolated RT CPU) holds no write for them.
 */
#ifndef RTN_WAKEBOARD_H
#define RTN_WAKEBOARD_H

#include <stdint.h>

#define RTN_WAKEBOARD_SLOTS 64 /* RT threads of one process that post, at most */
/* CPUs as a mask, bit N for CPU N; a thread pinned to CPU 64 or above counts as on all */
#define RTN_WAKEBOARD_ANY_CPU 0xffffffffffffffffULL

/** A slot for one RT thread to post in, or -1 when all are taken (it posts nothing then). */
int rtn_wakeboard_claim(void);
/** CPU @p cpu as a mask: its bit, or every CPU for one outside the mask (-1: not pinned). */
uint64_t rtn_wakeboard_cpu_mask(int cpu);
/** The CPU the slot's RT thread is pinned to (-1: none, it may run anywhere; the default). */
void rtn_wakeboard_pin(int slot, int cpu);
/** Give the slot back (-1 accepted). */
void rtn_wakeboard_release(int slot);
/** The RT thread's next deadline (INT64_MAX: none), before it waits for it. */
void rtn_wakeboard_post(int slot, int64_t at);
/**
 * The earliest deadline posted at or after @p now (CLOCK_MONOTONIC ns) by an
 * RT thread that may run on one of the CPUs in @p cpus (RTN_WAKEBOARD_ANY_CPU:
 * any thread), INT64_MAX if none.
 */
int64_t rtn_wakeboard_next(int64_t now, uint64_t cpus);

#endif
