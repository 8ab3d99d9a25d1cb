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

#include <sched.h>

/* Context: our code only, the thread's guard raised (see above); never
 * allocates. */
static inline void mw_spin_lock(int *lock)
{
	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
		unsigned spins = 0;

		while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {
			if (++spins < 256)
				mw_cpu_relax();
			else
				sched_yield();	/* holder may be preempted */
		}
	}
}

/* Context: the holder. */
static inline void mw_spin_unlock(int *lock)
{
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

#endif
