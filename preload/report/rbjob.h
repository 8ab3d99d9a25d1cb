/* SPDX-License-Identifier: MIT */
/* rbjob.h - runs a function on a Ruby thread at a safe point, asked for
 * by the helper thread, which cannot call Ruby itself.
 *
 * The helper asks the Ruby threads, through a SIGURG it queues with a
 * marker value (MW_RBJOB_SIGVAL, dispatched by control/sigurg.c), to
 * register a postponed job (rb_postponed_job_register_one needs the
 * caller's execution context in Ruby 3.1, so it must run on a Ruby
 * thread, as stackprof does; 3.3+ preregisters once and triggers).  The
 * job runs at the first interrupt check of a registered thread, with the
 * GVL.  When every Ruby thread is blocked in a system call, the
 * registered ones are knocked out of it with SIGVTALRM, as Ruby itself
 * does.  One request at a time.
 */
#ifndef MW_RBJOB_H
#define MW_RBJOB_H

/* The marker in si_value of the SIGURGs we queue to our own threads. */
#define MW_RBJOB_SIGVAL 0x6d777270	/* "mwrp" */

/* A body's return value: the request goes on (on a Ruby thread of its
 * own), and mw_rbjob_end will end it. */
#define MW_RBJOB_LATER 1

/* Claims the job for a new request.  Returns 0, -ENOSYS (no Ruby),
 * -ENOSPC (Ruby 3.3+ has no job handle left) or -EBUSY (an earlier
 * request still runs).  After 0 no job runs until mw_rbjob_run, so the
 * caller may set up what its body will read.  Context: the helper. */
int mw_rbjob_begin(void);

/* Runs @body on a Ruby thread holding the GVL, at a safe point; @body
 * returns a result (0 or -errno) or MW_RBJOB_LATER.  Waits up to
 * @start_ms for a Ruby thread to start it, then for the request to end.
 * Returns @body's result (or mw_rbjob_end's), or -ETIMEDOUT (no Ruby
 * thread reached a safe point: @body will not run later; or it still
 * runs after 10 minutes).  Context: the helper, after mw_rbjob_begin
 * returned 0 (it waits). */
int mw_rbjob_run(int (*body)(void), int start_ms);

/* Ends a request whose body returned MW_RBJOB_LATER, with @result.
 * Context: a Ruby thread. */
void mw_rbjob_end(int result);

/* How many idle Ruby threads flagged themselves for the last request
 * (for the error message when none ran it).  Context: the helper. */
unsigned mw_rbjob_flagged(void);

/* Called by the SIGURG handler for a signal carrying MW_RBJOB_SIGVAL:
 * registers the job if this thread may.  Context: async-signal-safe
 * (ruby_native_thread_p only reads a thread-local). */
void mw_rbjob_on_signal_sigsafe(void);

#endif
