/* SPDX-License-Identifier: MIT */
/* codeepoch.h - what Ruby code we may still trust a remembered position
 * in: the free of a watched code buffer (mw_live_watch) bumps the epoch
 * of each page it spans, pages hashed into MW_CODE_EPOCHS counters, and
 * a position or stack remembered (poscache.h, walkcache.h) holds the
 * epochs of its pcs' pages.  So Ruby freeing code forgets only what lay
 * in its pages: a single generation for all code made every GC that
 * freed any watched code (a required file's top-level code, a compiled
 * template's) a miss for every site.
 */
#ifndef MW_CODEEPOCH_H
#define MW_CODEEPOCH_H

#include <stdint.h>

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

#define MW_CODE_EPOCH_BITS 12
#define MW_CODE_PAGE_SHIFT 12

/* Atomic (relaxed): bumped by mw_code_forget, read by hooks.  A thread
 * runs reused code only after taking the GVL from the thread that freed
 * it, which orders the bump before its read. */
extern uint32_t mw_code_epochs[1u << MW_CODE_EPOCH_BITS];

static inline uint32_t *mw_code_epoch_slot(uintptr_t addr)
{
	uint64_t page = (uint64_t)(addr >> MW_CODE_PAGE_SHIFT);

	return &mw_code_epochs[(page * 0x9e3779b97f4a7c15ull) >>
			       (64 - MW_CODE_EPOCH_BITS)];
}

/* The epoch of the page @pc lies in.  Context: any; never allocates. */
static inline uint32_t mw_code_epoch(uintptr_t pc)
{
	return __atomic_load_n(mw_code_epoch_slot(pc), __ATOMIC_RELAXED);
}

/* The code buffer at @start, @len bytes (a pc may point at its end), is
 * freed: bumps its pages' epochs.  Returns 0, or -1 when @len is 0 (not
 * known) or too large to bump page by page: the caller then forgets
 * every position.  Context: hook-safe. */
int mw_code_forget(uintptr_t start, uint64_t len);

#pragma GCC visibility pop

#endif
