/* SPDX-License-Identifier: MIT */
/* track.c - see track.h */
#define _GNU_SOURCE
#include "core/track.h"
#include "core/codeepoch.h"
#include "core/jit.h"
#include "core/live.h"
#include "core/real.h"
#include "core/rbpos.h"
#include "core/poscache.h"
#include "core/sample.h"
#include "core/sites.h"
#include "core/stacks.h"
#include "core/walkcache.h"
#include "common/clock.h"

#include <errno.h>
#include <time.h>

__thread struct mw_tls mw_tls MW_TLS_MODEL;
/* Atomic: stored by mw_track_enable/disable, read relaxed by hooks. */
int mw_enabled;
/* Plain: written by mw_track_enable before the release store of
 * mw_enabled that publishes it; read by hooks and readers after. */
enum mw_age_unit mw_age_unit;
/* Plain: written by enable and reset (the helper, or the C API), read
 * by readers (stats, the control server); a torn read is impossible on
 * x86-64 and a stale one only shifts "seconds" and a rate. */
uint64_t mw_track_since_ns;
/* Plain: set before tracking is enabled (as mw_sample_bytes). */
unsigned mw_track_stacks;

/* Outside Ruby, births are stored in units of 2^20 ns (~1 ms): 24 bits
 * of them span 4.9 hours. */
#define MW_NS_SHIFT 20

/* The two age clocks: the GC generation, and monotonic time in units
 * of 2^MW_NS_SHIFT ns. */
static inline uint64_t generation(void)
{
	return __atomic_load_n(&mw_ruby_generation, __ATOMIC_RELAXED);
}

static inline uint64_t coarse_units(void)
{
	struct timespec ts;

	/* coarse (~4 ms) is plenty for lifespans and costs a few ns */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) >>
	       MW_NS_SHIFT;
}

uint64_t mw_track_now(void)
{
	return mw_age_unit == MW_AGE_GC ? generation() : coarse_units();
}

/* This thread's errno, its address remembered: a load instead of a
 * call of __errno_location on every recorded call. */
static inline __attribute__((always_inline)) int *errno_ptr(void)
{
	int *e = mw_tls.errnop;

	if (__builtin_expect(!e, 0))
		e = mw_tls.errnop = &errno;
	return e;
}

/* A freed block's lifespan, in the age clock's unit (births are kept
 * mod 2^24).  One test of the unit: mw_track_now's and a second one for
 * the scale were two loads and two branches on every free. */
static inline uint64_t age_of(const struct mw_live_entry *e)
{
	if (mw_age_unit == MW_AGE_GC)
		return (generation() - mw_live_birth(e)) & MW_BIRTH_MASK;
	return ((coarse_units() - mw_live_birth(e)) & MW_BIRTH_MASK)
	       << MW_NS_SHIFT;
}

/* account_free's cases other than a plain block under full tracking: a
 * watched code buffer, a sampled block, a sampled stack's block. */
static __attribute__((noinline)) void
account_free_slow(const struct mw_live_entry *e)
{
	struct mw_site *s;
	uint64_t age;

	if (mw_live_watched(e)) {
		/* Ruby code whose positions may be remembered is gone */
		if (mw_code_forget(mw_live_ptr(e), mw_live_size(e)))
			mw_sites_forget_positions();
		if (mw_live_site(e) == MW_SITE_CODE) {
			if (mw_sample_bytes)
				mw_sample_mark(mw_live_ptr(e), -1);
			return;
		}
	}
	s = mw_site_get(mw_live_site(e));
	if (!s)
		return;
	if (mw_sample_bytes)
		mw_sample_mark(mw_live_ptr(e), -1);
	age = age_of(e);
	if (mw_stack_sample_bytes && s->line_id) {
		/* a sampled stack's block: scaled there, exact at its line */
		uint64_t w = mw_sample_weight_of(mw_live_size(e),
						 mw_stack_sample_bytes);

		mw_counts_free(&s->counts, mw_live_size(e) * w / 1024,
			       (w + 512) / 1024, age * w / 1024, age);
		s = mw_site_get(s->line_id);
		if (!s)
			return;
		mw_counts_free(&s->counts, mw_live_size(e), 1, age, age);
	} else if (mw_sample_bytes) {
		uint64_t w = mw_sample_weight(mw_live_size(e));

		/* age_total / frees holds */
		mw_counts_free(&s->counts, mw_live_size(e) * w / 1024,
			       (w + 512) / 1024, age * w / 1024, age);
	} else {
		mw_counts_free(&s->counts, mw_live_size(e), 1, age, age);
	}
}

/* Counts the free of a block taken out of the live table: a block of a
 * line or caller site under full tracking here, the rest apart. */
