/* SPDX-License-Identifier: MIT */
/* spin.h - a tiny test-and-test-and-set lock for our own tables.
 *
 * Only ever held inside our code with the thread's recursion guard
 * raised, so a signal handler that allocates on the same thread passes
 * straight to libc instead of spinning on a lock its thread holds.
 */
#ifndef MW_SPIN_H
#define MW_SPIN_H

#include "base/cpu.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* mw_spin_lock's wait for a lock found taken: out of line, so that the
 * callers' common path (the lock free) holds no loop and no call to
 * sched_yield, which cost them registers and spills.
 * Context: as mw_spin_lock. */
void mw_spin_lock_wait(int *lock);

/* Context: our code only, the thread's guard raised (see above); never
 * allocates. */
static inline void mw_spin_lock(int *lock)
{
	if (__builtin_expect(__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE), 0))
		mw_spin_lock_wait(lock);
}

/* Context: the holder. */
static inline void mw_spin_unlock(int *lock)
{
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

#pragma GCC visibility pop

#endif
