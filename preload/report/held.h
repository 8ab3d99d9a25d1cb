/* SPDX-License-Identifier: MIT */
/* held.h - what the process holds: per site, the live bytes of blocks
 * that have lived through GCs since they were made (how many: below).
 *
 * Under Ruby most live bytes of a busy process are in flight: strings
 * and buffers of requests under way, garbage no GC has looked at yet.
 * A block that has lived through GCs was still referenced when they
 * marked (or is kept by C code that never frees it): what a leak and a
 * cache are made of.  One GC is not enough under load: every request
 * under way when it ran lives through it (16 Puma threads of a Redmine
 * held more than its leak).  Nor is a quarter of the window's GCs: an
 * LRU's evicted entries, promoted to Ruby's old generation, wait for a
 * major GC, and a 200-entry cache beside the leak held as much.  So a
 * block is held when it has lived through half the GCs the table has
 * seen (its oldest block's age, about the window's), and at least one:
 * a leak keeps what it made in the window's first half, a request's
 * garbage and a cache that turns over faster (its evictions freed by a
 * major GC within half a window) keep nothing.  Right after a full
 * GC of ours (--gc) one is enough: that GC kept only what was
 * referenced.  The live table knows each block's birth in GC
 * generations: two walks of it (the oldest age, then the sums) split
 * every site's live bytes into held and in flight, scaled as the site's
 * counts are (sampling, sampled stacks).
 */
#ifndef MW_HELD_H
#define MW_HELD_H

#include <stddef.h>
#include <stdint.h>

struct mw_held {
	uint64_t *bytes;	/* indexed by site id; mmap'd */
	uint32_t nsites;
	size_t len;		/* bytes mapped for @bytes */
	uint64_t generation;	/* the GC count the walk compared with */
	uint64_t max_age;	/* in GCs: the oldest live block's age */
	uint64_t min_age;	/* in GCs: a held block's least age */
};

/* Walks the live table once.  Returns 0 with @held filled (free it with
 * mw_held_free), -ENOTSUP where ages are not counted in GCs (no Ruby),
 * or -ENOMEM, with nothing to free.
 * Context: not a hook; the helper thread or an exiting thread (mmap, no
 * malloc).  Blocks freed or made meanwhile may be missed or counted. */
int mw_held_take(struct mw_held *held);

void mw_held_free(struct mw_held *held);

#endif
