/* SPDX-License-Identifier: MIT */
/* inject.c - see inject.h */
#define _GNU_SOURCE
#include "backends/inject.h"
#include "process/dlerror.h"
#include "base/elfsym.h"
#include "base/exitcodes.h"
#include "backends/gdb.h"
#include "checks/libcmatch.h"
#include "process/maps.h"
#include "process/ptrace.h"
#include "process/safepoint.h"
#include "common/clock.h"
#include "preload/inject_abi.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RTLD_NOW_ 0x2
#define RTLD_NODELETE_ 0x1000
#define RTLD_DLOPEN_INTERNAL 0x80000000	/* __libc_dlopen_mode's flag */

/* Thread ids of @pid, the main thread first. */
static int list_threads(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	int n = 0;

	tids[n++] = pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return n;
	while ((e = readdir(d)) && n < max) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid > 0 && tid != pid)
			tids[n++] = tid;
	}
	closedir(d);
	return n;
}

struct target_fns {
	uintptr_t dlopen, sigaltstack;
	uintptr_t dlerror_slot;	/* see dlerror.h, or 0 */
	uintptr_t dlerror;	/* musl's dlerror (see musl_dlerror), or 0 */
	uintptr_t restore_rt;	/* rt_sigreturn's code in libc, or 0 */
	int internal;	/* glibc < 2.34: __libc_dlopen_mode */
};

static int find_fns(pid_t pid, const struct mwi_maps *m, struct target_fns *f)
{
	char path[PATH_MAX + 32];
	uint64_t v;

	memset(f, 0, sizeof(*f));
	if (mwi_maps_local_file(pid, m->libc_path, m->libc_ino, path, sizeof(path)))
		return -ENOENT;
	if (mwi_elf_symbol(path, "sigaltstack", &v) == 0)
		f->sigaltstack = m->libc_base + v;
	if (mwi_elf_find_code(path, mwi_arch_sigreturn_code,
			      mwi_arch_sigreturn_len, &v) == 0)
		f->restore_rt = m->libc_base + v;
	else if (mwi_arch_sigreturn_extra(pid, &v) == 0)
		f->restore_rt = v;
	if (mwi_elf_symbol(path, "dlopen", &v) == 0) {
		f->dlopen = m->libc_base + v;
		if (mwi_dlerror_slot(path, m->libc_base, &f->dlerror_slot))
			f->dlerror_slot = 0;
	} else if (mwi_elf_symbol(path, "__libc_dlopen_mode", &v) == 0) {
		f->dlopen = m->libc_base + v;
		f->internal = 1;
	}
	if (mwi_maps_libc_is_musl(m->libc_path) &&
	    mwi_elf_symbol(path, "dlerror", &v) == 0)
		f->dlerror = m->libc_base + v;
	return f->dlopen ? 0 : -ENOENT;
}

/* A failed dlopen's message in a musl target: musl keeps it in its own
 * thread structure, whose layout is its own, so dlerror() itself reads
 * it (a short call: it neither blocks nor allocates).  @msg is "" when
 * there is none. */
static void musl_dlerror(struct mwi_thread *t, uintptr_t fn, char *msg,
			 size_t len)
{
	uint64_t at = 0;

	if (mwi_call(t, fn, NULL, 0, &at) || !at ||
	    mwi_read_string(t, at, msg, len))
		msg[0] = '\0';
}

/* Our library's own symbols, once it is mapped in the target. */
struct lib_syms {
	uintptr_t fn, trampoline, result;
};

/* @lmap: dlopen's handle where it is known after a guarded call (arch.h:
 * mwi_arch_guarded_keeps_result), else 0.  It is the library's struct
 * link_map, whose first field, l_addr, is its load base: the one the
 * loader relocated, whatever else maps shows of the file (a dlopen that
 * failed before can have left a mapping of it behind). */
