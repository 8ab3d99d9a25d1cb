/* SPDX-License-Identifier: MIT */
/* real.h - the real allocator functions, and the bootstrap arena that
 * serves allocations made while they are being looked up.
 *
 * dlsym() itself calls calloc, so the first malloc of a preloaded process
 * cannot simply ask dlsym for libc's malloc: calls made during the lookup
 * get memory from a small static arena, recognised later by address.
 */
#ifndef MW_REAL_H
#define MW_REAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/hooklist.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* The functions our hooks forward to, one per entry of hooklist.h:
 * the malloc family (malloc, calloc, realloc and free required, the
 * others NULL where the C library lacks them: musl has no pvalloc),
 * dlopen/dlclose and mmap/munmap (NULL if not found).  A NULL entry is
 * neither forwarded to (its hook fails with ENOMEM) nor patched into a
 * GOT. */
struct mw_real_fns {
#define MW_REAL_FIELD(name, ret, params, kind) ret (*name) params;
	MW_HOOKS(MW_REAL_FIELD)
#undef MW_REAL_FIELD
	/* optional: NULL unless malloc's own object defines it (another
	 * object's would misread the allocator's blocks); for glibc, a
	 * reading of the chunk header that skips its in-use check, so only
	 * for blocks known to be allocated */
	size_t (*malloc_usable_size)(void *);
};

/* Filled by mw_real_resolve(); read-only afterwards. */
extern struct mw_real_fns mw_real;

/* 0 until the lookup is done; then 1 when the required functions were
 * found (tracing may start), -1 when one was not (nothing is traced:
 * the hooks pass every call through to what was found). */
extern int mw_real_resolved;

/* The first required function not found, for the message; NULL if
 * none.  Written before mw_real_resolved is published. */
extern const char *mw_real_missing;

/* Whether tracing may go on (the lookup found every required function).
 * Context: hook; async-signal-safe. */
static inline int mw_real_ready(void)
{
	return __atomic_load_n(&mw_real_resolved, __ATOMIC_ACQUIRE) > 0;
}

/* Resolves every function with dlsym(RTLD_NEXT), each one that finds
 * nothing (musl, dlopen'ed) with the global scope's definition unless
 * that is our own hook.  Returns 0 when the
 * required functions are known, -EAGAIN when called re-entrantly from
 * inside dlsym (the caller must then use the bootstrap arena), -ENOENT
 * if one of them is missing: mw_real then holds what was found, and
 * "not tracing" means passing calls through to it, never serving them
 * from the bootstrap arena.
 * Context: any thread; idempotent. */
int mw_real_resolve(void);

/* Attach mode: replaces the malloc family with the global scope's first
 * definition (dlsym(RTLD_DEFAULT)), what the process's own calls reach.
 * Returns 0, marked ready (even if mw_real_resolve had failed), or
 * -ENOENT with mw_real left unchanged and marked not ready (mw_attach
 * then refuses).  Only valid while
 * no hook of ours can run and only when we do not interpose (else the
 * lookup finds our own hooks).
 * Context: the constructor of a dlopen'ed libmwrap. */
int mw_real_use_global(void);

/* Bootstrap arena: bump allocation, never reused.
 * Returns NULL (errno ENOMEM) when the arena is exhausted.
 * Context: hook (before the real functions are known); lock-free. */
void *mw_boot_alloc(size_t size, size_t align);
/* The arena itself (real.c); only mw_boot_owns reads it here. */
#define MW_BOOT_SIZE (64 * 1024)
extern char mw_boot_arena[MW_BOOT_SIZE];

/* Context: hook; pure. */
static inline int mw_boot_owns(const void *p)
{
	/* one unsigned compare: below the arena wraps to a large offset */
	return (uintptr_t)((const char *)p - mw_boot_arena) < MW_BOOT_SIZE;
}
/* Usable size of a bootstrap block (for realloc).
 * Context: hook; @p a bootstrap block. */
size_t mw_boot_size(const void *p);

#pragma GCC visibility pop

#endif
