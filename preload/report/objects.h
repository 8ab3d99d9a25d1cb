/* objects.h - the Ruby object view, taken by a Ruby thread at a safe
 * point without any prior `require` in the target.
 *
 * The helper thread cannot call Ruby: it asks the Ruby threads, through a
 * SIGURG it queues with a marker value, to register a postponed job
 * (rb_postponed_job_register_one needs the caller's execution context in
 * Ruby 3.1, so it must run on a Ruby thread, as stackprof does).  The
 * job runs at the first interrupt check of a registered thread, with the
 * GVL, and writes one JSON object: ObjectSpace.count_objects, memsize by type
 * (objspace's count_objects_size), count_imemo_objects, the number and
 * memsize of instruction sequences, GC.stat, and the process's RSS,
 * malloc's figures and our tracked live bytes beside them.
 */
#ifndef MW_OBJECTS_H
#define MW_OBJECTS_H

/* The marker in si_value of the SIGURGs we queue to our own threads. */
#define MW_OBJECTS_SIGVAL 0x6d777270	/* "mwrp" */

/* Takes the object view into @path (replaced atomically, 0600), and
 * ObjectSpace.dump_all into @heap_path unless it is "".  Waits up to
 * @start_ms for a Ruby thread to start the job, then for the job to end.
 * Returns 0, -ENOSYS (no Ruby), -EBUSY (an earlier job still runs),
 * -ETIMEDOUT (no Ruby thread reached a safe point; nothing will be
 * written later), or the job's -errno.
 * Context: the helper thread only (it waits). */
int mw_objects_take(const char *path, const char *heap_path, int start_ms);

/* How many idle Ruby threads flagged themselves for the last request
 * (for the error message when none ran it).  Context: the helper thread. */
unsigned mw_objects_flagged(void);

/* Called by the SIGURG handler for a signal carrying the marker:
 * registers the job if this thread may.
 * Context: async-signal-safe. */
void mw_objects_on_signal_sigsafe(void);

#endif
