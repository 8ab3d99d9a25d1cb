/* mwrap-inject - load a library into a running process and call one of
 * its functions:
 *
 *   mwrap-inject -p PID [--backend=ptrace|gdb] [--timeout S] [-v]
 *                LIBRARY FUNCTION [STRING-ARG]
 *
 * FUNCTION is called as int FUNCTION(const char *arg) in one thread of
 * the target, stopped at a safe point (never inside libc or the loader
 * unless blocked in a lock-free syscall, or inside memcpy and the like
 * called from outside them); its result is printed as
 * "result=N".  Everything the call changed in the thread (registers,
 * vector state, signal mask, stack bytes) is put back before detaching.
 */
#define _GNU_SOURCE
#include "elfsym.h"
#include "gdb.h"
#include "maps.h"
#include "ptrace.h"
#include "seccomp.h"
#include "exitcodes.h"
#include "../preload/inject_abi.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#define RTLD_NOW_ 0x2
#define RTLD_NODELETE_ 0x1000
#define RTLD_DLOPEN_INTERNAL 0x80000000	/* __libc_dlopen_mode's flag */

static void usage(FILE *f)
{
	fprintf(f,
"usage: mwrap-inject -p PID [--backend=ptrace|gdb] [--timeout S] [-v]\n"
"                    LIBRARY FUNCTION [STRING-ARG]\n"
"\n"
"Loads LIBRARY (a path valid inside the target's mount namespace) into\n"
"process PID with dlopen(RTLD_NOW|RTLD_NODELETE) and calls\n"
"int FUNCTION(const char *STRING-ARG) in one of its threads.  Prints\n"
"result=N.\n"
"\n"
"exit codes: 0 done, 2 usage, 3 no such process, 4 ptrace refused,\n"
"5 no safe point in time, 6 dlopen failed, 7 FUNCTION not found,\n"
"8 target exited meanwhile, 9 the target faulted in the call\n"
"\n"
"--backend=gdb makes the same call through gdb -p PID -batch.\n"
"\n"
"mwrap-inject --check-seccomp -p PID: what PID's seccomp filter does with\n"
"each syscall an attach makes, one line each; exit 0 safe, 10 refuse (a\n"
"call would kill it, or a required one is denied), 11 cannot be shown\n"
"safe.  mwrap-inject --list-syscalls: those syscalls.\n"
"mwrap-inject --exit-codes: NAME NUMBER MEANING of each exit code.\n");
}

/* "NAME N what" per exit code: the front end's only source of them */
static void print_exit_codes(FILE *f)
{
#define MWI_EXIT_LINE(name, n, what) fprintf(f, "%s %d %s\n", #name, n, what);
	MWI_EXIT_CODES(MWI_EXIT_LINE)
#undef MWI_EXIT_LINE
}

static int fail(int code, const char *stage, const char *what, int err)
{
	fprintf(stderr, "mwrap-inject: %s: %s%s%s\n", stage, what,
		err ? ": " : "", err ? strerror(err) : "");
	return code;
}

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
	uintptr_t dlopen, dlerror, sigaltstack;
	uintptr_t restore_rt;	/* glibc's "mov $15,%rax; syscall", or 0 */
	int internal;	/* glibc < 2.34: __libc_dlopen_mode */
};

/* glibc's signal trampoline __restore_rt: rt_sigreturn. */
static const unsigned char restore_rt_code[] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00,	/* mov $15, %rax */
	0x0f, 0x05,					/* syscall */
};

/* A file mapped in the target, as a path we can open.  /proc/PID/maps
 * names files as seen from our root: for a target in another mount
 * namespace the file is under /proc/PID/root, for a chrooted one it is
 * the path itself.  The inode from maps tells which (overlayfs may
 * change the device, so only the inode is compared). */
static int local_file(pid_t pid, const char *shown, unsigned long ino,
		      char *path, size_t len)
{
	struct stat st;

	snprintf(path, len, "/proc/%d/root%s", (int)pid, shown);
	if (stat(path, &st) == 0 && st.st_ino == ino)
		return 0;
	snprintf(path, len, "%s", shown);
	if (stat(path, &st) == 0 && st.st_ino == ino)
		return 0;
	return -ENOENT;
}

