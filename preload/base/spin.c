/* SPDX-License-Identifier: MIT */
/* spin.c - see spin.h */
#include "base/spin.h"

#include <sched.h>

__attribute__((noinline, cold)) void mw_spin_lock_wait(int *lock)
{
	do {
		unsigned spins = 0;

		while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {
			if (++spins < 256)
				mw_cpu_relax();
			else
				sched_yield();	/* holder may be preempted */
		}
	} while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE));
}
