/* SPDX-License-Identifier: MIT */
/* poscache.c - see poscache.h */
#include "core/poscache.h"
#include "core/sizedcache.h"


/* Ruby positions seen, each until Ruby frees code in its page: (pc, iseq)
 * -> site id (see rbpos.h), in front of the location cache: a hit needs
 * neither the line (Ruby computes it by a search over the iseq's line
 * table) nor the path.  Direct-mapped, with twice as many entries as
 * there are sites (up to 2^20): it is replaced by a bigger one as sites
 * are added, and the old one is kept, as a reader may still hold it.
 * Written and read by threads holding the GVL; Ractors each have their
 * own, so an entry can be torn: @check, a hash of pc, iseq, id,
 * code_generation and pc's code epoch, makes a torn or outdated entry a
 * miss. */
#define POS_CACHE_MIN_BITS 12
#define POS_CACHE_MAX_BITS 20
struct mw_pos_cache *mw_pos_cache;
#define pos_cache mw_pos_cache
#define pos_slot mw_pos_slot
#define pos_check mw_pos_check
#define code_generation mw_pos_generation
static uint64_t pos_cache_mapped;	/* bytes, every cache made */
uint32_t mw_pos_generation;

/* The cache to remember in: a bigger one once the sites outgrow it;
 * NULL when none can be mapped. */
static struct mw_pos_cache *pos_cache_for_sites(void)
{
	return mw_sized_cache_for((void **)&pos_cache,
				  __atomic_load_n(&pos_cache, __ATOMIC_ACQUIRE),
				  2 * (uint64_t)mw_sites_count(),
				  sizeof(struct mw_pos_cache),
				  sizeof(struct mw_pos_cache_entry),
				  POS_CACHE_MIN_BITS, POS_CACHE_MAX_BITS,
				  &pos_cache_mapped);
}

void mw_site_remember_pos(const struct mw_ruby_pos *pos,
			  const struct mw_site *s)
{
	uint32_t gen = __atomic_load_n(&code_generation, __ATOMIC_ACQUIRE);
	struct mw_pos_cache *cache;
	struct mw_pos_cache_entry *c;

	if (!pos->pc || !s)
		return;
	cache = pos_cache_for_sites();
	if (!cache)
		return;
	c = pos_slot(cache, pos);
	c->pc = pos->pc;
	c->id = s->id;
	c->check = pos_check(pos->pc, pos->iseq, gen + mw_code_epoch(pos->pc),
			     s->id);
}

void mw_sites_forget_positions(void)
{
	__atomic_add_fetch(&code_generation, 1, __ATOMIC_ACQ_REL);
}

uint64_t mw_poscache_memory(void)
{
	return __atomic_load_n(&pos_cache_mapped, __ATOMIC_RELAXED);
}