static inline __attribute__((always_inline)) void
account_free(const struct mw_live_entry *e)
{
	struct mw_site *s;
	uint64_t age;

	if (__builtin_expect(mw_live_watched(e) || mw_sample_bytes, 0)) {
		account_free_slow(e);
		return;
	}
	s = mw_site_get(mw_live_site(e));
	if (!s)
		return;
	if (__builtin_expect(mw_stack_sample_bytes && s->line_id, 0)) {
		account_free_slow(e);
		return;
	}
	age = age_of(e);
	mw_counts_free(&s->counts, mw_live_size(e), 1, age, age);
}

/* Whether the site found for @pos may be remembered: only when the code
 * buffer its pc lies in is watched, so that Ruby freeing that code (after
 * which new code may reuse the addresses) makes us forget it. */
static int watch_code(const struct mw_ruby_pos *pos)
{
	uintptr_t code;
	uint64_t len;
	int r;

	if (!mw_ruby_pos_code(pos, &code, &len))
		return 0;
	r = mw_live_watch(code, len, MW_SITE_CODE);
	if (r == 1 && mw_sample_bytes)
		mw_sample_mark(code, 1);	/* so that its free looks */
	return r >= 0;
}

/* Whether the code buffer of each frame of @w is watched (watch_code),
 * so that the walk's site may be remembered. */
static int watch_walk(const struct mw_ruby_walk *w)
{
	int i;

	for (i = 0; i < w->n; i++)
		if (!watch_code(&w->frame[i]))
			return 0;
	return 1;
}

/* --stacks: the site of this thread's Ruby stack, or NULL (then its
 * line's): the walk cache's when it knows our frames, else the stack
 * cache's, from Ruby's frames and lines.  Out of line: its frame (the
 * stack's frames, twice) stays off site_of's, which every tracked
 * allocation takes. */
static __attribute__((noinline)) struct mw_site *stack_site(void)
{
	uint32_t code_gen = __atomic_load_n(&mw_pos_generation,
					    __ATOMIC_ACQUIRE);
	struct mw_ruby_walk w;
	struct mw_ruby_stack st;
	struct mw_site *s;
	int walked = mw_ruby_walk(&w, (int)mw_track_stacks);

	if (walked && (s = mw_site_for_walk(&w)))
		return s;
	if (!mw_ruby_stack(&st, (int)mw_track_stacks))
		return NULL;
	s = mw_site_for_stack(&st, __atomic_load_n(&mw_ruby_generation,
						   __ATOMIC_RELAXED));
	if (s && walked && mw_ruby_walk_frames(&w, (int)mw_track_stacks) &&
	    watch_walk(&w))
		mw_site_remember_walk(&w, s, code_gen);
	return s;
}

/* The site of an allocation: the JIT's when the JIT's own code made it
 * (whatever Ruby line runs meanwhile), its Ruby line when the thread runs
 * Ruby code, else its caller; NULL when the table cannot take a new one. */
static inline __attribute__((always_inline)) struct mw_site *
site_of(uintptr_t caller)
{
	struct mw_ruby_pos pos;
	struct mw_site *s;
	const char *path;
	int line;

	if (mw_jit_caller(caller))
		return mw_jit_site();
	if (!mw_ruby_pos(&pos))
		return mw_site_for_addr(caller);
	if (mw_track_stacks && !mw_stack_sample_bytes && (s = stack_site()))
		return s;
	s = mw_site_for_pos(&pos);
	if (s)
		return s;
	if (!mw_ruby_pos_location(&pos, &path, &line))
		return mw_site_for_addr(caller);
	s = mw_site_for_location(path, line);
	if (s && watch_code(&pos))
		mw_site_remember_pos(&pos, s);
	return s;
}

/* stack_sample: the site that also counts, scaled, an allocation of
 * @size counted exactly at its Ruby line @line: its stack's, or @line
 * itself when there is none or the stack's block would be freed at
 * another line (its frames named anew since).  Out of line: taken about
 * once per mw_stack_sample_bytes bytes. */