static int find_fns(pid_t pid, const struct mwi_maps *m, struct target_fns *f)
{
	char path[PATH_MAX + 32];
	uint64_t v;

	memset(f, 0, sizeof(*f));
	if (local_file(pid, m->libc_path, m->libc_ino, path, sizeof(path)))
		return -ENOENT;
	if (mwi_elf_symbol(path, "sigaltstack", &v) == 0)
		f->sigaltstack = m->libc_base + v;
	if (mwi_elf_find_code(path, restore_rt_code, sizeof(restore_rt_code),
			      &v) == 0)
		f->restore_rt = m->libc_base + v;
	if (mwi_elf_symbol(path, "dlopen", &v) == 0) {
		f->dlopen = m->libc_base + v;
		if (mwi_elf_symbol(path, "dlerror", &v) == 0)
			f->dlerror = m->libc_base + v;
	} else if (mwi_elf_symbol(path, "__libc_dlopen_mode", &v) == 0) {
		f->dlopen = m->libc_base + v;
		f->internal = 1;
	}
	return f->dlopen ? 0 : -ENOENT;
}

static struct mwi_thread thr;

/* Our library's own symbols, once it is mapped in the target. */
struct lib_syms {
	uintptr_t fn, trampoline, result;
};

static int find_lib_syms(pid_t pid, const char *lib, const char *fn,
			 struct lib_syms *ls)
{
	char shown[PATH_MAX], path[PATH_MAX + 32];
	unsigned long ino;
	uintptr_t base;
	uint64_t v;

	memset(ls, 0, sizeof(*ls));
	if (mwi_maps_find(pid, lib, &base, &ino, shown, sizeof(shown)) ||
	    local_file(pid, shown, ino, path, sizeof(path)))
		return -ENOENT;
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
	unsigned char ss[24];
	uint64_t args[2];
	int ret;

	args[0] = 0;
	args[1] = mwi_frame_altstack(t);
	ret = mwi_call_guarded(t, f->sigaltstack, args, 2, f->restore_rt,
			       f->restore_rt + sizeof(restore_rt_code));
	if (!ret)
		ret = mwi_peek(t, args[1], ss, sizeof(ss));
	/* on its alternate stack, rt_sigreturn could not restore it */
	if (!ret && (ss[8] & 1 /* SS_ONSTACK */))
		ret = -EBUSY;
	return ret;
}

/* A call into the target that did not return: the exit code, and what
 * became of the call. */
static int call_failed(const struct mwi_thread *t, const char *stage,
		       int ret)
{
	if (t->call_left_running)
		return fail(EX_TARGET, stage, "no return within the timeout; "
			    "the call goes on in the target, whose thread "
			    "resumes where it was when the call returns", 0);
	return fail(ret == -ESRCH ? EX_GONE : EX_TARGET, stage,
		    "the call did not complete", -ret);
}

