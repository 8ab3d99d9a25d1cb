/* gdb.h - the gdb backend: the same call made by `gdb -p PID -batch`.
 *
 * For systems where our own ptrace use is refused or distrusted.  The
 * call is made in a thread blocked in a lock-free syscall if there is
 * one, else at the entry of malloc/free/calloc/realloc (never inside
 * them, never from ld.so); unwindonsignal is on and asynchronous signals
 * pass through.  On timeout gdb only ever gets SIGINT: SIGTERM or
 * SIGKILL in the middle of a call kill the target later. */
#ifndef MWI_GDB_H
#define MWI_GDB_H

#include <sys/types.h>

/* Returns 0 with *@result set, or a mwrap-inject exit code (> 0) after
 * printing the reason. */
int mwi_gdb_inject(pid_t pid, const char *lib, const char *fn,
		   const char *arg, double timeout, int verbose, int *result);

#endif