static int find_lib_syms(struct mwi_thread *t, const char *lib,
			 const char *fn, uint64_t lmap, struct lib_syms *ls)
{
	char shown[PATH_MAX], path[PATH_MAX + 32];
	unsigned long ino;
	uintptr_t base;
	uint64_t v;

	memset(ls, 0, sizeof(*ls));
	if (mwi_maps_find(t->pid, lib, &base, &ino, shown, sizeof(shown)) ||
	    mwi_maps_local_file(t->pid, shown, ino, path, sizeof(path)))
		return -ENOENT;
	if (lmap && mwi_peek(t, lmap, &v, sizeof(v)))
		return -ENOENT;
	if (lmap)
		base = v;	/* struct link_map's l_addr */
	if (mwi_elf_symbol(path, fn, &v))
		return -ENOENT;
	ls->fn = base + v;
	if (mwi_elf_symbol(path, MW_ABI_TRAMPOLINE, &v) == 0)
		ls->trampoline = base + v;
	if (mwi_elf_symbol(path, MW_ABI_RESULT, &v) == 0)
		ls->result = base + v;
	return 0;
}

/* Fills the signal frame's sigaltstack field with the thread's own:
 * sigaltstack(NULL, field) as a guarded call, so that even if we die
 * meanwhile, rt_sigreturn restores what the syscall just reported.
 * 0, or -errno (then the calls that follow stay unguarded). */
static int fill_altstack(struct mwi_thread *t, const struct target_fns *f)
{
	stack_t ss;
	uint64_t args[2];
	int ret;

	args[0] = 0;
	args[1] = mwi_frame_altstack(t);
	ret = mwi_call_guarded(t, f->sigaltstack, args, 2, f->restore_rt,
			       f->restore_rt + mwi_arch_sigreturn_len);
	if (!ret)
		ret = mwi_peek(t, args[1], &ss, sizeof(ss));
	/* on its alternate stack, rt_sigreturn could not restore it */
	if (!ret && (ss.ss_flags & SS_ONSTACK))
		ret = -EBUSY;
	return ret;
}

/* dlopen(lib) and fn(arg) in thread @t, stopped at a safe point. */
/* A call into the target that did not return: the exit code, and what
 * became of the call. */
static int call_failed(const struct mwi_thread *t, struct mwi_failure *why,
		       const char *stage, const char *what, int ret)
{
	if (t->call_left_running)
		return mwi_fail(why, EX_TARGET, stage, what, "no return within "
				"the timeout; the call goes on in the target, "
				"whose thread resumes where it was when the "
				"call returns", 0);
	return mwi_fail(why, ret == -ESRCH ? EX_GONE : EX_TARGET, stage, what,
			"the call did not complete", -ret);
}

static int call_in(struct mwi_thread *t, const struct target_fns *f,
		   const struct mwi_request *rq, int *result,
		   struct mwi_failure *why)
{
	uintptr_t lib_at, fn_at, arg_at;
	uint64_t args[2], handle = 0, res64;
	struct lib_syms ls;
	int64_t res;
	char msg[512];
	int ret, guarded, known;

