/* SPDX-License-Identifier: MIT */
/* allocator.h - which allocator the process's malloc belongs to.
 *
 * Sizes and "malloc in use" mean different things under glibc, jemalloc
 * (size classes, its own arenas) and tcmalloc: reports name the one the
 * hooks forward to, so a reader knows which numbers they are reading.
 */
#ifndef MW_ALLOCATOR_H
#define MW_ALLOCATOR_H

/* Finds out which allocator mw_real.malloc belongs to ("glibc",
 * "jemalloc 5.3.0", "tcmalloc 2.10", or "other (libfoo.so)").
 * Context: not a hook (dladdr, dlsym, and jemalloc's mallctl); call once
 * the real functions are known, before any reader. */
void mw_allocator_detect(void);

/* The name found, "" before mw_allocator_detect.
 * Context: any; never allocates. */
const char *mw_allocator_name(void);

/* 1 when that allocator is glibc's (mallinfo2 describes it).
 * Context: any. */
int mw_allocator_is_glibc(void);

#endif
