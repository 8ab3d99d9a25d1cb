/* SPDX-License-Identifier: MIT */
/* scprobe.c - see scprobe.h */
#define _GNU_SOURCE
#include "checks/scprobe.h"
#include "process/syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long sys_result(long r)
{
	return r < 0 ? -errno : 0;
}

/* probe()'s answer for a syscall it has no probe for: its result stays
 * unknown, never "allowed" (tests/c/test_scprobe.c lists them) */
#define NO_PROBE 1L

/* The probes, by family; each is 0 when the syscall ran (or failed the
 * way it does when allowed), else the errno it got, and NO_PROBE for a
 * syscall not of its family. */

/* "Failed the way it does when allowed": @r's errno is @allowed. */
static long failed_as(long r, int allowed)
{
	return r < 0 && errno != allowed ? -errno : 0;
}

/* On a closed fd: EBADF when the syscall runs. */
static long probe_fd(int nr)
{
	char buf[256] = "";

	switch (nr) {
	case SYS_read:
	case SYS_write:
	case SYS_close:
	case SYS_pread64:
	case SYS_fstat:
	case SYS_lseek:
	case SYS_getdents64:
	case SYS_ftruncate:
		errno = 0;
		return failed_as(syscall(nr, -1, buf, 0, 0), EBADF);
	case SYS_inotify_add_watch:	/* a mask of none is EINVAL first */
		errno = 0;
		return failed_as(syscall(nr, -1, "/", 0x4), EBADF);
	default:
		return NO_PROBE;
	}
}

/* Names: the root to open and stat, names that do not exist to change
 * (ENOENT when the syscall runs), our own program to read. */