	if ((ret = mwi_save(t)) ||
	    (ret = mwi_write_scratch(t, rq->lib, strlen(rq->lib) + 1,
				     &lib_at)) ||
	    (ret = mwi_write_scratch(t, rq->fn, strlen(rq->fn) + 1, &fn_at)) ||
	    (ret = mwi_write_scratch(t, rq->arg, strlen(rq->arg) + 1,
				     &arg_at)))
		return mwi_fail(why, ret == -ESRCH ? EX_GONE : EX_PERM,
				"prepare", "preparing the call",
				"cannot save state", -ret);
	ret = !f->restore_rt || !f->sigaltstack ? -ENOENT : mwi_guard(t);
	if (!ret && (ret = fill_altstack(t, f)))
		t->frame_sp = 0;	/* unusable: stay unguarded */
	guarded = !ret;
	if (t->verbose)
		fprintf(stderr, "mwrap-inject: calls %s%s\n", guarded ?
			"guarded by a signal frame (they survive our death)" :
			"unguarded: no rt_sigreturn frame: ",
			guarded ? "" : strerror(-ret));
	args[0] = lib_at;
	args[1] = RTLD_NOW_ | RTLD_NODELETE_ |
		  (f->internal ? RTLD_DLOPEN_INTERNAL : 0);
	ret = guarded ? mwi_call_guarded(t, f->dlopen, args, 2, f->restore_rt,
					 f->restore_rt + mwi_arch_sigreturn_len)
		      : mwi_call(t, f->dlopen, args, 2, &handle);
	if (ret)
		return call_failed(t, why, "dlopen", "dlopen", ret);
	/* Where the guarded call's result comes back (aarch64), the handle
	 * says whether dlopen succeeded, not maps: a dlopen that failed in
	 * mapping the segments (glibc keeps the mappings then: arm64's
	 * 64 KiB-aligned segments leave holes, which it mprotects) leaves
	 * the file mapped, unrelocated, its data beyond the file's end. */
	known = guarded && t->have_guarded_result;
	if (known)
		handle = t->guarded_result;
	if ((known && !handle) ||
	    find_lib_syms(t, rq->lib, rq->fn, known ? handle : 0, &ls)) {
		/* the message as dlerror() would give it: glibc's read
		 * from the thread's record of the failure rather than by
		 * one more call (see dlerror.h), musl's by that call */
		msg[0] = '\0';
		if (f->dlerror_slot)
			mwi_dlerror_read(t, f->dlerror_slot, msg, sizeof(msg));
		else if (f->dlerror)
			musl_dlerror(t, f->dlerror, msg, sizeof(msg));
		if (msg[0] || ((!guarded || known) && !handle))
			return mwi_failf(why, EX_LOAD, "dlopen", 0,
					 "dlopen: %s failed in the target: %s",
					 rq->lib, msg[0] ? msg : "(no message)");
		return mwi_fail(why, EX_SYMBOL, "symbol",
				"finding the function", rq->fn, ENOENT);
	}
	args[0] = arg_at;
	if (guarded && ls.trampoline && ls.result) {
		res = INT64_MIN;	/* overwritten by the trampoline */
		if ((ret = mwi_poke(t, ls.result, &res, sizeof(res))) ||
		    (ret = mwi_call_guarded(t, ls.fn, args, 1, ls.trampoline,
					    ls.trampoline + MW_TRAMPOLINE_STOP)) ||
		    (ret = mwi_peek(t, ls.result, &res, sizeof(res))))
			return call_failed(t, why, "call", rq->fn, ret);
		res64 = (uint64_t)res;
	} else {
		ret = mwi_call(t, ls.fn, args, 1, &res64);
		if (ret)
			return call_failed(t, why, "call", rq->fn, ret);
	}
	*result = (int)(uint32_t)res64;
	return EX_OK;
}

static struct mwi_thread thr;

/* The handler frames we let threads run (mwi_thread.handler_sp), kept
 * from one pass over the threads to the next: a thread released with
 * one may still be inside it when it is seized again. */
static struct {
	pid_t tid;
	uintptr_t sp;
} handlers[64];

static uintptr_t handler_of(pid_t tid)
{
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (handlers[i].tid == tid)
			return handlers[i].sp;
	return 0;
}

static void keep_handler(pid_t tid, uintptr_t sp)
{
	size_t i, n = sizeof(handlers) / sizeof(handlers[0]);

	for (i = 0; i < n && handlers[i].tid && handlers[i].tid != tid; i++)
		;
	if (i == n && !sp)
		return;
	if (i == n)	/* full: one of them goes */
		i = (size_t)tid % n;
	handlers[i].tid = tid;
	handlers[i].sp = sp;
}

/* Each thread gets a bounded number of looks (mwi_safe_point's -EAGAIN)
 * before the next one is tried, and the passes over the threads go on
 * until the deadline: a thread that is rarely outside libc is still
 * caught at one of those moments. */
static int call_in_some_thread(const struct mwi_request *rq,
			       const struct mwi_maps *maps,
			       const struct target_fns *fns, int *result,
			       struct mwi_failure *why)
{
	long deadline = (long)mw_monotonic_ms() + (long)(rq->timeout * 1000);
	pid_t tids[256], two[2];
	int ntids, i, ret;

