/* SPDX-License-Identifier: MIT */
/* real.c - see real.h */
#define _GNU_SOURCE
#include "core/real.h"
#include "common/libc.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

struct mw_real_fns mw_real;

/* Set while dlsym runs; calls arriving meanwhile use the arena. */
static int resolving;
/* 1: all found, -1: some missing; published with release ordering. */
int mw_real_resolved;
const char *mw_real_missing;

/* 64 KiB is ample: glibc's dlsym makes one small calloc. */
#define BOOT_SIZE MW_BOOT_SIZE
char mw_boot_arena[BOOT_SIZE] __attribute__((aligned(64)));
#define boot_arena mw_boot_arena
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

size_t mw_boot_size(const void *p)
{
	size_t size;

	memcpy(&size, (const char *)p - 8, sizeof(size));
	return size;
}

/* Whether @a and @b are both defined, by the same loaded object. */
static int same_object(void *a, void *b)
{
	Dl_info ia, ib;

	return a && b && dladdr(a, &ia) && dladdr(b, &ib) &&
	       ia.dli_fbase == ib.dli_fbase;
}

/* glibc's usable size of a block known to be allocated.  Its own
 * malloc_usable_size first checks that the block is in use, which reads
 * the next chunk's header: a cache miss that the free which follows
 * would not take (measured: 1.5x the time per allocation of a Ruby
 * workload freeing blocks from before the attach).  The size word just
 * before the block is read by that free anyway: size in the high bits,
 * IS_MMAPPED in bit 1 (such a chunk has no next chunk to lend it its
 * first word). */
static size_t glibc_usable_size(void *p)
{
	size_t word = ((const size_t *)p)[-1];

	return (word & ~(size_t)7) - (word & 2 ? 2 : 1) * sizeof(size_t);
}

/* Whether @fn is defined by glibc's libc.so. */
static int in_libc(void *fn)
{
	const char *base;
	Dl_info info;

	if (!fn || !dladdr(fn, &info) || !info.dli_fname)
		return 0;
	base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	return strncmp(base, "libc.so", 7) == 0;
}

/* Each hook has its C library function's type. */
#define CHECK_TYPE(name, ret, params, kind)				\
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name),	\
						    __typeof__(&mw_hook_##name)), \
		       #name ": hooklist.h's type differs from the C library's");
MW_HOOKS(CHECK_TYPE)
#undef CHECK_TYPE

struct definition {
	const char *name;
	void *fn;		/* the first definition after the program */
};

static int find_definition(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct definition *d = arg;
	void *h, *fn;

	(void)size;
	if (mw_dl_is_main(info) || mw_dl_is_vdso(info))
		return 0;
	h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	fn = dlsym(h, d->name);	/* its scope's: its dependencies' too */
	dlclose(h);
	/* its own (its headers are in its first segment), not ours */
	if (same_object(fn, (void *)info->dlpi_phdr) &&
	    !same_object(fn, (void *)same_object)) {
		d->fn = fn;
		return 1;
	}
	return 0;
}

/* The global scope answers a non-PIE program's PLT entry for a function
 * whose address the program takes (mw_dl_is_plt_stand_in).  The entry
 * jumps through the program's own slot, which the attach patches, and
 * every slot bound to the definition would look like another
 * allocator's (its calls uncounted).  The definition is the first one
 * after the program in the link map (the global scope's order). */
static void *past_program_plt(void *fn, const char *name)
{
	struct definition d = { name, NULL };

	if (!fn || !mw_dl_is_plt_stand_in(fn))
		return fn;
	dl_iterate_phdr(find_definition, &d);
	return d.fn ? d.fn : fn;
}

/* dlsym(@handle, @name), or when that finds nothing, the global scope's
 * definition unless it is ours (preloaded, our hook).  musl's RTLD_NEXT, from a dlopen'ed
 * library, searches only the objects loaded after it (its own
 * dependencies: liburcu), never libc, which came first; glibc's
 * searches the rest of the caller's scope.  The global scope then finds
 * libc's (or a preloaded allocator's, the one the process calls). */
static void *lookup(void *handle, const char *name)
{
	void *p = dlsym(handle, name);

	if (handle == RTLD_DEFAULT)
		p = past_program_plt(p, name);
	if (!p && handle != RTLD_DEFAULT) {
		p = dlsym(RTLD_DEFAULT, name);
		if (same_object(p, (void *)lookup))
			p = NULL;
	}
	return p;
}

/* Fills @f: the malloc family from @handle (RTLD_NEXT or RTLD_DEFAULT),
 * the others from RTLD_NEXT (what follows us), each from the global
 * scope where that finds nothing (lookup).  Returns the first
 * function no hook can do without (malloc, calloc, realloc, free) that
 * was not found, NULL if all were.  The others are optional: musl has no
 * pvalloc, reallocarray is newer than the rest, and a missing one is
 * simply not forwarded to. */
static const char *resolve_into(struct mw_real_fns *f, void *handle)
{
#define RESOLVE(name, ret, params, kind)				\
	*(void **)&f->name = lookup(kind == MW_HOOK_ALLOC ? handle : RTLD_NEXT, \
				    #name);
	MW_HOOKS(RESOLVE)
#undef RESOLVE
	*(void **)&f->malloc_usable_size = dlsym(handle, "malloc_usable_size");
	if (!same_object(*(void **)&f->malloc,
			 *(void **)&f->malloc_usable_size))
		f->malloc_usable_size = NULL;
	else if (in_libc(*(void **)&f->malloc_usable_size))
		f->malloc_usable_size = glibc_usable_size;
	return !f->malloc ? "malloc" : !f->calloc ? "calloc" :
	       !f->realloc ? "realloc" : !f->free ? "free" : NULL;
}

int mw_real_resolve(void)
{
	int r = __atomic_load_n(&mw_real_resolved, __ATOMIC_ACQUIRE);

	if (r)
		return r > 0 ? 0 : -ENOENT;
	if (__atomic_exchange_n(&resolving, 1, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	mw_real_missing = resolve_into(&mw_real, RTLD_NEXT);
	r = mw_real_missing ? -1 : 1;
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
	const char *missing = resolve_into(&fns, RTLD_DEFAULT);

	if (missing) {
		mw_real_missing = missing;
		/* better no attach than hooks forwarding to the wrong heap */
		__atomic_store_n(&mw_real_resolved, -1, __ATOMIC_RELEASE);
		return -ENOENT;
	}
	mw_real = fns;
	/* ready even where RTLD_NEXT had failed before */
	__atomic_store_n(&mw_real_resolved, 1, __ATOMIC_RELEASE);
	return 0;
}
