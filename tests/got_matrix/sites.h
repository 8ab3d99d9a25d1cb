/* SPDX-License-Identifier: MIT */
/* sites.h - the call sites of the GOT matrix target: one function per
 * allocator entry point, each with exactly one call, so that a dump names
 * it once (SITE_PREFIX exe_ in gotmain.c, lib_ in gotlib.c).
 *
 * noipa: no clone of a function for a constant argument may fold
 * realloc(NULL, n) into malloc(n) (the targets are also built
 * -fno-builtin); the barrier after each call keeps it from being a tail
 * call, whose return address would be the caller's. */
#ifndef GOTM_SITES_H
#define GOTM_SITES_H

#include <stdlib.h>

#define GOTM_CAT2(a, b) a##b
#define GOTM_CAT(a, b) GOTM_CAT2(a, b)
#define SITE(fn) GOTM_CAT(SITE_PREFIX, fn)
#define GOTM_KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")
#define GOTM_FN __attribute__((noipa, visibility("default")))

GOTM_FN void *SITE(malloc)(size_t n)
{
	void *p = malloc(n);

	GOTM_KEEP(p);
	return p;
}

GOTM_FN void *SITE(calloc)(size_t n, size_t m)
{
	void *p = calloc(n, m);

	GOTM_KEEP(p);
	return p;
}

GOTM_FN void *SITE(realloc)(void *old, size_t n)
{
	void *p = realloc(old, n);

	GOTM_KEEP(p);
	return p;
}

GOTM_FN void *SITE(posix_memalign)(size_t align, size_t n)
{
	void *p = NULL;
	int r = posix_memalign(&p, align, n);

	GOTM_KEEP(p);
	return r ? NULL : p;
}

GOTM_FN void *SITE(aligned_alloc)(size_t align, size_t n)
{
	void *p = aligned_alloc(align, n);

	GOTM_KEEP(p);
	return p;
}

GOTM_FN void SITE(free)(void *p)
{
	free(p);
	GOTM_KEEP(p);
}

#endif
