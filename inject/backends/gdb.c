/* SPDX-License-Identifier: MIT */
/* gdb.c - see gdb.h */
#define _GNU_SOURCE
#include "backends/gdb.h"
#include "process/arch.h"
#include "base/exitcodes.h"
#include "process/syscalls.h"
#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* beyond the deadline, for a gdb session under way to finish its call */
#define GDB_GRACE_MS 30000

/* gdb/attach.py, embedded by gdb_script.S, NUL-terminated */
extern const char mwi_gdb_attach_py[];

/* gdb's commands, then the values attach.py reads, then attach.py */
static const char script_head[] =
"set pagination off\n"
"set confirm off\n"
"set unwindonsignal on\n"
"set debuginfod enabled off\n"
"handle SIGPIPE SIGUSR1 SIGUSR2 SIGHUP SIGTERM SIGQUIT SIGALRM SIGURG "
"SIGVTALRM SIGCHLD SIGWINCH SIGINT SIGIO SIGPROF nostop noprint pass\n"
"python\n"
"PID = %d\n"
"LIBC = (%lu, %lu)\n"
"LEAF = {%s}\n"
"DLERR = %lu\n"
"LIB = \"%s\"\n"
"FN = \"%s\"\n"
"ARG = \"%s\"\n"
"SAFE = {%s}\n"
"UNSAFE = [%s]\n"
"GUARD = bytes.fromhex('%s')\n"
"AREA = %zu\n";

/* The strings go into Python and C literals: keep them plain. */
static int plain(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || *s == '\'' ||
		    (unsigned char)*s < 0x20)
			return 0;
	return 1;
}

/* One gdb session running the script: its output in @out.  Returns 0,
 * 127 when gdb is missing, -errno when it could not be started, or 1
 * when it was still running at @until (ms): then left running, never
 * signalled.
 * A SIGINT would make gdb interrupt the target with a SIGINT to the
 * target's whole process group, passed on when the target resumes;
 * SIGTERM or SIGKILL in the middle of a call kill the target later. */
