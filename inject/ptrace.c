/* ptrace.c - see ptrace.h */
#define _GNU_SOURCE
#include "ptrace.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

#define say(t, ...) \
	do { if ((t)->verbose) fprintf(stderr, "mwrap-inject: " __VA_ARGS__); } while (0)

long mwi_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long mwi_now_ms(void)
{
	return mwi_now_us() / 1000;
}

/* Waits for the next stop of the thread, at most until @until (ms). */
static int wait_stop(struct mwi_thread *t, long until, int *status)
{
	long pause_us = 20;

	for (;;) {
		pid_t r = waitpid(t->tid, status, __WALL | WNOHANG);

		if (r == t->tid) {
			if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
				t->seized = 0;
				return -ESRCH;
			}
			return 0;
		}
		if (r < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		if (mwi_now_ms() >= until)
			return -ETIMEDOUT;
		usleep((useconds_t)pause_us);
		if (pause_us < 1000)
			pause_us *= 2;
	}
}

static int is_event_stop(int status)
{
	return WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP;
}

static void remember_signal(struct mwi_thread *t, int sig)
{
	/* SIGTRAP stops come from our own single steps: never re-send */
	if (sig == SIGTRAP)
		return;
	if (t->npending < MWI_MAX_PENDING)
		t->pending[t->npending++] = sig;
}

/* Interrupts the running thread and waits for the interrupt stop,
 * holding back signals that arrive first. */
static int interrupt(struct mwi_thread *t)
{
	int status, ret;

	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0))
		return -errno;
	for (;;) {
		ret = wait_stop(t, t->deadline_ms, &status);
		if (ret)
			return ret;
		if (is_event_stop(status))
			return 0;
		/* a signal-delivery stop: keep the signal for later */
		if (WIFSTOPPED(status))
			remember_signal(t, WSTOPSIG(status));
		if (ptrace(PTRACE_CONT, t->tid, 0, 0))
			return -errno;
	}
}

int mwi_seize(struct mwi_thread *t)
{
	int ret;

	if (ptrace(PTRACE_SEIZE, t->tid, 0, 0))
		return -errno;
	t->seized = 1;
	ret = interrupt(t);
	t->stop_start_us = mwi_now_us();
	return ret;
}

static int get_regs(struct mwi_thread *t, struct user_regs_struct *r)
{
	return ptrace(PTRACE_GETREGS, t->tid, 0, r) ? -errno : 0;
}

/* Blocking syscalls during which a thread holds no libc or loader lock. */
static int safe_syscall(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_pread64: case SYS_readv: case SYS_poll:
	case SYS_ppoll: case SYS_select: case SYS_pselect6:
	case SYS_epoll_wait: case SYS_epoll_pwait: case SYS_nanosleep:
	case SYS_clock_nanosleep: case SYS_wait4: case SYS_waitid:
	case SYS_pause: case SYS_rt_sigsuspend: case SYS_accept:
	case SYS_accept4: case SYS_recvfrom: case SYS_recvmsg:
	case SYS_rt_sigtimedwait:
	case SYS_restart_syscall:	/* continues one of the above */
		return 1;
	}
	return 0;
}

static int in_syscall(const struct user_regs_struct *r)
{
	long rax = (long)r->rax;

	return (long)r->orig_rax >= 0 &&
	       (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
		rax == -ERESTARTNOHAND || rax == -ERESTART_RESTARTBLOCK ||
		rax == -EINTR);
}

/* 0: safe now; 1: unsafe, in user code; 2: unsafe, inside a syscall
 * (never single-step that: the step restarts the call, and can turn a
 * sleep into an early EINTR); <0 error. */
static int check_point(struct mwi_thread *t, const struct mwi_maps *m)
{
	struct user_regs_struct r;
	int ret = get_regs(t, &r);

	if (ret)
		return ret;
	if (in_syscall(&r))
		return safe_syscall((long)r.orig_rax) ? 0 : 2;
	return mwi_maps_unsafe(m, r.rip) ? 1 : 0;
}

