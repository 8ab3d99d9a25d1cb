/* SPDX-License-Identifier: MIT */
/* gdb.h - the gdb backend: the same call made by `gdb -p PID -batch`.
 *
 * For systems where our own ptrace use is refused or distrusted.  The
 * call is made in a thread blocked in a lock-free syscall if there is
 * one, else in a thread that the attach stopped in code of its own
 * (outside libc, ld.so and our libraries) or in a libc string routine
 * that such code called (@m's leaves, see maps.c); unwindonsignal is on and
 * asynchronous signals pass through.  gdb never waits for a safe point:
 * it detaches and is run again until the deadline.  We never signal
 * gdb (see run_gdb in gdb.c), so no timeout of ours sends the target a
 * signal. */
#ifndef MWI_GDB_H
#define MWI_GDB_H

#include <stdint.h>
#include <sys/types.h>

#include "base/failure.h"
#include "process/maps.h"

/* Returns 0 with *@result set, or a mwrap-inject exit code (> 0) with
 * the reason in @why.  @dlerror_slot (mwi_dlerror_slot, or 0): where a
 * failed dlopen's message is read from, as the native backend does,
 * rather than by calling dlerror(). */
int mwi_gdb_inject(pid_t pid, const struct mwi_maps *m,
		   uintptr_t dlerror_slot, const char *lib, const char *fn,
		   const char *arg, double timeout, int verbose, int *result,
		   struct mwi_failure *why);

#endif
