/* SPDX-License-Identifier: MIT */
/* rundir.h - an attach's private runtime directory.
 *
 * The control file, the answers and the default dump live in a fresh
 * directory made by mkdtemp ("/tmp/mwrap.PID.XXXXXX", mode 0700, ours),
 * never at a predictable name in a world-writable directory.  The
 * helper keeps it open: a front end finds it as /proc/PID/fd/N of the
 * target and reaches it without resolving a path.  Files in it are
 * created with O_EXCL | O_NOFOLLOW, so nothing planted is ever opened.
 */
#ifndef MW_RUNDIR_H
#define MW_RUNDIR_H

struct mw_rundir {
	int fd;			/* O_DIRECTORY, -1 when none */
	char path[64];		/* as this process names it */
};

/* Makes and opens a fresh directory under /tmp (else /var/tmp, else
 * /dev/shm) and checks by fstat that it is a directory of ours, mode
 * 0700.  Returns 0, or -errno with @d->fd = -1.
 * Context: helper thread; no allocation. */
int mw_rundir_make(struct mw_rundir *d);

/* Creates @name in @d (O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
 * O_CLOEXEC, mode 0600) with @flags.  Returns the fd or -errno.
 * Context: helper thread; no allocation. */
int mw_rundir_create(const struct mw_rundir *d, const char *name, int flags);

/* "@d->path/@name" into @buf; 0, or -ENAMETOOLONG.
 * Context: any; no allocation. */
int mw_rundir_join(const struct mw_rundir *d, const char *name, char *buf,
		   unsigned long len);

/* Unlinks each entry of the directory open at @fd whose name @pick
 * accepts, pass after pass until one removes nothing.  Best effort.
 * Context: no allocation (reads the directory with getdents64). */
void mw_dir_unlink_each(int fd, int (*pick)(const char *name));

/* Unlinks every file in @d, removes it and closes it.  Best effort;
 * Context: no allocation (reads the directory with getdents64). */
void mw_rundir_remove(struct mw_rundir *d);

/* Closes @d, leaving its files (a fork child, or a dump kept for the
 * user).  Context: helper thread, or a fork child's atfork handler. */
void mw_rundir_close(struct mw_rundir *d);

#endif
