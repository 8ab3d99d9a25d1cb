/* SPDX-License-Identifier: MIT */
/* malloc.c - the malloc family as we export it.
 *
 * Preloaded, these definitions interpose libc's; attached late, the GOT
 * patcher points other objects' slots at them.  Either way each one calls
 * the real function, then records what happened with the thread's guard
 * raised, keeping errno as the real function left it.
 */
#define _GNU_SOURCE
#include "base/export.h"
#include "core/hooklist.h"
#include "core/real.h"
#include "core/sample.h"
#include "core/tls.h"
#include "core/track.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define CALLER() \
	((uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0)))
#define unlikely(x) __builtin_expect(!!(x), 0)
#define likely(x) __builtin_expect(!!(x), 1)

/* What a hook does before the real functions are known:
 * BOOT  we are inside dlsym: the bootstrap arena serves the call;
 * PASS  the lookup is done, without a function tracing needs: nothing is
 *       traced, every call goes straight to the real function (FORWARD),
 *       never to the arena, which would soon run out;
 * GO    found just now: the hook goes on as usual. */
enum unready { GO, BOOT, PASS };

static __attribute__((noinline, cold)) enum unready unready(void)
{
	int r = mw_real_resolve();

	return r == -EAGAIN ? BOOT : r ? PASS : GO;
}

/* A hook's first line: returns @boot or @pass until the functions are
 * known, goes on once they are. */
#define IF_UNREADY(boot, pass)						\
	if (unlikely(!mw_real_ready())) {				\
		switch (unready()) {					\
		case BOOT:						\
			return boot;					\
		case PASS:						\
			return pass;					\
		case GO:						\
			break;						\
		}							\
	}

/* The real function, or, where the C library lacks it (musl's pvalloc;
 * any but the required four after a failed lookup), ENOMEM as from an
 * allocator out of memory. */
#define FORWARD(name, args)						\
	(likely(mw_real.name != NULL) ? mw_real.name args : enomem())

static __attribute__((cold)) void *enomem(void)
{
	errno = ENOMEM;
	return NULL;
}

/* The real function's call in a recorded path, where the C library may
 * call our hooks from inside it: musl's calloc, realloc(NULL, n) and
 * aligned functions call malloc or aligned_alloc by their interposable
 * names.  With the guard raised those inner calls pass through instead
 * of being recorded once more, as libc's own sites.  glibc's call none
 * of them: its build keeps the plain call, its hot path unchanged. */
#ifdef __GLIBC__
#define REAL(call) (call)
#else
#define REAL(call) __extension__ ({					\
	__typeof__(call) r_;						\
	mw_guard_raise();						\
	r_ = (call);							\
	mw_guard_lower();						\
	r_;								\
})
#endif

/* mw_track_alloc raises the guard and keeps errno. */
static inline void record_alloc(void *p, size_t size, uintptr_t caller)
{
	mw_track_alloc(p, size, caller);
}

EXPORT void *malloc(size_t size)
{
	IF_UNREADY(mw_boot_alloc(size, 16), FORWARD(malloc, (size)))
	if (!mw_tracking() || !mw_sample_take(size))
		return mw_real.malloc(size);
	/* recorded: one call (a tail call) into track.c */
	return mw_track_malloc(size, CALLER());
}

static void *boot_calloc(size_t n, size_t m)
{
	size_t size;

	if (__builtin_mul_overflow(n, m, &size))
		return enomem();
	return mw_boot_alloc(size, 16);	/* arena memory is zero */
}

EXPORT void *calloc(size_t n, size_t m)
{
	size_t size;
	void *p;

	IF_UNREADY(boot_calloc(n, m), FORWARD(calloc, (n, m)))
	if (!mw_tracking() || __builtin_mul_overflow(n, m, &size) ||
	    !mw_sample_take(size))
		return mw_real.calloc(n, m);
	p = REAL(mw_real.calloc(n, m));
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
 * its own to keep @p across the lookup.  (BOOT cannot happen: @p came
 * from somewhere.) */
static __attribute__((noinline, cold)) void free_unready(void *p)
{
	switch (unready()) {
	case GO:
		free_ready(p);
		break;
	case PASS:
		if (mw_real.free)
			mw_real.free(p);
		break;
	case BOOT:
		break;
	}
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
	IF_UNREADY(p ? NULL : mw_boot_alloc(size, 16),
		   FORWARD(realloc, (p, size)))
	if (!mw_tracking())
		return mw_real.realloc(p, size);
	if (!p) {
		void *q;

		if (!mw_sample_take(size))
			return mw_real.realloc(NULL, size);
		q = REAL(mw_real.realloc(NULL, size));

		if (q)
			record_alloc(q, size, CALLER());
		return q;
	}
	return mw_track_realloc(p, size, 1, 0, CALLER());
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t size;

	if (__builtin_mul_overflow(n, m, &size))
		return enomem();
	if (p && unlikely(mw_boot_owns(p)))
		return realloc_boot(p, size);
	IF_UNREADY(p ? NULL : mw_boot_alloc(size, 16),
		   FORWARD(reallocarray, (p, n, m)))
	/* optional: glibc 2.26, musl 1.2.2 */
	if (!mw_tracking() || unlikely(!mw_real.reallocarray))
		return FORWARD(reallocarray, (p, n, m));
	if (!p) {
		void *q;

		if (!mw_sample_take(size))
			return mw_real.reallocarray(NULL, n, m);
		q = REAL(mw_real.reallocarray(NULL, n, m));

		if (q)
			record_alloc(q, size, CALLER());
		return q;
	}
	return mw_track_realloc(p, n, m, 1, CALLER());
}

static int boot_memalign(void **pp, size_t align, size_t size)
{
	void *p = mw_boot_alloc(size, align);

	if (!p)
		return ENOMEM;
	*pp = p;
	return 0;
}

/* optional, as the ones below */
#define FORWARD_MEMALIGN(pp, align, size)				\
	(likely(mw_real.posix_memalign != NULL) ?			\
	 mw_real.posix_memalign(pp, align, size) : ENOMEM)

EXPORT int posix_memalign(void **pp, size_t align, size_t size)
{
	int ret;

	IF_UNREADY(boot_memalign(pp, align, size),
		   FORWARD_MEMALIGN(pp, align, size))
	if (unlikely(!mw_real.posix_memalign))
		return ENOMEM;
	if (!mw_tracking() || !mw_sample_take(size))
		return mw_real.posix_memalign(pp, align, size);
	ret = REAL(mw_real.posix_memalign(pp, align, size));
	if (ret == 0)
		record_alloc(*pp, size, CALLER());
	return ret;
}

/* The optional ones: each forwards only where the C library has it. */
#define ALIGNED_HOOK(name, params, args, boot_align)			\
	EXPORT void *name params					\
	{								\
		void *p;						\
									\
		IF_UNREADY(mw_boot_alloc(size, boot_align),		\
			   FORWARD(name, args))				\
		if (!mw_tracking() || !mw_sample_take(size) ||		\
		    unlikely(!mw_real.name))				\
			return FORWARD(name, args);			\
		p = REAL(mw_real.name args);				\
		if (p)							\
			record_alloc(p, size, CALLER());		\
		return p;						\
	}

ALIGNED_HOOK(aligned_alloc, (size_t align, size_t size), (align, size), align)
ALIGNED_HOOK(memalign, (size_t align, size_t size), (align, size), align)
ALIGNED_HOOK(valloc, (size_t size), (size), 4096)
ALIGNED_HOOK(pvalloc, (size_t size), (size), 4096)

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
