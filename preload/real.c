/* real.c - see real.h */
#define _GNU_SOURCE
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

struct mw_real_fns mw_real;

/* Set while dlsym runs; calls arriving meanwhile use the arena. */
static int resolving;
/* 1: all found, -1: some missing; published with release ordering. */
int mw_real_resolved;

/* 64 KiB is ample: glibc's dlsym makes one small calloc. */
#define BOOT_SIZE (64 * 1024)
static char boot_arena[BOOT_SIZE] __attribute__((aligned(64)));
static size_t boot_used;	/* atomic */

void *mw_boot_alloc(size_t size, size_t align)
{
	size_t old, start, end;

	if (align < 16)
		align = 16;
	do {
		old = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
		/* room for an 8-byte size word just before the block */
		start = (old + 8 + align - 1) & ~(align - 1);
		end = start + size;
		if (end > BOOT_SIZE || end < start) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &old, end, 0,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	memcpy(boot_arena + start - 8, &size, sizeof(size));
	return boot_arena + start;	/* static storage is zeroed */
}

int mw_boot_owns(const void *p)
{
	return (const char *)p >= boot_arena &&
	       (const char *)p < boot_arena + BOOT_SIZE;
}

size_t mw_boot_size(const void *p)
{
	size_t size;

	memcpy(&size, (const char *)p - 8, sizeof(size));
	return size;
}

#define RESOLVE(name) \
	(*(void **)&mw_real.name = dlsym(RTLD_NEXT, #name))
#define RESOLVE_GLOBAL(name) \
	(*(void **)&fns.name = dlsym(RTLD_DEFAULT, #name))

int mw_real_resolve(void)
{
	int r = __atomic_load_n(&mw_real_resolved, __ATOMIC_ACQUIRE);

	if (r)
		return r > 0 ? 0 : -ENOENT;
	if (__atomic_exchange_n(&resolving, 1, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	RESOLVE(malloc);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(reallocarray);
	RESOLVE(free);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	r = (mw_real.malloc && mw_real.calloc && mw_real.realloc &&
	     mw_real.reallocarray && mw_real.free && mw_real.posix_memalign &&
	     mw_real.aligned_alloc && mw_real.memalign && mw_real.valloc &&
	     mw_real.pvalloc) ? 1 : -1;
	__atomic_store_n(&mw_real_resolved, r, __ATOMIC_RELEASE);
	__atomic_store_n(&resolving, 0, __ATOMIC_RELEASE);
	return r > 0 ? 0 : -ENOENT;
}

/* Dlopen'ed, RTLD_NEXT finds what follows us in our own scope: libc, even
 * when the process runs jemalloc or tcmalloc.  The slots we patch hold
 * what the global scope binds (the first definition, a preloaded
 * allocator's), so that is what the hooks must forward to: a block is
 * then always freed by the allocator that made it. */
int mw_real_use_global(void)
{
	struct mw_real_fns fns;

	RESOLVE_GLOBAL(malloc);
	RESOLVE_GLOBAL(calloc);
	RESOLVE_GLOBAL(realloc);
	RESOLVE_GLOBAL(reallocarray);
	RESOLVE_GLOBAL(free);
	RESOLVE_GLOBAL(posix_memalign);
	RESOLVE_GLOBAL(aligned_alloc);
	RESOLVE_GLOBAL(memalign);
	RESOLVE_GLOBAL(valloc);
	RESOLVE_GLOBAL(pvalloc);
	if (!(fns.malloc && fns.calloc && fns.realloc && fns.reallocarray &&
	      fns.free && fns.posix_memalign && fns.aligned_alloc &&
	      fns.memalign && fns.valloc && fns.pvalloc)) {
		/* better no attach than hooks forwarding to the wrong heap */
		__atomic_store_n(&mw_real_resolved, -1, __ATOMIC_RELEASE);
		return -ENOENT;
	}
	mw_real = fns;
	return 0;
}
