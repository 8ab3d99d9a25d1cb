/* SPDX-License-Identifier: MIT */
/* failure.h - how a stage of mwrap-inject reports its failure: the exit
 * code (exitcodes.h), one word naming the stage and the errno for the
 * front end, and the message for people. */
#ifndef MWI_FAILURE_H
#define MWI_FAILURE_H

#include <limits.h>

struct mwi_failure {
	int code;		/* EX_* */
	const char *stage;	/* "dlopen", "safe-point", ...: a literal */
	int err;		/* errno, or 0 when there is none */
	char msg[PATH_MAX + 1024];	/* without "mwrap-inject: " */
};

/* Fills @f with the message "WHAT: OBJECT: strerror(ERR)" (the last
 * part left out when @err is 0) and returns @code.
 * Context: any; no allocation. */
int mwi_fail(struct mwi_failure *f, int code, const char *stage,
	     const char *what, const char *object, int err);

/* The same with a message of its own; @err goes to the stage line only. */
int mwi_failf(struct mwi_failure *f, int code, const char *stage, int err,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
