/* SPDX-License-Identifier: MIT */
/* libdeepalloc.so: a minimal allocator of its own (a bump arena), the
 * dependency that libdeep.so reaches through RTLD_DEEPBIND.  A free of a
 * block it did not make aborts, so a mixed free cannot go unnoticed;
 * glibc's free of one of its blocks aborts too ("invalid pointer"). */
#include <stdlib.h>
#include <string.h>

#define ARENA (64 << 20)
static char arena[ARENA] __attribute__((aligned(16)));
static size_t used;

static int ours(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + ARENA;
}

void *malloc(size_t n)
{
	size_t start = (used + 8 + 15) & ~(size_t)15;

	if (start + n > ARENA)
		return NULL;
	memcpy(arena + start - 8, &n, sizeof(n));
	used = start + n;
	return arena + start;
}

void free(void *p)
{
	if (p && !ours(p))
		abort();
}

void *calloc(size_t n, size_t m)
{
	return malloc(n * m);	/* arena memory is zero, never reused */
}

void *realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (p && !ours(p))
		abort();
	q = malloc(n);
	if (q && p) {
		memcpy(&old, (char *)p - 8, sizeof(old));
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}
