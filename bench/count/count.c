/* SPDX-License-Identifier: MIT */
/* libcount.so - counts malloc-family calls, nothing else.  Preloaded by
 * the benchmark to turn time differences into ns per call.  At exit it
 * appends "calls N" to $COUNT_OUT. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long calls;
static char boot[65536];
static size_t boot_used;
static int resolving;

#define REAL(ret, name, args)						\
	static ret(*real_##name) args;					\
	static void resolve_##name(void)				\
	{								\
		if (!real_##name) {					\
			resolving = 1;					\
			*(void **)&real_##name = dlsym(RTLD_NEXT, #name); \
			resolving = 0;					\
		}							\
	}

REAL(void *, malloc, (size_t))
REAL(void *, calloc, (size_t, size_t))
REAL(void *, realloc, (void *, size_t))
REAL(void, free, (void *))
REAL(int, posix_memalign, (void **, size_t, size_t))
REAL(void *, aligned_alloc, (size_t, size_t))
REAL(void *, memalign, (size_t, size_t))

#define COUNT() __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED)

void *malloc(size_t n) { COUNT(); resolve_malloc(); return real_malloc(n); }
void *calloc(size_t n, size_t m)
{
	COUNT();
	if (resolving) {	/* dlsym's own calloc */
		void *p = boot + boot_used;
		boot_used += (n * m + 15) & ~(size_t)15;
		return p;
	}
	resolve_calloc();
	return real_calloc(n, m);
}
void *realloc(void *p, size_t n) { COUNT(); resolve_realloc(); return real_realloc(p, n); }
void free(void *p)
{
	COUNT();
	if ((char *)p >= boot && (char *)p < boot + sizeof(boot))
		return;
	resolve_free();
	real_free(p);
}
int posix_memalign(void **pp, size_t a, size_t n) { COUNT(); resolve_posix_memalign(); return real_posix_memalign(pp, a, n); }
void *aligned_alloc(size_t a, size_t n) { COUNT(); resolve_aligned_alloc(); return real_aligned_alloc(a, n); }
void *memalign(size_t a, size_t n) { COUNT(); resolve_memalign(); return real_memalign(a, n); }

__attribute__((destructor)) static void report(void)
{
	const char *out = getenv("COUNT_OUT");
	char buf[64];
	int fd, n;

	if (!out)
		return;
	fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "calls %lu\n", calls);
	if (write(fd, buf, (size_t)n) < 0)
		n = 0;
	close(fd);
}