static __attribute__((noinline)) struct mw_site *
sampled_stack(struct mw_site *line, size_t size)
{
	struct mw_site *s;
	uint32_t had = 0;
	uint64_t w;

	if (!line->key || !(s = stack_site()))
		return line;
	/* the first block sampled here names its line for good */
	if (!__atomic_compare_exchange_n(&s->line_id, &had, line->id, 0,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
	    had != line->id)
		return line;
	w = mw_sample_weight_of(size, mw_stack_sample_bytes);
	mw_counts_alloc(&s->counts, size * w / 1024, (w + 512) / 1024);
	return s;
}

/* mw_track_alloc's work, guard raised: also mw_track_realloc's. */
static inline __attribute__((always_inline)) void
track_alloc(void *p, size_t size, uintptr_t caller)
{
	struct mw_live_entry e, stale;
	struct mw_live_at at;
	struct mw_site *s;

	if (mw_tls.quiet)
		return;
	/* the slot is rarely in cache: fetch it while we find the site */
	at = mw_live_at((uintptr_t)p);
	mw_live_prefetch_at(&at);
	s = site_of(caller);
	if (!s)
		return;
	if (__builtin_expect(mw_sample_bytes != 0, 0)) {
		uint64_t w = mw_sample_weight(size);

		mw_counts_alloc(&s->counts, size * w / 1024, (w + 512) / 1024);
		mw_sample_mark((uintptr_t)p, 1);
	} else {
		mw_counts_alloc(&s->counts, size, 1);
		if (mw_stack_sample_bytes && mw_stack_sample_take(size))
			s = sampled_stack(s, size);
	}

	mw_live_make(&e, (uintptr_t)p, s->id, size, mw_track_now());
	/* A pointer already present was freed behind our back (through a
	 * pointer to free captured before attach): count that free now. */
	if (mw_live_insert_at(&at, &e, &stale) == 1)
		account_free(&stale);	/* also unmarks: net zero */
}

void mw_track_alloc(void *p, size_t size, uintptr_t caller)
{
	int *e = errno_ptr(), saved = *e;

	mw_guard_raise();
	track_alloc(p, size, caller);
	mw_guard_lower();
	*e = saved;
}

void *mw_track_malloc(size_t size, uintptr_t caller)
{
	void *p = mw_real.malloc(size);
	int *e, saved;

	if (!p)
		return p;
	e = errno_ptr();
	saved = *e;
	mw_guard_raise();
	track_alloc(p, size, caller);
	mw_guard_lower();
	*e = saved;
	return p;
}

uint64_t mw_track_usable_size(void *p)
{
	return mw_real.malloc_usable_size ? mw_real.malloc_usable_size(p) : 0;
}

/* mw_track_free_real's record, guard raised. */
static inline __attribute__((always_inline)) void track_free(void *p)
{
	struct mw_live_entry e;

	/* an unknown block, most often one live before the attach, is
	 * counted there with its size: the window's net change needs it */
	if (mw_live_remove((uintptr_t)p, &e))
		account_free(&e);
}

void mw_track_free_real(void *p)
{
	int *e = errno_ptr(), saved = *e;

	mw_guard_raise();
	track_free(p);
	mw_guard_lower();
	*e = saved;
	mw_real.free(p);
}

void *mw_track_realloc(void *p, size_t n, size_t m, int array,
		       uintptr_t caller)
{
	struct mw_live_entry old, stale;
	size_t size = n * m;
	int maybe, had, saved;
	uint64_t unknown_bytes = 0;
	void *q;

	mw_guard_raise();
	maybe = mw_sample_maybe((uintptr_t)p);
	had = maybe && mw_live_take((uintptr_t)p, &old);
	/* a block from before tracking: its size, while it still exists */
	if (maybe && !had)
		unknown_bytes = mw_track_usable_size(p);
	q = array ? mw_real.reallocarray(p, n, m) : mw_real.realloc(p, n);
	saved = errno;
	if (!q && size != 0) {
		if (had)
			mw_live_insert(&old, &stale);
	} else {
		if (had)
			account_free(&old);
		else if (maybe)
			mw_live_add_unknown((uintptr_t)p, unknown_bytes);
		if (q && mw_sample_take(size))
			track_alloc(q, size, caller);
	}
	mw_guard_lower();
	errno = saved;
	return q;
}

/* Heap pages are aged in GC generations whatever mw_age_unit says. */
void mw_track_page_map(uintptr_t body, size_t size)
{
	struct mw_live_entry e, stale;

	mw_live_make(&e, body, MW_SITE_HEAP_PAGES, size, generation());
	mw_live_insert(&e, &stale);
}

int mw_track_page_unmap(uintptr_t addr, int64_t *life)
{
	struct mw_live_entry e, stale;

	if (!mw_live_take(addr, &e))
		return 0;
	if (mw_live_site(&e) != MW_SITE_HEAP_PAGES) {
		mw_live_insert(&e, &stale);	/* not ours */
		return 0;
	}
	*life = (int64_t)((generation() - mw_live_birth(&e)) & MW_BIRTH_MASK);
	return 1;
}

void mw_track_reset(void)
{
	/* blocks born before the reset are forgotten: their frees then
	 * pass through uncounted, as in a fresh window */
	mw_live_clear(MW_SITE_HEAP_PAGES);	/* heap pages stay known */
	mw_sites_forget_positions();		/* their watches are gone */
	mw_sample_clear();
	mw_sites_reset();
	mw_track_since_ns = mw_monotonic_ns();
}

void mw_track_enable(void)
{
	/* code may have been freed unseen while we were not tracking */
	mw_sites_forget_positions();
	mw_age_unit = mw_ruby_present ? MW_AGE_GC : MW_AGE_NS;
	mw_track_since_ns = mw_monotonic_ns();
	__atomic_store_n(&mw_enabled, 1, __ATOMIC_RELEASE);
}

void mw_track_disable(void)
{
	__atomic_store_n(&mw_enabled, 0, __ATOMIC_RELEASE);
}
