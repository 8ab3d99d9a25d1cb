/* SPDX-License-Identifier: MIT */
/* stats.c - see stats.h */
#include "report/stats.h"
#include "core/live.h"
#include "core/poscache.h"
#include "core/stacks.h"
#include "core/track.h"
#include "core/walkcache.h"
#include "report/symbolize.h"
#include "common/clock.h"

#include <string.h>

void mw_stats_site(const struct mw_site *s, struct mw_site_info *si)
{
	struct mw_counts c;

	mw_counts_read(&s->counts, &c);
	si->id = s->id;
	si->total = c.total;
	si->allocations = c.allocations;
	si->frees = c.frees;
	si->freed_bytes = c.freed_bytes;
	si->age_total = c.age_total;
	si->max_lifespan = c.max_lifespan;
	si->live_bytes = mw_sub0(si->total, si->freed_bytes);
	si->live_count = mw_sub0(si->allocations, si->frees);
}

void mw_stats_collect(struct mw_stats *st)
{
	uint32_t id, n = mw_sites_count();

	memset(st, 0, sizeof(*st));
	st->enabled = __atomic_load_n(&mw_enabled, __ATOMIC_RELAXED);
	st->age_unit_gc = mw_age_unit == MW_AGE_GC;
	st->seconds = mw_sub0(mw_monotonic_ns(), mw_track_since_ns) / 1000000000u;
	st->sites = n - 1;
	for (id = 1; id < n; id++) {
		const struct mw_site *s = mw_site_get(id);
		struct mw_site_info si;

		if (!s || mw_site_is_stack_record(s))
			continue;
		mw_stats_site(s, &si);
		st->total_bytes += si.total;
		st->total_allocations += si.allocations;
		st->total_frees += si.frees;
		st->freed_bytes += si.freed_bytes;
	}
	st->live_bytes = mw_sub0(st->total_bytes, st->freed_bytes);
	st->live_blocks = mw_live_count();
	st->unknown_frees = mw_live_unknown();
	st->dropped = mw_live_dropped + mw_sites_dropped;
	st->memory_bytes = mw_live_memory() + mw_sites_memory() +
			  mw_poscache_memory() + mw_stacks_memory() +
			  mw_walkcache_memory() +
			  mw_symbolize_memory();
}
