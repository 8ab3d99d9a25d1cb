/* SPDX-License-Identifier: MIT */
/* ptrace.c - see ptrace.h */
#define _GNU_SOURCE
#include "process/ptrace.h"
#include "common/clock.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif

#define say(t, ...) \
	do { if ((t)->verbose) fprintf(stderr, "mwrap-inject: " __VA_ARGS__); } while (0)

static void on_alarm(int sig)
{
	(void)sig;	/* only to interrupt waitpid */
}

/* Waits for the next stop of the thread, at most until @until (ms): a
 * blocking waitpid (woken the moment the thread stops: a guarded call
 * stops at each of its syscalls), cut short by a timer's SIGALRM. */
static int wait_stop(struct mwi_thread *t, long until, int *status)
{
	static int handler_set;

	if (!handler_set) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;	/* no SA_RESTART */
		sigaction(SIGALRM, &sa, NULL);
		handler_set = 1;
	}
	for (;;) {
		long left = until - (long)mw_monotonic_ms();
		struct itimerval it = { { 0, 0 }, { 0, 0 } };
		pid_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		it.it_value.tv_sec = left / 1000;
		it.it_value.tv_usec = (left % 1000) * 1000;
		setitimer(ITIMER_REAL, &it, NULL);
		r = waitpid(t->tid, status, __WALL);
		it.it_value.tv_sec = it.it_value.tv_usec = 0;
		setitimer(ITIMER_REAL, &it, NULL);
		if (r == t->tid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
				t->seized = 0;
				return -ESRCH;
			}
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return errno == ECHILD ? -ESRCH : -errno;
	}
}

static int is_event_stop(int status)
{
	return WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP;
}

static int get_regs(struct mwi_thread *t, mwi_regs *r)
{
	return mwi_arch_get_regs(t->tid, r);
}

static void remember_signal(struct mwi_thread *t, int sig)
{
	/* SIGTRAP stops come from our own syscall stops */
	if ((sig & 0x7f) == SIGTRAP)
		return;
	if (t->npending < MWI_MAX_PENDING)
		t->pending[t->npending++] = sig;
}

/* Interrupts the running thread and waits for the interrupt stop.  A
 * signal that stops it first is delivered as it resumes, with its own
 * siginfo, as if we were not there: held back instead, it was lost if
 * we died before re-sending it.  If the thread has a handler for it, it
 * stops at the handler's entry (the kernel checks our interrupt before
 * the next signal): its stack pointer then is the top of the handler's
 * frame, and until the thread is seen above it again it may be inside
 * the handler, whose interrupted code may hold a lock (see
 * mwi_in_handler).  A stop signal stops the process (a group stop):
 * -EINTR, and it stays stopped when we detach. */
static int interrupt(struct mwi_thread *t)
{
	mwi_regs before, now;
	int status, ret, sig = 0;

	memset(&before, 0, sizeof(before));
	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0))
		return -errno;
	for (;;) {
		ret = wait_stop(t, t->deadline_ms, &status);
		if (ret)
			return ret;
		/* moved since we delivered a signal: onto its handler */
		if (sig && !get_regs(t, &now) &&
		    mwi_arch_sp(&now) != mwi_arch_sp(&before) &&
		    mwi_arch_sp(&now) > t->handler_sp)
			t->handler_sp = mwi_arch_sp(&now);
		if (is_event_stop(status))
			return WSTOPSIG(status) == SIGTRAP ? 0 : -EINTR;
		sig = WIFSTOPPED(status) ? WSTOPSIG(status) : 0;
		/* a syscall stop of a guarded call left running is ours */
		if (sig == (SIGTRAP | 0x80))
			sig = 0;
		if (sig) {
			say(t, "delivering signal %d to thread %d\n", sig,
			    (int)t->tid);
			if (get_regs(t, &before))
				sig = 0;	/* gone: the CONT fails too */
		}
		if (ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)sig))
			return -errno;
	}
}

int mwi_in_handler(struct mwi_thread *t, const mwi_regs *r)
{
	if (!t->handler_sp)
		return 0;
	if (mwi_arch_sp(r) <= t->handler_sp)
		return 1;
	t->handler_sp = 0;	/* above the outermost frame: all returned */
	return 0;
}

