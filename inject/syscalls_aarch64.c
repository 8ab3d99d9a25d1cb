/* SPDX-License-Identifier: MIT */
/* syscalls_aarch64.c - syscalls.h's lists with aarch64's syscalls: the
 * generic table (asm-generic/unistd.h), which has no poll, rename,
 * mkdir, rmdir, unlink, readlink, select, pause or epoll_wait: glibc
 * makes ppoll, renameat, mkdirat, unlinkat, readlinkat, pselect6 and
 * epoll_pwait instead.  arm64 keeps getrlimit (163, the generic table's
 * __ARCH_WANT_SET_GET_RLIMIT) beside prlimit64: an attach in the arm64
 * VM made 163 (tests/container/test_seccomp.py's logger, issue 31), so
 * both are listed.  The list of what an attach makes is otherwise
 * x86-64's, translated. */
#include "syscalls.h"
#include "elfsym.h"
#include "maps.h"

#include <errno.h>
#include <stdint.h>
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
	/* a glibc with clone3's code tries clone3 and falls back to clone
	 * on ENOSYS only (what the runtimes' default profiles answer):
	 * judged as a pair in mwi_sc_check(); one without it (arm64's
	 * glibc before it had one: Debian 12's 2.36) makes clone alone:
	 * mwi_sc_calls_for() */
	{ SYS_clone3, "clone3", "pthread_create", REQ, "no helper thread" },
	{ SYS_clone, "clone", "pthread_create", OPT,
	  "no helper thread where glibc has no clone3" },
	{ SYS_set_robust_list, "set_robust_list", "helper thread", OPT,
	  "none" },
	{ SYS_rseq, "rseq", "helper thread", OPT, "none" },
	{ SYS_eventfd2, "eventfd2", "mw_attach", REQ, "the attach fails" },
	{ SYS_ppoll, "ppoll", "helper", REQ, "the helper spins" },
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
	{ SYS_prlimit64, "prlimit64", "site table (RLIMIT_AS)", OPT,
	  "the table's address space is reserved as if unlimited" },
	{ SYS_readlinkat, "readlinkat", "dump header", OPT,
	  "no program name" },
	{ SYS_renameat, "renameat", "dump", REQ, "no dump" },
	{ SYS_mkdirat, "mkdirat", "helper: runtime directory (mkdtemp)", REQ,
	  "no control channel" },
	{ SYS_getrandom, "getrandom", "mkdtemp", OPT,
	  "names from the clock" },
	/* unlink and rmdir too */
	{ SYS_unlinkat, "unlinkat", "dump, detach, window's end", REQ,
	  "files left behind" },
	{ SYS_ftruncate, "ftruncate", "--dump-all", FEAT,
	  "no ObjectSpace.dump_all" },
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

/* glibc's clone3 wrapper (sysdeps/unix/sysv/linux/aarch64/clone3.S):
 * "mov x8, #435; svc #0", in no libc that lacks it (Debian 12's 2.36 has
 * no "mov x8, #435" at all: pthread_create, _Fork and posix_spawn make
 * clone, 220).  1 when the target's libc has it, 0 when it has not,
 * -errno when the libc cannot be read. */
static int libc_makes_clone3(pid_t pid)
{
	static const unsigned char code[] = {
		0x68, 0x36, 0x80, 0xd2,	/* mov x8, #435 (clone3) */
		0x01, 0x00, 0x00, 0xd4,	/* svc #0 */
	};
	static struct mwi_maps m;
	char path[PATH_MAX + 32];
	uint64_t at;
	int ret = mwi_maps_read(pid, &m);

	if (ret)
		return ret;
	if (mwi_maps_local_file(pid, m.libc_path, m.libc_ino, path,
				sizeof(path)))
		return -ENOENT;
	ret = mwi_elf_find_code(path, code, sizeof(code), &at);
	return ret == -ENOENT ? 0 : ret ? ret : 1;
}

const struct mwi_sc_call *mwi_sc_calls_for(pid_t pid)
{
	static struct mwi_sc_call calls[MWI_SC_MAX_CALLS];
	int clone3 = libc_makes_clone3(pid), i;

	for (i = 0; mwi_sc_calls[i].name; i++) {
		calls[i] = mwi_sc_calls[i];
		if (clone3 == 1)
			continue;	/* the table's pair */
		if (calls[i].nr == SYS_clone) {
			calls[i].need = REQ;
			calls[i].effect = clone3 ? "no helper thread (which "
				"of clone3 and clone this libc makes is "
				"unknown)" : "no helper thread";
		} else if (calls[i].nr == SYS_clone3 && !clone3) {
			calls[i].need = OPT;
			calls[i].effect = "none: this libc makes clone";
		}
	}
	calls[i] = mwi_sc_calls[i];	/* the end */
	return calls;
}

/* Each of them waits for the outside world (a file descriptor, a
 * child, a signal, time) with no lock of libc or the loader held. */
const long mwi_blocking_safe[] = {
	SYS_read, SYS_pread64, SYS_readv, SYS_ppoll,
	SYS_pselect6, SYS_epoll_pwait, SYS_nanosleep,
	SYS_clock_nanosleep, SYS_wait4, SYS_waitid,
	SYS_rt_sigsuspend, SYS_accept, SYS_accept4, SYS_recvfrom,
	SYS_recvmsg, SYS_rt_sigtimedwait,
	SYS_restart_syscall,	/* continues one of the above */
};
const size_t mwi_nblocking_safe =
	sizeof(mwi_blocking_safe) / sizeof(mwi_blocking_safe[0]);

