/* SPDX-License-Identifier: MIT */
/* counts.h - a site's counters, striped per thread once the site is hot.
 *
 * Every allocation and free adds to its site's counters.  With one set
 * per site, threads allocating from the same call site trade that cache
 * line on every call (a C loop, 2 threads on one call site: 0.86 s
 * against 0.50 s for either thread alone).  A site that has seen
 * MW_COUNTS_HOT allocations gets a set of counters per stripe, each on
 * its own line; a thread adds to its own stripe and a reader sums them
 * all.  Stripes come from chunks mapped as needed, never freed.
 */
#ifndef MW_COUNTS_H
#define MW_COUNTS_H

#include <stdint.h>

#include "core/tls.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

struct mw_counts {
	uint64_t total;		/* bytes allocated */
	uint64_t allocations;
	uint64_t frees;
	uint64_t freed_bytes;
	uint64_t age_total;	/* sum of lifespans of freed blocks */
	uint64_t max_lifespan;
};

#define MW_STRIPES 8
#define MW_COUNTS_HOT 4096	/* allocations before a site is striped */

struct mw_stripes {
	struct {
		struct mw_counts c;
	} __attribute__((aligned(64))) line[MW_STRIPES];
};

/* A site's counters: relaxed atomics, updated by hooks on any thread. */
struct mw_site_counts {
	struct mw_counts base;		/* all of them until the site is hot */
	struct mw_stripes *stripes;	/* NULL until then */
};

/* Nothing to reserve any more (chunks are mapped as sites turn hot);
 * returns 0.  Context: not a hook. */
int mw_counts_init(void);

/* Gives @c its stripes (after its allocations crossed MW_COUNTS_HOT);
 * when they are used up or cannot be mapped the site keeps one set.
 * Context: hook-safe (may mmap; never allocates). */
void mw_counts_make_hot(struct mw_site_counts *c);

/* Numbers the calling thread's stripe: threads take them in turn.
 * Context: hook; never allocates. */
void mw_counts_number_thread(void);

/* The calling thread's stripe.  Context: hook; never allocates. */
static inline unsigned mw_counts_stripe(void)
{
	if (__builtin_expect(!mw_tls.stripe, 0))
		mw_counts_number_thread();
	return mw_tls.stripe - 1;
}

/* The set this thread adds to.  Context: hook; never allocates. */
static inline struct mw_counts *mw_counts_mine(struct mw_site_counts *c)
{
	struct mw_stripes *st = __atomic_load_n(&c->stripes, __ATOMIC_ACQUIRE);

	return st ? &st->line[mw_counts_stripe()].c : &c->base;
}

/* @n allocations of @bytes in all.  Context: hook. */
static inline void mw_counts_alloc(struct mw_site_counts *c, uint64_t bytes,
				   uint64_t n)
{
	struct mw_stripes *st = __atomic_load_n(&c->stripes, __ATOMIC_ACQUIRE);
	struct mw_counts *m;
	uint64_t now;

	if (__builtin_expect(st != 0, 1)) {	/* a hot site: no crossing */
		m = &st->line[mw_counts_stripe()].c;
		__atomic_add_fetch(&m->total, bytes, __ATOMIC_RELAXED);
		__atomic_add_fetch(&m->allocations, n, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&c->base.total, bytes, __ATOMIC_RELAXED);
	now = __atomic_add_fetch(&c->base.allocations, n, __ATOMIC_RELAXED);
	/* one thread sees the crossing */
	if (__builtin_expect(now >= MW_COUNTS_HOT, 0) &&
	    now - n < MW_COUNTS_HOT)
		mw_counts_make_hot(c);
}

/* @n frees of @bytes in all, whose lifespans sum to @age_sum; @age is
 * one block's own lifespan, for the maximum.  Context: hook. */
static inline void mw_counts_free(struct mw_site_counts *c, uint64_t bytes,
				  uint64_t n, uint64_t age_sum, uint64_t age)
{
	struct mw_counts *m = mw_counts_mine(c);
	uint64_t max;

	__atomic_add_fetch(&m->frees, n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->freed_bytes, bytes, __ATOMIC_RELAXED);
	if (!age)
		return;
	__atomic_add_fetch(&m->age_total, age_sum, __ATOMIC_RELAXED);
	max = __atomic_load_n(&m->max_lifespan, __ATOMIC_RELAXED);
	while (age > max &&
	       !__atomic_compare_exchange_n(&m->max_lifespan, &max, age, 1,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* The sums over every stripe (max_lifespan: the largest).  Counters
 * move while they are read: a difference of two can be caught
 * mid-update (see mw_sub0).  Context: not a hook; never allocates. */
void mw_counts_read(const struct mw_site_counts *c, struct mw_counts *out);

/* Zeroes them all.  Not atomic with concurrent hooks.
 * Context: not a hook (reset). */
void mw_counts_zero(struct mw_site_counts *c);

/* Bytes of stripes handed out.  Context: any; never allocates. */
uint64_t mw_counts_memory(void);

#pragma GCC visibility pop

#endif
