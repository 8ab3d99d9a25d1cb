/* SPDX-License-Identifier: MIT */
/* live_fixture.h - what the live table's unit tests share: made-up
 * pointers in 1 MiB regions (the table never touches a block), a usable
 * size they can predict, live.c's shard and slot choice, and a census of
 * one site.  Included by one test program each (it defines mw_real). */
#ifndef LIVE_FIXTURE_H
#define LIVE_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "core/live.h"
#include "core/real.h"

/* live.c reads only mw_real.malloc_usable_size from real.c */
struct mw_real_fns mw_real;

/* A usable size the test can predict: 24 to 80 bytes by address. */
static inline uint64_t usable_of(uintptr_t p)
{
	return 24 + ((p >> 4) & 7) * 8;
}

static inline size_t fake_usable_size(void *p)
{
	return (size_t)usable_of((uintptr_t)p);
}

/* live.c's shard choice (by 1 MiB region) and home slot, copied so the
 * tests can pick fresh shards and colliding pointers.  If live.c changes
 * them, the tests still check behaviour; only the collision test's
 * "one small array" check would tell. */
static inline unsigned shard_index(uintptr_t ptr)
{
	return (unsigned)(((uint64_t)(ptr >> 20) * 0x9e3779b97f4a7c15ull) >> 56);
}

static inline uint32_t home_slot(uintptr_t ptr, uint32_t mask)
{
	return (uint32_t)(((uint64_t)(ptr >> 4) * 0x9e3779b97f4a7c15ull) >> 16) &
	       mask;
}

static unsigned char shard_used[256];
static uintptr_t next_region = 0x100000;	/* ptr 2^40 */

/* The base of a 1 MiB region; @fresh: one whose shard no earlier region
 * of this test program used. */
static inline uintptr_t region(int fresh)
{
	for (;;) {
		uintptr_t base = next_region++ << 20;
		unsigned s = shard_index(base);

		if (fresh && shard_used[s])
			continue;
		shard_used[s] = 1;
		return base;
	}
}

static inline struct mw_live_entry mk(uintptr_t p, uint32_t site, uint64_t size,
			       uint64_t birth)
{
	struct mw_live_entry e;

	mw_live_make(&e, p, site, size, birth);
	return e;
}

static inline int insert(uintptr_t p, uint32_t site, uint64_t size)
{
	struct mw_live_entry e = mk(p, site, size, 7), stale;

	return mw_live_insert(&e, &stale);
}

/* mw_live_each over one site: how many entries, the sum of their sizes. */
struct census {
	uint64_t n, bytes;
	uintptr_t *ptrs;	/* optional: every pointer seen */
	size_t cap;
};

static inline void census_fn(const struct mw_live_entry *e, void *arg)
{
	struct census *c = arg;

	if (c->ptrs && c->n < c->cap)
		c->ptrs[c->n] = mw_live_ptr(e);
	c->n++;
	c->bytes += mw_live_size(e);
}

static inline struct census census(uint32_t site)
{
	struct census c = { 0 };

	mw_live_each(site, census_fn, &c);
	return c;
}

#endif
