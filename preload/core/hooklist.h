/* SPDX-License-Identifier: MIT */
/* hooklist.h - every function we hook, written once.
 *
 * MW_HOOKS(X) calls X(name, ret, params, kind) for each hooked function:
 *   MW_HOOK_ALLOC  the malloc family: exported by hook/malloc.c (so that they
 *                  interpose when preloaded) and patched in every object
 *                  when attached; required (no attach without them)
 *   MW_HOOK_DL     dlopen/dlclose: hidden (exported, they would interpose
 *                  dlopen for the whole process when preloaded); patched
 *                  in every object, to patch objects loaded later
 *   MW_HOOK_HEAP   mmap/munmap: hidden; patched in libruby only, for its
 *                  heap pages (hook/rbheap.h)
 * From this list come struct mw_real_fns and its resolver (real.c), the
 * prototypes of our hooks (below), their hidden aliases (hook/malloc.c) and the
 * GOT patcher's table (got.c); real.c checks every hook's type against
 * the C library's declaration at compile time.
 */
#ifndef MW_HOOKLIST_H
#define MW_HOOKLIST_H

#include <stddef.h>
#include <sys/types.h>

enum mw_hook_kind { MW_HOOK_ALLOC, MW_HOOK_DL, MW_HOOK_HEAP };

#define MW_HOOKS(X)							\
	X(malloc, void *, (size_t), MW_HOOK_ALLOC)			\
	X(calloc, void *, (size_t, size_t), MW_HOOK_ALLOC)		\
	X(realloc, void *, (void *, size_t), MW_HOOK_ALLOC)		\
	X(reallocarray, void *, (void *, size_t, size_t), MW_HOOK_ALLOC) \
	X(free, void, (void *), MW_HOOK_ALLOC)				\
	X(posix_memalign, int, (void **, size_t, size_t), MW_HOOK_ALLOC) \
	X(aligned_alloc, void *, (size_t, size_t), MW_HOOK_ALLOC)	\
	X(memalign, void *, (size_t, size_t), MW_HOOK_ALLOC)		\
	X(valloc, void *, (size_t), MW_HOOK_ALLOC)			\
	X(pvalloc, void *, (size_t), MW_HOOK_ALLOC)			\
	X(dlopen, void *, (const char *, int), MW_HOOK_DL)		\
	X(dlclose, int, (void *), MW_HOOK_DL)				\
	X(mmap, void *, (void *, size_t, int, int, int, off_t), MW_HOOK_HEAP) \
	X(munmap, int, (void *, size_t), MW_HOOK_HEAP)

/* Our hooks' own addresses: hidden names of the exported malloc family
 * (aliases, hook/malloc.c) and the hidden dlopen/dlclose (hook/dl.c) and
 * mmap/munmap (hook/rbheap.c) hooks.  Context: they are the hooks. */
#define MW_HOOK_PROTO(name, ret, params, kind) ret mw_hook_##name params;
MW_HOOKS(MW_HOOK_PROTO)
#undef MW_HOOK_PROTO

#endif
