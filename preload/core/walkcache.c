/* SPDX-License-Identifier: MIT */
/* walkcache.c - see walkcache.h */
#include "core/walkcache.h"
#include "core/poscache.h"
#include "core/sizedcache.h"

/* Two-way set-associative (a direct-mapped one missed on 14% of the
 * stacks at 10,000 sites, each miss a stack named again by Ruby), with
 * twice as many entries as there are sites (2^12 to 2^20): replaced by a
 * bigger one as sites are added, what the old one knew copied over, the
 * old one kept, as a reader may still hold it.  Written and read by
 * threads holding the GVL; Ractors each have their own, so an entry can
 * be torn: @check, a hash of the walk's hash, the site id and the code
 * generation, makes a torn or outdated entry a miss. */
#define WALK_CACHE_MIN_BITS 12
#define WALK_CACHE_MAX_BITS 20
struct walk_cache_entry {
	uint64_t hash;
	uint32_t id, check;
};
struct walk_cache {
	unsigned bits;
	/* a set is 32 bytes: aligned, one cache line holds it */
	struct walk_cache_entry slot[] __attribute__((aligned(64)));
};
static struct walk_cache *walk_cache;
static uint64_t walk_cache_mapped;	/* bytes, every cache made */

/* The set of two entries @hash falls in. */
static struct walk_cache_entry *walk_set(struct walk_cache *cache,
					 uint64_t hash)
{
	return &cache->slot[((hash * 0x9e3779b97f4a7c15ull) >>
			     (64 - cache->bits)) & ~(uint64_t)1];
}

static uint32_t walk_check(uint64_t hash, uint32_t id, uint32_t gen)
{
	return (uint32_t)(((hash ^ ((uint64_t)gen << 32 | id)) *
			   0xbf58476d1ce4e5b9ull) >> 32);
}

/* The site of @c when it holds @hash, valid in generation @gen. */
static struct mw_site *entry_site(const struct walk_cache_entry *c,
				  uint64_t hash, uint32_t gen)
{
	uint32_t id = c->id;
	struct mw_site *s;

	if (c->hash != hash || c->check != walk_check(hash, id, gen))
		return NULL;
	s = mw_site_get(id);
	return s && s->stack ? s : NULL;
}

struct mw_site *mw_site_for_walk(const struct mw_ruby_walk *w)
{
	struct walk_cache *cache = __atomic_load_n(&walk_cache,
						   __ATOMIC_ACQUIRE);
	uint32_t gen = __atomic_load_n(&mw_pos_generation, __ATOMIC_ACQUIRE);
	const struct walk_cache_entry *set;
	struct mw_site *s;

	if (!cache)
		return NULL;
	set = walk_set(cache, w->hash);
	s = entry_site(&set[0], w->hash, gen);
	return s ? s : entry_site(&set[1], w->hash, gen);
}

/* Stores @e in @cache: first in its set, the entry there moved second
 * (unless it is @e's own). */
static void walk_store(struct walk_cache *cache,
		       const struct walk_cache_entry *e)
{
	struct walk_cache_entry *set = walk_set(cache, e->hash);

	if (set[0].hash != e->hash)
		set[1] = set[0];
	set[0] = *e;
}

/* Copies @old's entries into @bigger, which replaced it. */
static void walk_cache_move(const struct walk_cache *old,
			    struct walk_cache *bigger)
{
	uint64_t i;

	for (i = 0; i < (UINT64_C(1) << old->bits); i++)
		if (old->slot[i].hash || old->slot[i].check)
			walk_store(bigger, &old->slot[i]);
}

void mw_site_remember_walk(const struct mw_ruby_walk *w,
			   const struct mw_site *s, uint32_t gen)
{
	struct walk_cache *cur = __atomic_load_n(&walk_cache, __ATOMIC_ACQUIRE);
	struct walk_cache_entry e = { w->hash, s->id,
				      walk_check(w->hash, s->id, gen) };
	struct walk_cache *cache;

	cache = mw_sized_cache_for((void **)&walk_cache, cur,
				   2 * (uint64_t)mw_sites_count(),
				   sizeof(struct walk_cache),
				   sizeof(struct walk_cache_entry),
				   WALK_CACHE_MIN_BITS, WALK_CACHE_MAX_BITS,
				   &walk_cache_mapped);
	if (!cache)
		return;
	if (cur && cache != cur)
		walk_cache_move(cur, cache);
	walk_store(cache, &e);
}

uint64_t mw_walkcache_memory(void)
{
	return __atomic_load_n(&walk_cache_mapped, __ATOMIC_RELAXED);
}
