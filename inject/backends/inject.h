/* SPDX-License-Identifier: MIT */
/* inject.h - the injection sequence: find dlopen in the target's libc,
 * stop one thread at a safe point, guard it against our death, dlopen
 * the library there, call one of its functions, and put everything
 * back.  The native backend does it with ptrace.c; --backend=gdb hands
 * the same request to gdb.c. */
#ifndef MWI_INJECT_H
#define MWI_INJECT_H

#include <sys/types.h>

#include "base/failure.h"

struct mwi_request {
	pid_t pid;
	const char *lib;	/* absolute, as the target will open it */
	const char *fn;		/* int fn(const char *arg) in lib */
	const char *arg;
	double timeout;		/* seconds, for the whole sequence */
	int verbose;		/* transcript on stderr */
	int use_gdb;
};

/* Makes the call; *@result gets its int result.  Returns EX_OK, or an
 * EX_* code with @f saying which stage failed and why.  Whatever the
 * outcome, the target's threads run on as before (signals that came
 * meanwhile are re-sent).
 * Context: the injector's main thread; blocks SIGINT, SIGTERM, SIGHUP
 * and SIGQUIT while it holds a thread of the target. */
int mwi_inject(const struct mwi_request *rq, int *result,
	       struct mwi_failure *f);

#endif
