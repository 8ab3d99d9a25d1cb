/* SPDX-License-Identifier: MIT */
/* gc.h - a full garbage collection (GC.start) run by a Ruby thread at a
 * safe point (rbjob.h), so that a dump taken after it counts only the
 * malloc'd memory Ruby still holds, not that of garbage objects not yet
 * swept.
 */
#ifndef MW_GC_H
#define MW_GC_H

#include <stdint.h>

/* What one run did, measured on the Ruby thread around GC.start. */
struct mw_gc_result {
	uint64_t ns;		/* GC.start's duration */
	uint64_t live_before;	/* tracked live bytes before it */
	uint64_t live_after;	/* and after it */
};

/* Runs GC.start (full mark, immediate sweep) on a Ruby thread holding the
 * GVL, waiting up to @start_ms for one to start it, then for it to end;
 * fills @r on success.  Returns 0, -ENOSYS (no Ruby), -EBUSY (an earlier
 * job still runs), -ENOSPC (Ruby 3.3+ has no job handle left),
 * -ETIMEDOUT (no Ruby thread reached a safe point: the GC will not run
 * later) or -EIO (GC.start raised); @r is left unchanged on failure.
 * Context: the helper thread only (it waits). */
int mw_gc_run(int start_ms, struct mw_gc_result *r);

/* The GC generation right after the last GC.start of ours (0: none):
 * until another GC runs, every live block was referenced when a full
 * GC marked (held.c).  Context: any; read relaxed. */
extern uint64_t mw_gc_ours;

#endif
