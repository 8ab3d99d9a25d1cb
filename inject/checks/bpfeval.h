/* SPDX-License-Identifier: MIT */
/* bpfeval.h - what a seccomp filter (a classic BPF program) does with
 * one syscall, found by following the program with the syscall's number
 * and architecture known and its arguments and instruction pointer not:
 * every branch that depends on them is followed, the worst result
 * counts. */
#ifndef MWI_BPFEVAL_H
#define MWI_BPFEVAL_H

#include <linux/filter.h>

/* What the filter makes of one syscall, worst first. */
enum mwi_sc_action {
	MWI_SC_KILL,	/* SECCOMP_RET_KILL_PROCESS/THREAD, an unknown action */
	MWI_SC_TRAP,	/* SIGSYS: kills a target without a handler */
	MWI_SC_ERRNO,	/* fails with an errno (also TRACE: ENOSYS) */
	MWI_SC_NOTIFY,	/* USER_NOTIF: a supervisor runs it or fails it */
	MWI_SC_ALLOW,	/* runs (also LOG) */
};

/* What a filter does with one syscall. */
struct mwi_sc_result {
	enum mwi_sc_action action;	/* the worst reachable */
	int err;			/* for MWI_SC_ERRNO */
	int varies;			/* another result is reachable too */
	int unknown;			/* too many paths, or a bad program */
};

/* Keeps the worse of @r and @n in @r (@n alone when @first).
 * Context: any. */
void mwi_sc_worse(struct mwi_sc_result *r, const struct mwi_sc_result *n,
		  int first);

/* What the @len instructions at @f do with syscall @nr: *@r, with
 * unknown set when the program cannot be judged (too many paths, an
 * instruction the kernel would refuse).
 * Context: any; no allocation. */
void mwi_bpf_evaluate(const struct sock_filter *f, unsigned int len, int nr,
		      struct mwi_sc_result *r);

#endif
