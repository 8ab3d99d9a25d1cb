/* SPDX-License-Identifier: MIT */
/* pagestats.h - statistics of Ruby heap pages (Mwrap::HeapPageBody):
 * how many were mapped and unmapped while tracking, and the lifespans,
 * in GC generations, of the unmapped ones (Welford's running mean and
 * variance).  The mmap/munmap hooks (hook/rbheap.c) add to them; the
 * pages themselves are in the live table under MW_SITE_HEAP_PAGES.
 */
#ifndef MW_PAGESTATS_H
#define MW_PAGESTATS_H

#include <stdint.h>

#include "mwrap.h"	/* struct mw_heap_pages: the figures, as exported */

/* One page mapped.  Context: hook, guard raised; takes the statistics'
 * spin lock. */
void mw_pagestats_mapped(void);

/* One page unmapped after @life GC generations.  Context: as above. */
void mw_pagestats_unmapped(int64_t life);

/* Fills @st's counts and lifespans; page_size and live_pages are left
 * 0 (hook/rbheap.h's mw_heap_stat adds them).  Context: not a hook;
 * never allocates. */
void mw_pagestats_read(struct mw_heap_pages *st);

/* The statistics' lock, held across fork (see fork.h).
 * Context: atfork handlers. */
void mw_pagestats_fork_lock(void);
void mw_pagestats_fork_unlock(void);

#endif
