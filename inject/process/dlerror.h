/* SPDX-License-Identifier: MIT */
/* dlerror.h - the message of a dlopen that failed in a thread we hold,
 * read from glibc's record of it in that thread: no call into the
 * target.  A call to dlerror() would be one more call after the
 * guarded dlopen, and its result (a pointer in rax) cannot come back
 * through the signal frame that guards a call: made unguarded, its
 * return trap killed the target if we died meanwhile. */
#ifndef MWI_DLERROR_H
#define MWI_DLERROR_H

#include <stddef.h>
#include <stdint.h>

#include "process/ptrace.h"

/* The address in the target of libc's GOT slot for its thread-local
 * dlerror record (__libc_dlerror_result, glibc 2.34 and later), from the
 * libc file at @libc_path (our view of it) loaded at @libc_base.
 * Returns 0, or -ENOENT for a libc without one (older glibc, musl), or
 * -errno.
 * Context: the injector; reads the file, not the target. */
int mwi_dlerror_slot(const char *libc_path, uintptr_t libc_base,
		     uintptr_t *slot);

/* Formats into @msg (@len bytes) what dlerror() would return in thread
 * @t, stopped by us after its dlopen failed, as glibc's dlerror formats
 * it (untranslated): "OBJECT: ERROR[: strerror(ERRNO)]".  Only reads
 * the target's memory, so it cannot harm it, and leaves the record as
 * it was (undelivered: the thread's next dlerror() still returns it).
 * Returns 0, or -ENOENT when the thread has no pending error, -EPROTO
 * when the record does not look like glibc 2.34+'s, or -errno from the
 * reads; @msg is then "".
 * Context: the injector, with @t seized and stopped; @slot from
 * mwi_dlerror_slot for the target's libc. */
int mwi_dlerror_read(struct mwi_thread *t, uintptr_t slot, char *msg,
		     size_t len);

#endif
