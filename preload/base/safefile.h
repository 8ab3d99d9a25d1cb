/* SPDX-License-Identifier: MIT */
/* safefile.h - files we create in the target: never through a symlink,
 * never someone else's, mode 0600. */
#ifndef MW_SAFEFILE_H
#define MW_SAFEFILE_H

#include <sys/types.h>

/* 0 if @fd is ours (our euid) and of @type: a regular file (S_IFREG)
 * with one link, or a directory (S_IFDIR) no one else may enter (mode
 * 0700); else -errno: -EINVAL (-ENOTDIR for S_IFDIR) for another type,
 * -EPERM for another owner, links or mode.
 * Context: not a hook; no allocation. */
int mw_fd_check_ours(int fd, mode_t type);

/* Opens (creating 0600) @path with @flags | O_CREAT | O_NOFOLLOW |
 * O_NONBLOCK | O_CLOEXEC, and checks it is a regular file owned by us
 * with one link before truncating it (O_TRUNC).  Never blocks (a FIFO
 * is refused).  Returns the fd or -errno (-ELOOP for a symlink, -EPERM
 * for a file owned by another user or hard-linked, -EINVAL for a
 * non-file, -ENXIO for a FIFO without a reader).
 * Context: not a hook; no allocation; never blocks. */
int mw_safe_open(const char *path, int flags);

/* Writes a dump to @path so that a reader never sees half of it: into
 * a temporary file beside it (what @path held first, when @append),
 * then renamed over @path.  @write_fn(fd, arg) writes the new part and
 * returns 0 or -errno.  Returns 0 or -errno; @path is unchanged on
 * failure.  Context: not a hook; no allocation. */
int mw_safe_replace(const char *path, int append,
		    int (*write_fn)(int fd, void *arg), void *arg);

#endif