	for (;;) {
		ntids = list_threads(rq->pid, tids, 256);
		for (i = 0; i < ntids; i++) {
			memset(&thr, 0, sizeof(thr));
			thr.pid = rq->pid;
			thr.tid = tids[i];
			thr.verbose = rq->verbose;
			thr.deadline_ms = deadline;
			thr.handler_sp = handler_of(thr.tid);
			ret = mwi_seize(&thr);
			if (ret == -EPERM)
				return mwi_fail(why, EX_PERM, "ptrace", "ptrace",
						"attach refused", EPERM);
			if (ret == -ESRCH)
				continue;	/* thread ended meanwhile */
			if (ret == 0)
				ret = mwi_safe_point(&thr, maps);
			/* the only thread: looked at again without letting it
			 * go, so that no signal reaches a handler of it unseen
			 * (released, it is ours to track no more) */
			while (ret == -EAGAIN && list_threads(rq->pid, two, 2) == 1)
				ret = mwi_safe_point(&thr, maps);
			if (ret == 0) {
				if (rq->verbose)
					fprintf(stderr, "mwrap-inject: calling "
						"in thread %d\n", (int)thr.tid);
				/* the calls get a whole --timeout of their
				 * own, whatever the search for a safe point
				 * took of it */
				thr.deadline_ms = (long)mw_monotonic_ms() +
						  (long)(rq->timeout * 1000);
				ret = call_in(&thr, fns, rq, result, why);
				mwi_settle(&thr);
				mwi_release(&thr);
				if (rq->verbose)
					fprintf(stderr, "mwrap-inject: thread %d "
						"paused %ld us\n", (int)thr.tid,
						thr.stopped_us);
				return ret;
			}
			keep_handler(thr.tid, thr.handler_sp);
			mwi_release(&thr);
			if (ret == -ETIMEDOUT)
				return mwi_fail(why, EX_NOSAFE, "safe-point",
						"finding a safe point",
						"timed out", 0);
			if (ret == -EINTR)	/* and stays so */
				return mwi_fail(why, EX_NOSAFE, "safe-point",
						"finding a safe point", "the "
						"process was stopped by a "
						"signal (SIGSTOP, SIGTSTP, ...)",
						0);
		}
		if (mwi_proc_gone(rq->pid))
			return mwi_fail(why, EX_GONE, "safe-point",
					"finding a safe point",
					"the process exited", ESRCH);
		if ((long)mw_monotonic_ms() >= deadline)
			return mwi_fail(why, EX_NOSAFE, "safe-point",
					"finding a safe point", "every thread "
					"is busy inside libc or the loader", 0);
	}
}

int mwi_inject(const struct mwi_request *rq, int *result,
	       struct mwi_failure *why)
{
	struct mwi_maps maps;
	struct target_fns fns;
	sigset_t guard, old;
	int ret;

	if (mwi_proc_gone(rq->pid))
		return mwi_fail(why, EX_NOPROC, "process",
				"finding the process", "no such pid, or it exited", ESRCH);
	ret = mwi_maps_read(rq->pid, &maps);
	if (ret == -ENOENT && mwi_proc_gone(rq->pid))
		return mwi_fail(why, EX_NOPROC, "process",
				"finding the process", "it exited", ESRCH);
	if (ret == -ENOENT)
		return mwi_fail(why, EX_LOAD, "libc", "finding libc",
				"no shared libc mapped (a static binary?)", 0);
	if (ret)
		return mwi_fail(why, ret == -EACCES ? EX_PERM : EX_NOPROC,
				"maps", "reading /proc/PID/maps", "", -ret);
	if (mwi_libc_check(rq->pid, &maps, rq->lib, why))
		return why->code;
	if (rq->use_gdb) {
		char path[PATH_MAX + 32];
		uintptr_t slot = 0;

		if (mwi_maps_local_file(rq->pid, maps.libc_path, maps.libc_ino, path,
			       sizeof(path)) ||
		    mwi_dlerror_slot(path, maps.libc_base, &slot))
			slot = 0;
		return mwi_gdb_inject(rq->pid, &maps, slot, rq->lib, rq->fn,
				      rq->arg, rq->timeout, rq->verbose, result,
				      why);
	}
	if (find_fns(rq->pid, &maps, &fns))
		return mwi_fail(why, EX_LOAD, "libc",
				"finding dlopen in the target's libc",
				maps.libc_path, ENOENT);

	/* From the first stop to the last restore, Ctrl-C and friends must
	 * wait: dying mid-call would leave the thread on a fake frame. */
	sigemptyset(&guard);
	sigaddset(&guard, SIGINT);
	sigaddset(&guard, SIGTERM);
	sigaddset(&guard, SIGHUP);
	sigaddset(&guard, SIGQUIT);
	sigprocmask(SIG_BLOCK, &guard, &old);
	ret = call_in_some_thread(rq, &maps, &fns, result, why);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret;
}