int mwi_safe_point(struct mwi_thread *t, const struct mwi_maps *m)
{
	int attempt, ret;

	/* A few thousand steps leave any short libc routine; a long one
	 * (a big memcpy) is better left to run and caught again later than
	 * stepped through for a second. */
	for (attempt = 0; attempt < 200; attempt++) {
		int steps;

		ret = check_point(t, m);
		if (ret <= 0)
			return ret;
		/* step out of libc/ld.so: it may hold malloc's or the
		 * loader's state half-updated */
		for (steps = 0; ret == 1 && steps < 2000; steps++) {
			int status;

			if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0))
				return -errno;
			ret = wait_stop(t, mwi_now_ms() + 200, &status);
			if (ret == -ETIMEDOUT) {
				/* blocked in a syscall: stop it again */
				ret = interrupt(t);
				if (ret)
					return ret;
				break;
			}
			if (ret)
				return ret;
			if (WIFSTOPPED(status))
				remember_signal(t, WSTOPSIG(status));
			ret = check_point(t, m);
			if (ret <= 0) {
				say(t, "safe point after %d steps\n", steps + 1);
				return ret;
			}
		}
		if (check_point(t, m) == 0)
			return 0;
		/* let it run a little and try again */
		if (ptrace(PTRACE_CONT, t->tid, 0, 0))
			return -errno;
		t->stopped_us += mwi_now_us() - t->stop_start_us;
		usleep(200 + (unsigned)(attempt % 10) * 300);
		ret = interrupt(t);
		t->stop_start_us = mwi_now_us();
		if (ret)
			return ret;
		if (mwi_now_ms() >= t->deadline_ms)
			return -ETIMEDOUT;
	}
	return -EAGAIN;
}

int mwi_save(struct mwi_thread *t)
{
	struct iovec iov = { t->xstate, sizeof(t->xstate) };
	int ret = get_regs(t, &t->saved);

	if (ret)
		return ret;
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov))
		return -errno;
	t->xstate_len = iov.iov_len;
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
	t->scratch = (t->saved.rsp - 256 - sizeof(t->scratch_saved)) &
		     ~(uintptr_t)15;
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

int mwi_call(struct mwi_thread *t, uintptr_t fn, const uint64_t *args,
	     int nargs, uint64_t *ret)
{
	struct user_regs_struct r = t->saved;
	uint64_t zero = 0, mask;
	unsigned long long *argreg[6] = { &r.rdi, &r.rsi, &r.rdx, &r.rcx,
					  &r.r8, &r.r9 };
	int i, err, status;

	/* a stack below our scratch: aligned so that the callee sees
	 * rsp = 8 mod 16, as after a call; the return address 0 traps */
	r.rsp = ((t->scratch ? t->scratch : t->saved.rsp - 256 - 8192) - 64) &
		~0xfull;
	r.rsp -= 8;
	err = peek_poke(t, r.rsp, &zero, sizeof(zero), 1);
	if (err)
		return err;
	for (i = 0; i < nargs && i < 6; i++)
		*argreg[i] = args[i];
	r.rip = fn;
	r.rax = 0;
	r.orig_rax = (unsigned long long)-1;	/* no syscall restart */
	r.eflags &= ~(0x400ull | 0x100ull);	/* clear DF and TF */
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r))
		return -errno;
	/* asynchronous signals wait until we are done; faults must not be
	 * blocked (the kernel would reset their handlers) */
	mask = ~0ull;
	for (int s = 1; s <= 64; s++)
		if (s == SIGSEGV || s == SIGTRAP || s == SIGBUS || s == SIGILL ||
		    s == SIGFPE || s == SIGSYS)
			mask &= ~(1ull << (s - 1));
	if (ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask))
		return -errno;
	if (ptrace(PTRACE_CONT, t->tid, 0, 0))
		return -errno;
	for (;;) {
		err = wait_stop(t, t->deadline_ms, &status);
		if (err == -ETIMEDOUT) {
			/* stop it and let mwi_release unwind the call */
			interrupt(t);
			return -ETIMEDOUT;
		}
		if (err)
			return err;
		if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGSEGV &&
		    !is_event_stop(status)) {
			err = get_regs(t, &r);
			if (err)
				return err;
			if (r.rip == 0) {	/* our return trap */
				*ret = r.rax;
				return 0;
			}
			fprintf(stderr, "mwrap-inject: the target faulted "
				"inside the injected call at %#llx\n", r.rip);
			return -EFAULT;
		}
		if (WIFSTOPPED(status) && !is_event_stop(status))
			remember_signal(t, WSTOPSIG(status));
		if (ptrace(PTRACE_CONT, t->tid, 0, 0))
			return -errno;
	}
}

void mwi_release(struct mwi_thread *t)
{
	int i;

	if (!t->seized)
		return;
	if (t->have_saved) {
		struct iovec iov = { t->xstate, t->xstate_len };

		if (t->scratch_len)
			peek_poke(t, t->scratch, t->scratch_saved,
				  sizeof(t->scratch_saved), 1);
		ptrace(PTRACE_SETREGS, t->tid, 0, &t->saved);
		ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov);
		ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(t->sigmask),
		       &t->sigmask);
	}
	ptrace(PTRACE_DETACH, t->tid, 0, 0);
	t->seized = 0;
	t->stopped_us += mwi_now_us() - t->stop_start_us;
	for (i = 0; i < t->npending; i++) {
		say(t, "re-sending signal %d\n", t->pending[i]);
		syscall(SYS_tgkill, t->pid, t->tid, t->pending[i]);
	}
	t->npending = 0;
}
