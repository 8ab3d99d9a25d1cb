/* SPDX-License-Identifier: MIT */
/* walkcache.h - the stack walk cache (--stacks): the hash of the calling
 * thread's frames (mw_ruby_walk) -> the site of its stack, in front of
 * mw_site_for_stack, so that a hit needs neither Ruby's frames nor their
 * lines (a search of each frame's line table: the cost of stacks that
 * grew with the sites, as the tables grew).  Valid while the code the
 * frames' pcs lie in lives: every frame's code buffer is watched before
 * an entry is made, as for the position cache, and the free of one bumps
 * its pages' epochs (codeepoch.h), which the walk's hash holds.
 */
#ifndef MW_WALKCACHE_H
#define MW_WALKCACHE_H

#include <stdint.h>

#include "core/rbstack.h"
#include "core/sites.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* The site last remembered for the frames @w, or NULL.
 * Context: hook-safe, on the thread that walked @w, holding the GVL. */
struct mw_site *mw_site_for_walk(const struct mw_ruby_walk *w);

/* Remembers @s for the frames @w.  The caller must have watched the code
 * buffer of each of @w's frames (mw_live_watch), so that its free reaches
 * mw_code_forget, and read @gen (mw_pos_generation) before.
 * Context: as mw_site_for_walk; not a signal handler (mmap). */
void mw_site_remember_walk(const struct mw_ruby_walk *w,
			   const struct mw_site *s, uint32_t gen);

/* Bytes the caches (every one made) take.  Context: any. */
uint64_t mw_walkcache_memory(void);

#pragma GCC visibility pop

#endif