int mwi_seize(struct mwi_thread *t)
{
	int ret;

	/* TRACESYSGOOD: syscall stops of guarded calls carry SIGTRAP|0x80 */
	if (ptrace(PTRACE_SEIZE, t->tid, 0, (void *)PTRACE_O_TRACESYSGOOD))
		return -errno;
	t->seized = 1;
	ret = interrupt(t);
	t->stop_start_us = (long)(mw_monotonic_ns() / 1000);
	return ret;
}

int mwi_run_for(struct mwi_thread *t, unsigned us)
{
	int ret;

	if (ptrace(PTRACE_CONT, t->tid, 0, 0))
		return -errno;
	t->stopped_us += (long)(mw_monotonic_ns() / 1000) - t->stop_start_us;
	usleep(us);
	ret = interrupt(t);
	t->stop_start_us = (long)(mw_monotonic_ns() / 1000);
	return ret;
}

int mwi_save(struct mwi_thread *t)
{
	int ret = get_regs(t, &t->saved);

	if (ret)
		return ret;
	ret = mwi_arch_save_ext(t->tid, t->xstate, sizeof(t->xstate),
				&t->xstate_len);
	if (ret)
		return ret;
	if (ptrace(PTRACE_GETSIGMASK, t->tid, (void *)sizeof(t->sigmask),
		   &t->sigmask))
		return -errno;
	t->have_saved = 1;
	return 0;
}

static int peek_poke(struct mwi_thread *t, uintptr_t addr, void *buf,
		     size_t len, int write)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	ssize_t n = write ? process_vm_writev(t->tid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(t->tid, &local, 1, &remote, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	/* fall back to word-wise ptrace access */
	for (size_t off = 0; off < len; off += sizeof(long)) {
		long word;
		size_t k = len - off < sizeof(long) ? len - off : sizeof(long);

		errno = 0;
		word = ptrace(PTRACE_PEEKDATA, t->tid, (void *)(addr + off), 0);
		if (errno)
			return -errno;
		if (write) {
			memcpy(&word, (char *)buf + off, k);
			if (ptrace(PTRACE_POKEDATA, t->tid,
				   (void *)(addr + off), (void *)word))
				return -errno;
		} else {
			memcpy((char *)buf + off, &word, k);
		}
	}
	return 0;
}

int mwi_write_scratch(struct mwi_thread *t, const void *data, size_t len,
		      uintptr_t *addr)
{
	size_t at = (t->scratch_len + len + 15) & ~(size_t)15;
	int ret;

	if (!t->have_saved || at > sizeof(t->scratch_saved))
		return -E2BIG;
	/* scratch grows down from 256 bytes below the stack pointer,
	 * clear of the 128-byte red zone */
	t->scratch = (mwi_arch_sp(&t->saved) - 256 - sizeof(t->scratch_saved)) &
		     ~(uintptr_t)63;
	if (t->scratch_len == 0) {
		ret = peek_poke(t, t->scratch, t->scratch_saved,
				sizeof(t->scratch_saved), 0);
		if (ret)
			return ret;
	}
	*addr = t->scratch + sizeof(t->scratch_saved) - at;
	ret = peek_poke(t, *addr, (void *)data, len, 1);
	if (ret)
		return ret;
	t->scratch_len = at;
	return 0;
}

int mwi_read_string(struct mwi_thread *t, uintptr_t addr, char *buf,
		    size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		if (peek_poke(t, addr + i, &buf[i], 1, 0))
			return -EFAULT;
		if (!buf[i])
			return 0;
	}
	buf[i] = '\0';
	return 0;
}

int mwi_poke(struct mwi_thread *t, uintptr_t addr, const void *buf,
	     size_t len)
{
	return peek_poke(t, addr, (void *)buf, len, 1);
}

int mwi_peek(struct mwi_thread *t, uintptr_t addr, void *buf, size_t len)
{
	return peek_poke(t, addr, buf, len, 0);
}

uintptr_t mwi_frame_altstack(const struct mwi_thread *t)
{
	return t->frame_sp ? t->frame_altstack : 0;
}

