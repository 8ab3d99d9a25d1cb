/* SPDX-License-Identifier: MIT */
/* ptrace.h - stopping one thread, moving it to a safe point, and making
 * function calls in it, with everything restored afterwards. */
#ifndef MWI_PTRACE_H
#define MWI_PTRACE_H

#include "process/arch.h"

#include <stdint.h>
#include <sys/types.h>


#define MWI_MAX_PENDING 32

struct mwi_thread {
	pid_t pid, tid;
	int seized;
	mwi_regs saved;				/* at the stop */
	unsigned char xstate[16384];		/* FPU/vector state (arch.h) */
	size_t xstate_len;
	uint64_t sigmask;
	int have_saved;
	/* synchronous signals (SIGFPE, SIGSYS, ...) that arrived during our
	 * calls, when every other one is blocked: re-sent after */
	int pending[MWI_MAX_PENDING];
	int npending;
	/* the top of the outermost frame of a signal handler we let the
	 * thread run during the search (see mwi_in_handler), or 0 */
	uintptr_t handler_sp;
	/* bytes we use below the stack's red zone: strings at the top, the
	 * signal frame below them (saved first, restored last) */
	uintptr_t scratch;
	unsigned char scratch_saved[32768];
	size_t scratch_len;
	/* the signal frame (see mwi_guard): 0 when calls are unguarded */
	uintptr_t frame_sp;
	uintptr_t frame_altstack;	/* its sigaltstack field */
	int at_enter_stop;	/* stopped at a guarded call's rt_sigreturn */
	/* the last guarded call's return address: code that ends in that
	 * rt_sigreturn whatever the registers hold (see mwi_settle) */
	uintptr_t guarded_ret;
	int call_left_running;	/* a guarded call outlived the deadline */
	/* the last guarded call's result, where the CPU keeps it to our
	 * stop (mwi_arch_guarded_keeps_result) */
	uint64_t guarded_result;
	int have_guarded_result;
	unsigned long syscall_stops;	/* for -v */
	long deadline_ms;			/* monotonic */
	/* time the thread spent stopped by us (not while we let it run
	 * between attempts at a safe point) */
	long stopped_us, stop_start_us;
	int verbose;
};

/* Each returns 0 or -errno: -ESRCH when the thread went away, -ETIMEDOUT
 * past the deadline, -EPERM when ptrace is refused. */
int mwi_seize(struct mwi_thread *t);
/* Lets the stopped thread run for @us microseconds and stops it again
 * (an interrupt stop).  Signals that come meanwhile are delivered as it
 * resumes, never held back (they would be lost with us), and a handler
 * they run is tracked (mwi_in_handler).  -EINTR: a stop signal stopped
 * the process, which stays stopped after mwi_release. */
int mwi_run_for(struct mwi_thread *t, unsigned us);
/* 1 when the thread, stopped with registers @r, may be inside a signal
 * handler that we let run during the search (its stack pointer is at or
 * below the top of that handler's frame), else 0.  What the handler
 * interrupted may hold a lock: no safe point.  Context: the injector,
 * with @t seized and stopped. */
int mwi_in_handler(struct mwi_thread *t, const mwi_regs *r);
int mwi_save(struct mwi_thread *t);
/* Copies @len bytes below the red zone; *@addr gets their address. */
int mwi_write_scratch(struct mwi_thread *t, const void *data, size_t len,
		      uintptr_t *addr);
/* Calls fn(args...) in the thread; *@ret gets its return value.  The call returns to
 * address 0, whose fault we catch: if we died meanwhile the thread
 * would die too, so keep these calls short (a syscall wrapper). */
int mwi_call(struct mwi_thread *t, uintptr_t fn, const uint64_t *args,
	     int nargs, uint64_t *ret);

/* Makes the calls that follow survivable if we are killed (SIGKILL
 * included): a kernel signal frame holding the thread's state from
 * before the hijack is left on its stack, and guarded calls return into
 * an rt_sigreturn that restores it.  The frame's sigaltstack field
 * (mwi_frame_altstack) reads SS_DISABLE until the caller has the thread
 * fill it in with sigaltstack(NULL, field), itself a guarded call.
 * Returns 0, or -errno when no frame can be built (calls then stay
 * unguarded). */
int mwi_guard(struct mwi_thread *t);
uintptr_t mwi_frame_altstack(const struct mwi_thread *t);

/* A guarded call: fn returns to @ret_addr, code ending in rt_sigreturn
 * whose syscall instruction ends at @stop_rip (our stop).  The result is
 * not in a register by then on x86-64: the code at @ret_addr keeps it if
 * needed; on aarch64 it is, and t->guarded_result gets it
 * (t->have_guarded_result). */
int mwi_call_guarded(struct mwi_thread *t, uintptr_t fn,
		     const uint64_t *args, int nargs, uintptr_t ret_addr,
		     uintptr_t stop_rip);

/* Writes / reads target memory. */
int mwi_poke(struct mwi_thread *t, uintptr_t addr, const void *buf,
	     size_t len);
int mwi_peek(struct mwi_thread *t, uintptr_t addr, void *buf, size_t len);
/* Reads a NUL-terminated string from the target. */
int mwi_read_string(struct mwi_thread *t, uintptr_t addr, char *buf,
		    size_t len);
/* Call before mwi_release() on a thread stopped at the entry of the
 * rt_sigreturn that ends a guarded call: skips that syscall and leaves
 * the thread at its exit stop, where the restore is safe.  Restoring at
 * the entry stop itself skips it too (syscall -1), but the filter
 * still runs on syscall -1 and the kernel writes its answer (the
 * runtimes' defaults: ENOSYS or EPERM) over the restored result: the
 * thread's interrupted syscall then fails with it.  The skipped syscall
 * returns to the start of the code that ended the call, so that the
 * thread still restores itself from its frame if we die before
 * mwi_release.  0 (also when there is nothing to do), or -errno.
 * Context: the injector, with @t seized. */
int mwi_settle(struct mwi_thread *t);

/* Restores memory, registers and mask, detaches, re-sends the
 * synchronous signals that came during our calls.  Safe to call in any
 * state. */
void mwi_release(struct mwi_thread *t);


#endif
