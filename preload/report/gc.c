/* SPDX-License-Identifier: MIT */
/* gc.c - see gc.h */
#include "report/gc.h"
#include "report/rbcall.h"
#include "report/rbjob.h"
#include "report/stats.h"
#include "core/rbpos.h"
#include "core/track.h"
#include "common/clock.h"

#include <errno.h>

/* Written by the job before it ends the request (rbjob's release), read
 * by the helper after mw_rbjob_run returned (acquire). */
static struct mw_gc_result job_out;

uint64_t mw_gc_ours;

static uint64_t tracked_live(void)
{
	struct mw_stats st;

	mw_stats_collect(&st);
	return st.live_bytes;
}

/* The job; on a Ruby thread with the GVL.  What GC.start allocates (its
 * own bookkeeping) is not the application's: quiet.  The frees it makes
 * are recorded, which is the point. */
static int gc_job(void)
{
	uint64_t t0;
	VALUE ret;

	mw_track_quiet_enter();
	job_out.live_before = tracked_live();
	t0 = mw_monotonic_ns();
	ret = mw_rb_try_call(*mw_rb.mGC, "start");
	mw_ruby_generation_refresh();	/* what the GC kept is held */
	__atomic_store_n(&mw_gc_ours, mw_track_now(), __ATOMIC_RELAXED);
	job_out.ns = mw_monotonic_ns() - t0;
	job_out.live_after = tracked_live();
	mw_track_quiet_leave();
	return ret ? 0 : -EIO;	/* 0: it raised (the error is cleared) */
}

int mw_gc_run(int start_ms, struct mw_gc_result *r)
{
	int ret = mw_rbjob_begin();

	if (ret)
		return ret;
	ret = mw_rbjob_run(gc_job, start_ms);
	if (!ret)
		*r = job_out;
	return ret;
}