int mwi_guard(struct mwi_thread *t)
{
	mwi_regs r;
	uintptr_t strings, sp, alt;
	int ret;

	if (!t->have_saved || !t->scratch_len)
		return -ENOTSUP;
	strings = t->scratch + sizeof(t->scratch_saved) - t->scratch_len;
	mwi_arch_restartable(&t->saved, &r);
	ret = mwi_arch_sigframe(t, &r, t->sigmask, t->xstate, t->xstate_len,
				strings, t->scratch + 1024, &sp, &alt);
	if (ret)
		return ret;
	t->frame_sp = sp;
	t->frame_altstack = alt;
	return 0;
}

/* Sets the thread up for a call (pc = @fn, stack at @sp, returning to
 * @ret_addr: arch.h) from any stop, and resumes it with @resume
 * (PTRACE_CONT, or PTRACE_SYSCALL to stop at each syscall). */
static int start_call(struct mwi_thread *t, uintptr_t fn, uintptr_t sp,
		      uint64_t ret_addr, const uint64_t *args, int nargs,
		      int resume)
{
	mwi_regs r = t->saved;
	uint64_t mask = ~0ull;
	int err;

	if ((err = mwi_arch_set_call(t, &r, fn, sp, ret_addr, args, nargs)) ||
	    (err = mwi_arch_set_regs(t->tid, &r)))
		return err;
	/* asynchronous signals wait until we are done; faults must not be
	 * blocked (the kernel would reset their handlers) */
	for (int s = 1; s <= 64; s++)
		if (s == SIGSEGV || s == SIGTRAP || s == SIGBUS || s == SIGILL ||
		    s == SIGFPE || s == SIGSYS)
			mask &= ~(1ull << (s - 1));
	if (ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask))
		return -errno;
	t->at_enter_stop = 0;
	return ptrace(resume, t->tid, 0, 0) ? -errno : 0;
}

/* Runs the thread until the call just started returns: to address 0
 * (its SIGSEGV; *@result gets the result) when @stop_rip is 0, else to the
 * entry of the rt_sigreturn whose syscall instruction ends at @stop_rip
 * (a guarded call).  Other signals are kept for later; a fault in the
 * call, our deadline or the thread's death end it with an error. */
static int finish_call(struct mwi_thread *t, uintptr_t stop_rip,
		       uint64_t *result)
{
	int resume = stop_rip ? PTRACE_SYSCALL : PTRACE_CONT;
	mwi_regs r;
	int err, status;

	for (;;) {
		err = wait_stop(t, t->deadline_ms, &status);
		if (err == -ETIMEDOUT && stop_rip) {
			/* A guarded call may hold a lock now (the loader's, in
			 * a constructor): unwound, it would keep it for ever.
			 * Left running, it returns through its signal frame,
			 * which restores the thread, as after our death. */
			t->call_left_running = 1;
			return -ETIMEDOUT;
		}
		if (err == -ETIMEDOUT) {
			/* unguarded: its return address traps, so unwinding
			 * is the only way out; stop it for mwi_release */
			interrupt(t);
			return -ETIMEDOUT;
		}
		if (err)
			return err;
		if (WIFSTOPPED(status) && WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			struct __ptrace_syscall_info si;

			t->syscall_stops++;
			if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid,
				   (void *)sizeof(si), &si) > 0 &&
			    si.op == PTRACE_SYSCALL_INFO_ENTRY &&
			    si.entry.nr == SYS_rt_sigreturn &&
			    si.instruction_pointer == stop_rip) {
				t->at_enter_stop = 1;	/* our return */
				if (mwi_arch_guarded_keeps_result &&
				    !get_regs(t, &r)) {
					t->guarded_result = mwi_arch_retval(&r);
					t->have_guarded_result = 1;
				}
				return 0;
			}
		} else if (WIFSTOPPED(status) && !is_event_stop(status)) {
			int sig = WSTOPSIG(status);

			if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL) {
				err = get_regs(t, &r);
				if (err)
					return err;
				if (!stop_rip && sig == SIGSEGV &&
				    mwi_arch_pc(&r) == 0) {
					/* our return trap */
					*result = mwi_arch_retval(&r);
					return 0;
				}
				fprintf(stderr, "mwrap-inject: the target faulted "
					"inside the injected call at %#llx\n",
					(unsigned long long)mwi_arch_pc(&r));
				return -EFAULT;
			}
			remember_signal(t, sig);
		}
		if (ptrace(resume, t->tid, 0, 0))
			return -errno;
	}
}

