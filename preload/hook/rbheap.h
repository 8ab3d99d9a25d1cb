/* SPDX-License-Identifier: MIT */
/* rbheap.h - Ruby heap pages (Mwrap::HeapPageBody).
 *
 * Ruby >= 3.1 gets its object heap pages with mmap, not posix_memalign
 * as mwrap 2.x assumed: an anonymous mapping of two page sizes, trimmed
 * by munmap to one aligned page body, later freed by munmap.  We hook
 * mmap/munmap in libruby only (GOT), keep page bodies in the live table
 * under a reserved site id (so they never show in site dumps), and keep
 * statistics of their lifespans in GC generations (core/pagestats.h).
 */
#ifndef MW_RBHEAP_H
#define MW_RBHEAP_H

#include "core/pagestats.h"

/* Finds mmap/munmap and the page size of this Ruby.  Returns 1 if heap
 * pages can be tracked.  Context: not a hook. */
int mw_heap_init(void);

/* @st: the page statistics (core/pagestats.h), this Ruby's page size
 * (0: pages not tracked) and the pages live now.  Context: not a hook;
 * never allocates. */
void mw_heap_stat(struct mw_heap_pages *st);

#endif
