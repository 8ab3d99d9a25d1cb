/* SPDX-License-Identifier: MIT */
/* fork.c - see fork.h */
#include "control/fork.h"
#include "hook/got.h"
#include "core/pagestats.h"
#include "core/live.h"
#include "core/sites.h"
#include "report/symbolize.h"

#include <pthread.h>

static void (*child_then)(void);

/* Order: liburcu's worker must be paused before we hold anything its
 * resize could wait for (see mw_sites_fork_lock); our own locks are never
 * held while taking another, so their order is free. */
static void prepare(void)
{
	mw_sites_fork_lock();
	mw_pagestats_fork_lock();
	mw_live_fork_lock();
	mw_got_fork_lock();
}

static void parent(void)
{
	mw_got_fork_unlock();
	mw_live_fork_unlock();
	mw_pagestats_fork_unlock();
	mw_sites_fork_unlock(0);
}

static void child(void)
{
	void (*then)(void) = __atomic_load_n(&child_then, __ATOMIC_ACQUIRE);

	mw_got_fork_unlock();
	mw_live_fork_unlock();
	mw_pagestats_fork_unlock();
	mw_sites_fork_unlock(1);
	mw_symbolize_fork_child();
	if (then)
		then();
}

void mw_fork_init(void (*then)(void))
{
	static int registered;

	__atomic_store_n(&child_then, then, __ATOMIC_RELEASE);
	if (!registered && pthread_atfork(prepare, parent, child) == 0)
		registered = 1;
}