static long probe_path(int nr)
{
	static const char none[] = "/nonexistent/mwrap-probe";
	static const char none2[] = "/nonexistent/mwrap-probe2";
	char buf[256];
	struct stat st;
	long r;

	errno = 0;
	switch (nr) {
	case SYS_openat:
		r = syscall(nr, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (r >= 0)
			close((int)r);
		return sys_result(r);
	case SYS_newfstatat:
		return sys_result(syscall(nr, AT_FDCWD, "/", &st, 0));
#ifdef SYS_readlink
	case SYS_readlink:
		return sys_result(syscall(nr, "/proc/self/exe", buf, sizeof(buf)));
#endif
	case SYS_readlinkat:	/* aarch64's readlink */
		return sys_result(syscall(nr, AT_FDCWD, "/proc/self/exe", buf,
					  sizeof(buf)));
#ifdef SYS_rename
	case SYS_rename:
	case SYS_unlink:
	case SYS_rmdir:
		return failed_as(syscall(nr, none, none2), ENOENT);
	case SYS_mkdir:
		return failed_as(syscall(nr, none, 0700), ENOENT);
#endif
	case SYS_renameat:	/* aarch64's rename */
		return failed_as(syscall(nr, AT_FDCWD, none, AT_FDCWD, none2),
				 ENOENT);
	case SYS_mkdirat:	/* aarch64's mkdir */
		return failed_as(syscall(nr, AT_FDCWD, none, 0700), ENOENT);
	case SYS_unlinkat:
		return failed_as(syscall(nr, AT_FDCWD, none, 0), ENOENT);
	default:
		return NO_PROBE;
	}
}

/* Memory: a page of our own, mapped, changed, unmapped; brk asked. */
static long probe_memory(int nr)
{
	void *m;

	switch (nr) {
	case SYS_mmap:
	case SYS_mprotect:
	case SYS_munmap:
	case SYS_madvise:
		m = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -errno;
		if (nr == SYS_mmap)
			return 0;
		if (nr == SYS_mprotect)
			return sys_result(syscall(nr, m, 4096, PROT_READ));
		if (nr == SYS_madvise)
			return sys_result(syscall(nr, m, 4096, MADV_DONTNEED));
		return sys_result(syscall(nr, m, 4096));
	case SYS_brk:
		return syscall(nr, 0) == 0 ? -ENOMEM : 0;
	case SYS_process_vm_readv: {
		static char page_buf[64];
		char buf[8];
		struct iovec local = { buf, 8 }, remote = { page_buf, 8 };

		return sys_result(syscall(nr, getpid(), &local, 1, &remote, 1,
					  0));
	}
	default:
		return NO_PROBE;
	}
}

/* Signals: handlers and masks read, not changed; signal 0 sent. */
static long probe_signal(int nr)
{
	char buf[256];
	stack_t ss;
	sigset_t set;
	siginfo_t si;

	switch (nr) {
	case SYS_rt_sigaction:
		return sys_result(syscall(nr, SIGURG, NULL, buf, 8));
	case SYS_rt_sigprocmask:
		return sys_result(syscall(nr, SIG_BLOCK, NULL, &set, 8));
	case SYS_sigaltstack:
		return sys_result(syscall(nr, NULL, &ss));
	case SYS_tgkill:
		return sys_result(syscall(nr, getpid(), getpid(), 0));
	case SYS_rt_tgsigqueueinfo:
		memset(&si, 0, sizeof(si));
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		return sys_result(syscall(nr, getpid(), getpid(), 0, &si));
	case SYS_rt_sigreturn:	/* probed by probe_child */
		return 0;
	default:
		return NO_PROBE;
	}
}

/* Threads: wrong arguments, so that no thread is made (EINVAL when the
 * syscall runs); a futex woken that nobody waits on; a query. */
static long probe_thread(int nr)
{
	uint32_t word = 0;

	errno = 0;
	switch (nr) {
	case SYS_clone3:	/* a size below the first version */
		return failed_as(syscall(nr, NULL, 0), EINVAL);
	case SYS_clone:		/* CLONE_THREAD without CLONE_SIGHAND */
		return failed_as(syscall(nr, CLONE_THREAD, NULL, NULL, NULL, 0),
				 EINVAL);
	case SYS_set_robust_list:
	case SYS_rseq:		/* a wrong length */
		return failed_as(syscall(nr, NULL, 1, 0, 0), EINVAL);
	case SYS_futex:
		return sys_result(syscall(nr, &word, FUTEX_WAKE_PRIVATE, 1,
					  NULL, NULL, 0));
	case SYS_membarrier:
		return sys_result(syscall(nr, MEMBARRIER_CMD_QUERY, 0, 0));
	case SYS_exit:		/* probed by probe_child */
		return 0;
	default:
		return NO_PROBE;
	}
}

/* The rest: descriptors made and closed, waits that do not wait, ids,
 * limits, random bytes, and the syscall a tracer skips (-1). */
static long probe_misc(int nr)
{
	struct timespec zero = { 0, 0 };
	char buf[256];
	long r;

	errno = 0;
	switch (nr) {
	case SYS_eventfd2:
	case SYS_inotify_init1:
		r = nr == SYS_eventfd2 ? syscall(nr, 0, O_CLOEXEC) :
					 syscall(nr, O_CLOEXEC);
		if (r >= 0)
			close((int)r);
		return sys_result(r);
#ifdef SYS_poll
	case SYS_poll:
		return sys_result(syscall(nr, NULL, 0, 0));
#endif
	case SYS_ppoll:		/* aarch64's poll */
		return sys_result(syscall(nr, NULL, 0, &zero, NULL, 8));
	case -1:		/* ENOSYS when nothing filters it */
		return failed_as(syscall(-1L), ENOSYS);
	case SYS_restart_syscall:	/* nothing to restart: EINTR */
		return failed_as(syscall(nr), EINTR);
	case SYS_getpid:
	case SYS_getuid:
	case SYS_gettid:
	case SYS_geteuid:
		return sys_result(syscall(nr));
	case SYS_getrlimit:
		return sys_result(syscall(nr, RLIMIT_AS, buf));
	case SYS_prlimit64:	/* aarch64's getrlimit */
		return sys_result(syscall(nr, 0, RLIMIT_AS, NULL, buf));
	case SYS_getrandom:
		return sys_result(syscall(nr, buf, 1, GRND_NONBLOCK));
	case SYS_clock_nanosleep:
		return -(long)syscall(nr, CLOCK_MONOTONIC, 0, &zero, NULL);
	case SYS_nanosleep:
		return sys_result(syscall(nr, &zero, NULL));
	default:
		return NO_PROBE;
	}
}

/* The probe of a listed syscall, in the child: the first family that
 * has it. */
static long probe(int nr)
{
	static long (*const family[])(int) = {
		probe_fd, probe_path, probe_memory, probe_signal,
		probe_thread, probe_misc,
	};
	long r = NO_PROBE;

	for (size_t i = 0; i < sizeof(family) / sizeof(family[0]) &&
			   r == NO_PROBE; i++)
		r = family[i](nr);
	return r;
}

/* Records: 'S' i (about to probe i), 'R' i err, 'T' nr (trapped). */
struct rec {
	char kind;
	int i;
	long err;
};

static int rec_fd = -1;
static volatile int probing = -1;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	struct rec r = { 'T', probing, 0 };

	(void)sig;
	(void)uc;
	r.err = si->si_syscall;
	(void)!write(rec_fd, &r, sizeof(r));
	_exit(3);
}

