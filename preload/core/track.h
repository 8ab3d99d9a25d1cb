/* SPDX-License-Identifier: MIT */
/* track.h - what the hooks record: allocations and frees into the site
 * table and the live table.  The only writer of the live table (live.h).
 */
#ifndef MW_TRACK_H
#define MW_TRACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/tls.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

enum mw_age_unit { MW_AGE_NS = 0, MW_AGE_GC = 1 };
extern enum mw_age_unit mw_age_unit;


/* Raises / lowers the calling thread's quiet depth (Mwrap.quiet): while
 * it is > 0 the thread's allocations are not recorded (frees still
 * are).  Both return the new depth.  Context: any; async-signal-safe. */
static inline int mw_track_quiet_enter(void)
{
	return ++mw_tls.quiet;
}

static inline int mw_track_quiet_leave(void)
{
	if (mw_tls.quiet > 0)
		mw_tls.quiet--;
	return mw_tls.quiet;
}

/* Records a new block (a sampled one stands for its weight's worth of
 * allocations), raising the thread's guard meanwhile and keeping errno.
 * Context: hook, tracking on, guard not raised. */
void mw_track_alloc(void *p, size_t size, uintptr_t caller);
/* malloc(@size) through the real function, recorded as mw_track_alloc
 * does when it succeeds: malloc's recorded path, one call deep.
 * Context: as mw_track_alloc. */
void *mw_track_malloc(size_t size, uintptr_t caller);
/* Records the free of @p if it is tracked, else counts it, with its
 * usable size, as the free of a block from before tracking began (the
 * guard raised meanwhile, errno kept), then frees it through the real
 * free: the record comes first, so the address cannot be reused
 * meanwhile.  Context: hook, tracking on, guard not raised. */
void mw_track_free_real(void *p);
/* The allocator's usable size of live block @p (0 when it has no
 * malloc_usable_size).  Context: hook; never allocates. */
uint64_t mw_track_usable_size(void *p);
/* realloc(@p, @n) (@array 0) or reallocarray(@p, @n, @m) (@array 1)
 * through the real function, recording the old block's free and the new
 * one's allocation.  The old entry is taken out of the live table before
 * the real call (which may free it, and another thread may then get the
 * same address) and put back if the call fails.  Returns what the real
 * call returned, with its errno.  Context: hook, guard not raised, @p
 * not NULL and not a bootstrap block, tracking on. */
void *mw_track_realloc(void *p, size_t n, size_t m, int array,
		       uintptr_t caller);

/* Records a Ruby heap page body at @body, @size bytes, born now (GC
 * generation).  Context: hook, guard raised. */
void mw_track_page_map(uintptr_t body, size_t size);
/* If @addr is a recorded heap page body, forgets it and returns 1 with
 * its lifespan in GC generations in *@life; else returns 0 and leaves
 * the live table as it was.  Context: hook, guard raised, before the
 * real munmap. */
int mw_track_page_unmap(uintptr_t addr, int64_t *life);

/* Current age clock: GC generation under Ruby, else monotonic ns.
 * Context: hook; never allocates. */
uint64_t mw_track_now(void);

/* Starts a new window: counters zeroed and the live table emptied, so
 * frees of blocks born before it are not counted.  Context: not a hook. */
void mw_track_reset(void);

/* Turns recording on (choosing the age unit) or off.
 * Context: not a hook (start-up, attach). */
void mw_track_enable(void);
/* Context: any; one atomic store. */
void mw_track_disable(void);

/* Monotonic ns at the last enable or reset. */
extern uint64_t mw_track_since_ns;

/* --stacks (MWRAP=stacks:N): a Ruby allocation's site is its chain of up
 * to this many Ruby frames (mw_site_for_stack); 0, its innermost line.
 * Set before tracking is enabled, read by hooks. */
extern unsigned mw_track_stacks;


#pragma GCC visibility pop

#endif