static int run_gdb(pid_t pid, const struct mwi_maps *m, uintptr_t dlerror_slot,
		   const char *lib, const char *fn, const char *arg, long until,
		   char *out, size_t size)
{
	char leaf[MWI_MAX_LEAF * 20 + 1] = "", safe[256] = "";
	char unsafe[MWI_MAX_RANGES * 44 + 1] = "";
	char guard[2 * 256 + 1] = "";
	const unsigned char *code;
	size_t area, ncode = mwi_arch_gdb_guard(&code, &area);
	char script[] = "/tmp/mwrap-inject.XXXXXX", pidbuf[16];
	int fd, pipefd[2], status, late = 0, err;
	size_t len = 0;
	pid_t gdb;
	FILE *f;

	out[0] = '\0';
	fd = mkstemp(script);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -errno;
	for (int i = 0; i < m->nleaf; i++)
		snprintf(leaf + strlen(leaf), sizeof(leaf) - strlen(leaf),
			 "%s%lu", i ? ", " : "", (unsigned long)m->leaf[i]);
	for (size_t i = 0; i < mwi_nblocking_safe; i++)
		snprintf(safe + strlen(safe), sizeof(safe) - strlen(safe),
			 "%s%ld", i ? ", " : "", mwi_blocking_safe[i]);
	for (int i = 0; i < m->nunsafe; i++)
		snprintf(unsafe + strlen(unsafe), sizeof(unsafe) -
			 strlen(unsafe), "%s(%lu, %lu)", i ? ", " : "",
			 (unsigned long)m->unsafe_lo[i],
			 (unsigned long)m->unsafe_hi[i]);
	for (size_t i = 0; i < ncode && 2 * i + 2 < sizeof(guard); i++)
		snprintf(guard + 2 * i, 3, "%02x", code[i]);
	fprintf(f, script_head, (int)pid, (unsigned long)m->libc_lo,
		(unsigned long)m->libc_hi, leaf, (unsigned long)dlerror_slot,
		lib, fn, arg, safe, unsafe, guard, area);
	fputs(mwi_gdb_attach_py, f);
	fputs("end\n", f);
	fclose(f);
	if (pipe2(pipefd, O_CLOEXEC)) {
		err = errno;
		unlink(script);
		return -err;
	}
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	gdb = fork();
	if (gdb == 0) {
		setpgid(0, 0);	/* a terminal's Ctrl-C must not reach gdb */
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		setenv("LC_ALL", "C", 1);
		unsetenv("DEBUGINFOD_URLS");
		execlp("gdb", "gdb", "-p", pidbuf, "-batch", "-nx", "-iex",
		       "set auto-solib-add off", "-x", script, (char *)NULL);
		_exit(127);
	}
	err = errno;
	close(pipefd[1]);
	if (gdb < 0) {
		close(pipefd[0]);
		unlink(script);
		return -err;
	}
	for (;;) {
		struct pollfd p = { pipefd[0], POLLIN, 0 };
		long left = until - (long)mw_monotonic_ms();
		ssize_t n;

		if (left <= 0) {
			late = 1;
			break;
		}
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		n = read(pipefd[0], out + len, size - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == size - 1)
			break;
	}
	out[len] = '\0';
	close(pipefd[0]);
	unlink(script);
	if (waitpid(gdb, &status, late ? WNOHANG : 0) == 0) {
		fprintf(stderr, "mwrap-inject: gdb (pid %d) did not finish; "
			"left running so as not to harm the target\n", (int)gdb);
		return 1;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? 127 : 0;
}

int mwi_gdb_inject(pid_t pid, const struct mwi_maps *maps,
		   uintptr_t dlerror_slot, const char *lib, const char *fn,
		   const char *arg, double timeout, int verbose, int *result,
		   struct mwi_failure *why)
{
	static char out[65536];
	char shown[PATH_MAX];
	unsigned long ino;
	uintptr_t base;
	long deadline = (long)mw_monotonic_ms() + (long)(timeout * 1000);
	int ret, late = 0;
	char *m;

	if (!plain(lib) || !plain(fn) || !plain(arg))
		return mwi_failf(why, EX_USAGE, "usage", 0, "gdb backend: "
				 "quotes, backslashes and control characters "
				 "are not allowed in arguments");
	/* The script never waits: a thread at a safe point when gdb has
	 * attached gets the call, else gdb detaches at once and we try again
	 * later, until the deadline.  Waiting inside gdb (for a thread to
	 * enter malloc) could only end with gdb interrupting the target.
	 * Past the deadline, a session already started gets a grace period
	 * to finish its call (gdb startup alone takes a good part of a
	 * second). */
	for (;;) {
		ret = run_gdb(pid, maps, dlerror_slot, lib, fn, arg,
			      deadline + GDB_GRACE_MS, out, sizeof(out));
		if (ret < 0)
			return mwi_failf(why, EX_TARGET, "gdb", -ret,
					 "starting gdb: %s", strerror(-ret));
		if (ret == 127)
			return mwi_failf(why, EX_LOAD, "gdb", ENOENT,
					 "gdb is not installed");
		late = ret == 1;
		if (late || !strstr(out, "MW_NOSAFE=") ||
		    (long)mw_monotonic_ms() + 50 >= deadline ||
		    mwi_proc_gone(pid))
			break;
		usleep(50000);
	}
	if (verbose)
		fputs(out, stderr);
	if (mwi_proc_gone(pid))
		return mwi_failf(why, EX_GONE, "process", ESRCH,
				 "the process exited");
	if ((m = strstr(out, "MW_ERR=")))
		return mwi_failf(why, EX_LOAD, "dlopen", 0, "dlopen: %s failed "
				 "in the target: %.*s", lib,
				 (int)strcspn(m + 7, "\n"), m + 7);
	if (strstr(out, "MW_NOSYM="))
		return mwi_failf(why, EX_SYMBOL, "symbol", ENOENT,
				 "dlsym: %s not found", fn);
	if (strstr(out, "MW_NOSAFE="))
		return mwi_failf(why, EX_NOSAFE, "safe-point", 0, "finding a "
				 "safe point: timed out (every thread inside "
				 "libc or the loader, none blocked in a "
				 "lock-free syscall)");
	m = strstr(out, "MW_RESULT=");
	if (!m || mwi_maps_find(pid, lib, &base, &ino, shown, sizeof(shown)))
		return mwi_failf(why, late ? EX_NOSAFE : EX_TARGET, "gdb", 0,
				 "gdb did not complete the call%s",
				 late ? " (timed out)" : "");
	*result = atoi(m + 10);
	return 0;
}
