/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file fuzz_input.h
 * @brief Shared by the fuzz targets: reading structured values out of the
 *        fuzzer's bytes, and reporting a broken invariant.
 *
 * A harness reads its input as a little script (a header, then records).
 * Past the end every read returns zeros, so any byte string is a valid
 * script and a shorter input is simply a shorter script.
 */
#ifndef RTN_FUZZ_INPUT_H
#define RTN_FUZZ_INPUT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * For the harness's own bookkeeping (restoring state, checking invariants):
 * not instrumented for coverage, so its loops and comparisons neither slow
 * every input down nor count as progress of the fuzzer.
 */
#define FUZZ_UNTRACED __attribute__((no_sanitize("coverage"), noinline))

struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline struct fuzz_in fuzz_in_make(const uint8_t *data, size_t size)
{
	return (struct fuzz_in){ .p = data, .left = size };
}

static inline int fuzz_more(const struct fuzz_in *in)
{
	return in->left > 0;
}

/* Copy up to @p n bytes into @p out (zero-filled past the end); returns how many were real. */
static inline size_t fuzz_bytes(struct fuzz_in *in, void *out, size_t n)
{
	size_t k = n < in->left ? n : in->left;

	memcpy(out, in->p, k);
	memset((uint8_t *)out + k, 0, n - k);
	in->p += k;
	in->left -= k;
	return k;
}

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v;

	fuzz_bytes(in, &v, 1);
	return v;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint8_t b[2];

	fuzz_bytes(in, b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	return fuzz_u16(in) | (uint32_t)fuzz_u16(in) << 16;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	return fuzz_u32(in) | (uint64_t)fuzz_u32(in) << 32;
}

/* The next @p n input bytes in place (fewer at the end); *got says how many. */
static inline const uint8_t *fuzz_span(struct fuzz_in *in, size_t n, size_t *got)
{
	const uint8_t *p = in->p;

	*got = n < in->left ? n : in->left;
	in->p += *got;
	in->left -= *got;
	return p;
}

/*
 * A broken invariant: one line naming the target and what broke, then
 * abort() so libFuzzer keeps the input as a crash artifact.
 */
__attribute__((noreturn, format(printf, 1, 2))) static inline void fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz invariant broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/*
 * @p n bytes of heap that end exactly where the data ends, so AddressSanitizer
 * reports the first byte read past it (a larger shared buffer would hide that).
 */
static inline uint8_t *fuzz_exact_copy(const void *src, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	if (!p)
		fuzz_fail("out of memory (%zu bytes)", n);
	if (n)
		memcpy(p, src, n);
	return p;
}

#endif
