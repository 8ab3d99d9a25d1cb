/* SPDX-License-Identifier: MIT */
/* objects.h - the Ruby object view, taken by a Ruby thread at a safe
 * point without any prior `require` in the target.
 *
 * A job run on a Ruby thread (rbjob.h) writes one JSON object:
 * ObjectSpace.count_objects, memsize by type (objspace's
 * count_objects_size), count_imemo_objects, the number and memsize of
 * instruction sequences, GC.stat, and the process's RSS, malloc's
 * figures and our tracked live bytes beside them.
 */
#ifndef MW_OBJECTS_H
#define MW_OBJECTS_H

/* Takes the object view into @path (replaced atomically, 0600), and
 * ObjectSpace.dump_all into @heap_path unless it is "".  Waits up to
 * @start_ms for a Ruby thread to start the job, then for the job to end.
 * Returns 0, -ENOSYS (no Ruby), -EBUSY (an earlier job still runs),
 * -ETIMEDOUT (no Ruby thread reached a safe point; nothing will be
 * written later), or the job's -errno.
 * Context: the helper thread only (it waits). */
int mw_objects_take(const char *path, const char *heap_path, int start_ms);

#endif
