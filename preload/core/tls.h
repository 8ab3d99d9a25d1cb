/* SPDX-License-Identifier: MIT */
/* tls.h - the per-thread state every hook reads, and whether hooks
 * record at all.
 *
 * Initial-exec TLS on glibc (MW_TLS_MODEL, common/libc.h; TLSDESC on
 * musl), kept tiny: a library dlopen'ed late gets its static TLS from a
 * surplus of a few hundred bytes.  Each field belongs to one
 * module, which alone gives it meaning; the others only read it as
 * their comment says.  Only the owning thread touches its own copy, so
 * no field needs atomics.
 */
#ifndef MW_TLS_H
#define MW_TLS_H

#include <stdint.h>

#include "common/libc.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

struct mw_tls {
	/* track.h: >0 while this thread runs our own code (a hook, the
	 * helper, a dump); hooks then pass straight through.  Raised by
	 * hooks, the helper thread and the C API. */
	int guard;
	/* track.h: >0 inside Mwrap.quiet (mw_quiet_enter); allocations
	 * then pass through unrecorded. */
	int quiet;
	/* sample.h: bytes until this thread's next sample */
	int64_t sample_left;
	/* sample.h: bytes until this thread's next sampled stack */
	int64_t stack_left;
	/* sample.h: this thread's sampling random state */
	uint64_t rng;
	/* counts.h: 1 + this thread's counter stripe, 0 until numbered */
	unsigned stripe;
	/* rbabi.h: where this thread's ruby_current_ec lives (Ruby's TLS
	 * variable: its address is fixed for the thread's life), NULL
	 * until first asked */
	void **ruby_ec;
	/* track.c: this thread's errno (&errno: fixed for the thread's
	 * life), NULL until first needed */
	int *errnop;
};
extern __thread struct mw_tls mw_tls MW_TLS_MODEL;

/* Hooks record while this is 1.  Written by mw_track_enable/disable
 * only (release stores); hooks read it relaxed, a hook that misses a
 * change records or skips one call more. */
extern int mw_enabled;

/* The guard around a hook's own work (mw_track_*, and on musl the real
 * call that may call a hook back: hook/malloc.c).  Raised only where
 * mw_tracking() saw it down, so raising is a store of 1, not a load, an
 * add and a store, and lowering a store of 0.  Code that may run with
 * it raised (the helper, the C API) counts it up and down instead.
 * Context: hook, guard not raised. */
static inline __attribute__((always_inline)) void mw_guard_raise(void)
{
	mw_tls.guard = 1;
}

static inline __attribute__((always_inline)) void mw_guard_lower(void)
{
	mw_tls.guard = 0;
}

/* Should this hook record?  Context: hook; async-signal-safe. */
static inline int mw_tracking(void)
{
	return __atomic_load_n(&mw_enabled, __ATOMIC_RELAXED) &&
	       !mw_tls.guard;
}

#pragma GCC visibility pop

#endif
