/* SPDX-License-Identifier: MIT */
/* poscache.h - the Ruby position cache: (pc, iseq) -> site, in front
 * of the location lookup, so that a hit needs neither the line (Ruby
 * searches the iseq's line table for it) nor the path.  Valid while the
 * Ruby code the positions lie in lives: each code buffer a remembered
 * position lies in is watched (mw_live_watch), and its free forgets
 * the positions in its pages (codeepoch.h).
 */
#ifndef MW_POSCACHE_H
#define MW_POSCACHE_H

#include <stdint.h>

#include "core/codeepoch.h"
#include "core/rbpos.h"
#include "core/sites.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* The site last remembered for this Ruby position, or NULL; and the
 * remembering, which the caller may do only once the code buffer the
 * position's pc lies in (mw_ruby_pos_code) is watched: that buffer's
 * free must reach mw_sites_forget_positions.  Context: hook-safe, on a
 * thread holding the GVL. */
static inline struct mw_site *mw_site_for_pos(const struct mw_ruby_pos *pos);
void mw_site_remember_pos(const struct mw_ruby_pos *pos,
			  const struct mw_site *s);

/* Forgets every remembered position: Ruby code of no known size was
 * freed (else mw_code_forget does, for its pages), or frees went
 * unseen (not tracking), or the watches are gone (reset).
 * Context: hook-safe. */
void mw_sites_forget_positions(void);

/* Bytes the caches (every one made) take.  Context: any. */
uint64_t mw_poscache_memory(void);

/* The cache (poscache.c, here for mw_site_for_pos): (pc, iseq) -> site
 * id, direct-mapped, with twice as many entries as there are sites (up
 * to 2^20): it is replaced by a bigger one as sites are added, and the
 * old one is kept, as a reader may still hold it.  Written and read by
 * threads holding the GVL; Ractors each have their own, so an entry can
 * be torn: @check, a hash of pc, iseq, id, the generation (bumped by
 * mw_sites_forget_positions) and the epoch of pc's page (bumped when
 * code there is freed), makes a torn or outdated entry a miss. */
struct mw_pos_cache_entry {
	uintptr_t pc;
	uint32_t id, check;
};
struct mw_pos_cache {
	unsigned bits;
	struct mw_pos_cache_entry slot[];
};
extern struct mw_pos_cache *mw_pos_cache;
extern uint32_t mw_pos_generation;

static inline struct mw_pos_cache_entry *
mw_pos_slot(struct mw_pos_cache *cache, const struct mw_ruby_pos *pos)
{
	uint64_t h = (uint64_t)(pos->pc >> 3) * 0x9e3779b97f4a7c15ull;

	return &cache->slot[h >> (64 - cache->bits)];
}

static inline uint32_t mw_pos_check(uintptr_t pc, uintptr_t iseq,
				    uint32_t gen, uint32_t id)
{
	uint64_t h = (pc ^ (iseq << 1) ^ ((uint64_t)gen << 32 | id)) *
		     0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32);
}

static inline struct mw_site *mw_site_for_pos(const struct mw_ruby_pos *pos)
{
	struct mw_pos_cache *cache = __atomic_load_n(&mw_pos_cache,
						     __ATOMIC_ACQUIRE);
	uint32_t gen = __atomic_load_n(&mw_pos_generation, __ATOMIC_ACQUIRE);
	const struct mw_pos_cache_entry *c;
	uint32_t id;

	if (!cache)
		return NULL;
	c = mw_pos_slot(cache, pos);
	id = c->id;
	if (pos->pc && c->pc == pos->pc &&
	    c->check == mw_pos_check(pos->pc, pos->iseq,
				     gen + mw_code_epoch(pos->pc), id))
		return mw_site_get(id);
	return NULL;
}

#pragma GCC visibility pop

#endif