static int inject(struct mwi_thread *t, const struct target_fns *f,
		  const char *lib, const char *fn, const char *arg)
{
	uintptr_t lib_at, fn_at, arg_at;
	uint64_t args[2], handle = 0, sym, result;
	struct lib_syms ls;
	int64_t res;
	char msg[512];
	int ret, guarded;

	if ((ret = mwi_save(t)) ||
	    (ret = mwi_write_scratch(t, lib, strlen(lib) + 1, &lib_at)) ||
	    (ret = mwi_write_scratch(t, fn, strlen(fn) + 1, &fn_at)) ||
	    (ret = mwi_write_scratch(t, arg, strlen(arg) + 1, &arg_at)))
		return fail(ret == -ESRCH ? EX_GONE : EX_PERM,
			    "preparing the call", "cannot save state", -ret);
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
					 f->restore_rt + sizeof(restore_rt_code))
		      : mwi_call(t, f->dlopen, args, 2, &handle);
	if (ret)
		return call_failed(t, "dlopen", ret);
	if (find_lib_syms(t->pid, lib, fn, &ls)) {
		msg[0] = '\0';
		if (f->dlerror && mwi_call(t, f->dlerror, NULL, 0, &sym) == 0 &&
		    sym)
			mwi_read_string(t, sym, msg, sizeof(msg));
		if (msg[0] || (!guarded && !handle)) {
			fprintf(stderr, "mwrap-inject: dlopen: %s failed in the "
				"target: %s\n", lib, msg[0] ? msg : "(no message)");
			return EX_LOAD;
		}
		return fail(EX_SYMBOL, "finding the function", fn, ENOENT);
	}
	if (guarded && ls.trampoline && ls.result) {
		res = INT64_MIN;	/* overwritten by the trampoline */
		args[0] = arg_at;
		if ((ret = mwi_poke(t, ls.result, &res, sizeof(res))) ||
		    (ret = mwi_call_guarded(t, ls.fn, args, 1, ls.trampoline,
					    ls.trampoline + MW_TRAMPOLINE_STOP)) ||
		    (ret = mwi_peek(t, ls.result, &res, sizeof(res))))
			return call_failed(t, fn, ret);
		result = (uint64_t)res;
	} else {
		args[0] = arg_at;
		ret = mwi_call(t, ls.fn, args, 1, &result);
		if (ret)
			return call_failed(t, fn, ret);
	}
	printf("result=%d\n", (int)(uint32_t)result);
	return EX_OK;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "backend", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "check-seccomp", no_argument, NULL, 'S' },
		{ "list-syscalls", no_argument, NULL, 'L' },
		{ "exit-codes", no_argument, NULL, 'E' },
		{ NULL, 0, NULL, 0 },
	};
	struct mwi_maps maps;
	struct target_fns fns;
	pid_t tids[256];
	double timeout = 10;
	long pid = 0;
	int c, verbose = 0, ntids, i, ret, done, code = EX_NOSAFE;
	long deadline;
	sigset_t guard, old;
	char *end;
	int use_gdb = 0, check_seccomp = 0;
	static char libpath[PATH_MAX];

	while ((c = getopt_long(argc, argv, "p:t:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || *end || pid <= 0 || pid > INT_MAX)
				return fail(EX_USAGE, "usage", "bad pid", 0);
			break;
		case 't':
			timeout = strtod(optarg, &end);
			if (*end || !(timeout > 0) || timeout > 3600)
				return fail(EX_USAGE, "usage", "bad timeout", 0);
			break;
		case 'b':
			if (strcmp(optarg, "gdb") == 0)
				use_gdb = 1;
			else if (strcmp(optarg, "ptrace") != 0)
				return fail(EX_USAGE, "usage",
					    "--backend must be ptrace or gdb", 0);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return EX_OK;
		case 'S':
			check_seccomp = 1;
			break;
		case 'L':
			mwi_sc_list(stdout);
			return EX_OK;
		case 'E':
			print_exit_codes(stdout);
			return EX_OK;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (check_seccomp && pid && optind == argc) {
		ret = mwi_sc_check((pid_t)pid, stdout, verbose);
		if (ret < 0)
			return fail(ret == -ENOENT || ret == -ESRCH ? EX_NOPROC :
				    EX_PERM, "reading the seccomp state", "",
				    -ret);
		return ret == 0 ? EX_SC_OK :
		       ret == 1 ? EX_SC_REFUSE : EX_SC_UNSURE;
	}
	if (!pid || argc - optind < 2 || argc - optind > 3) {
		usage(stderr);
		return EX_USAGE;
	}
	if (pid == getpid())
		return fail(EX_USAGE, "usage", "refusing to inject into myself", 0);
	/* a relative LIBRARY is ours: make it absolute (and found in maps) */
	if (argv[optind][0] != '/' && !realpath(argv[optind], libpath))
		return fail(EX_USAGE, "usage", argv[optind], errno);
	if (argv[optind][0] != '/')
		argv[optind] = libpath;
	if (kill((pid_t)pid, 0) && errno == ESRCH)
		return fail(EX_NOPROC, "finding the process", "no such pid",
			    ESRCH);
	ret = mwi_maps_read((pid_t)pid, &maps);
	if (ret == -ENOENT && kill((pid_t)pid, 0) && errno == ESRCH)
		return fail(EX_NOPROC, "finding the process", "it exited",
			    ESRCH);
	if (ret == -ENOENT)
		return fail(EX_LOAD, "finding libc",
			    "no shared libc mapped (a static binary?)", 0);
	if (ret)
		return fail(ret == -EACCES ? EX_PERM : EX_NOPROC,
			    "reading /proc/PID/maps", "", -ret);
	if (use_gdb) {
		int result;

		code = mwi_gdb_inject((pid_t)pid, &maps, argv[optind],
				      argv[optind + 1],
				      argc - optind == 3 ? argv[optind + 2] : "",
				      timeout, verbose, &result);
		if (code == 0)
			printf("result=%d\n", result);
		return code;
	}
	if (find_fns((pid_t)pid, &maps, &fns))
		return fail(EX_LOAD, "finding dlopen in the target's libc",
			    maps.libc_path, ENOENT);

	/* From the first stop to the last restore, Ctrl-C and friends must
	 * wait: dying mid-call would leave the thread on a fake frame. */
	sigemptyset(&guard);
	sigaddset(&guard, SIGINT);
	sigaddset(&guard, SIGTERM);
	sigaddset(&guard, SIGHUP);
	sigaddset(&guard, SIGQUIT);
	sigprocmask(SIG_BLOCK, &guard, &old);

	/* Each thread gets a bounded number of looks (mwi_safe_point's
	 * -EAGAIN) before the next one is tried, and the passes over the
	 * threads go on until the deadline: a thread that is rarely outside
	 * libc is still caught at one of those moments. */
	deadline = mwi_now_ms() + (long)(timeout * 1000);
	for (done = 0; !done;) {
		ntids = list_threads((pid_t)pid, tids, 256);
		for (i = 0; i < ntids && !done; i++) {
			memset(&thr, 0, sizeof(thr));
			thr.pid = (pid_t)pid;
			thr.tid = tids[i];
			thr.verbose = verbose;
			thr.deadline_ms = deadline;
			ret = mwi_seize(&thr);
			if (ret == -EPERM) {
				code = fail(EX_PERM, "ptrace", "attach refused",
					    EPERM);
				done = 1;
				continue;
			}
			if (ret == -ESRCH)
				continue;	/* thread ended meanwhile */
			if (ret == 0)
				ret = mwi_safe_point(&thr, &maps);
			if (ret == 0) {
				if (verbose)
					fprintf(stderr, "mwrap-inject: calling "
						"in thread %d\n", (int)thr.tid);
				/* the calls get a whole --timeout of their
				 * own, whatever the search for a safe point
				 * took of it */
				thr.deadline_ms = mwi_now_ms() +
						  (long)(timeout * 1000);
				code = inject(&thr, &fns, argv[optind],
					      argv[optind + 1], argc - optind == 3 ?
					      argv[optind + 2] : "");
				mwi_sc_settle(&thr);
				mwi_release(&thr);
				if (verbose)
					fprintf(stderr, "mwrap-inject: thread %d "
						"paused %ld us\n", (int)thr.tid,
						thr.stopped_us);
				done = 1;
				continue;
			}
			mwi_release(&thr);
			if (ret == -ETIMEDOUT) {
				code = fail(EX_NOSAFE, "finding a safe point",
					    "timed out", 0);
				done = 1;
			}
		}
		if (done)
			break;
		if (kill((pid_t)pid, 0) && errno == ESRCH) {
			code = fail(EX_GONE, "finding a safe point",
				    "the process exited", ESRCH);
			break;
		}
		if (mwi_now_ms() >= deadline) {
			code = fail(EX_NOSAFE, "finding a safe point", "every "
				    "thread is busy inside libc or the loader",
				    0);
			break;
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}
