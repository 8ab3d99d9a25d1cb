/* SPDX-License-Identifier: MIT */
/* mwrap.h - the exported C API of libmwrap.so.
 *
 * Used by the injector (mw_attach/mw_detach), the Ruby extension and
 * tests.  Every function returns 0 or -errno unless it says otherwise;
 * on failure nothing is changed.
 */
#ifndef MWRAP_H
#define MWRAP_H

#include <stddef.h>
#include <stdint.h>

/* Writes the site table to @fd: @format 0 = mwrap's three columns,
 * 1 = JSON Lines.  Sites with total <= @min are skipped.
 * Context: any thread but a hook or signal handler; no allocation. */
int mw_dump_fd(int fd, uint64_t min, int format);

/* Zeroes every site's counters and starts a new window: blocks allocated
 * before it are no longer counted when freed.  Context: not a hook. */
int mw_reset(void);

/* Raises / lowers the calling thread's quiet depth: while it is > 0,
 * allocations on this thread are not recorded (frees still are).
 * Both return the new depth.  Context: any thread; never allocates. */
int mw_quiet_enter(void);
int mw_quiet_leave(void);

/* One site, as mw_each hands it out. */
struct mw_site_info {
	uint32_t id;
	const char *location;	/* valid during the callback only */
	uint64_t total, allocations, frees, freed_bytes;
	uint64_t live_bytes, live_count, age_total, max_lifespan;
};

/* Calls @fn for every site with total > @min, stopping early when @fn
 * returns non-zero (that value is returned).  @fn runs with the thread
 * quiet, so it may allocate; it must not longjmp (a Ruby exception
 * raised through it would leave the thread quiet for good).
 * Context: not a hook. */
int mw_each(uint64_t min, int (*fn)(const struct mw_site_info *, void *),
	    void *arg);

/* The site named @location: "path:line", or an address site by the
 * "[0xADDR]" at the end of its name (any prefix), or a bare "0xADDR".
 * Returns its id, or 0 if there is none.  Context: not a hook. */
uint32_t mw_site_lookup(const char *location);

/* Fills @si for site @id (si->location points into a static buffer of
 * the caller's thread: @buf of @len bytes).  Returns 0 or -ENOENT.
 * Context: not a hook (dladdr takes the loader lock); never allocates. */
int mw_site_info(uint32_t id, struct mw_site_info *si, char *buf, size_t len);

/* Calls @fn(size, generation, arg) for each live block of site @id,
 * outside our locks (the thread is quiet meanwhile; @fn may allocate).
 * Generations are GC counts modulo 2^24 under Ruby.  Returns 0 or
 * -ENOENT.  Context: not a hook. */
int mw_site_each_live(uint32_t id,
		      void (*fn)(uint64_t size, uint64_t generation, void *),
		      void *arg);

/* Ruby heap pages (Mwrap::HeapPageBody): the live ones, and statistics
 * of the freed ones' lifespans in GC generations (-1 / infinity / 0
 * when none was freed).  Context: not a hook. */
struct mw_heap_pages {
	uint64_t page_size;		/* 0: not tracked in this process */
	uint64_t live_pages, allocated_pages, freed_pages;
	int64_t lifespan_min, lifespan_max;
	double lifespan_mean, lifespan_stddev;
};
int mw_heap_pages_stat(struct mw_heap_pages *st);
int mw_heap_pages_each(void (*fn)(uintptr_t addr, uint64_t generation,
				  void *arg), void *arg);

/* Figures about the tracer itself. */
struct mw_stats {
	int enabled;
	int attached;		/* 1: a late attach is active, else 0 */
	int age_unit_gc;	/* 1: ages in GC generations, 0: ns */
	uint64_t seconds;	/* since tracking (or the last reset) began */
	uint64_t sites;
	uint64_t live_blocks;	/* entries in the live table */
	uint64_t live_bytes;	/* tracked bytes not freed */
	uint64_t total_bytes, total_allocations, total_frees, freed_bytes;
	uint64_t unknown_frees;	/* frees of blocks we never saw allocated */
	uint64_t dropped;	/* allocations we failed to record */
	uint64_t memory_bytes;	/* mapped by our own tables */
};
/* Context: not a hook; never allocates. */
int mw_stats(struct mw_stats *st);

#endif
