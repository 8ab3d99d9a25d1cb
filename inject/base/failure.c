/* SPDX-License-Identifier: MIT */
/* failure.c - see failure.h */
#define _GNU_SOURCE
#include "base/failure.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int mwi_fail(struct mwi_failure *f, int code, const char *stage,
	     const char *what, const char *object, int err)
{
	return mwi_failf(f, code, stage, err, "%s: %s%s%s", what, object,
			 err ? ": " : "", err ? strerror(err) : "");
}

int mwi_failf(struct mwi_failure *f, int code, const char *stage, int err,
	      const char *fmt, ...)
{
	va_list ap;

	f->code = code;
	f->stage = stage;
	f->err = err;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	return code;
}
