/* SPDX-License-Identifier: MIT */
/* syscalls_x86_64.c - syscalls.h's lists with x86-64's syscalls (its
 * own table: poll, rename, mkdir... exist here, not on aarch64). */
#include "syscalls.h"

#include <sys/syscall.h>

#define REQ MWI_SC_REQUIRED
#define FEAT MWI_SC_FEATURE
#define OPT MWI_SC_OPTIONAL

/* Every syscall an attach makes in the target, measured with
 * tests/container/test_seccomp.py (a target whose every syscall is
 * logged through SECCOMP_RET_USER_NOTIF): a syscall the library starts
 * making fails that test until it is listed here. */
const struct mwi_sc_call mwi_sc_calls[] = {
	{ SYS_read, "read", "dlopen, helper", REQ, "dlopen fails" },
	{ SYS_write, "write", "helper", REQ, "no answers, no dumps" },
	{ SYS_pread64, "pread64", "dlopen", REQ, "dlopen fails" },
	{ SYS_openat, "openat", "dlopen, helper", REQ, "dlopen fails" },
	{ SYS_close, "close", "dlopen, helper", REQ, "dlopen fails" },
	{ SYS_newfstatat, "newfstatat", "dlopen, helper", REQ,
	  "dlopen fails" },
	{ SYS_fstat, "fstat", "helper", REQ, "no control file" },
	{ SYS_lseek, "lseek", "helper", REQ, "no control file" },
	{ SYS_mmap, "mmap", "dlopen, helper", REQ, "dlopen fails" },
	{ SYS_mprotect, "mprotect", "dlopen, GOT patching", REQ,
	  "dlopen fails" },
	{ SYS_munmap, "munmap", "dlopen, helper", REQ, "dlopen fails" },
	{ SYS_madvise, "madvise", "helper thread's exit", OPT,
	  "its stack is kept" },
	{ SYS_brk, "brk", "the target's malloc", REQ, "malloc fails" },
	{ SYS_futex, "futex", "dlopen, helper", REQ, "locks fail" },
	{ SYS_rt_sigaction, "rt_sigaction", "SIGURG handler", REQ,
	  "the attach fails" },
	{ SYS_rt_sigprocmask, "rt_sigprocmask", "mw_attach", REQ,
	  "the helper could take the application's signals" },
	{ SYS_rt_sigreturn, "rt_sigreturn", "guarded calls, SIGURG", REQ,
	  "the target crashes" },
	{ SYS_restart_syscall, "restart_syscall", "the injector's restore",
	  REQ, "an interrupted syscall fails" },
	{ SYS_sigaltstack, "sigaltstack", "guarded calls", OPT,
	  "calls are not guarded against the injector's death" },
	/* glibc 2.34 on tries clone3 and falls back to clone on ENOSYS
	 * only (what the runtimes' default profiles answer): judged as a
	 * pair in mwi_sc_check() */
	{ SYS_clone3, "clone3", "pthread_create", REQ, "no helper thread" },
	{ SYS_clone, "clone", "pthread_create", OPT,
	  "no helper thread before glibc 2.34" },
	{ SYS_set_robust_list, "set_robust_list", "helper thread", OPT,
	  "none" },
	{ SYS_rseq, "rseq", "helper thread", OPT, "none" },
	{ SYS_eventfd2, "eventfd2", "mw_attach", REQ, "the attach fails" },
	{ SYS_poll, "poll", "helper", REQ, "the helper spins" },
	{ SYS_inotify_init1, "inotify_init1", "helper", OPT,
	  "commands wait up to 200 ms" },
	{ SYS_inotify_add_watch, "inotify_add_watch", "helper", OPT,
	  "commands wait up to 200 ms" },
	{ SYS_membarrier, "membarrier", "liburcu", OPT,
	  "liburcu uses a slower barrier" },
	{ SYS_getpid, "getpid", "helper", REQ, "dumps fail" },
	{ SYS_gettid, "gettid", "--objects", FEAT, "no object view" },
	{ SYS_getuid, "getuid", "--objects", FEAT, "no object view" },
	{ SYS_geteuid, "geteuid", "helper", REQ, "no control file" },
	{ SYS_getrlimit, "getrlimit", "site table (RLIMIT_AS)", OPT,
	  "the table's address space is reserved as if unlimited" },
	{ SYS_readlink, "readlink", "dump header", OPT, "no program name" },
	{ SYS_rename, "rename", "dump", REQ, "no dump" },
	{ SYS_mkdir, "mkdir", "helper: runtime directory (mkdtemp)", REQ,
	  "no control channel" },
	{ SYS_getrandom, "getrandom", "mkdtemp", OPT,
	  "names from the clock" },
	{ SYS_unlinkat, "unlinkat", "detach, window's end", OPT,
	  "files left behind" },
	{ SYS_rmdir, "rmdir", "window's end", OPT, "directory left behind" },
	{ SYS_ftruncate, "ftruncate", "--dump-all", FEAT,
	  "no ObjectSpace.dump_all" },
	{ SYS_unlink, "unlink", "dump, detach", REQ, "files left behind" },
	{ SYS_clock_nanosleep, "clock_nanosleep", "mw_attach, mw_detach",
	  OPT, "the wait spins" },
	{ SYS_nanosleep, "nanosleep", "--objects", FEAT, "no object view" },
	{ SYS_getdents64, "getdents64", "--objects, window's end", FEAT,
	  "no object view, runtime directory left behind" },
	{ SYS_tgkill, "tgkill", "--objects", FEAT, "no object view" },
	{ SYS_rt_tgsigqueueinfo, "rt_tgsigqueueinfo", "--objects", FEAT,
	  "no object view" },
	{ SYS_process_vm_readv, "process_vm_readv", "--scan", FEAT,
	  "--scan unavailable" },
	{ SYS_exit, "exit", "helper thread's end (detach)", REQ,
	  "detach never ends" },
	/* a tracer skips a syscall with -1, and the filter still runs:
	 * the injector does at each call it starts from a syscall stop */
	{ -1, "skipped-syscall", "the injector, between calls", OPT, "none" },
	{ 0, NULL, NULL, REQ, NULL },
};

_Static_assert(sizeof(mwi_sc_calls) / sizeof(mwi_sc_calls[0]) <=
	       MWI_SC_MAX_CALLS, "raise MWI_SC_MAX_CALLS");

/* glibc's choice between clone3 and clone is the table's */
const struct mwi_sc_call *mwi_sc_calls_for(pid_t pid)
{
	(void)pid;
	return mwi_sc_calls;
}

/* Each of them waits for the outside world (a file descriptor, a
 * child, a signal, time) with no lock of libc or the loader held. */
const long mwi_blocking_safe[] = {
	SYS_read, SYS_pread64, SYS_readv, SYS_poll, SYS_ppoll, SYS_select,
	SYS_pselect6, SYS_epoll_wait, SYS_epoll_pwait, SYS_nanosleep,
	SYS_clock_nanosleep, SYS_wait4, SYS_waitid, SYS_pause,
	SYS_rt_sigsuspend, SYS_accept, SYS_accept4, SYS_recvfrom,
	SYS_recvmsg, SYS_rt_sigtimedwait,
	SYS_restart_syscall,	/* continues one of the above */
};
const size_t mwi_nblocking_safe =
	sizeof(mwi_blocking_safe) / sizeof(mwi_blocking_safe[0]);

