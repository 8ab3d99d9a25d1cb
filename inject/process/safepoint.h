/* SPDX-License-Identifier: MIT */
/* safepoint.h - moving a seized thread to a point where calls into it
 * are safe: never inside the allocator, stdio or the loader, which may
 * hold locks the calls need. */
#ifndef MWI_SAFEPOINT_H
#define MWI_SAFEPOINT_H

#include "process/maps.h"
#include "process/ptrace.h"

/* Lets the thread run and stops it again (never single-steps it) until
 * it stops outside libc/ld.so/tracer code, inside a libc string routine
 * that code outside them called, or in a blocking syscall known to hold
 * no lock, and never inside a signal handler it let run meanwhile
 * (mwi_in_handler).  The thread is left in an interrupt stop.  -EAGAIN:
 * no safe point in 200 tries; -EINTR: a stop signal stopped the process.
 * Context: the injector, with @t seized and in an interrupt stop. */
int mwi_safe_point(struct mwi_thread *t, const struct mwi_maps *m);

#endif
