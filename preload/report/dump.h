/* SPDX-License-Identifier: MIT */
/* dump.h - writes the site table to a file descriptor.
 *
 * The same writer serves the exit dump, SIGURG (via the helper thread),
 * the control file and the Ruby API.  It never allocates and never uses
 * stdio, so it can run while other threads are inside our hooks; it does
 * take the loader's lock (dladdr, symbolize.h) and, under glibc, the
 * arenas' locks (mallinfo2), so it never runs inside a hook or a signal
 * handler.
 */
#ifndef MW_DUMP_H
#define MW_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/fmt.h"
#include "base/options.h"
#include "report/scan.h"
#include "core/sites.h"

/* Writes every site with total > @min in @format: mwrap's three columns
 * ("%16zu %12zu %s", unsorted) after one "# " header line, or JSON Lines
 * (a header object, then one object per site).
 * Returns 0 or -errno of the first failed write.
 * Context: not a hook (dladdr takes the loader lock); never allocates. */
int mw_dump(int fd, uint64_t min, enum mw_format format);

/* mw_dump as the process exits (mw_dump_req's at_exit). */
int mw_dump_at_exit(int fd, uint64_t min, enum mw_format format);

struct mw_dump_req {
	uint64_t min;			/* sites with total > min */
	enum mw_format format;
	uint32_t top;			/* > 0: only the top sites by live
					 * bytes, largest first */
	const struct mw_scan *scan;	/* JSON: add its figures; or NULL */
	/* Called about twice a second during long dumps with the sites
	 * written so far, or NULL. */
	void (*progress)(uint64_t done, uint64_t total, void *arg);
	void *progress_arg;
	/* JSON: the process is exiting ("at_exit":true): what is live now
	 * is what it never freed, and no GC will judge it */
	bool at_exit;
};

/* mw_dump with every option; -ENOMEM if --top's array cannot be mapped
 * (the header is written anyway).
 * Context: as mw_dump; the helper thread when @req asks for --scan or --top
 * (mmap). */
int mw_dump_req(int fd, const struct mw_dump_req *req);

/* Writes the JSON members "pid", "rss_bytes", "tracked_live_bytes" and,
 * when @with_malloc and the allocator is glibc's, malloc's
 * "malloc_arena_bytes", "malloc_in_use_bytes", "malloc_free_bytes" (no
 * braces).  Context: not a hook (mallinfo2 takes the arena locks). */
void mw_dump_memory_fields(struct mw_out *o, uint64_t tracked_live, bool with_malloc);

/* Ruby heap pages in mwrap's dump_heap text: @mask 1, their statistics
 * ("heap_pages: N" lines); 2, one "ADDR\tGENERATION" line per live page.
 * Context: not a hook; never allocates. */
void mw_dump_heap_pages(int fd, unsigned mask);

/* Reads this process's resident set size in bytes (0 if unknown).
 * Context: not a hook; never allocates. */
uint64_t mw_rss_bytes(void);

#endif
