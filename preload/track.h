/* track.h - what the hooks record: allocations and frees into the site
 * table and the live table, and the per-thread guards.
 */
#ifndef MW_TRACK_H
#define MW_TRACK_H

#include <stddef.h>
#include <stdint.h>

#include "live.h"

/* Per-thread state.  Initial-exec TLS, kept tiny: a library dlopen'ed
 * late gets its static TLS from a surplus of a few hundred bytes. */
struct mw_tls {
	int guard;	/* >0: inside our code; hooks pass straight through */
	int quiet;	/* >0: Mwrap.quiet; allocations are not recorded */
	int64_t sample_left;	/* bytes until the next sample (sample.h) */
	uint64_t rng;		/* sampling random state */
	unsigned stripe;	/* counts.h: 1 + this thread's stripe, 0 unset */
};
extern __thread struct mw_tls mw_tls __attribute__((tls_model("initial-exec")));

/* Hooks record while this is 1.  Written by enable/disable only. */
extern int mw_enabled;

enum mw_age_unit { MW_AGE_NS = 0, MW_AGE_GC = 1 };
extern enum mw_age_unit mw_age_unit;

static inline int mw_tracking(void)
{
	return __atomic_load_n(&mw_enabled, __ATOMIC_RELAXED) &&
	       !mw_tls.guard;
}

/* Records a new block (a sampled one stands for its weight's worth of
 * allocations).  Context: hook, guard raised. */
void mw_track_alloc(void *p, size_t size, uintptr_t caller);
/* Records the free of @p if it is tracked, else counts it, with its
 * usable size, as the free of a block from before tracking began.
 * Context: hook, guard raised, before the real free (so the address
 * cannot be reused meanwhile). */
void mw_track_free(void *p);
/* The allocator's usable size of live block @p (0 when it has no
 * malloc_usable_size).  Context: hook; never allocates. */
uint64_t mw_track_usable_size(void *p);
/* Counts the free of a block taken out of the live table. */
void mw_track_account_free(const struct mw_live_entry *e);

/* Current age clock: GC generation under Ruby, else monotonic ns. */
uint64_t mw_track_now(void);

/* Starts a new window: counters zeroed and the live table emptied, so
 * frees of blocks born before it are not counted.  Context: not a hook. */
void mw_track_reset(void);

/* Turns recording on (choosing the age unit) or off. */
void mw_track_enable(void);
void mw_track_disable(void);

/* Monotonic ns at the last enable or reset. */
extern uint64_t mw_track_since_ns;

uint64_t mw_monotonic_ns(void);

/* Hidden aliases of the exported hooks (hooks.c): our own addresses. */
void *mw_hook_malloc(size_t);
void *mw_hook_calloc(size_t, size_t);
void *mw_hook_realloc(void *, size_t);
void *mw_hook_reallocarray(void *, size_t, size_t);
void mw_hook_free(void *);
int mw_hook_posix_memalign(void **, size_t, size_t);
void *mw_hook_aligned_alloc(size_t, size_t);
void *mw_hook_memalign(size_t, size_t);
void *mw_hook_valloc(size_t);
void *mw_hook_pvalloc(size_t);
void *mw_hook_dlopen(const char *file, int mode);
int mw_hook_dlclose(void *handle);

#endif
