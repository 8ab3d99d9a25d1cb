/* SPDX-License-Identifier: MIT */
/* sizedcache.h - caches that grow with the sites (the position cache,
 * the stack cache): a header whose first member is `unsigned bits`, then
 * 1 << bits slots, mapped.  A bigger one replaces the published one by
 * compare-and-swap; the old one stays mapped for readers still in it.
 */
#ifndef MW_SIZEDCACHE_H
#define MW_SIZEDCACHE_H

#include <stddef.h>
#include <stdint.h>

/* The cache to store in: @cur (NULL: none yet) while it has @want slots
 * or MAX_BITS, else a new one of 1 << bits slots of @slot bytes after a
 * @head-byte header (bits from @cur's, or @min_bits, up to @max_bits),
 * published at *@published and its bytes added to *@mapped.  @cur when
 * none can be mapped, or whatever another thread published first.
 * Context: not a signal handler (mmap); never malloc. */
void *mw_sized_cache_for(void **published, void *cur, uint64_t want,
			 size_t head, size_t slot, unsigned min_bits,
			 unsigned max_bits, uint64_t *mapped);

#endif
