/* SPDX-License-Identifier: MIT */
/* syscalls.h - the syscalls the injector reasons about, each list
 * written once, with a column per CPU (syscalls.def, read by syscalls.c
 * with the numbers of the CPU built for):
 *  - the ones an attach makes in the target, with how much it needs
 *    each: seccomp.c judges the target's filter on them;
 *  - the blocking ones during which a thread holds no libc or loader
 *    lock, so that a thread stopped in one is at a safe point: safepoint.c
 *    asks, and gdb.c renders them into its script. */
#ifndef MWI_SYSCALLS_H
#define MWI_SYSCALLS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* How much an attach needs a syscall. */
enum mwi_sc_need {
	MWI_SC_REQUIRED,	/* denied: the attach fails */
	MWI_SC_FEATURE,		/* denied: a feature is unavailable */
	MWI_SC_OPTIONAL,	/* denied: a fallback does the same */
};

struct mwi_sc_call {
	int nr;
	const char *name;
	const char *user;	/* who makes it: dlopen, helper, scan... */
	enum mwi_sc_need need;
	const char *effect;	/* when denied: what is lost, or how it fails */
};

/* The syscalls an attach makes, ended by an entry with a NULL name;
 * at most MWI_SC_MAX_CALLS. */
extern const struct mwi_sc_call mwi_sc_calls[];
#define MWI_SC_MAX_CALLS 64

/* The list as it applies to process @pid: the same calls in the same
 * order, with the needs that its libc decides.  x86-64: mwi_sc_calls
 * itself.  aarch64: glibc's pthread_create makes clone3 (with clone its
 * fallback on ENOSYS) only in a libc that has clone3's code; one
 * without it (Debian 12's 2.36 on arm64) makes clone alone: clone is
 * then required and clone3 never made; a libc that cannot be read needs
 * both.  Context: the injector (reads the target's maps and libc). */
const struct mwi_sc_call *mwi_sc_calls_for(pid_t pid);

/* "required", "feature" or "optional". */
const char *mwi_sc_need_name(enum mwi_sc_need need);

/* Prints the list, one "NR NAME USER NEED" line each.
 * Context: any; writes to @out only. */
void mwi_sc_list(FILE *out);

/* The blocking syscalls during which a thread holds no lock. */
extern const long mwi_blocking_safe[];
extern const size_t mwi_nblocking_safe;

/* 1 when @nr is one of mwi_blocking_safe.  Context: any. */
int mwi_syscall_blocking_safe(long nr);

#endif
