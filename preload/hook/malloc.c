/* SPDX-License-Identifier: MIT */
/* malloc.c - the malloc family as we export it.
 *
 * Preloaded, these definitions interpose libc's; attached late, the GOT
 * patcher points other objects' slots at them.  Either way each one calls
 * the real function, then records what happened with the thread's guard
 * raised, keeping errno as the real function left it.
 */
#define _GNU_SOURCE
#include "core/hooklist.h"
#include "core/real.h"
#include "core/sample.h"
#include "core/track.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define CALLER() \
	((uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0)))
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Before the real functions are known (we are inside dlsym): bootstrap. */
#define NOT_READY() (unlikely(!mw_real_ready()) && mw_real_resolve())

/* mw_track_alloc raises the guard and keeps errno. */
static inline void record_alloc(void *p, size_t size, uintptr_t caller)
{
	mw_track_alloc(p, size, caller);
}

EXPORT void *malloc(size_t size)
{
	if (NOT_READY())
		return mw_boot_alloc(size, 16);
	if (!mw_tracking() || !mw_sample_take(size))
		return mw_real.malloc(size);
	/* recorded: one call (a tail call) into track.c */
	return mw_track_malloc(size, CALLER());
}

EXPORT void *calloc(size_t n, size_t m)
{
	size_t size;
	void *p;

	if (NOT_READY()) {
		if (__builtin_mul_overflow(n, m, &size)) {
			errno = ENOMEM;
			return NULL;
		}
		return mw_boot_alloc(size, 16);	/* arena memory is zero */
	}
	if (!mw_tracking() || __builtin_mul_overflow(n, m, &size) ||
	    !mw_sample_take(size))
		return mw_real.calloc(n, m);
	p = mw_real.calloc(n, m);
	if (p)
		record_alloc(p, size, CALLER());
	return p;
}

/* free of a block not from the bootstrap arena, the real functions
 * known. */
static inline __attribute__((always_inline)) void free_ready(void *p)
{
	if (mw_tracking() && mw_sample_maybe((uintptr_t)p)) {
		mw_track_free_real(p);
		return;
	}
	mw_real.free(p);
}

/* ... and before they are: out of line, so that free needs no frame of
 * its own to keep @p across the lookup. */
static __attribute__((noinline, cold)) void free_unready(void *p)
{
	if (!mw_real_resolve())	/* else cannot happen: p came from somewhere */
		free_ready(p);
}

EXPORT void free(void *p)
{
	if (!p || unlikely(mw_boot_owns(p)))
		return;
	if (unlikely(!mw_real_ready())) {
		free_unready(p);
		return;
	}
	free_ready(p);
}

/* realloc of a bootstrap block: move it to the real heap. */
static void *realloc_boot(void *p, size_t size)
{
	size_t old = mw_boot_size(p);
	void *q = malloc(size);

	if (q)
		memcpy(q, p, old < size ? old : size);
	return q;
}

EXPORT void *realloc(void *p, size_t size)
{
	if (p && unlikely(mw_boot_owns(p)))
		return realloc_boot(p, size);
	if (NOT_READY())
		return p ? NULL : mw_boot_alloc(size, 16);
	if (!mw_tracking())
		return mw_real.realloc(p, size);
	if (!p) {
		void *q;

		if (!mw_sample_take(size))
			return mw_real.realloc(NULL, size);
		q = mw_real.realloc(NULL, size);

		if (q)
			record_alloc(q, size, CALLER());
		return q;
	}
	return mw_track_realloc(p, size, 1, 0, CALLER());
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t size;

	if (__builtin_mul_overflow(n, m, &size)) {
		errno = ENOMEM;
		return NULL;
	}
	if (p && unlikely(mw_boot_owns(p)))
		return realloc_boot(p, size);
	if (NOT_READY())
		return p ? NULL : mw_boot_alloc(size, 16);
	if (!mw_tracking())
		return mw_real.reallocarray(p, n, m);
	if (!p) {
		void *q;

		if (!mw_sample_take(size))
			return mw_real.reallocarray(NULL, n, m);
		q = mw_real.reallocarray(NULL, n, m);

		if (q)
			record_alloc(q, size, CALLER());
		return q;
	}
	return mw_track_realloc(p, n, m, 1, CALLER());
}

EXPORT int posix_memalign(void **pp, size_t align, size_t size)
{
	int ret;

	if (NOT_READY()) {
		void *p = mw_boot_alloc(size, align);

		if (!p)
			return ENOMEM;
		*pp = p;
		return 0;
	}
	if (!mw_tracking() || !mw_sample_take(size))
		return mw_real.posix_memalign(pp, align, size);
	ret = mw_real.posix_memalign(pp, align, size);
	if (ret == 0)
		record_alloc(*pp, size, CALLER());
	return ret;
}

#define ALIGNED_HOOK(name, call, boot_align)				\
	EXPORT void *name						\
	{								\
		void *p;						\
									\
		if (NOT_READY())					\
			return mw_boot_alloc(size, boot_align);		\
		if (!mw_tracking() || !mw_sample_take(size))		\
			return mw_real.call;				\
		p = mw_real.call;					\
		if (p)							\
			record_alloc(p, size, CALLER());		\
		return p;						\
	}

ALIGNED_HOOK(aligned_alloc(size_t align, size_t size),
	     aligned_alloc(align, size), align)
ALIGNED_HOOK(memalign(size_t align, size_t size), memalign(align, size), align)
ALIGNED_HOOK(valloc(size_t size), valloc(size), 4096)
ALIGNED_HOOK(pvalloc(size_t size), pvalloc(size), 4096)

/* Our own addresses of the hooks.  Inside this library, a reference to
 * "malloc" binds through the GOT to whichever malloc the global scope
 * finds first (libc's, when we were dlopen'ed): the GOT patcher and the
 * preload check must use these hidden aliases instead. */
#define HOOK_ALIAS(name, ret, params, kind) HOOK_ALIAS_##kind(name)
#define HOOK_ALIAS_MW_HOOK_ALLOC(name) \
	extern __typeof(name) mw_hook_##name \
		__attribute__((alias(#name), visibility("hidden")));
#define HOOK_ALIAS_MW_HOOK_DL(name)	/* defined in dl.c */
#define HOOK_ALIAS_MW_HOOK_HEAP(name)	/* defined in rbheap.c */
MW_HOOKS(HOOK_ALIAS)
