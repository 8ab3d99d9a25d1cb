/* rbheap.h - Ruby heap pages (Mwrap::HeapPageBody).
 *
 * Ruby >= 3.1 gets its object heap pages with mmap, not posix_memalign
 * as mwrap 2.x assumed: an anonymous mapping of two page sizes, trimmed
 * by munmap to one aligned page body, later freed by munmap.  We hook
 * mmap/munmap in libruby only (GOT), keep page bodies in the live table
 * under a reserved site id (so they never show in site dumps), and keep
 * statistics of their lifespans in GC generations.
 */
#ifndef MW_RBHEAP_H
#define MW_RBHEAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Finds mmap/munmap and the page size of this Ruby.  Returns 1 if heap
 * pages can be tracked.  Context: not a hook. */
int mw_heap_init(void);

struct mw_heap_stat {
	uint64_t page_size;
	uint64_t live_pages, allocated_pages, freed_pages;
	/* lifespans of freed pages, GC generations; -1 / Inf when none */
	int64_t lifespan_min, lifespan_max;
	double lifespan_mean, lifespan_stddev;
};
void mw_heap_stat(struct mw_heap_stat *st);
void mw_heap_reset(void);

/* The statistics' lock, held across fork (see fork.h).
 * Context: atfork handlers. */
void mw_heap_fork_lock(void);
void mw_heap_fork_unlock(void);

#endif