int mwi_call_guarded(struct mwi_thread *t, uintptr_t fn,
		     const uint64_t *args, int nargs, uintptr_t ret_addr,
		     uintptr_t stop_rip)
{
	int err;

	if (!t->frame_sp)
		return -ENOTSUP;
	t->have_guarded_result = 0;
	t->guarded_ret = ret_addr;
	/* the frame's pretcode is the call's return address */
	err = start_call(t, fn, t->frame_sp, ret_addr, args, nargs,
			 PTRACE_SYSCALL);
	return err ? err : finish_call(t, stop_rip, NULL);
}

int mwi_call(struct mwi_thread *t, uintptr_t fn, const uint64_t *args,
	     int nargs, uint64_t *ret)
{
	uintptr_t sp;
	int err;

	/* a stack below our scratch (and below the frame, if any), aligned
	 * as after a call; the return address 0 traps */
	sp = mwi_arch_call_sp((t->frame_sp ? t->frame_sp - 128 :
			       t->scratch ? t->scratch :
			       mwi_arch_sp(&t->saved) - 256 - 32768) - 64);
	err = start_call(t, fn, sp, 0, args, nargs, PTRACE_CONT);
	return err ? err : finish_call(t, 0, ret);
}

void mwi_release(struct mwi_thread *t)
{
	int i;

	if (!t->seized)
		return;
	if (t->call_left_running) {
		/* nothing of ours to restore: the call's frame does it; an
		 * interrupt stop to detach from (or the kernel detaches it
		 * when we exit, the same way) */
		t->deadline_ms = (long)mw_monotonic_ms() + 1000;
		interrupt(t);
		say(t, "left the call running in thread %d\n", (int)t->tid);
	} else if (t->have_saved) {
		mwi_regs r;

		/* Vector state and mask first, the registers next: from then
		 * on the thread no longer needs the signal frame, which the
		 * scratch restore overwrites last.  The restartable form of
		 * the registers restarts an interrupted syscall whatever kind
		 * of stop we are in. */
		mwi_arch_restore_ext(t->tid, t->xstate, t->xstate_len);
		ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(t->sigmask),
		       &t->sigmask);
		mwi_arch_restartable(&t->saved, &r);
		mwi_arch_set_regs(t->tid, &r);
		if (t->scratch_len || t->frame_sp)
			peek_poke(t, t->scratch, t->scratch_saved,
				  sizeof(t->scratch_saved), 1);
	}
	ptrace(PTRACE_DETACH, t->tid, 0, 0);
	t->seized = 0;
	t->stopped_us += (long)(mw_monotonic_ns() / 1000) - t->stop_start_us;
	say(t, "%lu syscall stops during guarded calls\n", t->syscall_stops);
	for (i = 0; i < t->npending; i++) {
		say(t, "re-sending signal %d\n", t->pending[i]);
		syscall(SYS_tgkill, t->pid, t->tid, t->pending[i]);
	}
	t->npending = 0;
}

int mwi_settle(struct mwi_thread *t)
{
	mwi_regs r;
	int status;

	if (!t->seized || !t->at_enter_stop)
		return 0;
	t->at_enter_stop = 0;
	/* skip the rt_sigreturn (running it would also cancel a pending
	 * restart_syscall, as every sigreturn does), and let whatever the
	 * filter writes into the result be overwritten at the exit stop */
	if (mwi_arch_settle_skips) {
		if (get_regs(t, &r))
			return -errno;
		mwi_arch_no_syscall(&r);
		/* skipped, it returns to the start of that code, not past its
		 * syscall (the next instruction may be anything, hlt in the
		 * trampoline): if we die before mwi_release restores the
		 * thread, it runs the rt_sigreturn, which does */
		mwi_arch_set_pc(&r, t->guarded_ret);
		if (mwi_arch_set_regs(t->tid, &r))
			return -errno;
	}
	if (ptrace(PTRACE_SYSCALL, t->tid, 0, 0))
		return -errno;
	/* nothing is delivered between a syscall's entry and its exit */
	if (waitpid(t->tid, &status, __WALL) < 0)
		return -errno;
	if (!WIFSTOPPED(status))
		return -ESRCH;
	return WSTOPSIG(status) == (SIGTRAP | 0x80) ? 0 : -EPROTO;
}
