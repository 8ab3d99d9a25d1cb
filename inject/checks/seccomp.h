/* SPDX-License-Identifier: MIT */
/* seccomp.h - what a target's seccomp filter does with the syscalls an
 * attach makes in it.
 *
 * The syscalls are listed once, in syscalls.c: those of the injector's
 * calls (dlopen, the guarded call's sigaltstack and rt_sigreturn) and of
 * libmwrap.so (mw_attach, its helper thread, the control commands,
 * detach).  A filter is judged on each of them, never on its presence:
 * read and evaluated where the kernel lets us (PTRACE_SECCOMP_GET_FILTER:
 * CAP_SYS_ADMIN and no filter of our own, i.e. root on the host), else
 * proven equal to ours (the same container: same namespaces, as many
 * filters) or vouched for by the caller (a debug sidecar given the
 * target's profile: another mount namespace, as many filters), and
 * probed in a child of our own, never in the target.
 */
#ifndef MWI_SECCOMP_H
#define MWI_SECCOMP_H

#include <stdio.h>
#include <sys/types.h>

/* Judges process @pid's filter on every listed syscall and prints one
 * line per syscall ("syscall NAME NR ACTION NEED USER: EFFECT") and a
 * last line "verdict ok|degraded|refuse|unknown SOURCE: WHY"; SOURCE is
 * read, probed (our container's chain), vouched (ours, as @same_as_ours
 * says: the caller knows the target runs under our seccomp profile) or
 * what could not be done.
 * Returns 0 (no call of ours is killed or a required one denied; a
 * feature may be lost, a supervisor may fail a call), 1 (refuse: a
 * call would be killed or trapped, or a required call is denied), 2
 * (cannot be shown safe), or -errno
 * when @pid cannot be looked at.
 * Context: may stop each thread of @pid for microseconds with ptrace
 * (no code runs in it) and forks children of ours to probe.  Nothing
 * in the target changes. */
int mwi_sc_check(pid_t pid, FILE *out, int verbose, int same_as_ours);

#endif
