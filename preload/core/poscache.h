/* SPDX-License-Identifier: MIT */
/* poscache.h - the Ruby position cache: (pc, iseq) -> site, in front
 * of the location lookup, so that a hit needs neither the line (Ruby
 * searches the iseq's line table for it) nor the path.  Valid while the
 * Ruby code the positions lie in lives: each code buffer a remembered
 * position lies in is watched (mw_live_watch), and its free forgets
 * every position.
 */
#ifndef MW_POSCACHE_H
#define MW_POSCACHE_H

#include <stdint.h>

#include "core/rbpos.h"
#include "core/sites.h"

/* The site last remembered for this Ruby position, or NULL; and the
 * remembering, which the caller may do only once the code buffer the
 * position's pc lies in (mw_ruby_pos_code) is watched: that buffer's
 * free must reach mw_sites_forget_positions.  Context: hook-safe, on a
 * thread holding the GVL. */
struct mw_site *mw_site_for_pos(const struct mw_ruby_pos *pos);
void mw_site_remember_pos(const struct mw_ruby_pos *pos,
			  const struct mw_site *s);

/* Forgets every remembered position: Ruby code was freed, or frees went
 * unseen (not tracking), or the watches are gone (reset).
 * Context: hook-safe. */
void mw_sites_forget_positions(void);

/* Bytes the caches (every one made) take.  Context: any. */
uint64_t mw_poscache_memory(void);

#endif
