/* SPDX-License-Identifier: MIT */
/* safepoint.c - see safepoint.h */
#define _GNU_SOURCE
#include "process/safepoint.h"
#include "process/syscalls.h"
#include "common/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>

/* 0: safe now; 1: unsafe, in user code; 2: unsafe, inside a syscall;
 * <0 error. */
static int check_point(struct mwi_thread *t, const struct mwi_maps *m)
{
	mwi_regs r;
	long nr;
	int ret;

	if ((ret = mwi_arch_get_regs(t->tid, &r)))
		return ret;
	/* first: a handler's own code, or a syscall it blocks in, looks
	 * safe, while the code it interrupted may be inside malloc */
	if (mwi_in_handler(t, &r)) {
		if (t->verbose)
			fprintf(stderr, "mwrap-inject: stopped inside a signal "
				"handler that interrupted it: no safe point\n");
		return 1;
	}
	if (mwi_arch_in_syscall(t, &r, &nr))
		return mwi_syscall_blocking_safe(nr) ? 0 : 2;
	if (!mwi_maps_unsafe(m, mwi_arch_pc(&r)))
		return 0;
	if (mwi_arch_in_called_leaf(t, m, &r)) {
		if (t->verbose)
			fprintf(stderr, "mwrap-inject: safe point inside a "
				"string routine at %#llx\n",
				(unsigned long long)mwi_arch_pc(&r));
		return 0;
	}
	return 1;
}

/* Never single-steps: a thread left with the trap flag set, or stopped
 * with the step's SIGTRAP pending, dies of that SIGTRAP if we are
 * killed (the kernel detaches a dead tracer's threads as they are).
 * From an interrupt stop, by contrast, a thread just resumes.  So the
 * thread only ever runs freely (PTRACE_CONT) or sits in such a stop,
 * and we sample it: let it run a moment, stop it, look. */
int mwi_safe_point(struct mwi_thread *t, const struct mwi_maps *m)
{
	int attempt, ret;

	for (attempt = 0; attempt < 200; attempt++) {
		ret = check_point(t, m);
		if (ret <= 0) {
			if (ret == 0 && attempt && t->verbose)
				fprintf(stderr, "mwrap-inject: safe point after "
					"%d stops\n", attempt);
			return ret;
		}
		if ((long)mw_monotonic_ms() >= t->deadline_ms)
			return -ETIMEDOUT;
		/* let it run a little (varied, not to beat in step with a
		 * loop of the target's) and look again */
		ret = mwi_run_for(t, 200 + (unsigned)(attempt * 7919 % 10) * 300);
		if (ret)
			return ret;
	}
	return -EAGAIN;
}
