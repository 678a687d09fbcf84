/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_recring_inline.h
 * @brief A ring of fixed-size records that one writer fills and readers copy
 *        without ever holding it up (the stage records, the stall gaps).
 *
 * Each record starts with `uint64_t no`: its record number + 1, or 0 while
 * the writer is changing it.  A reader copies a record and keeps the copy
 * only if `no` said the same number before and after.
 */
#ifndef RTN_RECRING_INLINE_H
#define RTN_RECRING_INLINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The writer, before it changes record @p no_field. */
static inline void rtn_recring_begin(uint64_t *no_field)
{
	__atomic_store_n(no_field, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* The writer, once record number @p number (0-based) is complete. */
static inline void rtn_recring_commit(uint64_t *no_field, uint64_t number)
{
	__atomic_store_n(no_field, number + 1, __ATOMIC_RELEASE);
}

/*
 * Copy up to @p n whole records from number @p first on, of @p written so
 * far, out of @p recs (@p cap records of @p size bytes) into @p out; records
 * already overwritten are skipped.  *next is where the next read starts.
 */
static inline uint32_t rtn_recring_read(const void *recs, size_t size, uint32_t cap,
					uint64_t written, uint64_t first, void *out, uint32_t n,
					uint64_t *next)
{
	uint64_t i;
	uint32_t got = 0;

	if (written > cap && first < written - cap)
		first = written - cap; /* older ones were overwritten */
	for (i = first; i < written && got < n; i++) {
		const uint8_t *r = (const uint8_t *)recs + (i % cap) * size;
		const uint64_t *no = (const uint64_t *)r;

		if (__atomic_load_n(no, __ATOMIC_ACQUIRE) != i + 1)
			continue;
		memcpy((uint8_t *)out + (size_t)got * size, r, size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(no, __ATOMIC_RELAXED) == i + 1)
			got++;
	}
	*next = i;
	return got;
}

#endif
