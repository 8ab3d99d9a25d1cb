/* SPDX-License-Identifier: MIT */
/* sample.h - Poisson sampling by bytes (as tcmalloc and jemalloc heap
 * profiling do): on average one allocation per mw_sample_bytes bytes is
 * recorded, and each recorded one stands for the allocations it
 * represents, so totals become unbiased estimates.
 *
 * The per-call cost is a thread-local countdown; frees skip the live
 * table unless a small counting filter says the pointer may be sampled.
 */
#ifndef MW_SAMPLE_H
#define MW_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/tls.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* Mean bytes between samples; 0 records every allocation.  Set before
 * tracking is enabled. */
extern uint64_t mw_sample_bytes;

/* Stacks taken under full tracking (option stack_sample): about one
 * allocation per mw_stack_sample_bytes bytes also counts at its Ruby
 * stack, scaled; 0: none sampled that way.  Set before tracking is
 * enabled, and only while mw_sample_bytes is 0. */
extern uint64_t mw_stack_sample_bytes;

/* Draws the next interval, of mean @mean bytes, into *@left (the
 * calling thread's countdown); returns 1: the allocation that crossed
 * the previous one is to be recorded.  Context: hook; never allocates. */
int mw_sample_draw_slow(int64_t *left, uint64_t mean);

/* Should an allocation of @size be recorded?  Context: hook. */
static inline int mw_sample_take(size_t size)
{
	if (!mw_sample_bytes)
		return 1;
	mw_tls.sample_left -= (int64_t)size;
	if (__builtin_expect(mw_tls.sample_left > 0, 1))
		return 0;
	return mw_sample_draw_slow(&mw_tls.sample_left, mw_sample_bytes);
}

/* Should an allocation of @size also count at its stack?  Only called
 * with mw_stack_sample_bytes set.  Context: hook. */
static inline int mw_stack_sample_take(size_t size)
{
	mw_tls.stack_left -= (int64_t)size;
	if (__builtin_expect(mw_tls.stack_left > 0, 1))
		return 0;
	return mw_sample_draw_slow(&mw_tls.stack_left, mw_stack_sample_bytes);
}

/* The weight of a recorded allocation of @size sampled every @mean
 * bytes, in 1/1024ths: how many allocations it stands for (1/p,
 * p = 1 - exp(-size / mean)); 1024 when @mean is 0.
 * Context: hook; never allocates. */
uint64_t mw_sample_weight_of(uint64_t size, uint64_t mean);

/* mw_sample_weight_of(@size, mw_sample_bytes).  Context: hook. */
static inline uint64_t mw_sample_weight(uint64_t size)
{
	return mw_sample_weight_of(size, mw_sample_bytes);
}

/* Counting filter of sampled pointers, so that frees of blocks never
 * sampled skip the live table.  Context: hook. */
void mw_sample_mark(uintptr_t ptr, int delta);
static inline int mw_sample_maybe(uintptr_t ptr);

extern uint8_t mw_sample_filter[1u << 15];

static inline uint32_t mw_sample_slot(uintptr_t ptr)
{
	return (uint32_t)(((uint64_t)(ptr >> 4) * 0x9e3779b97f4a7c15ull) >> 49);
}

static inline int mw_sample_maybe(uintptr_t ptr)
{
	return !mw_sample_bytes ||
	       __atomic_load_n(&mw_sample_filter[mw_sample_slot(ptr)],
			       __ATOMIC_RELAXED) != 0;
}

/* Empties the filter (with the live table, at reset).
 * Context: not a hook (reset). */
void mw_sample_clear(void);

#pragma GCC visibility pop

#endif
