/* SPDX-License-Identifier: MIT */
/* ctl_server.h - the control channel of an attach: a private runtime
 * directory (rundir.h) holding "ctl", where the front end appends one
 * command a line (command.h), "out", where each gets its answer, and by
 * default the dump.  The helper thread serves it; the files are never
 * trusted by name (rundir.h, safefile.h).
 */
#ifndef MW_CTL_SERVER_H
#define MW_CTL_SERVER_H

#include <stdint.h>

#include "base/options.h"

/* The name, in the runtime directory, of a window's table at exit. */
#define MW_CTL_EXIT_DUMP "exit.json"

/* Makes the runtime directory with new "out" and "ctl" files and takes
 * the dump path, lease and dump format from @o (kept: it must outlive
 * the attach).  Returns 0 or -errno; an error the front end should see
 * may have been answered.  Context: the helper thread. */
int mw_ctl_open(const struct mw_options *o);

/* A file descriptor that becomes readable when "ctl" changes (-1: none;
 * poll on a timer).  Context: the helper thread. */
int mw_ctl_wake_fd(void);

/* Runs every command appended to "ctl" since the last call, answering
 * each in "out"; "lease" renews the lease (and the time spent running
 * commands is added to it).  Returns 1 after "detach", 2
 * after "detach --discard", else 0.  Context: the helper thread. */
int mw_ctl_serve(void);

/* 1 when a lease was given and no "lease" came in time.
 * Context: the helper thread. */
int mw_ctl_lease_expired(void);

/* Answers "@a@b\n" in "out".  Context: the helper thread. */
void mw_ctl_answer(const char *a, const char *b);

/* Answers "ok attached got_slots=N" (naming an object whose own
 * allocator stays untraced) and starts the lease.
 * Context: the helper thread. */
void mw_ctl_answer_attached(uint64_t slots);

/* Adds a dump in the attach's format to the dump path (SIGURG).
 * Returns 0 or -errno.  Context: the helper thread. */
int mw_ctl_dump(void);

/* The end of the window: the final dump, the runtime directory left
 * with only it (@discard: no dump, no directory), then "ok detach
 * restored_slots=@restored" and the files closed.
 * Context: the helper thread, tracking off. */
void mw_ctl_finish(int discard, int restored);

/* After a failed start: gives the front end a few seconds to read the
 * error before the directory goes (it writes to "ctl" when it has).
 * Context: the helper thread. */
void mw_ctl_linger(void);

/* Closes the files; @remove also deletes the runtime directory.
 * Context: the helper thread, or a forked child's atfork handler. */
void mw_ctl_close(int remove);

/* The target exits while attached.  With --keep (no lease): the final
 * dump to the dump path, the runtime directory left with only it, as a
 * detach leaves it.  In a window (a lease): the table as a JSON dump
 * (every site, as "dump --json") in MW_CTL_EXIT_DUMP, the directory
 * left for the front end, which reports the exit from it and removes
 * it; removed at once when the lease ran out (the front end is gone
 * too) or the dump failed.  Waits for a dump the helper is writing
 * (dump_lock).  Context: the exiting thread's atexit handler, tracking
 * off; no allocation, no stdio. */
void mw_ctl_at_exit(void);

#endif
