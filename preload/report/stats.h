/* SPDX-License-Identifier: MIT */
/* stats.h - figures read from the site and live tables: one site's
 * derived figures and the tracer's totals.  The dump, the object view,
 * the control server and the C API all read them here.
 */
#ifndef MW_STATS_H
#define MW_STATS_H

#include "core/sites.h"
#include "mwrap.h"

/* Fills @si with @s's counters and the figures derived from them
 * (live = allocated - freed, clamped at 0).  si->location is left alone.
 * Context: not a hook; never allocates. */
void mw_stats_site(const struct mw_site *s, struct mw_site_info *si);

/* Fills @st with the tracer's totals over every site and its tables;
 * st->attached is left 0 (the lifecycle knows it).
 * Context: not a hook; never allocates. */
void mw_stats_collect(struct mw_stats *st);

#endif
