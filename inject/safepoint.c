/* SPDX-License-Identifier: MIT */
/* safepoint.c - see safepoint.h */
#define _GNU_SOURCE
#include "safepoint.h"
#include "syscalls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>

static int in_syscall(const struct user_regs_struct *r)
{
	long rax = (long)r->rax;

	return (long)r->orig_rax >= 0 &&
	       (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
		rax == -ERESTARTNOHAND || rax == -ERESTART_RESTARTBLOCK ||
		rax == -EINTR);
}

/* The slot a PLT stub at @stub jumps through: "jmp *disp32(%rip)", after
 * an endbr64 and a bnd prefix if any (.plt, .plt.sec).  0 or -ENOENT. */
static int plt_slot(struct mwi_thread *t, uintptr_t stub, uintptr_t *slot)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	unsigned char c[12];
	int32_t disp;
	size_t i = 0;

	if (mwi_peek(t, stub, c, sizeof(c)))
		return -ENOENT;
	if (!memcmp(c, endbr64, sizeof(endbr64)))
		i = 4;
	if (c[i] == 0xf2)
		i++;
	if (c[i] != 0xff || c[i + 1] != 0x25)
		return -ENOENT;
	memcpy(&disp, c + i + 2, sizeof(disp));
	*slot = stub + i + 6 + (intptr_t)disp;
	return 0;
}

/* 1 when the thread is inside one of libc's leaf routines (m->leaf) that
 * code outside libc and the loader called: the word at rsp is a return
 * address into that code, just past a call to a leaf entry, either
 * direct ("call rel32", to a PLT stub or the entry) or through a GOT
 * slot ("call *disp32(%rip)", -fno-plt).  The leaves push nothing, so
 * the word at rsp stays their return address while they run; a frame
 * anywhere below that holds a lock (memcpy called by realloc or fwrite)
 * has a return address inside libc and fails the test. */
static int in_leaf_called_from_outside(struct mwi_thread *t,
				       const struct mwi_maps *m,
				       const struct user_regs_struct *r)
{
	unsigned char c[6];
	uint64_t ret, dest;
	uintptr_t slot;
	int32_t disp;

	if (!m->nleaf || r->rip < m->libc_lo || r->rip >= m->libc_hi ||
	    mwi_peek(t, r->rsp, &ret, sizeof(ret)) ||
	    mwi_maps_unsafe(m, ret) || ret < sizeof(c) ||
	    mwi_peek(t, ret - sizeof(c), c, sizeof(c)))
		return 0;
	memcpy(&disp, c + 2, sizeof(disp));
	if (c[0] == 0xff && c[1] == 0x15 &&
	    !mwi_peek(t, ret + (intptr_t)disp, &dest, sizeof(dest)) &&
	    mwi_maps_leaf(m, dest))
		return 1;
	if (c[1] != 0xe8)	/* call rel32: the same 4 bytes */
		return 0;
	dest = ret + (intptr_t)disp;
	if (mwi_maps_leaf(m, dest))
		return 1;
	return !plt_slot(t, dest, &slot) &&
	       !mwi_peek(t, slot, &dest, sizeof(dest)) &&
	       mwi_maps_leaf(m, dest);
}

/* 0: safe now; 1: unsafe, in user code; 2: unsafe, inside a syscall;
 * <0 error. */
static int check_point(struct mwi_thread *t, const struct mwi_maps *m)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r))
		return -errno;
	/* first: a handler's own code, or a syscall it blocks in, looks
	 * safe, while the code it interrupted may be inside malloc */
	if (mwi_in_handler(t, &r)) {
		if (t->verbose)
			fprintf(stderr, "mwrap-inject: stopped inside a signal "
				"handler that interrupted it: no safe point\n");
		return 1;
	}
	if (in_syscall(&r))
		return mwi_syscall_blocking_safe((long)r.orig_rax) ? 0 : 2;
	if (!mwi_maps_unsafe(m, r.rip))
		return 0;
	if (in_leaf_called_from_outside(t, m, &r)) {
		if (t->verbose)
			fprintf(stderr, "mwrap-inject: safe point inside a "
				"string routine at %#llx\n", r.rip);
		return 0;
	}
	return 1;
}

/* Never single-steps: a thread left with the trap flag set, or stopped
 * with the step's SIGTRAP pending, dies of that SIGTRAP if we are
 * killed (the kernel detaches a dead tracer's threads as they are).
 * From an interrupt stop, by contrast, a thread just resumes.  So the
 * thread only ever runs freely (PTRACE_CONT) or sits in such a stop,
 * and we sample it: let it run a moment, stop it, look. */
int mwi_safe_point(struct mwi_thread *t, const struct mwi_maps *m)
{
	int attempt, ret;

	for (attempt = 0; attempt < 200; attempt++) {
		ret = check_point(t, m);
		if (ret <= 0) {
			if (ret == 0 && attempt && t->verbose)
				fprintf(stderr, "mwrap-inject: safe point after "
					"%d stops\n", attempt);
			return ret;
		}
		if (mwi_now_ms() >= t->deadline_ms)
			return -ETIMEDOUT;
		/* let it run a little (varied, not to beat in step with a
		 * loop of the target's) and look again */
		ret = mwi_run_for(t, 200 + (unsigned)(attempt * 7919 % 10) * 300);
		if (ret)
			return ret;
	}
	return -EAGAIN;
}