static void on_urg(int sig)
{
	(void)sig;
}

static void put(char kind, int i, long err)
{
	struct rec r = { kind, i, err };

	(void)!write(rec_fd, &r, sizeof(r));
}

/* The child: probes from index @from on, exit last (it ends us). */
static void probe_child(int from)
{
	struct rlimit none = { 0, 0 };
	struct sigaction sa;
	int i, exit_i = -1;

	setrlimit(RLIMIT_CORE, &none);	/* a killed probe leaves no core */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	for (i = from; mwi_sc_calls[i].name; i++) {
		if (mwi_sc_calls[i].nr == SYS_exit) {
			exit_i = i;
			continue;
		}
		probing = i;
		put('S', i, 0);
		if (mwi_sc_calls[i].nr == SYS_rt_sigreturn) {
			/* the handler's return is the probe */
			sa.sa_handler = on_urg;
			sa.sa_flags = 0;
			sigaction(SIGURG, &sa, NULL);
			raise(SIGURG);
			put('R', i, 0);
			continue;
		}
		put('R', i, probe(mwi_sc_calls[i].nr));
	}
	if (exit_i >= 0) {
		probing = exit_i;
		put('S', exit_i, 0);
		syscall(SYS_exit, 0);
		put('R', exit_i, -errno);
	}
	_exit(0);
}

/* Probes every listed syscall in children of ours; a child killed by
 * one is replaced by another that goes on after it.  0 or -errno. */
int mwi_sc_probe_all(struct mwi_sc_result *res)
{
	int from = 0, fds[2], status, started, n, i;
	struct rec r;
	pid_t child;

	for (i = 0; mwi_sc_calls[i].name; i++)
		res[i] = (struct mwi_sc_result){ MWI_SC_ALLOW, 0, 0, 1 };
	while (mwi_sc_calls[from].name) {
		if (pipe2(fds, O_CLOEXEC))
			return -errno;
		fflush(NULL);
		child = fork();
		if (child < 0) {
			close(fds[0]);
			close(fds[1]);
			return -errno;
		}
		if (child == 0) {
			close(fds[0]);
			rec_fd = fds[1];
			probe_child(from);
		}
		close(fds[1]);
		started = -1;
		while ((n = (int)read(fds[0], &r, sizeof(r))) == sizeof(r)) {
			if (r.kind == 'S') {
				started = r.i;
			} else if (r.kind == 'R' && r.err == NO_PROBE) {
				started = -1;
			} else if (r.kind == 'R') {
				res[r.i].unknown = 0;
				if (r.err) {
					res[r.i].action = MWI_SC_ERRNO;
					res[r.i].err = (int)-r.err;
				}
				started = -1;
			} else if (r.kind == 'T' && r.i >= 0) {
				res[r.i].action = MWI_SC_TRAP;
				res[r.i].unknown = 0;
				started = r.i;
			}
		}
		close(fds[0]);
		if (waitpid(child, &status, 0) < 0)
			return -errno;
		if (started < 0 && !(WIFEXITED(status) &&
				     WEXITSTATUS(status) == 0))
			return -EPROTO;	/* died outside any probe */
		if (started < 0)
			break;
		/* the last one started never returned */
		res[started].unknown = 0;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
			res[started].action = MWI_SC_KILL;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			 mwi_sc_calls[started].nr == SYS_exit)
			res[started].action = MWI_SC_ALLOW;
		else if (res[started].action != MWI_SC_TRAP) {
			res[started].action = MWI_SC_ERRNO;	/* it broke */
			res[started].err = EFAULT;
		}
		if (mwi_sc_calls[started].nr == SYS_exit)
			break;
		from = started + 1;
	}
	return 0;
}

