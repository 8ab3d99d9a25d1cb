/* SPDX-License-Identifier: MIT */
/* A library loaded and unloaded by tests/targets/dlcycle, built twice
 * with its static function named NAME_grow (-DNAME=alpha, -DNAME=beta):
 * the one loaded second usually takes the first one's addresses. */
#include <stdlib.h>
#include <string.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define GROW CAT(NAME, _grow)

static __attribute__((noinline)) void *GROW(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 4, n);
	return p;
}

/* exported: what dlcycle calls */
void *lib_alloc(size_t n);
void *lib_alloc(size_t n)
{
	return GROW(n);
}
