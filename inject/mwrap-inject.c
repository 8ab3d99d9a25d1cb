/* SPDX-License-Identifier: MIT */
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
#include "base/exitcodes.h"
#include "base/failure.h"
#include "backends/inject.h"
#include "checks/seccomp.h"
#include "process/syscalls.h"
#include "base/readvictim.h"
#include "base/vecvictim.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
"--backend=gdb makes the same call through gdb -p PID -batch.\n"
"\n"
"mwrap-inject --check-seccomp -p PID: what PID's seccomp filter does with\n"
"each syscall an attach makes, one line each, and the verdict as its exit\n"
"code (refuse: a call would kill it, or a required one is denied).  Where\n"
"the filter cannot be read, it is probed in a child of ours if it is ours:\n"
"the target is in our container, or, with --same-seccomp, the caller knows\n"
"it runs under our profile (a debug sidecar).\n"
"mwrap-inject --list-syscalls: those syscalls.\n"
"mwrap-inject --exit-codes: NAME NUMBER MEANING of each exit code.\n"
"mwrap-inject --vector-victim, --read-victim: the gdb probe's victims\n"
"(vecvictim.h, readvictim.h).\n"
"\n"
"exit codes:\n");
#define MWI_EXIT_HELP(name, n, what) fprintf(f, "  %3d  %s\n", n, what);
	MWI_EXIT_CODES(MWI_EXIT_HELP)
#undef MWI_EXIT_HELP
}

/* "NAME N what" per exit code: the front end's only source of them */
static void print_exit_codes(FILE *f)
{
#define MWI_EXIT_LINE(name, n, what) fprintf(f, "%s %d %s\n", #name, n, what);
	MWI_EXIT_CODES(MWI_EXIT_LINE)
#undef MWI_EXIT_LINE
}

/* The failure, for the front end ("stage=NAME errno=N") and for people;
 * returns its exit code. */
static int report(const struct mwi_failure *f)
{
	fprintf(stderr, "stage=%s errno=%d\n", f->stage, f->err);
	fprintf(stderr, "mwrap-inject: %s\n", f->msg);
	return f->code;
}

static int fail(int code, const char *stage, const char *what,
		const char *object, int err)
{
	struct mwi_failure f;

	mwi_fail(&f, code, stage, what, object, err);
	return report(&f);
}

/* A usage error that shows the usage text rather than a message. */
static int bad_usage(void)
{
	fprintf(stderr, "stage=usage errno=0\n");
	usage(stderr);
	return EX_USAGE;
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
		{ "same-seccomp", no_argument, NULL, 's' },
		{ "list-syscalls", no_argument, NULL, 'L' },
		{ "exit-codes", no_argument, NULL, 'E' },
		{ "vector-victim", no_argument, NULL, 'V' },
		{ "read-victim", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	static char libpath[PATH_MAX];
	struct mwi_request rq = { .timeout = 10 };
	struct mwi_failure why;
	int c, ret, result, check_seccomp = 0, same_seccomp = 0;
	long pid = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "p:t:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || *end || pid <= 0 || pid > INT_MAX)
				return fail(EX_USAGE, "usage", "usage",
					    "bad pid", 0);
			break;
		case 't':
			rq.timeout = strtod(optarg, &end);
			if (*end || !(rq.timeout > 0) || rq.timeout > 3600)
				return fail(EX_USAGE, "usage", "usage",
					    "bad timeout", 0);
			break;
		case 'b':
			if (strcmp(optarg, "gdb") == 0)
				rq.use_gdb = 1;
			else if (strcmp(optarg, "ptrace") != 0)
				return fail(EX_USAGE, "usage", "usage",
					    "--backend must be ptrace or gdb",
					    0);
			break;
		case 'v':
			rq.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return EX_OK;
		case 'S':
			check_seccomp = 1;
			break;
		case 's':
			same_seccomp = 1;
			break;
		case 'V':
			return mwi_vector_victim();
		case 'R':
			return mwi_read_victim();
		case 'L':
			mwi_sc_list(stdout);
			return EX_OK;
		case 'E':
			print_exit_codes(stdout);
			return EX_OK;
		default:
			return bad_usage();
		}
	}
	if (check_seccomp && pid && optind == argc) {
		ret = mwi_sc_check((pid_t)pid, stdout, rq.verbose,
				   same_seccomp);
		if (ret < 0)
			return fail(ret == -ENOENT || ret == -ESRCH ?
				    EX_NOPROC : EX_PERM, "seccomp",
				    "reading the seccomp state", "", -ret);
		return ret == 0 ? EX_SC_OK :
		       ret == 1 ? EX_SC_REFUSE : EX_SC_UNSURE;
	}
	if (!pid || argc - optind < 2 || argc - optind > 3)
		return bad_usage();
	if (pid == getpid())
		return fail(EX_USAGE, "usage", "usage",
			    "refusing to inject into myself", 0);
	/* a relative LIBRARY is ours: make it absolute (and found in maps) */
	rq.lib = argv[optind];
	if (rq.lib[0] != '/') {
		if (!realpath(rq.lib, libpath))
			return fail(EX_USAGE, "usage", "usage", rq.lib, errno);
		rq.lib = libpath;
	}
	rq.pid = (pid_t)pid;
	rq.fn = argv[optind + 1];
	rq.arg = argc - optind == 3 ? argv[optind + 2] : "";
	ret = mwi_inject(&rq, &result, &why);
	if (ret != EX_OK)
		return report(&why);
	printf("result=%d\n", result);
	return EX_OK;
}
